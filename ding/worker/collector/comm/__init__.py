"""Comm collectors: the collector process's link to the coordinator in parallel mode."""
from .base_comm_collector import BaseCommCollector, create_comm_collector
from .flask_fs_collector import FlaskFileSystemCollector
from .naive_collector import NaiveCollector

__all__ = ["BaseCommCollector", "create_comm_collector", "FlaskFileSystemCollector", "NaiveCollector"]
