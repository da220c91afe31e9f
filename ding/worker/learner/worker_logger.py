"""Moved to :mod:`ding.utils.worker_logs` (workers of every kind share it); this name keeps old imports working."""
from ding.utils.worker_logs import CONSOLE, WorkerLogs, build_tb_logger, build_worker_logger, close_worker_logger

__all__ = ["CONSOLE", "WorkerLogs", "build_tb_logger", "build_worker_logger", "close_worker_logger"]
