"""The tracking writer without the extras: a plugin tracker gets TensorBoard's scalars, a failing one is one warning,
and the ``logger`` section is validated like every config key."""
from __future__ import annotations

import copy
import warnings

import pytest

from ding.config import compile_run_config
from ding.entry import serial_pipeline
from ding.utils import LOGGER_REGISTRY, ConfigError
from ding.utils.tracking import RunInfo, Tracker, TrackingWriter, build_tracking_writer

from ._tracked_series import read_tensorboard


class Recording(Tracker):
    name = "recording"
    seen: list = []

    def start(self, params, state):
        self.params = params

    def log(self, scalars):
        Recording.seen.extend(scalars)

    def state(self):
        return {"run_id": "r1"}


class Failing(Recording):
    name = "failing"

    def log(self, scalars):
        raise ConnectionError("no route to host")


LOGGER_REGISTRY.register("recording", Recording, force_overwrite=True)
LOGGER_REGISTRY.register("failing", Failing, force_overwrite=True)


def _cfg(**logger):
    from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config

    main, create = copy.deepcopy(main_config), copy.deepcopy(create_config)
    main.exp_name = "w"
    main.policy.learn.learner = dict(hook=dict(log_show_after_iter=50))
    main.logger = logger
    return main, create


def test_a_plugin_tracker_gets_every_tensorboard_scalar_and_a_failing_one_is_one_warning(in_tmp_dir):
    Recording.seen = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        serial_pipeline(_cfg(types=["tensorboard", "recording", "failing"], recording=dict(any_key=1)), seed=0,
                        max_train_iter=100)
    failed = [w for w in caught if "logger 'failing' failed while logging" in str(w.message)]
    assert len(failed) == 1 and "ConnectionError: no route to host" in str(failed[0].message)
    tb = read_tensorboard("w/log/serial")
    got: dict = {}
    for s in Recording.seen:
        got.setdefault(s.tag, []).append((s.step, s.value))
    assert set(got) == set(tb) and "learner_step/total_loss" in got
    assert all(sorted(p for p, _ in got[t]) == sorted(p for p, _ in tb[t]) for t in tb)


def test_scalars_wait_for_the_start_and_the_run_ids_go_to_the_checkpoint():
    class TB:
        def __init__(self):
            self.calls = []

        def add_scalar(self, *a):
            self.calls.append(a)

        def flush(self):
            pass

        def close(self):
            self.calls.append("closed")

    tb = TB()
    Recording.seen = []
    writer = TrackingWriter(tb, [Recording({}, RunInfo("x", "x"))])
    writer.add_scalar("a_iter/b", 1.0, 3)
    assert Recording.seen == []  # held until the trackers start
    writer.start({"k": {"v": 1}})
    assert [(s.tag, s.step, s.value) for s in Recording.seen] == [("a_iter/b", 3, 1.0)]
    assert writer.state_dict() == {"recording": {"run_id": "r1"}}
    writer.close()
    writer.close()
    assert tb.calls == [("a_iter/b", 1.0, 3, None), "closed"]


def test_the_logger_section_is_checked_like_every_key():
    main, create = _cfg(types=["tensorboard"], wandb=dict(projct="x"))
    with pytest.raises(ConfigError, match=r"logger\.wandb\.projct: unknown key.*'project'"):
        compile_run_config(main, create)
    main, create = _cfg(typs=["wandb"])
    with pytest.raises(ConfigError, match=r"logger\.typs: unknown key.*'types'"):
        compile_run_config(main, create)
    with pytest.raises(ConfigError, match=r"logger\.types: unknown logger type 'wandbb'.*'wandb'"):
        build_tracking_writer({"types": ["wandbb"]}, RunInfo("x", "x"), lambda: None)
