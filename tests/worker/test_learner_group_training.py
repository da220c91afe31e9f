"""Several learners train as one learner would: ding's real policies in a real two-member gloo group (loopback, free
port, forked processes), wired by the group's own hooks. BatchNorm statistics stay identical, a hand-clipped
gradient is clipped after the allreduce, and each member draws its own noise from a seed derived from the run's."""
from __future__ import annotations

import multiprocessing as mp
from types import SimpleNamespace

import numpy as np
import pytest

from ding.parallel.roles.learner_group import LearnerGroup, split_batch
from ding.parallel.roles.learner_group.aggregator import _GroupHook, member_seed, params_digest

pytestmark = pytest.mark.timeout(120)
TOKEN = "t" * 32  # the run's auth token every member proves


def _in_group(rank: int, path: str, fn, out) -> None:
    try:
        group = (LearnerGroup.host(path, "127.0.0.1", "127.0.0.1", 2, "gloo", 30.0, "learner0", TOKEN) if rank == 0
                 else LearnerGroup.join(path, rank, 2, 30.0, f"learner{rank}", TOKEN))
        try:
            out.put((rank, fn(rank, group)))
        finally:
            group.close(path if rank == 0 else None)
    except BaseException as e:  # noqa: BLE001 -- reported to the test
        out.put((rank, f"error {type(e).__name__}: {e}"))


def run_two(tmp_path, fn) -> list:
    """``fn(rank, group)`` in two forked processes forming one group; their results in rank order."""
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    path = str(tmp_path / "learner_group.json")
    procs = [ctx.Process(target=_in_group, args=(r, path, fn, out)) for r in range(2)]
    for p in procs:
        p.start()
    try:
        got = dict(out.get(timeout=100) for _ in range(2))
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
                p.join()
    for r in range(2):
        assert not (isinstance(got[r], str) and got[r].startswith("error")), got[r]
    return [got[0], got[1]]


def _engine(view, n: int, seed: int = 0):
    """What the group's hooks read of a BaseLearner: the policy view, the hooks, the iteration, the priority info."""
    return SimpleNamespace(policy=view, hooks={"after_iter": []}, train_iter=0, priority_info={}, world_size=2,
                           batch_len=lambda: n, seed=seed)


def _hooks(group: LearnerGroup, engine) -> tuple[_GroupHook, _GroupHook]:
    return (_GroupHook(group, "before_run", seed=engine.seed),
            _GroupHook(group, "after_iter", engine.batch_len if group.rank == 0 else None))


# ---------------------------------------------------------------------------------------------- BatchNorm buffers
def _dqn_samples(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"obs": rng.standard_normal(4).astype(np.float32) * (1 + i % 3),
             "next_obs": rng.standard_normal(4).astype(np.float32), "action": np.array(i % 2, dtype=np.int64),
             "reward": np.array([1.0], np.float32), "done": bool(i % 5 == 0)} for i in range(n)]


def _bn_dqn(rank: int, group: LearnerGroup):
    import torch

    from ding.policy import DQNPolicy

    torch.manual_seed(rank)  # different starts: the group gives every member rank 0's tensors
    policy = DQNPolicy(dict(model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16, 16],
                                       norm_type="BN"), learn=dict(batch_size=32)), enable_field=["learn"])
    engine = _engine(policy.learn_mode, 32)
    before, after = _hooks(group, engine)
    before(engine)
    start = policy._model.state_dict()
    bn = [k for k in start if k.endswith("running_mean")]
    start_mean = start[bn[0]].clone()
    for it in range(6):
        share = split_batch(_dqn_samples(32, seed=it), 2)[rank]  # the shares differ (obs scales 1..3 by index)
        policy.learn_mode.forward(share)
        engine.train_iter = it + 1
        after(engine)
    moved = float((policy._model.state_dict()[bn[0]] - start_mean).abs().max())
    return params_digest(policy.learn_mode), len(bn), moved


