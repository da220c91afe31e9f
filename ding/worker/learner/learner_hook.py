"""Learner hooks: code run by ``BaseLearner`` before/after the whole run and before/after every iteration.

A hook is a callable object ``hook(learner)`` with a ``name``, a ``priority`` (lower runs first; ties run in
registration order) and a ``position``. Hooks come from the learner config (``learner.hook``: shorthand keys or the
full form), from ``learner.register_hook(instance)``, or from plugin modules listed in ``import_names`` that call
``register_learner_hook(name, cls)``. See docs/hooks.md.
"""
from __future__ import annotations

import difflib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from easydict import EasyDict

from ding.utils import HOOK_REGISTRY, ConfigError, import_module
from ding.utils.errors import DingError
from ding.utils.worker_logs import CONSOLE

if TYPE_CHECKING:
    from .base_learner import BaseLearner

POSITIONS = ("before_run", "after_run", "before_iter", "after_iter")

Hooks = dict[str, list["Hook"]]


class LearnerHookError(DingError, RuntimeError):
    """A learner hook raised; the message names the hook and its position, the original error is chained."""


class Hook(ABC):
    """A named callable with a priority (lower value runs first)."""

    def __init__(self, name: str, priority: float, **kwargs: Any) -> None:
        if not isinstance(priority, (int, float)) or priority < 0:
            raise ConfigError(f"hook '{name}': priority must be a number >= 0, got {priority!r}")
        self._name = name
        self._priority = priority

    @property
    def name(self) -> str:
        return self._name

    @property
    def priority(self) -> float:
        return self._priority

    @abstractmethod
    def __call__(self, engine: Any) -> Any:
        """Run the hook; ``engine`` is the learner."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r}, priority={self._priority})"


class LearnerHook(Hook):
    """A hook with a position in the learner's loop: one of ``before_run, after_run, before_iter, after_iter``."""

    positions = POSITIONS

    def __init__(self, *args: Any, position: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if position not in self.positions:
            close = difflib.get_close_matches(str(position), self.positions, n=1, cutoff=0.4)
            hint = f" did you mean '{close[0]}'?" if close else ""
            raise ConfigError(
                f"hook '{self.name}': unknown position {position!r};{hint} valid positions: {', '.join(self.positions)}"
            )
        self._position = position

    @property
    def position(self) -> str:
        return self._position

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self._name!r}, priority={self._priority}, position={self._position!r})"


def _ext(ext_args: Mapping | None) -> EasyDict:
    return EasyDict(dict(ext_args or {}))


