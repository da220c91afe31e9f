"""The ``ding`` command: ``ding -m MODE ...`` (the modes registered in :mod:`ding.entry.cli_modes`), ``ding -q``."""
from __future__ import annotations

import argparse
import difflib
import sys
from typing import Sequence

from ding import __version__

from .cli_modes import MODES, Mode


def build_parser(mode: Mode | None = None) -> argparse.ArgumentParser:
    """The parser of ``ding`` alone (every mode listed) or of ``ding -m MODE`` (that mode's flags too)."""
    if mode is None:
        width = max((len(n) for n in MODES), default=0)
        lines = ["modes (ding -m MODE --help lists a mode's options):"]
        lines += [f"  {n:<{width}}  {m.help}" for n, m in sorted(MODES.items())]
        examples = [e for _, m in sorted(MODES.items()) for e in m.examples] + ["ding -q policy"]
    else:
        lines, examples = [], list(mode.examples)
    epilog = "\n".join(lines + (["", "examples:"] if lines else ["examples:"]) + [f"  {e}" for e in examples])
    p = argparse.ArgumentParser(
        prog="ding" if mode is None else f"ding -m {mode.name}",
        description="ding: train, evaluate and inspect reinforcement-learning experiments.",
        epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    shown = mode is None  # a mode's help shows that mode's options only
    p.add_argument("-v", "--version", action="version", version=f"ding {__version__}")
    p.add_argument("-q", "--query-registry", metavar="REGISTRY", default=None,
                   help="list the names registered in REGISTRY (e.g. policy, env, env_manager, buffer) and exit; "
                        "'all' lists every registry" if shown else argparse.SUPPRESS)
    p.add_argument("-m", "--mode", metavar="MODE", default=None,
                   help=f"what to do: {' | '.join(sorted(MODES))}" if shown else argparse.SUPPRESS)
    if mode is not None and mode.add_arguments is not None:
        mode.add_arguments(p.add_argument_group(f"-m {mode.name}", mode.help))
    return p


def _chosen_mode(argv: list[str]) -> Mode | None:
    pre = argparse.ArgumentParser(prog="ding", add_help=False)
    pre.add_argument("-m", "--mode", default=None)
    name = pre.parse_known_args(argv)[0].mode
    if name is None:
        return None
    if name not in MODES:
        close = difflib.get_close_matches(name, sorted(MODES), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else "."
        build_parser().error(f"unknown mode {name!r}{hint} Modes: {', '.join(sorted(MODES))}")
    return MODES[name]


def _query(name: str) -> int:
    from ding.utils import ALL_REGISTRIES, load_plugins

    load_plugins()  # ding's own components and every installed plugin's (the env zoo among them)
    names = sorted(ALL_REGISTRIES) if name == "all" else [name]
    for n in names:
        reg = ALL_REGISTRIES.get(n)
        if reg is None:
            close = difflib.get_close_matches(name, sorted(ALL_REGISTRIES), n=3)
            hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            print(f"ding: unknown registry {name!r}.{hint} Registries: {', '.join(sorted(ALL_REGISTRIES))}",
                  file=sys.stderr)
            return 2
        print(f"{n}:")
        for k, v in reg.query_details().items():
            print(f"  {k:<24} {v}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    mode = _chosen_mode(argv)
    parser = build_parser(mode)
    args, extra = parser.parse_known_args(argv)
    if extra:
        where = (f"ding -m {mode.name} --help lists its options" if mode is not None
                 else f"options belong to a mode: add -m {' | '.join(sorted(MODES))}")
        parser.error(f"unrecognized arguments: {' '.join(extra)} ({where})")
    if args.query_registry:
        return _query(args.query_registry)
    if mode is None:
        parser.print_help()
        return 0
    from ding.utils import DingError

    try:
        return mode(args)
    except KeyboardInterrupt:  # before the run could save a checkpoint (set-up, or a second Ctrl-C)
        print("ding: interrupted", file=sys.stderr)
        return 130
    except DingError as e:  # a user-facing error already says what and where: no traceback needed
        print(f"ding: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
