"""The run engine: what the doors of :mod:`ding.entry` (``serial_pipeline``, ``Trainer``, ``parallel_pipeline``, the
``dist`` roles) stand on.

A serial run is built by :class:`~ding.engine.serial_run.SerialRun`, driven by the loops of
:mod:`ding.engine.serial_loops`, checkpointed and resumed by :mod:`ding.engine.resume`, checked by
:mod:`ding.engine.serial_checks` and shown by :mod:`ding.engine.training_view`. The engine sits above ``ding/worker``
(it assembles workers) and below ``ding/entry`` (the doors only parse input and call it).
"""
