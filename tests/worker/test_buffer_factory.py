"""create_buffer / get_buffer_cls: registry lookup, aliases, plugins through import_names, config schema."""
from __future__ import annotations

import sys
import textwrap

import pytest

from ding.utils import BUFFER_REGISTRY, ConfigError, RegistryError
from ding.worker.replay_buffer import (
    AdvancedReplayBuffer,
    EpisodeReplayBuffer,
    IBuffer,
    NaiveReplayBuffer,
    SequenceReplayBuffer,
    create_buffer,
    get_buffer_cls,
)


@pytest.mark.parametrize("name, cls", [("naive", NaiveReplayBuffer), ("deque", NaiveReplayBuffer),
                                       ("advanced", AdvancedReplayBuffer), ("episode", EpisodeReplayBuffer),
                                       ("sequence", SequenceReplayBuffer)])
def test_registered_types(name, cls):
    assert get_buffer_cls({"type": name}) is cls
    buffer = create_buffer({"type": name, "replay_buffer_size": 4}, tb_logger=None, exp_name="e",
                           instance_name="b")
    assert isinstance(buffer, cls) and isinstance(buffer, IBuffer) and buffer.replay_buffer_size == 4


def test_unknown_type_suggests_close_names():
    with pytest.raises(RegistryError, match="unknown buffer type 'advnced'. Did you mean 'advanced'"):
        create_buffer({"type": "advnced"})
    with pytest.raises(ConfigError, match="missing key 'type'"):
        get_buffer_cls({"replay_buffer_size": 3})


def test_every_config_key_is_declared_and_documented():
    """The class-level config is the schema the config validator checks; each key has a comment in the source."""
    import inspect
    for cls in (NaiveReplayBuffer, AdvancedReplayBuffer, EpisodeReplayBuffer, SequenceReplayBuffer):
        cfg = cls.default_config()
        assert cfg.cfg_type == cls.__name__ + "Dict"
        source = inspect.getsource(cls)
        for key in cls.config:
            line = next(ln for ln in source.splitlines() if ln.strip().startswith(f"{key}="))
            assert "#" in line or line.strip().endswith("dict("), f"{cls.__name__}.config['{key}'] has no comment"


def test_custom_buffer_from_a_plugin_module(tmp_path, monkeypatch):
    plugin = tmp_path / "my_buffer_plugin.py"
    plugin.write_text(textwrap.dedent("""
        from ding.utils import BUFFER_REGISTRY
        from ding.worker.replay_buffer import NaiveReplayBuffer

        @BUFFER_REGISTRY.register("newest_first_test")
        class NewestFirstBuffer(NaiveReplayBuffer):
            config = dict(NaiveReplayBuffer.config, type="newest_first_test", window=4)  # window: newest items

            def sample(self, size, cur_learner_iter=0, sample_range=None, replace=False):
                return super().sample(size, cur_learner_iter, slice(-self._cfg.window, None), replace)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        buffer = create_buffer({"type": "newest_first_test", "import_names": ["my_buffer_plugin"], "window": 2,
                                "seed": 0})
        buffer.push(list(range(10)))
        assert set(buffer.sample(2, 0)) == {8, 9}
    finally:
        BUFFER_REGISTRY.pop("newest_first_test", None)
        sys.modules.pop("my_buffer_plugin", None)


def test_import_names_that_do_not_import_are_reported():
    with pytest.raises(RegistryError, match="cannot import module 'no_such_buffer_module'"):
        create_buffer({"type": "naive", "import_names": ["no_such_buffer_module"]})
