"""The modes of the ``ding`` command. Each takes the parsed arguments and returns an exit code."""
from __future__ import annotations

import argparse
import re
import sys
from typing import Callable

# Each mode maps to a function taking the parsed args and returning an exit code. New modes register here.
MODES: dict[str, Callable[[argparse.Namespace], int]] = {}


def mode(name: str) -> Callable:
    def register(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        MODES[name] = fn
        return fn

    return register


def _need_config(args: argparse.Namespace) -> str:
    if not args.config:
        print(f"ding: -m {args.mode} needs a config file: add -c path/to/config.py", file=sys.stderr)
        raise SystemExit(2)
    return args.config


def _with_exp_name(args: argparse.Namespace, seed: int, n_seeds: int):
    from ding.config import read_config

    main_cfg, create_cfg = read_config(args.config)
    if args.exp_name:
        main_cfg.exp_name = args.exp_name if n_seeds == 1 else f"{args.exp_name}_seed{seed}"
    elif re.search(r"_seed\d+$", main_cfg.get("exp_name", "")):
        # 'cartpole_dqn_seed0' run with -s 1 becomes 'cartpole_dqn_seed1'
        main_cfg.exp_name = re.sub(r"_seed\d+$", f"_seed{seed}", main_cfg.exp_name)
    return main_cfg, create_cfg


@mode("serial")
def run_serial(args: argparse.Namespace) -> int:
    from .serial_entry import serial_pipeline

    _need_config(args)
    seeds = args.seed or [0]
    for seed in seeds:
        cfg = _with_exp_name(args, seed, len(seeds))
        serial_pipeline(cfg, seed=seed, max_train_iter=args.train_iter, max_env_step=args.env_step,
                        resume=args.resume or None, extend=args.extend, source=args.config)
    return 0


@mode("eval")
def run_eval(args: argparse.Namespace) -> int:
    from .application_entry import eval as eval_entry

    _need_config(args)
    if not args.load_path:
        print("ding: -m eval needs a checkpoint: add --load-path path/to/ckpt.pth.tar", file=sys.stderr)
        return 2
    for seed in args.seed or [0]:
        cfg = _with_exp_name(args, seed, len(args.seed or [0]))
        eval_entry(cfg, seed=seed, load_path=args.load_path, replay_path=args.replay_path, source=args.config)
    return 0


@mode("plot")
def run_plot(args: argparse.Namespace) -> int:
    from .plot import plot_runs

    if not args.paths:
        print("ding: -m plot needs one or more experiment directories: ding -m plot exp_a exp_b", file=sys.stderr)
        return 2
    out = plot_runs(args.paths, output=args.output)
    print(f"ding: wrote {out}")
    return 0
