"""The run state a serial checkpoint carries (the replay buffer, above all): ding's ``pack_extra`` next to
``torch.save`` of the same state (what ``pack_extra`` did before), in one process, CPU seconds, median of repeats.

    python tests/benchmark/bench_checkpoint.py               # 10,000 and 100,000 items, numpy and tensor items
    python tests/benchmark/bench_checkpoint.py --smoke       # tiny, used by the test suite

A serial run writes its exact-resume state into every ``iteration_N`` checkpoint (``save_ckpt_after_iter``, 10,000
iterations by default): the replay buffer with every stored transition, so its cost grows with the buffer. The items
are shaped like a Hopper SAC run's (obs and next_obs of 11 float32, 3 actions, a reward, two flags), in an
``advanced`` buffer of 1,000,000 slots (MuJoCo configs' size); ``--items tensor`` stores them as torch tensors, as
some pipelines do. Loading is measured too (``unpack_extra`` against ``torch.load``). Each figure is CPU time of this
process (``time.process_time``), the median of ``--repeats`` alternated repeats; the ratio is ding's over the
reference's.
"""
from __future__ import annotations

import argparse
import io
import json
import statistics
import time


def make_state(n_items: int, kind: str, capacity: int) -> dict:
    import numpy as np
    import torch

    from ding.worker.replay_buffer import AdvancedReplayBuffer

    rng = np.random.default_rng(0)
    buf = AdvancedReplayBuffer(dict(replay_buffer_size=capacity, seed=0))
    items = []
    for _ in range(n_items):
        item = dict(obs=rng.random(11, dtype=np.float32), next_obs=rng.random(11, dtype=np.float32),
                    action=rng.random(3, dtype=np.float32), reward=rng.random(1, dtype=np.float32), done=False,
                    truncated=False, collect_iter=0)
        if kind == "tensor":
            item.update({k: torch.from_numpy(item[k]) for k in ("obs", "next_obs", "action", "reward")})
        items.append(item)
    buf.push(items)
    return {"replay_buffer": buf.state_dict(), "rng": {"torch": torch.get_rng_state()}}


def measure(state: dict, repeats: int) -> dict:
    import torch

    from ding.worker.learner.checkpoint import pack_extra, unpack_extra

    def timed(fn) -> tuple[float, object]:
        t0 = time.process_time()
        out = fn()
        return time.process_time() - t0, out

    def torch_save() -> bytes:
        f = io.BytesIO()
        torch.save(state, f)
        return f.getvalue()

    times: dict[str, list[float]] = {k: [] for k in ("ding_save", "torch_save", "ding_load", "torch_load")}
    sizes = {}
    for r in range(repeats):
        order = ("ding", "torch") if r % 2 == 0 else ("torch", "ding")
        for who in order:
            if who == "ding":
                t, blob = timed(lambda: pack_extra(state))
                times["ding_save"].append(t)
                t, _ = timed(lambda b=blob: unpack_extra(b))
                times["ding_load"].append(t)
            else:
                t, blob = timed(torch_save)
                times["torch_save"].append(t)
                t, _ = timed(lambda b=blob: torch.load(io.BytesIO(b), weights_only=False))
                times["torch_load"].append(t)
            sizes[who] = len(blob)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {**{f"{k}_s": round(v, 4) for k, v in med.items()},
            "save_ratio": round(med["ding_save"] / max(med["torch_save"], 1e-9), 3),
            "load_ratio": round(med["ding_load"] / max(med["torch_load"], 1e-9), 3),
            "ding_mb": round(sizes["ding"] / 1e6, 1), "torch_mb": round(sizes["torch"] / 1e6, 1), "runs": times}


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, one repeat (the test suite)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="items in the buffer")
    ap.add_argument("--items", nargs="+", choices=("numpy", "tensor"), default=["numpy", "tensor"])
    ap.add_argument("--capacity", type=int, default=1_000_000, help="the buffer's replay_buffer_size")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if args.smoke:
        args.sizes, args.capacity, args.repeats = [200], 1_000, 1
    import torch

    torch.set_num_threads(1)
    out = []
    print(f"{'items':>8} {'kind':>7} {'pack_extra':>11} {'torch.save':>11} {'ratio':>6} {'unpack':>8} "
          f"{'torch.load':>11} {'ratio':>6} {'MB':>12}")
    for kind in args.items:
        for n in args.sizes:
            rec = {"bench": "checkpoint_extra", "items": n, "kind": kind, "capacity": args.capacity,
                   **measure(make_state(n, kind, args.capacity), args.repeats)}
            out.append(rec)
            print(f"{n:>8,} {kind:>7} {rec['ding_save_s']:>10.2f}s {rec['torch_save_s']:>10.2f}s "
                  f"{rec['save_ratio']:>5.2f}x {rec['ding_load_s']:>7.2f}s {rec['torch_load_s']:>10.2f}s "
                  f"{rec['load_ratio']:>5.2f}x {rec['ding_mb']:>5.0f} / {rec['torch_mb']:<5.0f}", flush=True)
    for rec in out:
        print(json.dumps(rec))
    return out


if __name__ == "__main__":
    main()
