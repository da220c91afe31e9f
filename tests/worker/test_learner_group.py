"""Several learners: the learner group on real ``torch.distributed`` (gloo over loopback, free ports, real processes),
and the pure parts (shares of a batch, merged infos). The whole path through ``ding -m parallel`` is in
tests/e2e/test_two_learners.py."""
from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections import namedtuple

import numpy as np
import pytest

from ding.parallel.roles.learner_group import LearnerAggregator, LearnerGroup, LearnerGroupError, split_batch
from ding.parallel.roles.learner_group.aggregator import params_digest

View = namedtuple("View", ["forward"])
TOKEN = "t" * 32


class _TinyPolicy:
    """A model and its optimizer as policy attributes, like ding's and DI-engine's policies keep them."""

    def __init__(self, seed: int) -> None:
        import torch

        from ding.torch_utils.fast_import import make_adam

        torch.manual_seed(seed)
        self._model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
        self._optimizer = make_adam(list(self._model.parameters()), lr=0.05, fused=True)  # as ding's policies

    def forward(self, x):
        loss = (self._model(x) - 1.0).pow(2).mean()
        self._optimizer.zero_grad()
        loss.backward()
        self._optimizer.step()
        return {"loss": float(loss.detach())}


def _member(rank: int, size: int, path: str, out) -> None:
    import torch

    from ding.parallel.roles.learner_group.aggregator import attach_policy

    try:
        group = (LearnerGroup.host(path, "127.0.0.1", "127.0.0.1", size, "gloo", 30.0, "learner0", TOKEN)
                 if rank == 0 else LearnerGroup.join(path, rank, size, 30.0, f"learner{rank}", TOKEN))
        averaged = _TinyPolicy(seed=100 + rank)  # different initial weights on purpose: rank 0's are taken
        attach_policy(View(averaged.forward), group)
        control = _TinyPolicy(seed=200 + rank)  # the control: the same start, no gradient averaging
        group.broadcast_tensors([p.data for p in control._model.parameters()])
        x = torch.randn(16, 4, generator=torch.Generator().manual_seed(rank))  # each rank's own share
        for _ in range(20):
            averaged.forward(x)
            control.forward(x)
        out.put((rank, (params_digest(View(averaged.forward)), params_digest(View(control.forward)))))
        group.close(path if rank == 0 else None)
    except BaseException as e:  # noqa: BLE001
        out.put((rank, f"error {type(e).__name__}: {e}"))


def _run_group(tmp_path, size: int, target=None, args=None) -> dict:
    """Run ``target(*args(rank, path), out)`` (default: :func:`_member`) in ``size`` forked processes; their
    ``(rank, answer)`` puts as a dict, and whether the rendezvous file was left behind."""
    ctx = mp.get_context("fork")  # (torch is imported, no thread of it started: the children start at once)
    out = ctx.Queue()
    path = str(tmp_path / "learner_group.json")
    target, args = target or _member, args or (lambda r, p: (r, size, p))
    procs = [ctx.Process(target=target, args=(*args(r, path), out)) for r in range(size)]
    for p in procs:
        p.start()
    try:
        got = dict(out.get(timeout=90) for _ in range(size))
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
                p.join()
    got["file_left"] = os.path.exists(path)
    return got


@pytest.mark.timeout(120)
def test_two_learners_averaging_gradients_end_with_bit_identical_parameters(tmp_path):
    """Two real processes in a gloo group, each training on its own data from different initial weights: with
    averaged gradients the parameters are bit-identical after 20 steps; the control (the same start, no averaging)
    drifts apart, so the comparison can fail."""
    got = _run_group(tmp_path, 2)
    assert not any(isinstance(v, str) for v in got.values()), got
    assert not got["file_left"], "rank 0 leaves no rendezvous file behind"
    (avg0, ctl0), (avg1, ctl1) = got[0], got[1]
    assert avg0 == avg1
    assert ctl0 != ctl1


def _wired_log_reduce(group: LearnerGroup):
    """What a learner in a group has after its before-run hooks: a LogReduceHook (it averages the logged scalars over
    the ranks after each iteration), wired to the group the way the aggregator's before-run hook wires it."""
    from types import SimpleNamespace

    from ding.parallel.roles.learner_group.aggregator import _GroupHook
    from ding.worker.learner import LogReduceHook

    hook = LogReduceHook("log_reduce_after_iter", 10, position="after_iter")
    engine = SimpleNamespace(policy=View(_TinyPolicy(seed=0).forward), hooks={"after_iter": [hook]},
                             log_buffer={"scalar": {"loss": 1.0}}, train_iter=0, world_size=2)
    _GroupHook(group, "before_run")(engine)  # (a collective: rank 0's tensors are broadcast)
    return hook, engine


