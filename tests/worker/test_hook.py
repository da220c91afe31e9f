"""Learner hooks: positions, priority order, shorthands, full form, plugins via import_names, errors, stop requests,
and the built-in hooks' behaviour."""
from __future__ import annotations

import os
import sys
from collections import namedtuple

import pytest
import torch
from easydict import EasyDict

from ding.utils import HOOK_REGISTRY, CheckpointError, ConfigError, RegistryError
from ding.worker.learner import (
    HOOK_SHORTHANDS,
    BaseLearner,
    LearnerHook,
    LearnerHookError,
    LoadCkptHook,
    LogReduceHook,
    LogShowHook,
    SaveCkptHook,
    add_learner_hook,
    build_learner_hook_by_cfg,
    merge_hooks,
    register_learner_hook,
    show_hooks,
)

LearnMode = namedtuple("LearnMode", ["forward", "reset", "monitor_vars", "get_attribute", "state_dict",
                                     "load_state_dict"])


def make_policy(losses=None):
    """A learn view whose forward returns the next loss of ``losses`` (1.0, 2.0, ... by default)."""
    net = torch.nn.Linear(2, 1)
    count = [0]

    def forward(data, **kw):
        count[0] += 1
        return {"total_loss": float(losses[count[0] - 1] if losses else count[0]), "other": 5.0}

    return LearnMode(forward, lambda *a: None, lambda: ["total_loss"], lambda n: {"batch_size": 2}[n],
                     lambda: {"model": net.state_dict()}, lambda sd: net.load_state_dict(sd["model"]))


OFF = dict(load_ckpt_before_run="", log_show_after_iter=0, save_ckpt_after_iter=0, save_ckpt_after_run=False)


def learner_with(hook: dict | None = None, policy=None, **cfg) -> BaseLearner:
    h = dict(OFF)
    h.update(hook or {})
    return BaseLearner(EasyDict(hook=h, **cfg), policy or make_policy(), exp_name="exp")


