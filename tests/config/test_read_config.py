"""read_config / read_config_with_system: loading config files by path."""
from __future__ import annotations

import sys
import textwrap

import pytest
from easydict import EasyDict

from ding.config import read_config, read_config_with_system
from ding.utils import ConfigError


def write(path, text: str) -> str:
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_reads_plain_dicts_as_easydicts(tmp_path):
    path = write(tmp_path / "cfg.py", """
        main_config = dict(exp_name='x', policy=dict(learn=dict(batch_size=32)), shape=(4, 2))
        create_config = dict(env=dict(type='cartpole', import_names=['a.b']))
    """)
    main, create = read_config(path)
    assert isinstance(main, EasyDict) and isinstance(create, EasyDict)
    assert main.policy.learn.batch_size == 32
    assert main.shape == (4, 2)
    assert create.env.import_names == ["a.b"]


def test_reads_easydict_config_in_dizoo_style(tmp_path):
    path = write(tmp_path / "cartpole_dqn_config.py", """
        from easydict import EasyDict
        cartpole_dqn_config = EasyDict(dict(exp_name='cp', env=dict(stop_value=195)))
        main_config = cartpole_dqn_config
        cartpole_dqn_create_config = EasyDict(dict(policy=dict(type='dqn')))
        create_config = cartpole_dqn_create_config
        if __name__ == '__main__':
            raise RuntimeError('the __main__ block must not run when the config is read')
    """)
    main, create = read_config(path)
    assert main.env.stop_value == 195
    assert create.policy.type == "dqn"


def test_missing_create_config_gives_empty_section(tmp_path):
    main, create = read_config(write(tmp_path / "only_main.py", "main_config = dict(a=1)\n"))
    assert main == {"a": 1} and create == {}


def test_config_can_import_from_its_own_directory_without_leaving_traces(tmp_path):
    sub = tmp_path / "exp_cfgs"
    sub.mkdir()
    write(sub / "h2_common_cfg_part.py", "BATCH = 128\n")
    path = write(sub / "cfg.py", """
        from h2_common_cfg_part import BATCH
        main_config = dict(policy=dict(learn=dict(batch_size=BATCH)))
    """)
    path_before = list(sys.path)
    modules_before = set(sys.modules)
    try:
        main, _ = read_config(path)
        assert main.policy.learn.batch_size == 128
        assert sys.path == path_before
        leftovers = {m for m in set(sys.modules) - modules_before if m.startswith("_ding_config_")}
        assert leftovers == set()
    finally:
        sys.modules.pop("h2_common_cfg_part", None)


def test_returned_configs_are_independent_copies(tmp_path):
    path = write(tmp_path / "cfg.py", "SHARED = dict(a=[1])\nmain_config = dict(x=SHARED, y=SHARED)\n")
    main, _ = read_config(path)
    main.x.a.append(2)
    assert main.y.a == [1]
    again, _ = read_config(path)
    assert again.x.a == [1]


def test_rereading_an_edited_file_sees_the_new_content(tmp_path):
    cfg = tmp_path / "cfg.py"
    write(cfg, "main_config = dict(v=1)\n")
    assert read_config(str(cfg))[0].v == 1
    write(cfg, "main_config = dict(v=2)\n")  # same size, same second: no stale bytecode
    assert read_config(str(cfg))[0].v == 2


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(ConfigError, match=r"config file '.*nope\.py' not found"):
        read_config(str(tmp_path / "nope.py"))


def test_non_python_file_is_rejected(tmp_path):
    with pytest.raises(ConfigError, match=r"cfg\.yaml': only Python \(\.py\) config files"):
        read_config(write(tmp_path / "cfg.yaml", "a: 1\n"))


def test_missing_main_config_names_file_and_what_is_missing(tmp_path):
    with pytest.raises(ConfigError, match=r"bad_cfg\.py' defines no `main_config`"):
        read_config(write(tmp_path / "bad_cfg.py", "cartpole_config = dict(a=1)\n"))


def test_main_config_must_be_a_dict(tmp_path):
    with pytest.raises(ConfigError, match=r"`main_config` must be a dict or EasyDict, got list"):
        read_config(write(tmp_path / "cfg.py", "main_config = [1, 2]\n"))


def test_syntax_error_names_file_and_line(tmp_path):
    path = write(tmp_path / "cfg.py", "main_config = dict(\n    a=1,\n    b=2 3,\n)\n")
    with pytest.raises(ConfigError, match=r"^config file '.*cfg\.py', line 3: syntax error \(.*\): b=2 3,$") as info:
        read_config(path)
    assert isinstance(info.value.__cause__, SyntaxError)


def test_failing_import_names_file_line_and_module(tmp_path):
    path = write(tmp_path / "cfg.py", "import os\nfrom no_such_pkg_for_ding import envs\nmain_config = dict()\n")
    with pytest.raises(ConfigError, match=r"cfg\.py', line 2: ModuleNotFoundError: No module named "
                                          r"'no_such_pkg_for_ding'\. Is the package installed") as info:
        read_config(path)
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_exception_while_running_names_the_config_line_and_where_it_was_raised(tmp_path):
    write(tmp_path / "helper_for_cfg.py", "def size():\n    return {}['missing']\n")
    path = write(tmp_path / "cfg.py", "from helper_for_cfg import size\n\nmain_config = dict(n=size())\n")
    with pytest.raises(ConfigError, match=r"cfg\.py', line 3: KeyError: 'missing' \(raised in .*helper_for_cfg\.py, "
                                          r"line 2\)$"):
        read_config(path)
    import sys

    assert str(tmp_path) not in sys.path  # the file's directory is taken off sys.path after a failure too


def test_read_config_with_system(tmp_path):
    path = write(tmp_path / "par.py", """
        main_config = dict(exp_name='p')
        create_config = dict(policy=dict(type='dqn'))
        system_config = dict(coordinator=dict(port=50000), path_data='./data')
    """)
    main, create, system = read_config_with_system(path)
    assert (main.exp_name, create.policy.type, system.coordinator.port) == ("p", "dqn", 50000)


def test_read_config_with_system_requires_system_config(tmp_path):
    path = write(tmp_path / "serial_only.py", "main_config = dict()\ncreate_config = dict()\n")
    with pytest.raises(ConfigError, match=r"serial_only\.py' defines no `system_config`.*parallel mode"):
        read_config_with_system(path)


def test_config_may_define_dataclasses_and_functions(tmp_path):
    path = write(tmp_path / "cfg.py", """
        import dataclasses

        @dataclasses.dataclass
        class Model:
            hidden: int = 64

        main_config = dict(model=dataclasses.asdict(Model()), file=__file__)
    """)
    main, _ = read_config(path)
    assert main.model == {"hidden": 64} and main.file == path
    assert not (tmp_path / "__pycache__").exists()
