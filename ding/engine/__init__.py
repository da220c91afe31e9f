"""The run engine: what the doors of :mod:`ding.entry` (``serial_pipeline``, ``Trainer``, ``parallel_pipeline``, the
``dist`` roles) stand on. It sits above ``ding/worker`` (it assembles workers) and below ``ding/entry`` (a door only
reads its input and calls the engine).

Serial runs: :func:`~ding.engine.serial_start.start_serial_run` takes a compiled config down through the checks
(:mod:`~ding.engine.serial_checks`), the run directory and resume check (:mod:`~ding.engine.resume`), the components
(:class:`~ding.engine.serial_run.SerialRun`, built by :mod:`ding.worker.builder`, the one owner of the run's
checkpoint state) and a loop (:mod:`~ding.engine.serial_loops`); :mod:`~ding.engine.training_view` shows it.

Parallel runs live in their own wing, :mod:`ding.parallel`, one floor up.
"""
