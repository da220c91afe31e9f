"""Parallel mode, the wing: a coordinator process drives learner and collector processes over HTTP and a shared run
directory (docs/parallel.md, docs/architecture.md).

- :mod:`~ding.parallel.protocol`: the typed task and result records every process exchanges.
- :mod:`~ding.parallel.files`: the run directory's shared files (sample files, policy files).
- :mod:`~ding.parallel.mechanisms`: the speed mechanisms an A/B benchmark may turn off (``DING_PARALLEL_OFF``).
- :mod:`~ding.parallel.transport`: master/slave messaging over HTTP, the token and the server's limits.
- :mod:`~ding.parallel.coordinator`: the coordinator and its parts (its link to the roles, buffers, ledger).
- :mod:`~ding.parallel.commanders`: what to collect, train and evaluate next (``solo``, ``one_vs_one``).
- :mod:`~ding.parallel.roles`: the learner, collector and learner-group processes.
- :mod:`~ding.parallel.launch`: starting and supervising the processes (local, Slurm), and the coordinator's driver.

Nothing below this floor imports it, except the re-export modules that keep DI-engine's import paths
(``ding.worker.coordinator.*``, ``ding.interaction``, ...; the table in docs/parallel.md).
"""
