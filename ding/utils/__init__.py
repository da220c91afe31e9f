from typing import Any

from .data_split import split_data_generator
from .default_helper import (
    EasyTimer,
    close_all,
    config_of,
    deep_merge_dicts,
    deep_update,
    dicts_to_lists,
    get_rng_state,
    lists_to_dicts,
    set_pkg_seed,
    set_rng_state,
    squeeze,
)
from .errors import (
    CallbackError,
    CheckpointError,
    ConfigError,
    DataFileError,
    DatasetError,
    DingError,
    EnvError,
    ExportError,
    LeagueError,
    LockError,
    ProtocolError,
    RegistryError,
    RegistryNameTaken,
    ReplayBufferError,
    ResumeError,
    RunDataError,
    TrainingError,
)
from .file_helper import (
    atomic_write,
    atomic_write_text,
    read_file,
    read_regular_file,
    remove_file,
    save_file,
    shown_dir,
    torch_save_atomic,
)
from .import_dirs import CONFIG_DIR_ENV, set_config_dir
from .json_record import JsonRecord
from .lock import DirLock, guard_run_dir, join_run_dir
from .lock_helper import FileRWLock, LockContext, LockContextType, get_rw_file_lock
from .log_helper import (
    ConsoleStream,
    TextLogger,
    build_logger,
    build_tb_writer,
    close_logger,
    get_text_logger,
    set_status_line,
)
from .plugins import PLUGIN_GROUP, load_plugins
from .registry import Registry, import_module, lookup
from .registry_factory import *  # noqa: F401,F403
from .registry_factory import ALL_REGISTRIES
from .running_mean_std import RunningMeanStd
from .scheduler_helper import Scheduler
from .torch_threads import apply_default_torch_threads, setup_torch_threads
from .worker_logs import WorkerLogs


def __getattr__(name: str) -> Any:
    # DI-engine's ``from ding.utils import SumSegmentTree, MinSegmentTree``: the trees live with the replay buffers
    # (beside their C extension) and are imported on first access only, so ding.utils imports nothing above itself.
    if name in ("SumSegmentTree", "MinSegmentTree"):
        from ding.worker.replay_buffer import segment_tree

        return getattr(segment_tree, name)
    raise AttributeError(f"module 'ding.utils' has no attribute {name!r}")
