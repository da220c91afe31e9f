"""A NaN/Inf loss stops training with the iteration and the loss term named, and never reaches a checkpoint."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from easydict import EasyDict

from ding.utils import ConfigError, TrainingError
from ding.worker.learner import BaseLearner, load_checkpoint_file

from .test_learner import FakeLearnPolicy, make_batch, quiet_cfg


def nan_batch() -> list[dict]:
    batch = make_batch()
    batch[1]["target"] = np.array([np.nan, 0.0], dtype=np.float32)
    return batch


def ckpts() -> list[str]:
    return sorted(os.listdir("exp/ckpt"))


def finite(path: str) -> bool:
    model = load_checkpoint_file(path)["model"]
    return all(bool(torch.isfinite(t).all()) for t in model.values())


def test_nan_loss_raises_naming_iteration_and_term_and_keeps_the_last_finite_checkpoint(in_tmp_dir):
    pol = FakeLearnPolicy()
    with BaseLearner(quiet_cfg(save_ckpt_after_iter=1), pol.mode(), exp_name="exp") as lrn:
        lrn.train(make_batch())
        lrn.train(make_batch(seed=1))
        assert ckpts() == ["iteration_1.pth.tar", "iteration_2.pth.tar"]
        with pytest.raises(TrainingError, match=r"train iteration 3: non-finite loss total_loss=nan\. Training stopped;"
                                                r" no checkpoint of these parameters was written \(the last checkpoint "
                                                r"written is \./exp/ckpt/iteration_2\.pth\.tar\)"):
            lrn.train(nan_batch())
        assert lrn.train_iter == 2  # the failed update is not counted and no after_iter hook ran
    assert ckpts() == ["iteration_1.pth.tar", "iteration_2.pth.tar"]
    assert finite("exp/ckpt/iteration_2.pth.tar")


def test_inf_loss_is_caught_too(in_tmp_dir):
    pol = FakeLearnPolicy()
    batch = make_batch()
    batch[0]["target"] = np.array([np.inf, 0.0], dtype=np.float32)
    with BaseLearner(quiet_cfg(), pol.mode(), exp_name="exp") as lrn:
        with pytest.raises(TrainingError, match=r"train iteration 1: non-finite loss total_loss=inf.*this learner "
                                                r"wrote no checkpoint yet.*nan_policy='warn' trains on instead"):
            lrn.train(batch)


def test_warn_policy_trains_on_but_writes_no_checkpoint_of_nan_parameters(in_tmp_dir):
    pol = FakeLearnPolicy()
    cfg = quiet_cfg(save_ckpt_after_iter=1)
    cfg.nan_policy = "warn"
    with BaseLearner(cfg, pol.mode(), exp_name="exp") as lrn:
        lrn.train(make_batch())
        lrn.train(nan_batch())  # the NaN target makes the parameters NaN after this step
        lrn.train(make_batch())
        assert lrn.train_iter == 3
        assert lrn.save_checkpoint() is None
    assert ckpts() == ["iteration_1.pth.tar"]
    log = open("exp/log/learner/learner_logger.txt").read()
    assert "train iteration 2: non-finite loss total_loss=nan (1 such iteration(s) so far; nan_policy='warn'" in log
    assert "not writing checkpoint ./exp/ckpt/iteration_2.pth.tar: parameters model.weight, model.bias are " \
           "NaN/Inf (./exp/ckpt/iteration_1.pth.tar stays the newest)" in log


def test_nan_parameters_are_never_saved_even_when_the_loss_was_finite(in_tmp_dir):
    pol = FakeLearnPolicy()
    with BaseLearner(quiet_cfg(), pol.mode(), exp_name="exp") as lrn:
        lrn.train(make_batch())
        assert lrn.save_checkpoint() == "./exp/ckpt/iteration_1.pth.tar"
        with torch.no_grad():
            pol.target_model.weight[0, 0] = float("nan")
        with pytest.raises(TrainingError, match=r"not writing checkpoint \./exp/ckpt/ckpt_best\.pth\.tar: parameters "
                                                r"target_model\.weight are NaN/Inf"):
            lrn.save_checkpoint("ckpt_best.pth.tar")
    assert ckpts() == ["iteration_1.pth.tar"]


def test_unknown_nan_policy(in_tmp_dir):
    with pytest.raises(ConfigError, match=r"learner\.nan_policy: 'ignore' is not 'raise' or 'warn'"):
        BaseLearner(EasyDict(nan_policy="ignore"), FakeLearnPolicy().mode(), exp_name="exp")
