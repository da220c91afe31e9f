"""The training view's scalars fanned out to TensorBoard and to experiment trackers (W&B, MLflow, a plugin's own).

:class:`TrackingWriter` is what the workers receive as their ``tb_logger``: it has the tensorboardX calls they make
(``add_scalar``, ``add_histogram``, ``add_video``, ``flush``, ``close``), writes TensorBoard at once and hands each
scalar, with the same tag, step and value, to every :class:`Tracker` named in ``logger.types``. A tracker sees
records in batches (a checkpoint, the end of the run, or every few seconds), so a slow backend never slows a step.

A tracker that fails (no network, a bad URI, a missing package) is reported by one ``RuntimeWarning`` naming it and
the cause, and is left out from then on: a logger never ends a run.
"""
from __future__ import annotations

import importlib.util
import json
import logging
import os
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..file_helper import atomic_write_text
from ..registry_factory import LOGGER_REGISTRY

# the logger section of a main config (ding/config adds it to every config's defaults; docs/tracking.md)
LOGGER_CONFIG: dict[str, Any] = dict(
    types=["tensorboard"],  # any of 'tensorboard', 'wandb', 'mlflow' (or a tracker registered in LOGGER_REGISTRY)
    flush_s=5.0,  # hand the trackers what was logged at least this often (seconds); also at every checkpoint
    wandb=dict(
        project="ding",
        entity=None,
        group=None,
        tags=[],
        mode=None,  # None: 'online' where W&B credentials are found (env WANDB_API_KEY, ~/.netrc), else 'offline'
        dir=None,  # None: the run's log/ directory (offline runs in <exp>/log/wandb/offline-run-*)
    ),
    mlflow=dict(
        tracking_uri=None,  # None: MLflow's own (env MLFLOW_TRACKING_URI, else sqlite:///mlflow.db in the cwd)
        experiment="ding",
        tags={},
        request_timeout_s=10,  # an HTTP tracking server: per request, and ...
        request_retries=1,  # ... retries (MLflow's defaults wait minutes for a server that is down)
    ),
)


@dataclass(frozen=True)
class Scalar:
    """One scalar of the training view: TensorBoard's tag, step and value, and when it was logged."""

    tag: str
    value: float
    step: int
    wall_time: float


@dataclass(frozen=True)
class RunInfo:
    """What a tracker knows of the run: its directory (``exp_name``) and the name it is shown under; for one role of
    a parallel run also the role (``'coordinator'``, ``'learner0'``) and the group its roles' tracked runs share
    (the run directory's name)."""

    exp_dir: str
    name: str
    role: str | None = None
    group: str | None = None


class Tracker:
    """An experiment tracker beside TensorBoard. Register a subclass with ``@LOGGER_REGISTRY.register('name')``
    and list ``'name'`` in ``logger.types``; its section of the config is ``logger.<name>`` (free-form when ding's
    defaults have none).

    Every method may raise: :class:`TrackingWriter` turns the first failure into one warning and drops the tracker.
    """

    name = ""
    package = ""  # the Python package the tracker needs (missing: a ConfigError naming the extra to install)

    def __init__(self, cfg: Mapping[str, Any], run: RunInfo) -> None:
        if self.package and importlib.util.find_spec(self.package) is None:
            raise ConfigError(f"logger.types lists {self.name!r} but the {self.package} package is not installed: "
                              f"pip install 'ding[{self.name}]' (or leave {self.name!r} out of logger.types)")
        self.cfg = cfg
        self.run = run

    def start(self, params: Mapping[str, Any], state: Mapping[str, Any] | None) -> None:
        """Open the tracked run: a new one with ``params`` (the compiled config, flattened), or, with ``state`` (what
        :meth:`state` returned when the checkpoint being resumed was written), the same run again."""
        raise NotImplementedError

    def log(self, scalars: Sequence[Scalar]) -> None:
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        """What a resume needs to continue this tracked run (its id); saved in every checkpoint."""
        raise NotImplementedError

    def finish(self, result: Mapping[str, Any], ended: str) -> None:
        """The run's ``result`` (the file's content); ``ended`` as in the file ('interrupted' and 'closed': paused)."""

    def close(self) -> None:
        """Release what the tracker holds; called once, after :meth:`finish` or instead of it."""