def _lose_member(rank: int, path: str, out, collective: str = "gather") -> None:
    try:
        group = (LearnerGroup.host(path, "127.0.0.1", "127.0.0.1", 2, "gloo", 20.0, "learner0", TOKEN) if rank == 0
                 else LearnerGroup.join(path, rank, 2, 20.0, "learner1", TOKEN))
        wired = _wired_log_reduce(group) if collective == "log_reduce" else None
        if rank == 1:
            os._exit(3)  # the member is lost (as if killed) right after the group formed
        time.sleep(0.5)
        t0 = time.monotonic()
        try:
            if wired is not None:
                hook, engine = wired
                for i in range(100):
                    engine.train_iter = i + 1
                    hook(engine)
            else:
                for _ in range(100):
                    group.gather(b"x")
            out.put("no error")
        except LearnerGroupError as e:
            out.put(f"{time.monotonic() - t0:.1f} {e}")
        group.close(path)
    except BaseException as e:  # noqa: BLE001
        out.put(f"setup error {type(e).__name__}: {e}")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("collective", ["gather", "log_reduce"])
def test_a_lost_member_is_one_clear_error_at_rank_0_not_a_hang(tmp_path, collective):
    """Every collective a learner in a group makes names the lost member the same way: the group's own (gather) and
    the averaging of logged scalars by the learner's LogReduceHook (it used to surface as gloo's raw error)."""
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    path = str(tmp_path / "learner_group.json")
    procs = [ctx.Process(target=_lose_member, args=(r, path, out, collective)) for r in range(2)]
    for p in procs:
        p.start()
    try:
        msg = out.get(timeout=90)
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
                p.join()
    seconds, _, text = msg.partition(" ")
    assert "the learner group broke" in text and "rank 0 of 2" in text and "not rebuilt" in text, msg
    assert float(seconds) < 15.0, msg  # the group timeout is 20 s: the lost peer is noticed, not waited out


def test_joining_without_a_leader_fails_within_group_timeout_naming_the_file(tmp_path):
    path = str(tmp_path / "learner_group.json")
    t0 = time.monotonic()
    with pytest.raises(LearnerGroupError, match="could not join the learner group through .*learner_group.json"):
        LearnerGroup.join(path, 1, 2, 1.0, "learner1", TOKEN)
    assert time.monotonic() - t0 < 5.0


def test_a_rendezvous_file_for_another_group_size_is_refused(tmp_path):
    path = tmp_path / "learner_group.json"
    path.write_text('{"host": "127.0.0.1", "port": 1, "size": 3, "backend": "gloo"}')
    with pytest.raises(LearnerGroupError, match="announces a group of 3 learners.*started for 2"):
        LearnerGroup.join(str(path), 1, 2, 5.0, "learner1", TOKEN)


def test_shares_are_contiguous_and_cover_the_batch():
    batch = list(range(7))
    shares = split_batch(batch, 2)
    assert shares == [[0, 1, 2, 3], [4, 5, 6]]
    assert split_batch([1], 3) == [[1], [1], [1]]  # shorter than the group: repeated, no rank trains on nothing
    with pytest.raises(ValueError, match="empty batch"):
        split_batch([], 2)


def test_merge_info_concatenates_the_shares_in_rank_order():
    infos = [dict(priority=np.array([1.0, 2.0]), replay_unique_id=["a", "b"], replay_buffer_idx=[0, 1]),
             dict(priority=np.array([3.0]), replay_unique_id=["c"], replay_buffer_idx=[2])]
    merged = LearnerAggregator.merge_info(infos)
    assert merged["priority"].tolist() == [1.0, 2.0, 3.0]
    assert merged["replay_unique_id"] == ["a", "b", "c"] and merged["replay_buffer_idx"] == [0, 1, 2]
    cut = LearnerAggregator.merge_info([dict(p=[1]), dict(p=[1])], n=1)  # a padded batch of one sample
    assert cut == dict(p=[1])
    assert LearnerAggregator.merge_info([None, None]) is None


def _member_with_token(rank: int, path: str, token: str, out) -> None:
    try:
        group = (LearnerGroup.host(path, "127.0.0.1", "127.0.0.1", 2, "gloo", 20.0, "learner0", token) if rank == 0
                 else LearnerGroup.join(path, rank, 2, 20.0, "learner1", token))
        out.put((rank, "formed"))
        group.close(path if rank == 0 else None)
    except LearnerGroupError as e:
        out.put((rank, str(e)))


@pytest.mark.timeout(120)
def test_a_member_with_another_token_is_refused_by_name_before_anything_is_sent(tmp_path):
    """Issue 36, item 1: membership is proven with the run's token (torch.distributed checks nothing), both ways."""
    got = _run_group(tmp_path, 2, _member_with_token, lambda r, p: (r, p, ("a" if r == 0 else "b") * 32))
    assert "rank(s) 1 of the learner group did not prove the run's auth token" in got[0], got
    assert "rank(s) 0 of the learner group did not prove the run's auth token" in got[1], got
    assert not got["file_left"], "learner0 left its rendezvous file behind"