class LoadCkptHook(LearnerHook):
    """Load a checkpoint into the learner (policy state, counters, registered extra state).

    ``ext_args.load_path``: a checkpoint file, or a directory (the newest valid ``iteration_N.pth.tar`` in it is used).
    An empty path does nothing.
    """

    def __init__(self, *args: Any, ext_args: Mapping | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._load_path = _ext(ext_args).get("load_path", "")

    def __call__(self, engine: BaseLearner) -> None:
        if self._load_path:
            engine.load_checkpoint(self._load_path, allow_pickle=False)  # weights: any file, never unpickled


class SaveCkptHook(LearnerHook):
    """Save a checkpoint through ``learner.save_checkpoint()``; after an iteration only every ``ext_args.freq``."""

    def __init__(self, *args: Any, ext_args: Mapping | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._freq = int(_ext(ext_args).get("freq", 1))
        if self._freq < 1:
            raise ConfigError(f"hook '{self.name}': ext_args.freq must be >= 1, got {self._freq}")

    def __call__(self, engine: BaseLearner) -> None:
        if self.position in ("before_iter", "after_iter") and engine.train_iter % self._freq != 0:
            return
        engine.save_checkpoint()


class LogShowHook(LearnerHook):
    """Every ``ext_args.freq`` iterations: one compact log line and TensorBoard ``learner_iter/*`` scalars.

    Values are averaged over the iterations since the last line. Shown keys: the policy's ``monitor_vars()`` when it
    has them, else every scalar in ``learner.log_buffer['scalar']``.
    """

    def __init__(self, *args: Any, ext_args: Mapping | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._freq = int(_ext(ext_args).get("freq", 1))
        if self._freq < 1:
            raise ConfigError(f"hook '{self.name}': ext_args.freq must be >= 1, got {self._freq}")
        self._sums: dict[str, float] = {}
        self._counts: dict[str, int] = {}
        self._last_time = 0.0
        self._last_iter: int | None = None

    def __call__(self, engine: BaseLearner) -> None:
        if engine.rank != 0:
            return
        for k, v in engine.log_buffer["scalar"].items():
            self._sums[k] = self._sums.get(k, 0.0) + float(v)
            self._counts[k] = self._counts.get(k, 0) + 1
        it = engine.train_iter
        now = time.perf_counter()
        if self._last_iter is None:  # rate is measured from the first iteration this hook sees
            self._last_iter, self._last_time = it, now
        if it % self._freq != 0 or not self._counts:
            return
        means = {k: self._sums[k] / self._counts[k] for k in self._sums}
        rate = (it - self._last_iter) / max(now - self._last_time, 1e-9) if it > self._last_iter else None
        self._sums.clear()
        self._counts.clear()
        self._last_time, self._last_iter = now, it

        shown = _monitor_vars(engine) or sorted(means)
        parts = [f"[learner] iter {it:,}"]
        if engine.collector_envstep >= 0:
            parts.append(f"env steps {engine.collector_envstep:,}")
        parts += [f"{k} {means[k]:.4g}" for k in shown if k in means]
        if rate is not None:
            parts.append(f"{rate:,.0f} it/s")
        engine.logger.info(" | ".join(parts), extra=CONSOLE)
        tb = engine.tb_logger
        if tb is not None:
            for k, v in means.items():
                tb.add_scalar(f"learner_iter/{k}", v, it)
                if engine.collector_envstep >= 0:
                    tb.add_scalar(f"learner_step/{k}", v, engine.collector_envstep)
            for k, v in engine.log_buffer["histogram"].items():
                tb.add_histogram(f"learner_iter/{k}", v, it)


def _monitor_vars(engine: BaseLearner) -> list[str]:
    fn = getattr(engine.policy, "monitor_vars", None) if engine.has_policy else None
    return list(fn()) if callable(fn) else []


class LogReduceHook(LearnerHook):
    """Average ``learner.log_buffer['scalar']`` over an interval of ``ext_args.freq`` iterations (default 1) and,
    in a multi-process run (``torch.distributed`` initialised), over all ranks.

    At every ``freq``-th iteration the buffer's scalars are replaced by their averages, so hooks with a larger
    priority value (they run later) read smoothed, global values. With ``freq=1`` in a single process it changes
    nothing.
    """

    def __init__(self, *args: Any, ext_args: Mapping | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._freq = int(_ext(ext_args).get("freq", 1))
        if self._freq < 1:
            raise ConfigError(f"hook '{self.name}': ext_args.freq must be >= 1, got {self._freq}")
        self._sums: dict[str, float] = {}
        self._counts: dict[str, int] = {}
        # How the means are averaged over the ranks. A learner group sets its own (LearnerGroup.all_reduce_mean),
        # so that a member lost during this collective ends the run with the group's one error naming the rank.
        self.reducer: Callable[[dict[str, float], int], dict[str, float]] = allreduce_mean

    def __call__(self, engine: BaseLearner) -> None:
        scalars = engine.log_buffer["scalar"]
        for k, v in scalars.items():
            self._sums[k] = self._sums.get(k, 0.0) + float(v)
            self._counts[k] = self._counts.get(k, 0) + 1
        if engine.train_iter % self._freq != 0:
            return
        means = {k: self._sums[k] / self._counts[k] for k in self._sums}
        self._sums.clear()
        self._counts.clear()
        if engine.world_size > 1:
            means = self.reducer(means, engine.world_size)
        scalars.update(means)


def allreduce_mean(values: dict[str, float], world_size: int, device: Any = None) -> dict[str, float]:
    """The mean of each value over the ``world_size`` ranks of the default process group (one allreduce; every rank
    must pass the same keys). ``device``: where the tensor lives for the collective (the backend's device: nccl
    reduces only CUDA tensors)."""
    import torch
    import torch.distributed as dist

    if not values or not (dist.is_available() and dist.is_initialized()):
        return values
    keys = sorted(values)
    t = torch.tensor([values[k] for k in keys], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return {k: float(v) / world_size for k, v in zip(keys, t.cpu().tolist())}


for _name, _cls in (
    ("load_ckpt", LoadCkptHook), ("save_ckpt", SaveCkptHook), ("log_show", LogShowHook), ("log_reduce", LogReduceHook)
):
    HOOK_REGISTRY.register(_name, _cls)

# Shorthand config keys -> (hook type, position, name, default priority, how the value becomes ext_args).
# A falsy value ('' / 0 / False / None) installs nothing.
_SHORTHAND_ARGS: dict[str, Callable[[Any], dict]] = {
    "load_ckpt_before_run": lambda v: {"load_path": v},
    "save_ckpt_after_iter": lambda v: {"freq": int(v)},
    "save_ckpt_after_run": lambda v: {},
    "log_show_after_iter": lambda v: {"freq": int(v)},
    "log_reduce_after_iter": lambda v: {"freq": 1 if v is True else int(v)},
}
HOOK_SHORTHANDS: dict[str, tuple[str, str]] = {
    "load_ckpt_before_run": ("load_ckpt", "before_run"),
    "save_ckpt_after_iter": ("save_ckpt", "after_iter"),
    "save_ckpt_after_run": ("save_ckpt", "after_run"),
    "log_show_after_iter": ("log_show", "after_iter"),
    "log_reduce_after_iter": ("log_reduce", "after_iter"),
}
_SHORTHAND_PRIORITY = {"log_reduce_after_iter": 10}  # others: 20 (DI-engine's values); full-form default: 100
_FULL_FORM_KEYS = ("name", "type", "position", "priority", "ext_args")


class HookTypeError(TypeError, AssertionError):
    """Not a ``LearnerHook`` subclass: a ``TypeError``, and DI-engine's ``AssertionError`` for code catching that."""


def register_learner_hook(name: str, hook_type: type) -> None:
    """Make ``hook_type`` (a ``LearnerHook`` subclass) buildable from config as ``type=name``; anything else raises
    :class:`HookTypeError` (a ``TypeError`` that is also DI-engine's ``AssertionError``)."""
    if not (isinstance(hook_type, type) and issubclass(hook_type, LearnerHook)):
        raise HookTypeError(f"register_learner_hook('{name}', ...): expected a LearnerHook subclass, got {hook_type!r}")
    HOOK_REGISTRY.register(name, hook_type)


def add_learner_hook(hooks: Hooks, hook: LearnerHook) -> None:
    """Insert ``hook`` at its position, after every hook whose priority is <= its own (stable for ties)."""
    if not isinstance(hook, LearnerHook):
        raise TypeError(f"add_learner_hook: expected a LearnerHook instance, got {hook!r}")
    lst = hooks.setdefault(hook.position, [])
    idx = len(lst)
    while idx > 0 and lst[idx - 1].priority > hook.priority:
        idx -= 1
    lst.insert(idx, hook)


def merge_hooks(hooks1: Hooks, hooks2: Hooks) -> Hooks:
    """A new hooks dict: per position, ``hooks1`` then ``hooks2``, stably sorted by priority."""
    return {
        pos: sorted(list(hooks1.get(pos, [])) + list(hooks2.get(pos, [])), key=lambda h: h.priority)
        for pos in dict.fromkeys([*POSITIONS, *hooks1, *hooks2])
    }


def _empty_hooks() -> Hooks:
    return {pos: [] for pos in POSITIONS}


def build_learner_hook_by_cfg(cfg: Mapping) -> Hooks:
    """Build hooks from a learner's ``hook`` config section (the learner config itself is accepted too).

    Each key is a shorthand (``save_ckpt_after_iter: 1000``, see ``HOOK_SHORTHANDS``) or, with a dict value, the full
    form ``dict(type=..., position=..., name=key, priority=100, ext_args={})``. ``import_names`` lists plugin
    modules to import first.
    """
    if "hook" in cfg and isinstance(cfg["hook"], Mapping) and "type" not in cfg:
        import_module(cfg.get("import_names"))
        cfg = cfg["hook"]
    import_module(cfg.get("import_names"))
    hooks = _empty_hooks()
    for key, value in cfg.items():
        if key == "import_names":
            continue
        if isinstance(value, Mapping):
            hook = _build_full_form(key, value)
        elif key in HOOK_SHORTHANDS:
            if not value:
                continue
            hook_type, position = HOOK_SHORTHANDS[key]
            cls = HOOK_REGISTRY.get(hook_type, where=f"learner.hook.{key}")
            name = hook_type if key in ("load_ckpt_before_run", "log_show_after_iter") else key
            hook = cls(
                name, _SHORTHAND_PRIORITY.get(key, 20), position=position, ext_args=_SHORTHAND_ARGS[key](value)
            )
        else:
            close = difflib.get_close_matches(str(key), list(HOOK_SHORTHANDS), n=1, cutoff=0.5)
            hint = f" did you mean '{close[0]}'?" if close else ""
            raise ConfigError(
                f"learner.hook.{key}: unknown hook shorthand;{hint} shorthands: {', '.join(HOOK_SHORTHANDS)}. "
                f"For any other hook give the full form {key}=dict(type=..., position=..., priority=..., ext_args=...)"
            )
        add_learner_hook(hooks, hook)
    return hooks


def _build_full_form(key: str, value: Mapping) -> LearnerHook:
    unknown = [k for k in value if k not in _FULL_FORM_KEYS]
    if unknown:
        k = unknown[0]
        close = difflib.get_close_matches(str(k), _FULL_FORM_KEYS, n=1, cutoff=0.5)
        hint = f" did you mean '{close[0]}'?" if close else ""
        raise ConfigError(f"learner.hook.{key}.{k}: unknown key;{hint} valid keys: {', '.join(_FULL_FORM_KEYS)}")
    for required in ("type", "position"):
        if required not in value:
            raise ConfigError(f"learner.hook.{key}: the full form needs '{required}' (e.g. dict(type='save_ckpt', "
                              "position='after_iter', priority=20, ext_args=dict(freq=100)))")
    cls = HOOK_REGISTRY.get(value["type"], where=f"learner.hook.{key}.type")
    return cls(
        value.get("name", key), value.get("priority", 100), position=value["position"],
        ext_args=_ext(value.get("ext_args"))
    )


def show_hooks(hooks: Hooks) -> str:
    """Print (and return) one line per position listing its hooks in call order."""
    text = "\n".join(
        f"{pos}: {[f'{h.name}({type(h).__name__}, priority={h.priority})' for h in hs]}" for pos, hs in hooks.items()
    )
    print(text)
    return text


def call_hooks(hooks: Hooks, position: str, engine: Any) -> None:
    """Run every hook at ``position``; an exception is re-raised naming the hook and position (chained)."""
    for hook in hooks.get(position, ()):
        try:
            hook(engine)
        except Exception as e:  # re-raised below with the hook's name; nothing is swallowed
            msg = (
                f"learner hook '{hook.name}' ({type(hook).__name__}) at position '{position}' raised "
                f"{type(e).__name__}: {e} (train_iter={getattr(engine, 'train_iter', '?')})"
            )
            new: Exception
            if isinstance(e, DingError):
                try:  # keep ding's own error types (e.g. CheckpointError) so callers can catch them
                    new = type(e)(msg)
                except TypeError:
                    new = LearnerHookError(msg)
            else:
                new = LearnerHookError(msg)
            raise new from e
