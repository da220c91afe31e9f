"""Atari (Pong, DQN with the Nature CNN): replay memory per transition, collector and learner throughput.

    python tests/benchmark/bench_atari.py memory        # bytes per stored transition, measured; 1M extrapolated
    python tests/benchmark/bench_atari.py collector     # env steps/s, 8 envs + Nature CNN, against envpool's
    python tests/benchmark/bench_atari.py learner       # DQN updates/s, batch 32, against a bare torch loop
    python tests/benchmark/bench_atari.py all --repeats 3
    python tests/benchmark/bench_atari.py all --smoke   # tiny sizes (checks the script runs)

memory: a real collector fills a replay buffer; the bytes are counted over the distinct objects the buffer holds
(each array, frame and record once, however many transitions point at it): the buffer keeps each 84x84 frame of the
uint8 stacks once (``frame_sharing.py``); ``sample_32_ms`` is one draw of 32 items with their stacks rebuilt.
collector: ding's ``SampleSerialCollector`` with the DQN policy's collect forward (eps-greedy on the Nature CNN) and
8 Pong envs in the ``env_pool`` manager and in the ``subprocess`` manager, against the ceiling: envpool stepping the
same 8 envs with the argmax of the same Nature CNN in a bare loop (env stepping plus the policy's own forward,
nothing else). learner: ding's ``learn_mode.forward`` on batches of 32 sampled from the buffer (collate, uint8 ->
float on the device, double DQN, target network, Adam) against a bare torch loop doing the same update on the same
samples. Each ratio is measured side by side in one run, medians over ``--repeats``; on a shared machine the
absolute figures move, the ratios less.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)


def pong_dqn(exp_dir: str, n_env: int, manager: str = "subprocess") -> tuple[dict, dict]:
    main = dict(
        exp_name=os.path.join(exp_dir, "bench_atari"),
        env=dict(collector_env_num=n_env, evaluator_env_num=1, n_evaluator_episode=1, stop_value=20,
                 env_id="PongNoFrameskip-v4", frame_stack=4),
        policy=dict(
            cuda=False, priority=False,
            model=dict(obs_shape=[4, 84, 84], action_shape=6),  # no encoder list: the Nature CNN
            nstep=1, discount_factor=0.99,
            learn=dict(update_per_collect=1, batch_size=32, learning_rate=1e-4, target_update_freq=500,
                       learner=dict(hook=dict(log_show_after_iter=10**9))),
            collect=dict(n_sample=8 * n_env),
            eval=dict(evaluator=dict(eval_freq=10**9)),
            other=dict(eps=dict(type="exp", start=1.0, end=0.05, decay=250000),
                       replay_buffer=dict(replay_buffer_size=100000)),
        ),
    )
    create = dict(env=dict(type="atari", import_names=["dizoo.atari.envs.atari_env"]),
                  env_manager=dict(type=manager), policy=dict(type="dqn"))
    return main, create


def deep_bytes(obj: Any, seen: set[int]) -> int:
    """Bytes of ``obj`` and what it holds, each object counted once (numpy arrays: header + data)."""
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if type(obj).__name__ == "FrameStack":  # frames kept once (ding/worker/replay_buffer/frame_sharing.py)
        return sys.getsizeof(obj) + deep_bytes(obj.frames, seen)
    if isinstance(obj, np.ndarray):
        return sys.getsizeof(obj) if obj.base is None else sys.getsizeof(obj) + deep_bytes(obj.base, seen)
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(deep_bytes(k, seen) + deep_bytes(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple)):
        size += sum(deep_bytes(v, seen) for v in obj)
    return size


def fill(trainer: Any, n: int) -> list[dict]:
    run = trainer._run
    while run.buffer.count() < n:
        samples = run.collector.collect(n_sample=run.cfg.policy.collect.n_sample, train_iter=0,
                                        policy_kwargs={"eps": 1.0})
        run.buffer.push(samples, 0)
    return [x for x in run.buffer._storage.data if x is not None]


def bench_memory(n: int) -> dict:
    import ding

    with tempfile.TemporaryDirectory() as d, ding.Trainer(pong_dqn(d, 8), max_train_iter=1) as trainer:
        items = fill(trainer, n)
        buffer = trainer._run.buffer
        times = []
        for _ in range(50):  # a learner's draw: 32 items, their stacks rebuilt from single frames
            t = time.perf_counter()
            buffer.sample(32, 0)
            times.append(time.perf_counter() - t)
        total = deep_bytes(items, set())
        frames = sum(x["obs"].nbytes for x in items)
        per = total / len(items)
        return {"transitions": len(items), "bytes_per_transition": round(per),
                "obs_bytes": items[0]["obs"].nbytes, "stored_as": type(items[0]["obs"]).__name__,
                "next_obs_shared": sum(a["next_obs"] is b["obs"] for a, b in zip(items, items[1:])) / len(items),
                "GB_per_1M": round(per * 1e6 / 1e9, 1),
                "sample_32_ms": round(statistics.median(times) * 1e3, 2), "GB_per_100k": round(per * 1e5 / 1e9, 2),
                "GB_per_1M_if_float32_unshared": round((frames * 2 * 4 / len(items) + per - frames / len(items))
                                                       * 1e6 / 1e9, 1)}


def ceiling_loop(task: Any, model: Any, steps: int) -> float:
    """Env steps/s of envpool stepping 8 envs with the Nature CNN's argmax actions, nothing else (the ceiling)."""
    import envpool
    import torch

    pool = envpool.make(task.task_id, env_type="gymnasium", num_envs=8, batch_size=8, env_seed=list(range(8)),
                        **task.options)
    try:
        obs, _ = pool.reset()
        ids = np.arange(8, dtype=np.int32)
        t, done = time.perf_counter(), 0
        while done < steps:
            with torch.inference_mode():
                act = model(torch.from_numpy(obs).float().div_(255))["logit"].argmax(1).numpy()
            obs = pool.step(act.astype(np.int32), ids)[0]
            done += 8
        return done / (time.perf_counter() - t)
    finally:
        pool.close()


