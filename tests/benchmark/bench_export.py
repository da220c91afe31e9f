"""Exported policies (``ding -m export``) against ``compute_single_action``: same actions, per-observation latency,
file size. One row per shipped config and format.

    python tests/benchmark/bench_export.py                       # train each config to its stop value first
    python tests/benchmark/bench_export.py --train-iter 20       # a short training instead (what the tests use)
    python tests/benchmark/bench_export.py --smoke               # two configs, a few iterations (the test suite)

Each config is trained with ``ding.Trainer`` (to its stop value, or ``--train-iter`` iterations), loaded with
``ding.load_policy`` and exported to ONNX and TorchScript. The observations are ``--obs`` steps of one evaluator env
(seeded; episodes follow each other) acted on by ``compute_single_action``, which also gives the reference actions;
a recurrent policy (R2D2) is reset at each episode start, and its file is fed zeros there and its own ``next_state``
after. The file's actions for the same observations: ``mismatch`` counts discrete actions that differ,
``max_abs_diff`` is the largest difference of continuous ones. Latency is per observation, median of ``--repeats``:
``compute_single_action`` one at a time, the file one at a time (batch 1) and in one batch of all observations
(batch N; a recurrent file takes the rollout's own states). onnxruntime and torch both use one CPU thread.
"""
# (no ``from __future__ import annotations``: the smoke tests load this file without registering it as a module,
# and dataclasses then cannot resolve string annotations)
import argparse
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# case -> shipped config (config/serial/<name>.py)
CASES = {
    "dqn": "cartpole_dqn", "c51": "cartpole_c51", "rainbow": "cartpole_rainbow", "r2d2": "cartpole_r2d2",
    "ppo_discrete": "cartpole_ppo", "a2c": "cartpole_a2c", "ppo_continuous": "pendulum_ppo", "sac": "pendulum_sac",
    "td3": "pendulum_td3", "ddpg": "pendulum_ddpg",
}
SMOKE_CASES = ("dqn",)
FORMATS = ("onnx", "torchscript")


@dataclass
class Rollout:
    """``obs[i]`` and the action ``compute_single_action`` took for it; ``starts[i]``: an episode starts at i."""

    obs: np.ndarray
    actions: np.ndarray
    starts: np.ndarray
    states: np.ndarray | None  # recurrent: the state each step started from (B, *state_shape)


@dataclass
class Row:
    case: str
    config: str
    format: str
    train_iter: int
    n_obs: int
    mismatch: int  # discrete actions that differ (continuous: actions beyond 1e-5)
    max_abs_diff: float
    size_kb: float
    export_s: float
    single_action_us: float  # compute_single_action, per observation
    batch1_us: float  # the file, one observation per call
    batchN_us: float  # the file, all observations in one call, per observation


def train(config: str, workdir: str, train_iter: int | None, seed: int = 0) -> str:
    """A run of ``config/serial/<config>.py`` in ``workdir``: to its stop value, or ``train_iter`` iterations."""
    import ding
    from ding.config import read_config

    main, create = read_config(os.path.join(ROOT, "config", "serial", f"{config}.py"))
    main.exp_name = os.path.join(workdir, f"{config}_seed{seed}")
    main.policy.learn.learner = dict(hook=dict(log_show_after_iter=10**9))
    with ding.Trainer((main, create), seed=seed, max_train_iter=train_iter) as trainer:
        trainer.run()
        return trainer.exp_dir


def rollout(policy: Any, n_obs: int, seed: int = 0) -> Rollout:
    """``n_obs`` observations of one evaluator env of the policy's config, acted on by ``compute_single_action``."""
    from ding.envs import get_vec_env_setting

    env_fn, _, cfgs = get_vec_env_setting(policy.cfg.env, collect=False)
    env = env_fn(cfgs[0])
    env.seed(seed, dynamic_seed=True)
    recurrent = hasattr(policy.policy, "_eval_state")
    obs_list, actions, starts, states = [], [], [], []
    try:
        obs, start = env.reset(), True
        policy.reset()
        while len(obs_list) < n_obs:
            if recurrent:
                saved = policy.policy._eval_state.get(0)
                states.append(np.zeros((2, policy.policy._model.hidden_size), np.float32) if saved is None
                              else saved.numpy().copy())
            action = policy.compute_single_action(obs)
            obs_list.append(np.asarray(obs))
            actions.append(np.asarray(action))
            starts.append(start)
            timestep = env.step(action)
            obs, start = timestep.obs, bool(timestep.done)
            if timestep.done:
                obs = env.reset()
                policy.reset()
    finally:
        env.close()
    return Rollout(np.stack(obs_list), np.stack(actions), np.array(starts), np.stack(states) if recurrent else None)