def test_a_batchnorm_model_keeps_identical_running_statistics_on_both_learners(tmp_path):
    """Only gradients were averaged: each member's BatchNorm statistics followed its own share, the end-of-run
    check found the members different and failed the run."""
    (d0, n_bn, moved0), (d1, _, _) = run_two(tmp_path, _bn_dqn)
    assert n_bn >= 1 and moved0 > 1e-3  # a model with BatchNorm, whose statistics moved
    assert d0 == d1


# ---------------------------------------------------------------------------------------------- gradient clipping
def _a2c_samples(n: int) -> list[dict]:
    rng = np.random.default_rng(7)
    return [{"obs": rng.standard_normal(4).astype(np.float32), "next_obs": rng.standard_normal(4).astype(np.float32),
             "action": np.array(i % 2, dtype=np.int64), "logit": rng.standard_normal(2).astype(np.float32),
             "value": np.float32(0.0), "reward": np.array([rng.standard_normal() * 5], np.float32),
             "done": False, "traj_flag": True} for i in range(n)]  # each sample its own segment: GAE per sample


def _a2c(seed: int, batch_size: int):
    import torch

    from ding.policy import A2CPolicy

    torch.manual_seed(seed)
    return A2CPolicy(dict(model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[16, 16]),
                          learn=dict(batch_size=batch_size, grad_norm=0.05, learning_rate=0.01),
                          collect=dict(discount_factor=0.9)), enable_field=["learn"])


def _clipped_a2c(rank: int, group: LearnerGroup):
    import torch

    data = _a2c_samples(32)
    policy = _a2c(seed=0, batch_size=32)
    engine = _engine(policy.learn_mode, 32)
    before, after = _hooks(group, engine)
    before(engine)
    norms = []
    for it in range(5):
        norms.append(policy.learn_mode.forward(split_batch(data, 2)[rank])[0]["grad_norm"])
        engine.train_iter = it + 1
        after(engine)
    if rank != 0:
        return None
    alone = _a2c(seed=0, batch_size=32)  # the same start, one learner on the whole batch
    alone_norms = [alone.learn_mode.forward(data)[0]["grad_norm"] for _ in range(5)]
    diff = max(float((a - b).abs().max()) for a, b in zip(policy._model.state_dict().values(),
                                                         alone._model.state_dict().values()))
    return diff, norms, alone_norms, bool(torch.is_tensor(norms[0]))


def test_a_hand_clipped_gradient_is_clipped_after_the_allreduce_as_one_learner_would(tmp_path):
    """A2C/PPO clip by hand before their optimizer steps; the group averaged in the step's pre-hook, after the clip,
    so two learners differed from one on the whole batch (by up to 0.19 after 5 steps)."""
    got, _ = run_two(tmp_path, _clipped_a2c)
    diff, norms, alone_norms, _ = got
    assert min(alone_norms) > 0.05  # the clip is active at every step: a wrong order shows
    np.testing.assert_allclose(norms, alone_norms, rtol=1e-4)  # the norm of the mean gradient, as one learner's
    assert diff < 1e-5


# ---------------------------------------------------------------------------------------------- seeds per member
def _draws(rank: int, group: LearnerGroup):
    import torch

    from ding.utils import set_pkg_seed

    seed = 3
    set_pkg_seed(seed)  # as every member's builder seeds from the run's seed
    policy = _a2c(seed=seed, batch_size=8)
    engine = _engine(policy.learn_mode, 8, seed=seed)
    _hooks(group, engine)[0](engine)
    return torch.rand(4).tolist(), np.random.rand(4).tolist()


def test_each_member_draws_its_own_noise_from_a_seed_derived_from_the_run_s(tmp_path):
    import torch

    from ding.utils import set_pkg_seed

    (t0, n0), (t1, n1) = run_two(tmp_path, _draws)
    assert t0 != t1 and n0 != n1  # not the same noise for different shares of the batch
    set_pkg_seed(member_seed(3, 1, 0))  # rank 1's is reproducible from the run's seed
    assert torch.rand(4).tolist() == t1 and np.random.rand(4).tolist() == n1
    assert len({member_seed(3, r, 0) for r in range(1, 9)} | {member_seed(4, 1, 0), member_seed(3, 1, 100)}) == 10
