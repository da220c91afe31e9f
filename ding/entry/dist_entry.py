"""``ding -m dist``: reads the arguments and the config; :mod:`ding.parallel.launch.dist` runs the role
(docs/distributed.md)."""
from __future__ import annotations

from typing import Any

from ding.parallel.launch.dist import join_run, print_role_commands, run_coordinator
from ding.parallel.launch.supervisor import roles_of


def run_dist_module(args: Any) -> int:
    """``ding -m dist --module config|coordinator|learner|collector``: one role of a multi-process run."""
    from ding.config import compile_config_parallel, read_config_with_system, rename_experiment
    from ding.parallel.transport import resolve_token, token_source
    from ding.utils import ConfigError, DirLock

    module = args.module
    if module not in ("config", "coordinator", "learner", "collector"):
        raise ConfigError(f"-m dist: --module must be config, coordinator, learner or collector (got {module!r}); "
                          "or start the whole run on Slurm with -P slurm and no --module")
    if not args.config:
        raise ConfigError(f"-m dist --module {module}: give the config file with -c (for learners and collectors, "
                          "the coordinator's address can also come from --coordinator-host/--coordinator-port)")
    main, create, system = read_config_with_system(args.config)
    token_where = f"system_config.auth_token in {args.config}"
    if module in ("learner", "collector"):  # --learner-host/--learner-port or --collector-host/--collector-port
        return join_run(module, args.module_name or f"{module}0", main, system, args.config,
                        coordinator_host=args.coordinator_host, coordinator_port=args.coordinator_port,
                        host=getattr(args, f"{module}_host"), port=getattr(args, f"{module}_port"))
    if module == "coordinator":  # the token is checked before any directory is created
        resolve_token(system.get("auth_token"), where=token_where)
    if args.exp_name:
        rename_experiment(main, system, args.exp_name)
    compiled = bool(roles_of(system))  # by --module config: keep its dir
    cfg = compile_config_parallel(
        main, create, system, seed=(args.seed or [0])[0], platform=args.platform,
        coordinator_host=args.coordinator_host, coordinator_port=args.coordinator_port,
        learner_host=args.learner_host, learner_port=args.learner_port, collector_host=args.collector_host,
        collector_port=args.collector_port, source=args.config, renew_dir=not compiled)
    if module == "config":
        print_role_commands(cfg)
        return 0
    with DirLock(cfg.main.exp_name, what="run"):
        return run_coordinator(cfg, args.env_step, args.train_iter, token_source(system.get("auth_token"), token_where))