class FileActor:
    """An exported file behind one call: ``act(obs_batch[, state]) -> (action, next_state or None)``."""

    def __init__(self, path: str, fmt: str) -> None:
        from ding.policy.export import read_metadata

        self.meta = read_metadata(path)
        self.fmt = fmt
        if fmt == "onnx":
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = options.inter_op_num_threads = 1
            self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        else:
            import warnings

            import torch

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self.module = torch.jit.load(path)

    def act(self, obs: np.ndarray, state: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        if self.fmt == "onnx":
            feed = {"obs": obs} if state is None else {"obs": obs, "state": state}
            out = self.session.run(None, feed)
        else:
            import torch

            with torch.no_grad():
                args = (torch.from_numpy(obs),) if state is None else (torch.from_numpy(obs), torch.from_numpy(state))
                result = self.module(*args)
            out = [t.numpy() for t in (result if isinstance(result, tuple) else (result,))]
        return out[0], (out[1] if state is not None else None)


def file_actions(actor: FileActor, ro: Rollout) -> np.ndarray:
    """The file's actions for the rollout's observations: one batch (feed-forward), or step by step with the
    state threaded through and zeroed at each episode start (recurrent)."""
    obs = ro.obs.astype(actor.meta["obs_dtype"])
    if ro.states is None:
        return actor.act(obs)[0]
    state = np.zeros((1, *actor.meta["state_shape"]), np.float32)
    out = []
    for i in range(len(obs)):
        if ro.starts[i]:
            state = np.zeros_like(state)
        action, state = actor.act(obs[i:i + 1], state)
        out.append(action[0])
    return np.stack(out)


def compare(expected: np.ndarray, got: np.ndarray, kind: str) -> tuple[int, float]:
    """(how many actions differ, the largest absolute difference); continuous actions differ beyond 1e-5."""
    if expected.shape != got.shape:
        raise AssertionError(f"action shapes differ: compute_single_action {expected.shape}, file {got.shape}")
    diff = np.abs(expected.astype(np.float64) - got.astype(np.float64)).reshape(len(expected), -1).max(axis=1)
    if kind == "discrete":
        return int((diff != 0).sum()), float(diff.max(initial=0.0))
    return int((diff > 1e-5).sum()), float(diff.max(initial=0.0))


def _per_obs_us(fn: Any, n: int, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(times)


def _run_one_by_one(actor: FileActor, obs: np.ndarray, states: np.ndarray | None, n: int) -> None:
    for i in range(n):
        actor.act(obs[i:i + 1], None if states is None else states[i:i + 1])


def measure(case: str, run_dir: str, workdir: str, n_obs: int, repeats: int) -> list[Row]:
    import ding

    policy = ding.load_policy(run_dir, which="latest")  # the weights training ended with
    ro = rollout(policy, n_obs)
    kind = "discrete" if ro.actions.dtype.kind in "iu" else "continuous"
    n_lat = min(200, n_obs)

    def single() -> None:
        for o in ro.obs[:n_lat]:
            policy.compute_single_action(o)
            if ro.states is not None:
                policy.reset()

    single_us = _per_obs_us(single, n_lat, repeats)
    rows = []
    for fmt in FORMATS:
        path = os.path.join(workdir, f"{case}.{'onnx' if fmt == 'onnx' else 'pt'}")
        t0 = time.perf_counter()
        info = policy.export(path, fmt)
        export_s = time.perf_counter() - t0
        actor = FileActor(path, fmt)
        mismatch, max_diff = compare(ro.actions, file_actions(actor, ro), kind)
        obs = ro.obs.astype(actor.meta["obs_dtype"])
        states = None if ro.states is None else ro.states.astype(np.float32)

        batch1 = functools.partial(_run_one_by_one, actor, obs, states, n_lat)
        batch_n = functools.partial(actor.act, obs, states)
        rows.append(Row(case, CASES[case], fmt, int(policy.train_iter or 0), len(obs), mismatch, max_diff,
                        info.size_bytes / 1024, export_s, single_us, _per_obs_us(batch1, n_lat, repeats),
                        _per_obs_us(batch_n, len(obs), repeats)))
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cases", nargs="*", default=None, help=f"subset of {', '.join(CASES)}")
    p.add_argument("--train-iter", type=int, default=None, help="train this many iterations (default: to the stop "
                                                                    "value)")
    p.add_argument("--obs", type=int, default=1000, help="observations per config")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--smoke", action="store_true", help="dqn only, 5 iterations, 100 observations, 1 repeat")
    args = p.parse_args(argv)
    if args.smoke:
        cases, args.train_iter, args.obs, args.repeats = list(SMOKE_CASES), 5, 100, 1
    else:
        cases = args.cases or list(CASES)
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        p.error(f"unknown cases {unknown}; choose from {', '.join(CASES)}")
    from ding.utils import setup_torch_threads

    setup_torch_threads()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench_export_") as workdir:
        print(f"{'case':<15} {'format':<12} {'iter':>6} {'obs':>5} {'mismatch':>8} {'max_diff':>9} {'KiB':>7} "
              f"{'single us':>9} {'b1 us':>7} {'bN us':>7}")
        for case in cases:
            run_dir = train(CASES[case], workdir, args.train_iter)
            for row in measure(case, run_dir, workdir, args.obs, args.repeats):
                print(f"{row.case:<15} {row.format:<12} {row.train_iter:>6} {row.n_obs:>5} {row.mismatch:>8} "
                      f"{row.max_abs_diff:>9.2e} {row.size_kb:>7.1f} {row.single_action_us:>9.1f} "
                      f"{row.batch1_us:>7.1f} {row.batchN_us:>7.2f}")
                results.append(asdict(row))
        for r in results:
            print(json.dumps(r))
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
