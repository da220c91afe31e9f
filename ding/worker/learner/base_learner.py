"""BaseLearner: runs the policy's learn-mode update, calls hooks around it, and owns checkpointing."""
from __future__ import annotations

import difflib
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from easydict import EasyDict

import ding
from ding.config.ranges import at_least, one_of
from ding.utils import (
    LEARNER_REGISTRY,
    CheckpointError,
    apply_default_torch_threads,
    config_of,
    deep_merge_dicts,
    import_module,
)
from ding.utils.data import ColumnBatch
from ding.utils.worker_logs import WorkerLogs

from .checkpoint import (
    _ITER_RE,
    CKPT_BEST_NAME,
    RESERVED_KEYS,
    config_hash,
    find_latest_checkpoint,
    iteration_ckpt_name,
    load_checkpoint_file,
    load_policy_state,
    rotate_checkpoints,
    save_checkpoint_file,
)
from .dataloader import LearnerDataLoader
from .learner_hook import (
    POSITIONS,
    Hooks,
    LearnerHook,
    LogReduceHook,
    add_learner_hook,
    build_learner_hook_by_cfg,
    call_hooks,
    merge_hooks,
)
from .nan_guard import NAN_POLICIES, NonFiniteGuard


class CountVar:
    """A mutable integer counter (``learner.last_iter.val``), as in DI-engine."""

    def __init__(self, init_val: int = 0) -> None:
        self._val = init_val

    @property
    def val(self) -> int:
        return self._val

    def update(self, val: int) -> None:
        self._val = val

    def add(self, add_num: int = 1) -> None:
        self._val += add_num

    def __repr__(self) -> str:
        return f"CountVar({self._val})"


def _dist_info() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _split_log_vars(elem: Mapping[str, Any]) -> tuple[dict, dict, dict]:
    """Split one output dict into scalar / ``[scalars]`` / ``[histogram]`` logging values (floats where scalar)."""
    scalar, scalars, histogram = {}, {}, {}
    for k, v in elem.items():
        if k.startswith("[histogram]"):
            histogram[k[len("[histogram]"):]] = v
        elif k.startswith("[scalars]"):
            scalars[k[len("[scalars]"):]] = v
        elif isinstance(v, (bool, int, float, np.number)):
            scalar[k] = float(v)
        elif isinstance(v, (torch.Tensor, np.ndarray)):
            n = v.size if isinstance(v, np.ndarray) else v.numel()
            if n == 1:
                scalar[k] = float(v.item())
            else:
                histogram[k] = v
    return scalar, scalars, histogram


