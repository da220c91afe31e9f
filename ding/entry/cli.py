"""The ``ding`` command: ``ding -m serial|serial_onpolicy|eval|parallel|dist|plot -c cfg.py ...``."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ding import __version__


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ding",
        description="ding: train, evaluate and inspect reinforcement-learning experiments.",
        epilog="Examples:\n  ding -m serial -c config/serial/cartpole_dqn.py -s 0\n"
        "  ding -m serial -c config/serial/cartpole_dqn.py --resume\n"
        "  ding -m eval -c config/serial/cartpole_dqn.py --load-path cartpole_dqn_seed0/ckpt/ckpt_best.pth.tar\n"
        "  ding -m plot cartpole_dqn_seed0 cartpole_dqn_seed1\n  ding -q policy",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-v", "--version", action="version", version=f"ding {__version__}")
    p.add_argument("-q", "--query-registry", metavar="REGISTRY", default=None,
                   help="list the names registered in REGISTRY (e.g. policy, env, env_manager, buffer) and exit; "
                        "'all' lists every registry")
    p.add_argument("-m", "--mode", default=None, help="serial | serial_onpolicy | eval | parallel | dist | plot")
    p.add_argument("-c", "--config", default=None, help="path to a Python config file (main_config, create_config)")
    p.add_argument("-s", "--seed", type=int, action="append", default=None,
                   help="random seed; repeat to run several seeds one after another (default 0)")
    p.add_argument("--exp-name", default=None, help="experiment name (output directory ./<exp-name>/)")
    p.add_argument("--train-iter", type=int, default=int(1e10), help="stop after this many training iterations")
    p.add_argument("--env-step", type=int, default=int(1e10), help="stop after this many environment steps")
    p.add_argument("--load-path", default=None, help="checkpoint to load (eval mode)")
    p.add_argument("--resume", action="store_true",
                   help="continue the experiment in ./<exp-name>/ from its latest checkpoint, exactly")
    p.add_argument("--extend", action="store_true",
                   help="with --resume: continue a finished run on purpose, until --train-iter / --env-step")
    p.add_argument("--replay-path", default=None, help="eval mode: save replays of the evaluation episodes here")
    p.add_argument("-P", "--platform", default="local", help="dist mode launcher: local | slurm")
    p.add_argument("-M", "--module", default=None, help="dist mode: config | coordinator | learner | collector")
    p.add_argument("--module-name", default=None, help="dist mode: name of the module instance to start")
    p.add_argument("-cdh", "--coordinator-host", default=None)
    p.add_argument("-cdp", "--coordinator-port", type=int, default=None)
    p.add_argument("-lh", "--learner-host", default=None)
    p.add_argument("-lp", "--learner-port", type=int, default=None)
    p.add_argument("-clh", "--collector-host", default=None)
    p.add_argument("-clp", "--collector-port", type=int, default=None)
    p.add_argument("-o", "--output", default=None, help="plot mode: output PNG path")
    p.add_argument("paths", nargs="*", help="plot mode: experiment directories")
    return p


def _query(name: str) -> int:
    _import_everything()
    from ding.utils import ALL_REGISTRIES

    names = sorted(ALL_REGISTRIES) if name == "all" else [name]
    for n in names:
        reg = ALL_REGISTRIES.get(n)
        if reg is None:
            import difflib

            close = difflib.get_close_matches(name, sorted(ALL_REGISTRIES), n=3)
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            print(f"ding: unknown registry {name!r}.{hint} Registries: {', '.join(sorted(ALL_REGISTRIES))}",
                  file=sys.stderr)
            return 2
        print(f"{n}:")
        for k, v in reg.query_details().items():
            print(f"  {k:<24} {v}")
    return 0


def _import_everything() -> None:
    """Import the built-in components and dizoo envs so their registrations are visible."""
    import importlib

    for mod in ("ding.envs", "ding.policy", "ding.model", "ding.worker", "dizoo.classic_control.cartpole.envs",
                "dizoo.classic_control.pendulum.envs", "dizoo.classic_control.acrobot.envs",
                "dizoo.classic_control.mountain_car.envs", "dizoo.box2d.lunarlander.envs"):
        importlib.import_module(mod)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.query_registry:
        return _query(args.query_registry)
    if args.mode is None:
        parser.print_help()
        return 0
    from .cli_modes import MODES

    fn = MODES.get(args.mode)
    if fn is None:
        parser.error(f"unknown mode {args.mode!r}; choose one of: {', '.join(sorted(MODES))}")
    from ding.utils import DingError

    try:
        return fn(args)
    except KeyboardInterrupt:
        print("ding: interrupted", file=sys.stderr)
        return 130
    except DingError as e:  # a user-facing error already says what and where: no traceback needed
        print(f"ding: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