class Rec(LearnerHook):
    """Appends ``(name, position, train_iter)`` to ``ext_args.log``."""

    def __init__(self, *args, ext_args=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.log = (ext_args or {}).get("log", [])

    def __call__(self, engine):
        self.log.append((self.name, self.position, engine.train_iter))


@pytest.fixture
def tmp(in_tmp_dir):
    return in_tmp_dir


def test_hooks_run_at_positions_in_priority_then_registration_order(tmp):
    log = []
    with learner_with() as lrn:
        for name, prio, pos in [("c", 50, "after_iter"), ("a", 10, "after_iter"), ("b", 50, "after_iter"),
                                ("d", 50, "before_iter"), ("r0", 1, "before_run"), ("r1", 0, "after_run")]:
            lrn.register_hook(Rec(name, prio, position=pos, ext_args={"log": log}))
        lrn.train([{}])
        lrn.call_hook("before_run")
        lrn.call_hook("after_run")
    assert log == [("d", "before_iter", 0), ("a", "after_iter", 1), ("c", "after_iter", 1), ("b", "after_iter", 1),
                   ("r0", "before_run", 1), ("r1", "after_run", 1)]


def test_add_and_merge_are_stable():
    def mk(name, prio):
        return Rec(name, prio, position="after_iter")

    hooks = {"after_iter": []}
    for h in (mk("x", 20), mk("y", 10), mk("z", 20), mk("w", 10)):
        add_learner_hook(hooks, h)
    assert [h.name for h in hooks["after_iter"]] == ["y", "w", "x", "z"]
    merged = merge_hooks({"after_iter": [mk("p", 20), mk("q", 5)]}, {"after_iter": [mk("r", 20), mk("s", 5)]})
    assert [h.name for h in merged["after_iter"]] == ["q", "s", "p", "r"]
    assert set(merged) == {"before_run", "after_run", "before_iter", "after_iter"}
    with pytest.raises(TypeError, match="expected a LearnerHook instance"):
        add_learner_hook(hooks, object())


def test_shorthands_map_through_the_explicit_table():
    assert HOOK_SHORTHANDS == {
        "load_ckpt_before_run": ("load_ckpt", "before_run"),
        "save_ckpt_after_iter": ("save_ckpt", "after_iter"),
        "save_ckpt_after_run": ("save_ckpt", "after_run"),
        "log_show_after_iter": ("log_show", "after_iter"),
        "log_reduce_after_iter": ("log_reduce", "after_iter"),
    }
    hooks = build_learner_hook_by_cfg(EasyDict(load_ckpt_before_run="x.pth", save_ckpt_after_iter=100,
                                               save_ckpt_after_run=True, log_show_after_iter=10,
                                               log_reduce_after_iter=True))
    kinds = {pos: [(type(h), h.name, h.priority) for h in hs] for pos, hs in hooks.items()}
    assert kinds["before_run"] == [(LoadCkptHook, "load_ckpt", 20)]
    assert kinds["after_run"] == [(SaveCkptHook, "save_ckpt_after_run", 20)]
    assert kinds["after_iter"] == [(LogReduceHook, "log_reduce_after_iter", 10),
                                   (SaveCkptHook, "save_ckpt_after_iter", 20), (LogShowHook, "log_show", 20)]
    assert kinds["before_iter"] == []
    assert all(not hs for hs in build_learner_hook_by_cfg(EasyDict(OFF)).values())  # falsy values install nothing


def test_full_form_and_learner_cfg_accepted():
    log = ["marker"]
    cfg = EasyDict(hook=dict(my_rec=dict(type="test_hook_rec", position="before_iter", priority=3,
                                         ext_args=dict(log=log)),
                             save_ckpt_after_iter=dict(type="save_ckpt", position="after_iter",
                                                       ext_args=dict(freq=7))))
    hooks = build_learner_hook_by_cfg(cfg)  # the learner config itself (with a 'hook' section) is accepted
    (rec, ) = hooks["before_iter"]
    assert isinstance(rec, Rec) and rec.name == "my_rec" and rec.priority == 3 and rec.log == ["marker"]
    (save, ) = hooks["after_iter"]
    assert save.priority == 100 and save._freq == 7  # full form: default priority 100


register_learner_hook("test_hook_rec", Rec)


def test_config_errors_name_the_key_and_suggest():
    with pytest.raises(ConfigError, match="learner.hook.save_ckpt_after_iterr: unknown hook shorthand; did you mean "
                                          "'save_ckpt_after_iter'"):
        build_learner_hook_by_cfg(EasyDict(save_ckpt_after_iterr=10))
    with pytest.raises(RegistryError, match=r"learner.hook.x.type: unknown learner_hook type 'save_ckp'.*"
                                            r"Did you mean 'save_ckpt'"):
        build_learner_hook_by_cfg(EasyDict(x=dict(type="save_ckp", position="after_iter")))
    with pytest.raises(ConfigError, match="hook 'x': unknown position 'after_iteration'; did you mean 'after_iter'"):
        build_learner_hook_by_cfg(EasyDict(x=dict(type="save_ckpt", position="after_iteration")))
    with pytest.raises(ConfigError, match="learner.hook.x: the full form needs 'position'"):
        build_learner_hook_by_cfg(EasyDict(x=dict(type="save_ckpt")))
    with pytest.raises(ConfigError, match="learner.hook.x.ext_arg: unknown key; did you mean 'ext_args'"):
        build_learner_hook_by_cfg(EasyDict(x=dict(type="save_ckpt", position="after_iter", ext_arg={})))
    with pytest.raises(ConfigError, match="priority must be a number >= 0"):
        Rec("neg", -1, position="after_iter")
    with pytest.raises(ConfigError, match="ext_args.freq must be >= 1"):
        SaveCkptHook("s", 1, position="after_iter", ext_args={"freq": 0})
    with pytest.raises(TypeError, match="expected a LearnerHook subclass"):
        register_learner_hook("bad", dict)
    with pytest.raises(AssertionError, match="expected a LearnerHook subclass"):  # DI-engine's form of the error
        register_learner_hook("placeholder", type)


@pytest.mark.parametrize("where", ["learner", "hook"])
def test_plugin_hook_by_type_name_via_import_names(tmp, monkeypatch, where):
    monkeypatch.syspath_prepend(os.path.dirname(__file__))
    monkeypatch.delitem(sys.modules, "_plugin_hooks", raising=False)
    HOOK_REGISTRY.pop("test_plugin_record_iter", None)
    hook_cfg = dict(record=dict(type="test_plugin_record_iter", position="after_iter", priority=5,
                                ext_args=dict(stop_at=3)))
    extra = {"import_names": ["_plugin_hooks"]}
    if where == "hook":
        hook_cfg.update(extra)
        extra = {}
    with learner_with(hook_cfg, **extra) as lrn:
        plugin = sys.modules["_plugin_hooks"]
        plugin.CALLS.clear()
        lrn.get_data = lambda bs: [{}] * bs
        lrn.start()  # the plugin requests a stop at iteration 3
        assert lrn.stop_requested and lrn.train_iter == 3
        assert plugin.CALLS == [("record", 1), ("record", 2), ("record", 3)]
    HOOK_REGISTRY.pop("test_plugin_record_iter", None)
    monkeypatch.delitem(sys.modules, "_plugin_hooks", raising=False)
    with pytest.raises(RegistryError, match="import_names: cannot import module 'no_such_plugin_mod'"):
        learner_with(import_names=["no_such_plugin_mod"])


class Boom(LearnerHook):
    def __call__(self, engine):
        raise ZeroDivisionError("bad math")


class BadCkpt(LearnerHook):
    def __call__(self, engine):
        raise CheckpointError("file x is corrupt")


def test_raising_hook_error_names_hook_and_position(tmp):
    with learner_with() as lrn:
        lrn.register_hook(Boom("boom", 1, position="after_iter"))
        with pytest.raises(LearnerHookError, match=r"learner hook 'boom' \(Boom\) at position 'after_iter' raised "
                                                   r"ZeroDivisionError: bad math \(train_iter=1\)") as e:
            lrn.train([{}])
        assert isinstance(e.value.__cause__, ZeroDivisionError)
    with learner_with() as lrn:
        lrn.register_hook(BadCkpt("ck", 1, position="before_run"))
        with pytest.raises(CheckpointError, match="learner hook 'ck'.*before_run.*file x is corrupt"):
            lrn.call_hook("before_run")  # ding's own error types are kept


def test_load_ckpt_hook_shorthand_and_damaged_file(tmp):
    with learner_with() as lrn:
        lrn.train([{}])
        path = lrn.save_checkpoint()
    with learner_with({"load_ckpt_before_run": path}) as lrn2:
        lrn2.call_hook("before_run")
        assert lrn2.train_iter == 1
    with open(path, "wb") as f:
        f.write(b"garbage")
    with learner_with({"load_ckpt_before_run": path}) as lrn3:
        with pytest.raises(CheckpointError, match="learner hook 'load_ckpt'.*iteration_1.pth.tar.*corrupt"):
            lrn3.call_hook("before_run")


def test_save_ckpt_hooks_frequency_and_after_run(tmp):
    with learner_with({"save_ckpt_after_iter": 2, "save_ckpt_after_run": True}, checkpoint=dict(keep_last=0)) as lrn:
        for _ in range(5):
            lrn.train([{}])
        lrn.call_hook("after_run")
    assert sorted(os.listdir(os.path.join("exp", "ckpt"))) == \
        ["iteration_2.pth.tar", "iteration_4.pth.tar", "iteration_5.pth.tar"]


class Tb:
    def __init__(self):
        self.scalars = []
        self.hist = []

    def add_scalar(self, tag, value, step):
        self.scalars.append((tag, value, step))

    def add_histogram(self, tag, value, step):
        self.hist.append((tag, step))

    def flush(self):
        pass


def test_log_show_averages_over_its_interval(tmp, capsys):
    tb = Tb()
    pol = make_policy(losses=[1, 2, 3, 4, 5, 6])
    h = dict(OFF, log_show_after_iter=3)
    with BaseLearner(EasyDict(hook=h), pol, tb_logger=tb, exp_name="exp") as lrn:
        for i in range(6):
            lrn.train([{}], envstep=10 * (i + 1))
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("[learner] iter 3 | env steps 30 | total_loss 2 | ")
    assert lines[1].startswith("[learner] iter 6 | env steps 60 | total_loss 5 | ") and lines[1].endswith("it/s")
    assert len(lines) == 2
    assert ("learner_iter/total_loss", 2.0, 3) in tb.scalars and ("learner_iter/total_loss", 5.0, 6) in tb.scalars
    assert ("learner_step/total_loss", 5.0, 60) in tb.scalars
    assert ("learner_iter/other", 5.0, 6) in tb.scalars  # every scalar goes to TensorBoard


def test_log_reduce_averages_log_buffer_over_interval(tmp):
    seen = []

    class Read(LearnerHook):
        def __call__(self, engine):
            seen.append(engine.log_buffer["scalar"]["total_loss"])

    cfg = dict(OFF, my_reduce=dict(type="log_reduce", position="after_iter", priority=10, ext_args=dict(freq=2)))
    with learner_with(cfg, policy=make_policy(losses=[1, 3, 5, 9])) as lrn:
        lrn.register_hook(Read("read", 50, position="after_iter"))
        for _ in range(4):
            lrn.train([{}])
    assert seen == [1.0, 2.0, 5.0, 7.0]


def test_stop_request_from_hook(tmp):
    class StopAt2(LearnerHook):
        def __call__(self, engine):
            if engine.train_iter >= 2:
                engine.request_stop()

    with learner_with({"save_ckpt_after_run": True}, train_iterations=100) as lrn:
        lrn.register_hook(StopAt2("stop", 1, position="after_iter"))
        lrn.get_data = lambda bs: [{}] * bs
        lrn.start()
        assert lrn.train_iter == 2 and lrn.stop_requested
        assert os.path.exists(os.path.join("exp", "ckpt", "iteration_2.pth.tar"))  # after_run still ran


def test_show_hooks(capsys):
    hooks = build_learner_hook_by_cfg(EasyDict(save_ckpt_after_run=True, log_show_after_iter=5))
    text = show_hooks(hooks)
    assert capsys.readouterr().out.strip() == text
    assert "after_iter: ['log_show(LogShowHook, priority=20)']" in text
    assert "after_run: ['save_ckpt_after_run(SaveCkptHook, priority=20)']" in text