@LEARNER_REGISTRY.register("base")
class BaseLearner:
    """Train a policy's learn mode one iteration at a time (``train``) or in a loop over a data source (``start``).

    Hooks run at ``before_run / after_run`` (``start`` only) and ``before_iter / after_iter`` (every ``train``).
    ``save_checkpoint`` works without any hook installed; ``register_checkpoint_extra`` adds other components' state
    (collector, buffer, RNG, evaluator) to the same checkpoint file for exact resume.
    """

    config = dict(
        # Parallel mode: start() stops after this many train iterations in total.
        train_iterations=int(1e10),
        # Parallel mode data loading; num_workers >= 1 prefetches that many batches in a background thread.
        dataloader=dict(num_workers=0),
        # Write the policy's description (model structure) to the text log when the policy is set.
        log_policy=True,
        # Modules to import before hooks are built (plugins that call register_learner_hook).
        import_names=[],
        # Hooks: shorthand keys (value '' / 0 / False disables) or full form key=dict(type, position, priority,
        # ext_args, name). Free-form section: plugin hooks add their own keys.
        hook=dict(
            load_ckpt_before_run='',  # checkpoint file (or ckpt directory: its newest valid one) to load at start
            log_show_after_iter=100,  # one compact log line + TensorBoard learner_iter/* every N iterations
            save_ckpt_after_iter=10000,  # save ./<exp>/ckpt/iteration_N.pth.tar every N iterations
            save_ckpt_after_run=True,  # save a checkpoint when start() finishes
        ),
        checkpoint=dict(
            keep_last=3,  # keep the newest N iteration_*.pth.tar files (ckpt_best is never removed); 0 keeps all
        ),
        # A NaN/Inf loss: 'raise' stops training with a TrainingError naming the iteration and the loss term;
        # 'warn' logs it and trains on. Either way no checkpoint of NaN/Inf parameters is ever written.
        nan_policy='raise',
    )
    config_ranges = {
        "nan_policy": one_of(*NAN_POLICIES),
        "train_iterations": at_least(0, integer=True),
        "dataloader.num_workers": at_least(0, integer=True),
        "checkpoint.keep_last": at_least(0, integer=True),
    }
    open_config_keys = ("hook", )

    @classmethod
    def default_config(cls) -> EasyDict:
        return config_of(cls)

    def __init__(
            self,
            cfg: Mapping,
            policy: Any = None,
            tb_logger: Any = None,
            dist_info: tuple[int, int] | None = None,
            exp_name: str = 'default_experiment',
            instance_name: str = 'learner',
            *,
            data_source: Callable[[int], Any] | None = None,
            ckpt_dir: str | None = None,
            log_dir: str | None = None,
    ) -> None:
        """``data_source(batch_size) -> list of samples`` feeds :meth:`start` (parallel mode; None ends the data).
        ``ckpt_dir`` (default ``./<exp_name>/ckpt``) and ``log_dir`` (default ``./<exp_name>/log/<instance_name>``)
        place the learner's files."""
        apply_default_torch_threads()  # a loop built by hand gets the pipelines' thread default
        self._cfg = deep_merge_dicts(self.default_config(), cfg)
        self._exp_name = exp_name
        self._instance_name = instance_name
        self._ckpt_dir = ckpt_dir or os.path.join(".", exp_name, "ckpt")
        self._rank, self._world_size = dist_info if dist_info is not None else _dist_info()
        self._closed = False
        self._logs = WorkerLogs(exp_name, instance_name, tb_logger, make_tb=self._rank == 0, log_dir=log_dir)
        self._logger, self._tb_logger = self._logs.logger, self._logs.tb_logger
        self._nan_guard = NonFiniteGuard(self._cfg.nan_policy, self._logger)

        self._log_buffer: dict[str, dict[str, Any]] = {"scalar": {}, "scalars": {}, "histogram": {}}
        self._last_iter = CountVar(0)
        self._collector_envstep = 0
        self._priority_info: dict | None = None
        self._ckpt_name: str | None = None
        self._train_call_end: int | None = None
        self._extras: dict[str, tuple[Callable[[], Any], Callable[[Any], None]]] = {}
        self._stop_requested = False
        self._learner_done = False
        self._dataloader: LearnerDataLoader | None = None
        if data_source is not None:
            self.get_data = data_source
        self._policy: Any = None
        if policy is not None:
            self.policy = policy

        import_module(self._cfg.get("import_names"))
        self._hooks: Hooks = merge_hooks({p: [] for p in POSITIONS}, build_learner_hook_by_cfg(self._cfg.hook))
        if self._world_size > 1 and not any(isinstance(h, LogReduceHook) for h in self._hooks["after_iter"]):
            add_learner_hook(self._hooks, LogReduceHook("log_reduce_after_iter", 10, position="after_iter"))

    # ------------------------------------------------------------------ training
    def train(self, data: Any, envstep: int = -1, policy_kwargs: dict | None = None) -> Any:
        """One update: ``before_iter`` hooks, ``policy.forward(data, **policy_kwargs)``, ``after_iter`` hooks.

        A list output (one dict per minibatch) counts one iteration per element. A ``priority`` key in the output
        becomes ``priority_info`` (with the data's ``replay_unique_id`` / ``replay_buffer_idx`` when present) for
        ``buffer.update``. Returns the policy's output without ``priority``.
        """
        if self._policy is None:
            raise RuntimeError("BaseLearner.train: no policy set; pass policy=... or assign learner.policy first")
        if envstep >= 0:
            self._collector_envstep = envstep
        self.call_hook("before_iter")
        t0 = time.perf_counter()
        output = self._policy.forward(data, **(policy_kwargs or {}))
        train_time = time.perf_counter() - t0
        if isinstance(output, Mapping):
            elems = [output]
        elif isinstance(output, list) and all(isinstance(e, Mapping) for e in output):
            elems = output
        else:
            raise TypeError(
                f"BaseLearner.train: the policy's learn forward must return a dict or a list of dicts, got "
                f"{type(output).__name__}"
            )
        priority = None
        for e in elems:
            p = e.pop("priority", None) if isinstance(e, dict) else None
            if p is not None:
                priority = p
        self._priority_info = self._build_priority_info(priority, data) if priority is not None else None
        self._train_call_end = self.train_iter + len(elems)
        try:
            for e in elems:
                scalar, scalars, histogram = _split_log_vars(e)
                # before the after_iter hooks, which may save a checkpoint of these parameters
                self._nan_guard.check_output(scalar, self.train_iter + 1, self._last_ckpt_path())
                scalar["train_time"] = train_time / len(elems)
                for key, new in (("scalar", scalar), ("scalars", scalars), ("histogram", histogram)):
                    buf = self._log_buffer[key]
                    buf.clear()
                    buf.update(new)
                self._last_iter.add(1)
                self.call_hook("after_iter")
        finally:
            self._train_call_end = None
        return output

    @staticmethod
    def _build_priority_info(priority: Any, data: Any) -> dict:
        info = {"priority": priority}
        if isinstance(data, ColumnBatch):
            for key in ("replay_unique_id", "replay_buffer_idx"):
                if key in data.keys():
                    info[key] = data.values(key)
        elif isinstance(data, list) and data and isinstance(data[0], Mapping):
            for key in ("replay_unique_id", "replay_buffer_idx"):
                if key in data[0]:
                    info[key] = [d.get(key) for d in data]
        return info

    def start(self) -> None:
        """Parallel mode: ``before_run`` hooks, train on batches from the data loader until ``train_iterations``,
        the data ends or ``request_stop()``, then ``after_run`` hooks."""
        self._learner_done = False
        self._stop_requested = False
        self.call_hook("before_run")
        if self._dataloader is None and callable(getattr(self, "get_data", None)):
            self.setup_dataloader()
        if self._dataloader is None:
            raise RuntimeError(
                "BaseLearner.start: no data source; pass BaseLearner(..., data_source=fn) with fn(batch_size) -> "
                "list of samples (the comm learner does it in parallel mode)"
            )
        while self.train_iter < self._cfg.train_iterations and not self._stop_requested:
            try:
                data = next(self._dataloader)
            except StopIteration:
                break
            if self._stop_requested:
                break
            self.train(data)
        self._learner_done = True
        self.call_hook("after_run")

    def setup_dataloader(self) -> None:
        """Parallel mode: wrap the data source (``data_source`` of the constructor, kept as ``self.get_data`` for
        DI-engine compatibility) as the data loader."""
        get_data = getattr(self, "get_data", None)
        if not callable(get_data):
            raise RuntimeError("BaseLearner.setup_dataloader: no data source; pass BaseLearner(..., data_source=fn)")
        if self._policy is None:
            raise RuntimeError("BaseLearner.setup_dataloader: set the policy first (its batch_size is needed)")
        batch_size = self._policy.get_attribute("batch_size")
        if self._dataloader is not None:
            self._dataloader.close()
        self._dataloader = LearnerDataLoader(get_data, batch_size, num_workers=self._cfg.dataloader.num_workers)

    def request_stop(self) -> None:
        """Ask the training loop to stop (``start`` stops before the next iteration; the pipeline checks
        ``stop_requested``). Typically called by a hook."""
        self._stop_requested = True

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    # ------------------------------------------------------------------ hooks
    def call_hook(self, name: str) -> None:
        """Run the hooks at position ``name`` in priority order."""
        if name not in self._hooks:
            close = difflib.get_close_matches(str(name), POSITIONS, n=1, cutoff=0.4)
            hint = f" did you mean '{close[0]}'?" if close else ""
            raise ValueError(f"call_hook: unknown position {name!r};{hint} valid positions: {', '.join(POSITIONS)}")
        call_hooks(self._hooks, name, self)

    def register_hook(self, hook: LearnerHook) -> None:
        """Add a hook instance (after existing hooks of the same priority)."""
        add_learner_hook(self._hooks, hook)

    @property
    def hooks(self) -> Hooks:
        return self._hooks

    # ------------------------------------------------------------------ checkpoints
    @property
    def ckpt_dir(self) -> str:
        return self._ckpt_dir

    def register_checkpoint_extra(
            self, name: str, get_fn: Callable[[], Any], set_fn: Callable[[Any], None], replace: bool = False
    ) -> None:
        """Save ``get_fn()`` under ``checkpoint['extra'][name]`` and restore it with ``set_fn(state)`` on load.

        Used by the pipeline for the collector, replay buffer, evaluator and RNG state (exact resume). Extra state is
        written into ``iteration_N`` checkpoints, not into ``ckpt_best`` (which holds only the policy).
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"register_checkpoint_extra: name must be a non-empty string, got {name!r}")
        if name in self._extras and not replace:
            raise ValueError(f"register_checkpoint_extra: '{name}' is already registered; pass replace=True")
        if not (callable(get_fn) and callable(set_fn)):
            raise TypeError(f"register_checkpoint_extra('{name}'): get_fn and set_fn must be callables")
        self._extras[name] = (get_fn, set_fn)

    @property
    def extra_state_fns(self) -> dict[str, tuple[Callable[[], Any], Callable[[Any], None]]]:
        return dict(self._extras)

    def save_checkpoint(self, ckpt_name: str | None = None, with_extra: bool | None = None) -> str | None:
        """Write ``./<exp_name>/ckpt/<ckpt_name>`` atomically (default ``iteration_<train_iter>.pth.tar``).

        ``with_extra`` (default: True except for ``ckpt_best.pth.tar``) adds registered extra state. Saving an
        ``iteration_N`` file rotates older ones (``checkpoint.keep_last``). Only rank 0 writes; returns the path (None:
        nothing written, on another rank or for NaN/Inf parameters with ``nan_policy="warn"``).
        """
        if self._rank != 0:
            return None
        if self._policy is None:
            raise RuntimeError("BaseLearner.save_checkpoint: no policy set")
        name = ckpt_name or iteration_ckpt_name(self.train_iter)
        state = dict(self._policy.state_dict())
        clash = [k for k in RESERVED_KEYS if k in state]
        if clash:
            raise ValueError(f"save_checkpoint: the policy's state_dict uses reserved checkpoint keys {clash}")
        path = os.path.join(self.ckpt_dir, name)
        if not self._nan_guard.check_state(state, path, self._last_ckpt_path()):
            return None
        state["last_iter"] = self.train_iter
        state["last_step"] = self._collector_envstep
        state["meta"] = {
            "ding_version": ding.__version__,
            "config_hash": config_hash(self._policy_cfg()),
            "train_iter": self.train_iter,
            "envstep": self._collector_envstep,
            "time": time.time(),
        }
        if (name != CKPT_BEST_NAME if with_extra is None else with_extra) and self._extras:
            state["extra"] = {k: get() for k, (get, _) in self._extras.items()}
        save_checkpoint_file(state, path)
        self._ckpt_name = name
        self.info(f"saved checkpoint {path}")
        if _ITER_RE.match(name):
            rotate_checkpoints(self.ckpt_dir, self._cfg.checkpoint.keep_last)
        return path

    def _last_ckpt_path(self) -> str | None:
        return os.path.join(self.ckpt_dir, self._ckpt_name) if self._ckpt_name else None

    def _policy_cfg(self) -> Any:
        get = getattr(self._policy, "get_attribute", None)
        if callable(get):
            try:
                return get("cfg")
            except (AttributeError, KeyError):
                pass
        return self._cfg

    def load_checkpoint(self, path: str, allow_pickle: bool = False) -> dict:
        """Restore policy state, ``train_iter``, ``collector_envstep`` (and, with ``allow_pickle``, registered extra
        state) from ``path``.

        ``path`` may be a directory: its newest valid ``iteration_N.pth.tar`` is used. A damaged file or one that
        does not fit the policy raises ``CheckpointError`` naming the file. Returns the loaded checkpoint dict.
        The file is loaded tensors-only, and its run state ('extra') is left alone, unless ``allow_pickle``: only for
        files you wrote yourself (the serial ``--resume`` reads its own run's files through ``check_resume``, never
        through here; see :func:`load_checkpoint_file`).
        """
        if self._policy is None:
            raise RuntimeError("BaseLearner.load_checkpoint: set the policy first")
        pickle_ok = bool(allow_pickle)
        if os.path.isdir(path):
            found = find_latest_checkpoint(path, self._logger, allow_pickle=pickle_ok)
            if found is None:
                raise CheckpointError(f"no usable iteration_N.pth.tar checkpoint in directory '{path}'")
            path = found
        return self.load_checkpoint_state(load_checkpoint_file(path, allow_pickle=pickle_ok), path)

    def load_checkpoint_state(self, state: dict, path: str) -> dict:
        """:meth:`load_checkpoint` of a checkpoint dict already read from ``path`` (named in errors)."""
        if self._policy is None:
            raise RuntimeError("BaseLearner.load_checkpoint_state: set the policy first")
        load_policy_state(self._policy, state, path)
        if "last_iter" in state:
            self._last_iter.update(int(state["last_iter"]))
        if state.get("last_step", -1) >= 0:
            self._collector_envstep = int(state["last_step"])
        extra = state.get("extra", {})
        if isinstance(extra, (bytes, bytearray)):
            if self._extras:
                self._logger.info(f"checkpoint '{path}' loaded as weights: its run state ('extra': envs, buffer, RNG) "
                                  "is not restored (only --resume of the run's own checkpoints reads it)")
            extra = {}
        for name, (_, set_fn) in self._extras.items():
            if name not in extra:
                self._logger.warning(f"checkpoint '{path}' has no extra state '{name}'; it is not restored")
                continue
            try:
                set_fn(extra[name])
            except Exception as e:  # re-raised with the file and component named
                raise CheckpointError(f"checkpoint '{path}': restoring extra state '{name}' failed: {e}") from e
        for name in extra:
            if name not in self._extras:
                self._logger.warning(f"checkpoint '{path}' has extra state '{name}' that nothing registered to load")
        self.info(f"loaded checkpoint {path} (train_iter {self.train_iter}, env steps {self._collector_envstep})")
        return state

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Stop the data loader, flush and close the TensorBoard writer if the learner created it (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._dataloader is not None:
            self._dataloader.close()
        self._logs.close()

    def __enter__(self) -> BaseLearner:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def info(self, s: str) -> None:
        self._logger.info(f"[RANK{self._rank}]: {s}")

    def debug(self, s: str) -> None:
        self._logger.debug(f"[RANK{self._rank}]: {s}")

    # ------------------------------------------------------------------ properties
    @property
    def learn_info(self) -> dict:
        """What a coordinator needs after an iteration: step, priority update, whether the run finished."""
        return {
            "learner_step": self.train_iter,
            "priority_info": self._priority_info,
            "learner_done": self._learner_done,
        }

    @property
    def priority_info(self) -> dict | None:
        """``{'priority', 'replay_unique_id', 'replay_buffer_idx'}`` from the last ``train``; None without priority."""
        return self._priority_info

    @priority_info.setter
    def priority_info(self, value: dict | None) -> None:
        self._priority_info = value

    @property
    def last_iter(self) -> CountVar:
        return self._last_iter

    @property
    def train_iter(self) -> int:
        """Number of completed updates (hooks at ``after_iter`` already see the new value)."""
        return self._last_iter.val

    @property
    def train_call_end_iter(self) -> int | None:
        """While the ``after_iter`` hooks of a ``train`` call run: the ``train_iter`` the call ends at (the policy's
        update is complete; a list output counts one iteration per minibatch). None outside a call."""
        return self._train_call_end

    @property
    def collector_envstep(self) -> int:
        return self._collector_envstep

    @collector_envstep.setter
    def collector_envstep(self, value: int) -> None:
        self._collector_envstep = value

    @property
    def policy(self) -> Any:
        return self._policy

    @policy.setter
    def policy(self, _policy: Any) -> None:
        self._policy = _policy
        info = getattr(_policy, "info", None)
        if self._cfg.log_policy and callable(info):
            text = info()
            if isinstance(text, str):
                self._logger.info(text)

    @property
    def has_policy(self) -> bool:
        return self._policy is not None

    @property
    def log_buffer(self) -> dict[str, dict[str, Any]]:
        """``{'scalar': {...}, 'scalars': {...}, 'histogram': {...}}`` of the latest iteration."""
        return self._log_buffer

    @log_buffer.setter
    def log_buffer(self, value: dict[str, dict[str, Any]]) -> None:
        self._log_buffer = value

    @property
    def logger(self) -> Any:
        return self._logger

    @property
    def tb_logger(self) -> Any:
        return self._tb_logger

    @property
    def ckpt_name(self) -> str | None:
        """File name of the last checkpoint written."""
        return self._ckpt_name

    @ckpt_name.setter
    def ckpt_name(self, name: str | None) -> None:
        self._ckpt_name = name

    @property
    def exp_name(self) -> str:
        return self._exp_name

    @property
    def instance_name(self) -> str:
        return self._instance_name

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return self._world_size

    @property
    def cfg(self) -> EasyDict:
        return self._cfg


def create_learner(cfg: Mapping, **kwargs: Any) -> BaseLearner:
    """Build the learner named by ``cfg.type`` (default 'base') from ``LEARNER_REGISTRY``, after ``import_names``."""
    import_module(cfg.get("import_names"))
    return LEARNER_REGISTRY.get(cfg.get("type", "base"), where="learner.type")(cfg, **kwargs)
