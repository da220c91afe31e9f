"""DI-engine's import path, re-exported from :mod:`ding.parallel.roles.collector.flask_fs`."""
from ding.parallel.roles.collector.flask_fs import FlaskFileSystemCollector

__all__ = ["FlaskFileSystemCollector"]
