"""The modes of the ``ding`` command. Each registers its help line, its own flags and examples with :func:`mode`;
``ding --help`` lists exactly the registered modes, ``ding -m NAME --help`` shows a mode's flags."""
from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
from dataclasses import dataclass
from typing import Any, Callable

AddArguments = Callable[[Any], None]  # receives an argparse parser or argument group


@dataclass(frozen=True)
class Mode:
    """One ``ding -m NAME`` mode: ``run(args) -> exit code``, its help line, its flags and examples."""

    name: str
    run: Callable[[argparse.Namespace], int]
    help: str
    add_arguments: AddArguments | None = None
    examples: tuple[str, ...] = ()

    def __call__(self, args: argparse.Namespace) -> int:
        return self.run(args)


MODES: dict[str, Mode] = {}


def mode(name: str, help: str | None = None, add_arguments: AddArguments | None = None,  # noqa: A002
         examples: tuple[str, ...] = ()) -> Callable:
    """Register the decorated ``fn(args) -> int`` as ``ding -m name``.

    ``help`` is its line in ``ding --help`` (default: the first line of the function's docstring);
    ``add_arguments(parser)`` adds the mode's own flags (use :func:`config_arguments` / :func:`limit_arguments` for
    the shared ones); ``examples`` are command lines shown in the help.
    """

    def register(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        text = help if help is not None else (fn.__doc__ or "").strip().split("\n")[0]
        MODES[name] = Mode(name, fn, text, add_arguments, examples)
        return fn

    return register


# ------------------------------------------------------------------ flags shared by several modes
def config_arguments(p: Any) -> None:
    """``-c CONFIG``, ``-s SEED`` (repeatable) and ``--exp-name``."""
    p.add_argument("-c", "--config", default=None, help="path to a Python config file (main_config, create_config)")
    p.add_argument("-s", "--seed", type=int, action="append", default=None,
                   help="random seed; repeat to run several seeds one after another (default 0)")
    p.add_argument("--exp-name", default=None, help="experiment name (output directory ./<exp-name>/)")


def limit_arguments(p: Any) -> None:
    """``--train-iter`` and ``--env-step``."""
    # "at least": a run stops at the first safe point at or past a limit (after a whole collect call or train call),
    # so a checkpoint there resumes exactly; see docs/serial.md, "Limits".
    p.add_argument("--train-iter", type=int, default=int(1e10),
                   help="stop once at least this many training iterations are done (at the end of that train call)")
    p.add_argument("--env-step", type=int, default=int(1e10),
                   help="stop once at least this many environment steps are done (at the end of that collect call)")


def _need_config(args: argparse.Namespace) -> str:
    if not args.config:
        print(f"ding: -m {args.mode} needs a config file: add -c path/to/config.py", file=sys.stderr)
        raise SystemExit(2)
    return args.config


def _exp_name(config_exp_name: str, given: str | None, seed: int, n_seeds: int) -> str:
    """The experiment name a seed runs under: ``--exp-name`` (``_seed<k>`` appended with several seeds), or the
    config's, whose ``_seed<k>`` suffix follows the seed (``cartpole_dqn_seed0`` run with ``-s 1`` is ``..._seed1``)."""
    if given:
        return given if n_seeds == 1 else f"{given}_seed{seed}"
    return re.sub(r"_seed\d+$", f"_seed{seed}", config_exp_name)


def _with_exp_name(args: argparse.Namespace, seed: int, n_seeds: int) -> tuple[Any, Any]:
    from ding.config import read_config

    main_cfg, create_cfg = read_config(args.config)
    given = main_cfg.get("exp_name")
    name = _exp_name(given if isinstance(given, str) else "", args.exp_name, seed, n_seeds)
    if name:  # (a non-str exp_name is left for compile_config to report)
        main_cfg.exp_name = name
    return main_cfg, create_cfg


# ------------------------------------------------------------------ serial
def _serial_arguments(p: Any) -> None:
    config_arguments(p)
    limit_arguments(p)
    p.add_argument("--resume", action="store_true",
                   help="continue the experiment in ./<exp-name>/ from its latest checkpoint, exactly")
    p.add_argument("--extend", action="store_true",
                   help="with --resume: continue a finished run on purpose, until --train-iter / --env-step")


def resume_command(args: argparse.Namespace, seed: int, exp_dir: str, default_exp_name: str) -> str:
    """The ``ding`` command that resumes ``exp_dir`` (one seed of ``args``), ready to paste."""
    cmd = ["ding", "-m", args.mode, "-c", args.config, "-s", str(seed)]
    if args.exp_name or exp_dir != default_exp_name:
        cmd += ["--exp-name", exp_dir]
    cmd += _limit_flags(args) + ["--resume"] + (["--extend"] if getattr(args, "extend", False) else [])
    return shlex.join(cmd)


def resume_hint(args: argparse.Namespace, seed: int, exp_dir: str, default_exp_name: str) -> str:
    """After Ctrl-C: the command that resumes the run, or why there is nothing to resume (no checkpoint yet)."""
    from ding.worker import list_iteration_checkpoints

    if not list_iteration_checkpoints(os.path.join(exp_dir, "ckpt")):
        return (f"ding: nothing to resume: the run stopped before its first checkpoint ({exp_dir}/ckpt/ is empty); "
                "start it again without --resume")
    return f"ding: to resume: {resume_command(args, seed, exp_dir, default_exp_name)}"


def _limit_flags(args: argparse.Namespace) -> list[str]:
    flags = []
    if args.train_iter < int(1e10):
        flags += ["--train-iter", str(args.train_iter)]
    if args.env_step < int(1e10):
        flags += ["--env-step", str(args.env_step)]
    return flags


@mode("serial", help="train an off-policy policy in one process (serial_pipeline)", add_arguments=_serial_arguments,
      examples=("ding -m serial -c config/serial/cartpole_dqn.py -s 0",
                "ding -m serial -c config/serial/cartpole_dqn.py -s 0 --resume"))
def run_serial(args: argparse.Namespace) -> int:
    from .serial_entry import serial_pipeline

    return _run_serial_seeds(args, serial_pipeline)


@mode("serial_onpolicy", help="train an on-policy policy (PPO, A2C) in one process (serial_pipeline_onpolicy)",
      add_arguments=_serial_arguments,
      examples=("ding -m serial_onpolicy -c config/serial/cartpole_ppo.py -s 0",
                "ding -m serial_onpolicy -c config/serial/cartpole_ppo.py -s 0 --resume"))
def run_serial_onpolicy(args: argparse.Namespace) -> int:
    from .serial_entry_onpolicy import serial_pipeline_onpolicy

    return _run_serial_seeds(args, serial_pipeline_onpolicy)


def _battle_arguments(p: Any) -> None:
    config_arguments(p)
    limit_arguments(p)
    p.add_argument("--resume", action="store_true",
                   help="continue the experiment in ./<exp-name>/ from its latest checkpoint, league included, exactly")


@mode("serial_battle", help="self-play over a league in one process (serial_pipeline_battle)",
      add_arguments=_battle_arguments,
      examples=("ding -m serial_battle -c config/serial/connect_four_ppo_league.py -s 0",
                "ding -m serial_battle -c config/serial/connect_four_ppo_league.py -s 0 --resume"))
def run_serial_battle(args: argparse.Namespace) -> int:
    from ding.config import read_config
    from ding.engine.training_view import TrainingInterrupted

    from .serial_entry_battle import serial_pipeline_battle

    _need_config(args)
    seeds = args.seed or [0]
    for i, seed in enumerate(seeds):
        main_cfg, create_cfg = read_config(args.config, named_after_file=True)
        given = main_cfg.get("exp_name")
        name = _exp_name(given if isinstance(given, str) else "", args.exp_name, seed, len(seeds))
        if name:
            main_cfg.exp_name = name
        try:
            serial_pipeline_battle((main_cfg, create_cfg), seed=seed, max_train_iter=args.train_iter,
                                   max_env_step=args.env_step, resume=args.resume, source=args.config)
        except TrainingInterrupted as e:
            default = _exp_name(given if isinstance(given, str) else "", None, seed, 1)
            print(resume_hint(args, seed, e.exp_dir, default), file=sys.stderr)
            _print_seeds_left(args, seeds[i + 1:])
            return 130
    return 0


def _run_serial_seeds(args: argparse.Namespace, pipeline: Callable[..., Any]) -> int:
    """Run ``pipeline`` for each ``-s`` seed; on Ctrl-C print the command that resumes the run and the seeds left."""
    from ding.engine.training_view import TrainingInterrupted

    _need_config(args)
    seeds = args.seed or [0]
    for i, seed in enumerate(seeds):
        cfg = _with_exp_name(args, seed, len(seeds))
        try:
            pipeline(cfg, seed=seed, max_train_iter=args.train_iter, max_env_step=args.env_step,
                     resume=args.resume or None, extend=args.extend, source=args.config)
        except TrainingInterrupted as e:  # the pipeline said where the checkpoint is; say how to go on
            default = _exp_name(cfg[0].get("exp_name", ""), None, seed, 1)
            print(resume_hint(args, seed, e.exp_dir, default), file=sys.stderr)
            _print_seeds_left(args, seeds[i + 1:])
            return 130
    return 0


def _print_seeds_left(args: argparse.Namespace, rest: list[int]) -> None:
    if rest:
        cmd = ["ding", "-m", args.mode, "-c", args.config]
        for s in rest:
            cmd += ["-s", str(s)]
        cmd += (["--exp-name", args.exp_name] if args.exp_name else []) + _limit_flags(args)
        print(f"ding: seed(s) {', '.join(map(str, rest))} did not run: {shlex.join(cmd)}", file=sys.stderr)


# ------------------------------------------------------------------ eval
def _eval_arguments(p: Any) -> None:
    config_arguments(p)
    p.add_argument("--load-path", default=None, help="checkpoint or run directory to evaluate (default: the config's "
                   "policy.load_path)")
    p.add_argument("--replay-path", default=None, help="save replays of the evaluation episodes here")


@mode("eval", help="evaluate a checkpoint with the config's evaluator", add_arguments=_eval_arguments,
      examples=("ding -m eval -c config/serial/cartpole_dqn.py --load-path "
                "cartpole_dqn_seed0/ckpt/ckpt_best.pth.tar",))
def run_eval(args: argparse.Namespace) -> int:
    from .application_entry import eval as eval_entry

    if not args.config and not args.load_path:  # (a config alone may name its checkpoint: policy.load_path)
        print("ding: -m eval needs a config (-c, whose policy.load_path names the checkpoint) and/or --load-path "
              "(a checkpoint or a run directory: without -c, that run's own config)", file=sys.stderr)
        return 2
    for seed in args.seed or [0]:
        cfg = _with_exp_name(args, seed, len(args.seed or [0])) if args.config else None
        eval_entry(cfg, seed=seed, load_path=args.load_path, replay_path=args.replay_path, source=args.config)
    return 0


# ------------------------------------------------------------------ plot
def _plot_arguments(p: Any) -> None:
    p.add_argument("paths", nargs="*", metavar="EXP_DIR", help="experiment directories to draw")
    p.add_argument("-o", "--output", default=None, help="output PNG path (default: ./eval_return_<experiments>.png)")


@mode("plot", help="draw eval return vs env steps of one or more runs (PNG)", add_arguments=_plot_arguments,
      examples=("ding -m plot cartpole_dqn_seed0 cartpole_dqn_seed1",))
def run_plot(args: argparse.Namespace) -> int:
    from .plot import plot_runs

    if not args.paths:
        print("ding: -m plot needs one or more experiment directories: ding -m plot exp_a exp_b", file=sys.stderr)
        return 2
    out = plot_runs(args.paths, output=args.output)
    print(f"ding: wrote {out}")
    return 0


# ------------------------------------------------------------------ parallel
def _parallel_arguments(p: Any) -> None:
    config_arguments(p)
    limit_arguments(p)
    p.add_argument("--resume", action="store_true",
                   help="continue the stopped run in ./<exp-name>/: the learner from its latest checkpoint, the "
                        "coordinator's counters and replay buffer from parallel_state.json and parallel_buffer.dat")
    p.add_argument("--extend", action="store_true",
                   help="with --resume: continue a finished run on purpose, until --train-iter / --env-step")


@mode("parallel", help="train with a coordinator, a learner and collectors as local processes (parallel_pipeline)",
      add_arguments=_parallel_arguments,
      examples=("ding -m parallel -c config/parallel/cartpole_dqn.py -s 0",
                "ding -m parallel -c config/parallel/cartpole_dqn.py -s 0 --resume"))
def run_parallel(args: argparse.Namespace) -> int:
    return _run_parallel_seeds(args, platform="local")


def _run_parallel_seeds(args: argparse.Namespace, platform: str) -> int:
    """Run ``parallel_pipeline`` on ``platform`` for each ``-s`` seed; after Ctrl-C say how to go on."""
    from ding.config import read_config_with_system, rename_experiment
    from ding.engine.training_view import TrainingInterrupted

    from .parallel_entry import parallel_pipeline

    _need_config(args)
    seeds = args.seed or [0]
    for i, seed in enumerate(seeds):
        main_cfg, create_cfg, system_cfg = read_config_with_system(args.config)
        given = main_cfg.get("exp_name")
        name = _exp_name(given if isinstance(given, str) else "", args.exp_name, seed, len(seeds))
        if name:
            rename_experiment(main_cfg, system_cfg, name)
        try:
            parallel_pipeline((main_cfg, create_cfg, system_cfg), seed=seed, max_env_step=args.env_step,
                              max_train_iter=args.train_iter, resume=getattr(args, "resume", False),
                              extend=getattr(args, "extend", False), source=args.config, platform=platform)
        except TrainingInterrupted as e:
            if platform != "local":
                print(f"ding: run ./{e.exp_dir}/ stopped; every step it started has ended", file=sys.stderr)
                _print_seeds_left(args, seeds[i + 1:])
                return 130
            default = _exp_name(given if isinstance(given, str) else "", None, seed, 1)
            print(resume_hint(args, seed, e.exp_dir, default), file=sys.stderr)
            _print_seeds_left(args, seeds[i + 1:])
            return 130
    return 0


# ------------------------------------------------------------------ dist
def _dist_arguments(p: Any) -> None:
    config_arguments(p)
    limit_arguments(p)
    p.add_argument("-M", "--module", default=None, help="the role to start: config | coordinator | learner | collector")
    p.add_argument("--module-name", default=None, help="name of a learner/collector (e.g. learner0, collector3)")
    p.add_argument("-P", "--platform", default="local", choices=("local", "slurm"),
                   help="'slurm' without --module: start the whole run (coordinator, learners, collectors) as Slurm "
                        "steps; see docs/distributed.md")
    p.add_argument("-cdh", "--coordinator-host", default=None, help="the coordinator's address")
    p.add_argument("-cdp", "--coordinator-port", type=int, default=None, help="the coordinator's port")
    p.add_argument("-lh", "--learner-host", default=None, help="address a learner binds and advertises")
    p.add_argument("-lp", "--learner-port", type=int, default=None, help="port a learner binds (0: a free one)")
    p.add_argument("-clh", "--collector-host", default=None, help="address a collector binds and advertises")
    p.add_argument("-clp", "--collector-port", type=int, default=None, help="port a collector binds (0: free)")


@mode("dist", help="start one role of a multi-process run (config, coordinator, learner or collector)",
      add_arguments=_dist_arguments,
      examples=("ding -m dist -P slurm -c config/parallel/cartpole_dqn.py",
                "ding -m dist --module config -c config/parallel/cartpole_dqn.py",
                "ding -m dist --module collector --module-name collector5 -c cartpole_dqn_parallel_seed0/"
                "total_config.py -cdh 10.0.0.1 -cdp 22000"))
def run_dist(args: argparse.Namespace) -> int:
    from .dist_entry import run_dist_module

    if args.module is None and args.platform == "slurm":
        return _run_parallel_seeds(args, platform="slurm")

    return run_dist_module(args)


# ------------------------------------------------------------------ tune
def _tune_arguments(p: Any) -> None:
    config_arguments(p)
    limit_arguments(p)
    p.add_argument("--space", default=None, help="Python file defining `space`: config key -> distribution")
    p.add_argument("--trials", type=int, default=None, help="finished trials the study should have")
    p.add_argument("--study-name", default=None, help="the study's name (default: the output directory's name)")
    p.add_argument("--storage", default=None, help="Optuna storage URL (default sqlite:///<out>/study.db); give "
                                                   "several processes the same one to share the study")
    p.add_argument("--out", default=None, help="output directory (default ./<exp_name>_tune/)")
    p.add_argument("--pruner", default="median", choices=("median", "hyperband", "none"))
    p.add_argument("--sampler", default="tpe", choices=("tpe", "random"))
    p.add_argument("--sampler-seed", type=int, default=None,
                   help="seed of the sampler (default: fresh, so processes sharing a study draw different points)")


@mode("tune", help="search hyperparameters with Optuna, each trial a serial run (docs/tuning.md)",
      add_arguments=_tune_arguments,
      examples=("ding -m tune -c config/serial/cartpole_dqn.py --space config/tune/cartpole_dqn_space.py "
                "--trials 16 --env-step 4000",))
def run_tune(args: argparse.Namespace) -> int:
    from .tune_entry import tune

    _need_config(args)
    if not args.space or not args.trials:
        print("ding: -m tune needs a search space and a trial count: add --space space.py --trials N",
              file=sys.stderr)
        return 2
    if args.seed and len(args.seed) > 1:
        print("ding: -m tune trains every trial with one seed: give -s once", file=sys.stderr)
        return 2
    main_cfg, create_cfg = _with_exp_name(args, (args.seed or [0])[0], 1)
    try:
        result = tune((main_cfg, create_cfg), args.space, args.trials, seed=(args.seed or [0])[0],
                      study_name=args.study_name, storage=args.storage, out_dir=args.out, pruner=args.pruner,
                      sampler=args.sampler, sampler_seed=args.sampler_seed,
                      max_env_step=args.env_step if args.env_step < int(1e10) else None,
                      max_train_iter=args.train_iter if args.train_iter < int(1e10) else None, source=args.config)
    except KeyboardInterrupt:
        return 130
    print(f"ding: {len(result.study.trials)} trials in study '{result.study.study_name}' "
          f"({result.pruned_fraction:.0%} of the finished ones pruned); results in ./{result.out_dir}/")
    if result.best_params is not None:
        print(f"ding: best value {result.best_value:.6g} with {result.best_params}; run it: ding -m serial -c "
              f"{result.files['best_config']} -s {(args.seed or [0])[0]}")
    return 0


# ------------------------------------------------------------------ serial_offline
@mode("serial_offline", help="train on a data set, no collecting (serial_pipeline_offline: CQL, TD3BC, IQL, BC)",
      add_arguments=_serial_arguments,
      examples=("ding -m serial_offline -c pendulum_cql_config.py -s 0",
                "ding -m serial_offline -c pendulum_cql_config.py -s 0 --train-iter 20000 --resume"))
def run_serial_offline(args: argparse.Namespace) -> int:
    from ding.utils import ConfigError

    from .serial_entry_offline import serial_pipeline_offline

    def pipeline(cfg: Any, seed: int, max_train_iter: int, max_env_step: int, **kwargs: Any) -> Any:
        if max_env_step < int(1e10):
            raise ConfigError("--env-step: an offline run takes no env steps (it trains on its data set); limit it "
                              "with --train-iter")
        return serial_pipeline_offline(cfg, seed, max_train_iter=max_train_iter, **kwargs)

    return _run_serial_seeds(args, pipeline)
# ------------------------------------------------------------------ export
def _export_arguments(p: Any) -> None:
    p.add_argument("-c", "--config", default=None,
                   help="the run's config file (default: total_config.py of the checkpoint's run directory)")
    p.add_argument("--load-path", default=None, help="a checkpoint file or a run directory (its best checkpoint)")
    p.add_argument("--format", default="onnx", choices=("onnx", "torchscript"), help="file format (default onnx)")
    p.add_argument("-o", "--output", default=None,
                   help="output file (default: ./<run>_<checkpoint>.onnx, or .pt for torchscript)")
    p.add_argument("--which", default="best", choices=("best", "latest"),
                   help="for a run directory: the best checkpoint or the newest iteration_N (as ding.load_policy)")


@mode("export", help="write a checkpoint's policy as an ONNX or TorchScript file (obs in, eval actions out)",
      add_arguments=_export_arguments,
      examples=("ding -m export --load-path cartpole_dqn_seed0 --format onnx",
                "ding -m export -c config/serial/cartpole_dqn.py --load-path cartpole_dqn_seed0/ckpt/ckpt_best.pth.tar "
                "--format torchscript -o cartpole_dqn.pt"))
def run_export(args: argparse.Namespace) -> int:
    from .deploy import default_export_path, load_policy

    if not args.load_path:
        print("ding: -m export needs a checkpoint: add --load-path path/to/ckpt.pth.tar (or a run directory)",
              file=sys.stderr)
        return 2
    policy = load_policy(args.load_path, config=args.config, which=args.which)
    out = policy.export(args.output or default_export_path(policy, args.format), args.format)
    meta = out.metadata
    print(f"ding: wrote {out.path} ({args.format}, {out.size_bytes / 1024:.1f} KiB; "
          f"inputs {', '.join(meta['inputs'])}; outputs {', '.join(meta['outputs'])})")
    return 0