def flatten_params(cfg: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{'policy.learn.batch_size': 64, ...}``: every leaf of a nested config, numbers, strings, bools and None as
    they are, lists of those as lists, anything else as its ``repr``."""
    out: dict[str, Any] = {}
    for k, v in cfg.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            if v:
                out.update(flatten_params(v, key + "."))
            else:
                out[key] = {}
        elif v is None or isinstance(v, (bool, int, float, str)):
            out[key] = v
        elif isinstance(v, (list, tuple)) and all(x is None or isinstance(x, (bool, int, float, str)) for x in v):
            out[key] = list(v)
        else:
            out[key] = repr(v)
    return out


class TrackingWriter:
    """TensorBoard (``tb``, or None when ``logger.types`` leaves it out) plus ``trackers``, as one tensorboardX-like
    writer. Scalars logged before :meth:`start` are kept and handed over when the trackers start."""

    def __init__(self, tb: Any, trackers: Sequence[Tracker], flush_s: float = 5.0,
                 log: logging.Logger | None = None, state_file: str | None = None) -> None:
        self.tb = tb
        self.trackers = list(trackers)
        self.state_file = state_file  # where a parallel role keeps its trackers' run ids (see role_writer)
        self.flush_s = float(flush_s)
        self._log = log or logging.getLogger("ding.tracking")
        self._pending: list[Scalar] = []
        self._started = False
        self._resume: dict[str, Any] | None = None
        self._last_push = time.monotonic()
        self._closed = False

    # ------------------------------------------------------------------ what the workers call (tensorboardX's names)
    def add_scalar(self, tag: str, scalar_value: Any, global_step: int | None = None,
                   walltime: float | None = None) -> None:
        if self.tb is not None:
            self.tb.add_scalar(tag, scalar_value, global_step, walltime)
        if self.trackers:
            self._pending.append(Scalar(tag, float(scalar_value), int(global_step or 0), walltime or time.time()))
            if self._started and time.monotonic() - self._last_push >= self.flush_s:
                self._push()

    def add_histogram(self, *args: Any, **kwargs: Any) -> None:
        if self.tb is not None:
            self.tb.add_histogram(*args, **kwargs)

    def add_video(self, *args: Any, **kwargs: Any) -> None:
        if self.tb is not None:
            self.tb.add_video(*args, **kwargs)

    def add_text(self, *args: Any, **kwargs: Any) -> None:
        if self.tb is not None:
            self.tb.add_text(*args, **kwargs)

    def flush(self) -> None:
        if self.tb is not None:
            self.tb.flush()
        if self._started:
            self._push()

    # ------------------------------------------------------------------ the run's side
    def start(self, cfg: Mapping[str, Any]) -> None:
        """Open every tracker's run (the one a resumed checkpoint names, see :meth:`load_state_dict`)."""
        params = flatten_params(cfg)
        for t in list(self.trackers):
            state = (self._resume or {}).get(t.name)
            self._guard(t, "starting its run", t.start, params, state)
        self._started = True
        self._push()
        if self.state_file is not None and self.trackers:
            atomic_write_text(self.state_file, json.dumps(self.state_dict(), indent=1) + "\n")

    def state_dict(self) -> dict[str, Any]:
        """Each tracker's run id, for the checkpoint; what was logged so far is handed over first, so a resume from
        this checkpoint neither repeats nor misses a step."""
        if self._started:
            self._push()
        out: dict[str, Any] = {}
        for t in list(self.trackers):
            self._guard(t, "saving its run id", lambda t: out.__setitem__(t.name, t.state()), t)
        return out

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """A resume: the run ids :meth:`start` reopens (call it before :meth:`start`)."""
        self._resume = dict(state or {})

    def finish(self, result: Mapping[str, Any], ended: str) -> None:
        """Hand over the last scalars and the run's result."""
        if not self._started:
            return
        self._push()
        for t in list(self.trackers):
            self._guard(t, "recording the result", t.finish, result, ended)

    def close(self) -> None:
        """Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._started:
                self._push()
            for t in list(self.trackers):
                self._guard(t, "closing", t.close)
            self.trackers = []
        finally:
            if self.tb is not None:
                self.tb.close()

    # ------------------------------------------------------------------ internals
    def _push(self) -> None:
        batch, self._pending = self._pending, []
        self._last_push = time.monotonic()
        if not batch:
            return
        for t in list(self.trackers):
            self._guard(t, "logging", t.log, batch)

    def _guard(self, tracker: Tracker, what: str, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception as e:  # any failure of a tracker's library: reported once, then the tracker is left out
            if tracker in self.trackers:
                self.trackers.remove(tracker)
            msg = (f"logger '{tracker.name}' failed while {what} ({type(e).__name__}: {e}); the run goes on without "
                   f"it (logger.types lists it; docs/tracking.md)")
            self._log.warning(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
            try:
                tracker.close()
            except Exception:  # closing what failed: its own error was reported above
                pass


def build_tracking_writer(logger_cfg: Mapping[str, Any], run: RunInfo, tb_factory: Callable[[], Any],
                          state_file: str | None = None) -> TrackingWriter:
    """The writer of a run from its ``logger`` config: TensorBoard from ``tb_factory()`` if listed, then each other
    type's tracker from ``LOGGER_REGISTRY`` (a name no tracker has is a :class:`ConfigError`)."""
    types = list(logger_cfg.get("types", ["tensorboard"]))
    trackers: list[Tracker] = []
    for name in types:
        if name == "tensorboard":
            continue
        if not isinstance(name, str):
            raise ConfigError(f"logger.types: entries are logger names (str), got {name!r}")
        if name not in LOGGER_REGISTRY:
            from ..plugins import load_plugins

            load_plugins()
        if name not in LOGGER_REGISTRY:
            raise ConfigError(f"logger.types: {LOGGER_REGISTRY.unknown_message(name)} ('tensorboard' is built in)")
        cls = LOGGER_REGISTRY.get(name)
        trackers.append(cls(dict(logger_cfg.get(name) or {}), run))
    tb = tb_factory() if "tensorboard" in types else None
    return TrackingWriter(tb, trackers, flush_s=float(logger_cfg.get("flush_s", 5.0)), state_file=state_file)


def run_writer(cfg: Mapping[str, Any], tb_dir: str) -> TrackingWriter:
    """The writer of the run whose compiled config is ``cfg``: TensorBoard at ``tb_dir`` and ``cfg.logger``'s
    trackers, shown under the run directory's name."""
    from ..log_helper import build_tb_writer

    exp_dir = str(cfg["exp_name"])
    run = RunInfo(exp_dir=exp_dir, name=os.path.basename(os.path.normpath(exp_dir)))
    return build_tracking_writer(cfg.get("logger") or LOGGER_CONFIG, run, lambda: build_tb_writer(tb_dir))


ROLE_STATE_FILE = "tracking.json"


def role_writer(cfg: Mapping[str, Any], role: str, tb_dir: str) -> TrackingWriter:
    """The writer of one role of a parallel run (the coordinator; the lead learner), the process that owns the
    figures it logs: TensorBoard at ``tb_dir`` and ``cfg.logger``'s trackers in a tracked run of the role's own,
    shown as ``<run>/<role>`` and grouped under the run's name (W&B's group, MLflow's ``ding.run`` tag). The
    trackers' run ids are written to ``<tb_dir>/tracking.json`` when they start; a role restarted or resumed in the
    same run directory reopens the runs that file names, so its series continues."""
    from ..log_helper import build_tb_writer

    exp_dir = str(cfg["exp_name"])
    name = os.path.basename(os.path.normpath(exp_dir))
    run = RunInfo(exp_dir=exp_dir, name=f"{name}/{role}", role=role, group=name)
    state_file = os.path.join(tb_dir, ROLE_STATE_FILE)
    writer = build_tracking_writer(cfg.get("logger") or LOGGER_CONFIG, run, lambda: build_tb_writer(tb_dir),
                                   state_file=state_file)
    if writer.trackers and os.path.isfile(state_file):
        state = _read_role_state(state_file)
        if state is None:
            msg = (f"{state_file} does not hold the trackers' run ids (a JSON object of tracker name -> object); "
                   f"the {role} starts new tracked runs")
            logging.getLogger("ding.tracking").warning(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
        else:
            writer.load_state_dict(state)
    return writer


def _read_role_state(path: str) -> dict[str, Any] | None:
    """The run ids a role's earlier life wrote, or None when the file does not hold them."""
    try:
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not all(isinstance(v, dict) for v in state.values()):
        return None
    return state