def bench_collector(steps: int, repeats: int) -> dict:
    """ding's collector (DQN collect forward, eps 0.1) in the env_pool and subprocess managers against the ceiling:
    envpool stepping the same 8 Pong envs with the argmax of the same Nature CNN in a bare loop."""
    import ding

    rates: dict[str, list[float]] = {"ceiling": [], "env_pool": [], "subprocess": []}
    with tempfile.TemporaryDirectory() as d, ding.Trainer(pong_dqn(d, 8, "env_pool"), max_train_iter=1) as pool_tr, \
            ding.Trainer(pong_dqn(d, 8, "subprocess"), max_train_iter=1) as sub_tr:
        runs = {"env_pool": pool_tr._run, "subprocess": sub_tr._run}
        model = pool_tr.policy.collect_mode.get_attribute("model")
        task = runs["env_pool"].collector._env.task
        for run in runs.values():
            run.collector.collect(n_sample=64, train_iter=0, policy_kwargs={"eps": 0.1})  # warm-up
        ceiling_loop(task, model, 64)
        for _ in range(repeats):
            rates["ceiling"].append(ceiling_loop(task, model, steps))
            for name, run in runs.items():
                t = time.perf_counter()
                got = len(run.collector.collect(n_sample=steps, train_iter=0, policy_kwargs={"eps": 0.1}))
                rates[name].append(got / (time.perf_counter() - t))
    out: dict[str, Any] = {f"{k}_steps_per_s": round(statistics.median(v), 1) for k, v in rates.items()}
    for name in ("env_pool", "subprocess"):
        out[f"{name}_over_ceiling"] = round(statistics.median(a / b for a, b in zip(rates[name], rates["ceiling"])), 2)
    return out


def bench_learner(iters: int, repeats: int) -> dict:
    import torch

    import ding
    from ding.model import DQN

    ours, bare = [], []
    with tempfile.TemporaryDirectory() as d, ding.Trainer(pong_dqn(d, 8, "base"), max_train_iter=1) as trainer:
        from ding.worker.replay_buffer.frame_sharing import copy_out

        items = copy_out(fill(trainer, 512))  # as sample() gives them: stacks as arrays
        learn = trainer.policy.learn_mode
        rng = np.random.default_rng(0)
        batches = [[items[i] for i in rng.integers(0, len(items), 32)] for _ in range(iters)]
        torch.manual_seed(0)
        model, target = DQN([4, 84, 84], 6), DQN([4, 84, 84], 6)
        target.load_state_dict(model.state_dict())
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)

        def bare_update(batch: list[dict]) -> None:
            obs = torch.from_numpy(np.stack([b["obs"] for b in batch])).float().div_(255)
            nxt = torch.from_numpy(np.stack([b["next_obs"] for b in batch])).float().div_(255)
            act = torch.as_tensor(np.array([int(b["action"]) for b in batch]))
            rew = torch.as_tensor(np.array([float(b["reward"][0]) for b in batch], dtype=np.float32))
            done = torch.as_tensor(np.array([bool(b["done"]) for b in batch]))
            q = model(obs)["logit"].gather(1, act[:, None])[:, 0]
            with torch.no_grad():
                a2 = model(nxt)["logit"].argmax(1, keepdim=True)
                y = rew + 0.99 * (~done) * target(nxt)["logit"].gather(1, a2)[:, 0]
            loss = torch.nn.functional.mse_loss(q, y)
            opt.zero_grad()
            loss.backward()
            opt.step()

        for b in batches[:2]:  # warm-up: first calls allocate
            learn.forward(b)
            bare_update(b)
        for _ in range(repeats):
            gc.collect()
            t = time.perf_counter()
            for b in batches:
                learn.forward(b)
            ours.append(iters / (time.perf_counter() - t))
            t = time.perf_counter()
            for b in batches:
                bare_update(b)
            bare.append(iters / (time.perf_counter() - t))
    return {"ding_updates_per_s": round(statistics.median(ours), 2),
            "bare_torch_updates_per_s": round(statistics.median(bare), 2),
            "ratio": round(statistics.median(a / b for a, b in zip(ours, bare)), 2)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", choices=("memory", "collector", "learner", "all"))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--smoke", action="store_true", help="tiny sizes: checks the script runs")
    args = p.parse_args(argv)
    from ding.utils import setup_torch_threads

    setup_torch_threads()
    out: dict[str, Any] = {"loadavg": os.getloadavg()[0]}
    if args.what in ("memory", "all"):
        out["memory"] = bench_memory(64 if args.smoke else 4096)
    if args.what in ("collector", "all"):
        out["collector"] = bench_collector(64 if args.smoke else 1600, 1 if args.smoke else args.repeats)
    if args.what in ("learner", "all"):
        out["learner"] = bench_learner(2 if args.smoke else 50, 1 if args.smoke else args.repeats)
    out["loadavg_end"] = os.getloadavg()[0]
    for k, v in out.items():
        print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
