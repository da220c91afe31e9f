"""The Policy base class: one model, four mode views (learn / collect / eval / command) that workers hold."""
from __future__ import annotations

import copy
import difflib
import inspect
import logging
from abc import ABC, abstractmethod
from collections import namedtuple
from typing import Any, Callable, Mapping, Sequence

import torch
import torch.nn as nn
from easydict import EasyDict

from ding.config.ranges import at_least
from ding.model import create_model
from ding.utils import (
    POLICY_REGISTRY,
    CheckpointError,
    ConfigError,
    apply_default_torch_threads,
    deep_merge_dicts,
    import_module,
)

from .extra_state import EXTRA_KEY, extra_state, load_extra_state
from .tensor_io import holds_tensors, outputs_to_numpy, transitions_to_tensor

logger = logging.getLogger(__name__)
_CPU_FALLBACK_NOTED = False  # the cuda=True-without-a-GPU warning was printed in this process

MODES = ("learn", "collect", "eval", "command")

PolicyLearnMode = namedtuple("policy_learn_mode", [
    "forward", "reset", "info", "monitor_vars", "get_attribute", "set_attribute", "state_dict", "load_state_dict",
])
PolicyCollectMode = namedtuple("policy_collect_mode", [
    "forward", "process_transition", "get_train_sample", "reset", "get_attribute", "set_attribute", "state_dict",
    "load_state_dict",
])
PolicyEvalMode = namedtuple("policy_eval_mode", [
    "forward", "reset", "get_attribute", "set_attribute", "state_dict", "load_state_dict",
])
PolicyCommandMode = namedtuple("policy_command_mode", ["get_setting_learn", "get_setting_collect", "get_setting_eval"])


class Policy(ABC):
    """Base of every algorithm. Subclasses fill in the ``_init_*`` / ``_forward_*`` hooks; workers only see the mode
    views (:attr:`learn_mode`, :attr:`collect_mode`, :attr:`eval_mode`, :attr:`command_mode`), namedtuples of bound
    methods.

    ``cfg`` is merged over :meth:`default_config` (so a partial config works); ``model`` is built from
    ``cfg.model`` via ``MODEL_REGISTRY`` when not given; ``enable_field`` picks which modes are initialised (None =
    all four), e.g. ``['eval']`` for a policy that only evaluates a checkpoint.
    """

    # The config schema: every key the base class reads. Subclasses add theirs in their own ``config``;
    # default_config() merges the ``config`` of every class along the MRO (base first).
    config: dict = dict(
        # Run the model on CUDA (needs a CUDA build of torch).
        cuda=False,
        # True for algorithms that train only on fresh data (no replay buffer; serial_pipeline_onpolicy).
        on_policy=False,
        # Prioritized replay: the learner returns per-sample priorities and the buffer samples by them.
        priority=False,
        # Scale each sample's loss by the buffer's importance-sampling weight 'IS' (needs priority=True).
        priority_IS_weight=False,
        # Env steps collected with a uniformly random policy before training starts (0 = none).
        random_collect_size=0,
        # Checkpoint read by `ding -m eval` when --load-path is not given.
        load_path=None,
        # DI-engine's base keys, accepted so its policy files and configs run: several GPUs (not supported: must stay
        # False), synchronous gradient all-reduce, and whether trajectories have no length limit.
        multi_gpu=False,
        bp_update_sync=True,
        traj_len_inf=False,
        # Keyword arguments of the model (free-form; checked against the model class when it is built).
        model=dict(),
        learn=dict(
            # Learner config (filled with the learner's defaults by compile_config).
            learner=dict(),
            # Gradient steps per collect in the off-policy loop (each on a batch of learn.batch_size from the buffer).
            update_per_collect=1,
            # Continue the run in ./<exp_name>/ from its latest checkpoint, exactly (same as `ding ... --resume`).
            resume_training=False,
        ),
        collect=dict(
            # Episodes per collect call, for episode collectors. Set n_sample (sample collector) or n_episode, not
            # both.
            n_episode=None,
            # Samples per collect call, for sample collectors (DI-engine's policy files leave it to the config).
            n_sample=None,
            # Consecutive samples grouped into one train sample (1 = single transitions).
            unroll_len=1,
            # Collector config (filled with the collector's defaults by compile_config).
            collector=dict(),
        ),
        eval=dict(
            # Evaluator config (filled with the evaluator's defaults by compile_config).
            evaluator=dict(),
        ),
        other=dict(
            # Commander config (filled with the commander's defaults by compile_config).
            commander=dict(),
        ),
    )
    # Allowed values (see ding/config/ranges.py), checked by compile_config; subclasses add theirs.
    config_ranges: dict = {
        "random_collect_size": at_least(0, integer=True),
        "learn.update_per_collect": at_least(1, integer=True),
        "collect.n_episode": at_least(1, integer=True),
        "collect.unroll_len": at_least(1, integer=True),
    }
    # Config sections whose content is free-form for the config validator (paths relative to the policy config).
    open_config_keys: tuple[str, ...] = ("model",)
    # gymnasium space classes this algorithm can act in (None: any); checked at set-up by check_policy_fits_env.
    action_space_types: tuple[type, ...] | None = None
    # (low, high) the policy's Box actions lie in (None: any); a Box with other bounds is refused at set-up.
    action_bounds: tuple[float, float] | None = None

    # True: forward returns tensors and get_train_sample wants tensor transitions (DI-engine's convention); False:
    # numpy both ways (ding's); None: decided by the first collect/eval forward's output.
    tensor_io: bool | None = None

    # Set by a group of learners (learner_num > 1): averages the given parameters' gradients over the group (once
    # per optimizer step). A policy that clips gradients by hand calls _sync_gradients first, so it clips the mean
    # as one learner on the whole batch would; an optimizer's own clipping (grad_clip_type) needs nothing.
    gradient_sync: Callable[[Sequence[torch.Tensor]], None] | None = None

    # DI-engine's names of the view types.
    learn_function = PolicyLearnMode
    collect_function = PolicyCollectMode
    eval_function = PolicyEvalMode
    command_function = PolicyCommandMode

    @classmethod
    def default_config(cls) -> EasyDict:
        """The merged ``config`` of this class and its bases (a fresh copy), plus ``cfg_type``."""
        merged = EasyDict()
        for klass in reversed(cls.__mro__):
            if "config" in vars(klass):
                merged = deep_merge_dicts(merged, vars(klass)["config"])
        merged.cfg_type = cls.__name__ + "Dict"
        return merged

    def __init__(self, cfg: Mapping[str, Any], model: nn.Module | None = None,
                 enable_field: Sequence[str] | None = None) -> None:
        apply_default_torch_threads()  # a loop built by hand gets the pipelines' thread default
        self._cfg = deep_merge_dicts(self.default_config(), cfg)
        self._enable_field = self._check_enable_field(enable_field)
        self._on_policy = bool(self._cfg.on_policy)
        self._device = self._select_device(self._cfg.cuda)
        if self._cfg.get("multi_gpu", False):
            raise ConfigError(f"policy.multi_gpu: True is not supported by ding ({type(self).__name__}); set it to "
                              f"False (one process trains; use `ding -m parallel` for several collectors)")
        self._cuda = self._device.type == "cuda"  # DI-engine's policies test self._cuda before moving data
        self._rank = 0
        self._model = self._create_model(self._cfg, model).to(self._device)
        self._views: dict[str, tuple] = {}
        # Whether this policy exchanges torch tensors with the workers (DI-engine's convention) rather than numpy
        # (ding's): None until its first collect/eval forward tells (see ding/policy/tensor_io.py).
        self._tensor_io: bool | None = type(self).tensor_io
        for mode in MODES:
            if mode in self._enable_field:
                getattr(self, f"_init_{mode}")()

    # ------------------------------------------------------------------ construction helpers
    def _sync_gradients(self, params: Sequence[torch.Tensor]) -> None:
        """Average ``params``' gradients over a group of learners (nothing with one learner); call before clipping."""
        if self.gradient_sync is not None:
            self.gradient_sync(params)

    @staticmethod
    def _check_enable_field(enable_field: Sequence[str] | None) -> tuple[str, ...]:
        if enable_field is None:
            return MODES
        if isinstance(enable_field, str):
            enable_field = [enable_field]
        for mode in enable_field:
            if mode not in MODES:
                close = difflib.get_close_matches(str(mode), MODES, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise ValueError(f"enable_field: unknown mode {mode!r}.{hint} Modes are {', '.join(MODES)}.")
        return tuple(m for m in MODES if m in enable_field)

    @staticmethod
    def _select_device(cuda: bool) -> torch.device:
        """``cuda=True`` uses the GPU where torch has one; elsewhere the run goes on on the CPU with one warning line
        per process (DI-engine's files all say ``cuda=True``, and the same file runs on both kinds of machine)."""
        global _CPU_FALLBACK_NOTED
        if not cuda:
            return torch.device("cpu")
        if not torch.cuda.is_available():
            if not _CPU_FALLBACK_NOTED:
                _CPU_FALLBACK_NOTED = True
                logger.warning("policy.cuda=True, but torch has no usable CUDA device here: running on the CPU")
            return torch.device("cpu")
        return torch.device("cuda")

    def _create_model(self, cfg: EasyDict, model: nn.Module | None) -> nn.Module:
        if model is not None:
            if not isinstance(model, nn.Module):
                raise TypeError(f"{type(self).__name__}: model must be a torch.nn.Module, got {type(model).__name__}")
            return model
        model_cfg = dict(cfg.model)
        if "type" not in model_cfg:
            model_cfg["type"], model_cfg["import_names"] = self.default_model()
        return create_model(model_cfg, where="policy.model")

    def default_model(self) -> tuple[str, list[str]]:
        """``(registered model name, modules to import)`` used when no model is given and ``cfg.model.type`` is
        unset."""
        raise ConfigError(f"{type(self).__name__} has no default model: pass model=... or set policy.model.type")

    # ------------------------------------------------------------------ mode views
    def _view(self, mode: str) -> Any:
        if mode not in self._enable_field:
            raise RuntimeError(
                f"{type(self).__name__}.{mode}_mode: the '{mode}' mode is not enabled "
                f"(enable_field={list(self._enable_field)}); create the policy with enable_field including '{mode}'"
            )
        view = self._views.get(mode)
        if view is None:
            view = self._views[mode] = getattr(self, f"_build_{mode}_view")()
        return view

    def _build_learn_view(self) -> PolicyLearnMode:
        if self._tensor_io is not False:
            return PolicyLearnMode(self._forward_learn, self._reset_learn, self._info, self._monitor_vars_learn,
                                   self._get_attribute, self._set_attribute, self._worker_state_dict_learn,
                                   self._worker_load_state_dict_learn)
        return PolicyLearnMode(self._forward_learn, self._reset_learn, self._info, self._monitor_vars_learn,
                               self._get_attribute, self._set_attribute, self._state_dict_learn,
                               self._load_state_dict_learn)

    def _build_collect_view(self) -> PolicyCollectMode:
        if self._tensor_io is not False:
            return PolicyCollectMode(self._worker_forward_collect, self._process_transition,
                                     self._worker_get_train_sample, self._reset_collect, self._get_attribute,
                                     self._set_attribute, self._state_dict_collect, self._load_state_dict_collect)
        return PolicyCollectMode(self._forward_collect, self._process_transition, self._get_train_sample,
                                 self._reset_collect, self._get_attribute, self._set_attribute,
                                 self._state_dict_collect, self._load_state_dict_collect)

    def _build_eval_view(self) -> PolicyEvalMode:
        if self._tensor_io is not False:
            return PolicyEvalMode(self._worker_forward_eval, self._reset_eval, self._get_attribute,
                                  self._set_attribute, self._state_dict_eval, self._load_state_dict_eval)
        return PolicyEvalMode(self._forward_eval, self._reset_eval, self._get_attribute, self._set_attribute,
                              self._state_dict_eval, self._load_state_dict_eval)

    def _build_command_view(self) -> PolicyCommandMode:
        return PolicyCommandMode(self._get_setting_learn, self._get_setting_collect, self._get_setting_eval)

    def _worker_state_dict_learn(self) -> dict[str, Any]:
        state = self._state_dict_learn()
        if self._tensor_io:
            extra = extra_state(self)
            if extra:
                state = dict(state, **{EXTRA_KEY: extra})
        return state

    def _worker_load_state_dict_learn(self, state_dict: Mapping[str, Any]) -> None:
        extra = state_dict.get(EXTRA_KEY) if isinstance(state_dict, Mapping) else None
        if extra is not None:
            state_dict = {k: v for k, v in state_dict.items() if k != EXTRA_KEY}
        self._load_state_dict_learn(state_dict)
        if extra:
            load_extra_state(self, extra)

    def _worker_forward_collect(self, data: dict[int, Any], **kwargs: Any) -> dict[int, Any]:
        return self._to_worker(self._forward_collect(data, **kwargs))

    def _worker_forward_eval(self, data: dict[int, Any], **kwargs: Any) -> dict[int, Any]:
        return self._to_worker(self._forward_eval(data, **kwargs))

    def _to_worker(self, output: dict[int, Any]) -> dict[int, Any]:
        if not isinstance(output, Mapping):  # e.g. an eval forward returning a tensor (MetricSerialEvaluator's)
            return output
        if self._tensor_io is None:
            self._tensor_io = holds_tensors(output)
        return outputs_to_numpy(output) if self._tensor_io else output

    def _worker_get_train_sample(self, transitions: list[dict[str, Any]]) -> list[Any]:
        if self._tensor_io:
            transitions = transitions_to_tensor(transitions)
        return self._get_train_sample(transitions)

    @property
    def cfg(self) -> EasyDict:
        """The merged config (DI-engine's name)."""
        return self._cfg

    @property
    def learn_mode(self) -> PolicyLearnMode:
        return self._view("learn")

    @property
    def collect_mode(self) -> PolicyCollectMode:
        return self._view("collect")

    @property
    def eval_mode(self) -> PolicyEvalMode:
        return self._view("eval")

    @property
    def command_mode(self) -> PolicyCommandMode:
        return self._view("command")

    # ------------------------------------------------------------------ learn mode
    @abstractmethod
    def _init_learn(self) -> None:
        ...

    @abstractmethod
    def _forward_learn(self, data: list[dict[str, Any]]) -> dict[str, Any] | list[dict[str, Any]]:
        """One update from a list of samples; returns scalars to log (and ``priority`` for prioritized replay)."""

    def _monitor_vars_learn(self) -> list[str]:
        """Keys of :meth:`_forward_learn`'s output that the learner logs (DI-engine's base: the two below)."""
        return ["cur_lr", "total_loss"]

    def _reset_learn(self, data_id: list[int] | None = None) -> None:
        pass

    def _state_dict_learn(self) -> dict[str, Any]:
        """``{'model'}`` plus ``'optimizer'`` when the policy has ``self._optimizer``. Like torch's
        ``state_dict``, tensors are references: ``torch.save`` or ``copy.deepcopy`` before training on."""
        state = {"model": self._model.state_dict()}
        optimizer = getattr(self, "_optimizer", None)
        if optimizer is not None:
            state["optimizer"] = optimizer.state_dict()
        return state

    def _load_state_dict_learn(self, state_dict: Mapping[str, Any]) -> None:
        load_model_state(self._model, state_dict, "model")
        optimizer = getattr(self, "_optimizer", None)
        if "optimizer" in state_dict and optimizer is not None:
            load_optimizer_state(optimizer, state_dict["optimizer"])

    # ------------------------------------------------------------------ collect mode
    @abstractmethod
    def _init_collect(self) -> None:
        ...

    @abstractmethod
    def _forward_collect(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        """``{env_id: obs}`` -> ``{env_id: {'action': ..., ...}}`` (numpy, ready for ``env.step``). A policy may
        take keyword arguments too (the collector's ``policy_kwargs``, e.g. DQN's ``eps``)."""

    @abstractmethod
    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        """One transition dict from the observation, the policy's output for it and the env's timestep."""

    @abstractmethod
    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[Any]:
        """Train samples from one env's chunk of transitions (see docs/policies.md for the collector contract)."""

    def _reset_collect(self, data_id: list[int] | None = None) -> None:
        pass

    def _state_dict_collect(self) -> dict[str, Any]:
        return {"model": self._model.state_dict()}

    def _load_state_dict_collect(self, state_dict: Mapping[str, Any]) -> None:
        load_model_state(self._model, state_dict, "model")

    # ------------------------------------------------------------------ eval mode
    @abstractmethod
    def _init_eval(self) -> None:
        ...

    @abstractmethod
    def _forward_eval(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        """``{env_id: obs}`` -> ``{env_id: {'action': ...}}``, deterministic."""

    def _reset_eval(self, data_id: list[int] | None = None) -> None:
        pass

    def _state_dict_eval(self) -> dict[str, Any]:
        return {"model": self._model.state_dict()}

    def _load_state_dict_eval(self, state_dict: Mapping[str, Any]) -> None:
        load_model_state(self._model, state_dict, "model")

    # ------------------------------------------------------------------ command mode
    def _init_command(self) -> None:
        pass

    def _get_setting_learn(self, command_info: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def _get_setting_collect(self, command_info: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    def _get_setting_eval(self, command_info: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    # ------------------------------------------------------------------ shared
    def _get_attribute(self, name: str) -> Any:
        """``self._<name>`` or, failing that, ``self._get_<name>()`` (e.g. 'cfg', 'model', 'batch_size', 'nstep')."""
        if hasattr(self, f"_{name}"):
            value = getattr(self, f"_{name}")
            if not inspect.ismethod(value):
                return value
        getter = getattr(self, f"_get_{name}", None)
        if callable(getter):
            return getter()
        raise AttributeError(f"{type(self).__name__}.get_attribute: no attribute {name!r} "
                             f"(looked for self._{name} and self._get_{name}())")

    def _get_unroll_len(self) -> int:
        """``get_attribute('unroll_len')``, which DI-engine's hand-written collectors read."""
        return int(self._cfg.collect.get("unroll_len", 1))

    def _set_attribute(self, name: str, value: Any) -> None:
        setattr(self, f"_{name}", value)

    def _get_batch_size(self) -> int:
        return self._cfg.learn.batch_size

    def _get_nstep(self) -> int:
        """n of the n-step return (1 if the policy has none). After a chunk that did not end the episode, a collector
        keeps the chunk's last ``nstep - 1`` transitions for the next ``get_train_sample`` call."""
        return int(self._cfg.get("nstep", 1))

    def _get_device(self) -> torch.device:
        return self._device

    def _info(self) -> str:
        return repr(self)

    def __repr__(self) -> str:
        n_params = sum(p.numel() for p in self._model.parameters())
        return (f"{type(self).__name__}(modes={list(self._enable_field)}, model={type(self._model).__name__} "
                f"[{n_params:,} params], device={self._device})")


def load_model_state(model: nn.Module, state_dict: Mapping[str, Any], key: str = "model") -> None:
    """Load ``state_dict[key]`` into ``model``; a missing key or a state of another shape -> ``CheckpointError``
    naming every mismatched parameter with both shapes."""
    if not isinstance(state_dict, Mapping) or key not in state_dict:
        found = list(state_dict.keys()) if isinstance(state_dict, Mapping) else type(state_dict).__name__
        raise CheckpointError(f"state dict: no '{key}' entry (found {found}); is this a ding policy checkpoint?")
    state = state_dict[key]
    current = model.state_dict()
    problems = [f"  missing parameter {k!r} (model shape {tuple(v.shape)})"
                for k, v in current.items() if k not in state]
    problems += [f"  unexpected parameter {k!r} (checkpoint shape {tuple(getattr(v, 'shape', ()))})"
                 for k, v in state.items() if k not in current]
    problems += [
        f"  parameter {k!r}: checkpoint shape {tuple(state[k].shape)} != model shape {tuple(v.shape)}"
        for k, v in current.items() if k in state and tuple(state[k].shape) != tuple(v.shape)
    ]
    if problems:
        raise CheckpointError(
            f"state dict '{key}' does not fit {type(model).__name__} (was it saved from a model with other "
            f"policy.model settings?):\n" + "\n".join(problems)
        )
    model.load_state_dict(state)


def load_optimizer_state(optimizer: torch.optim.Optimizer, state: Mapping[str, Any]) -> None:
    """``optimizer.load_state_dict`` with torch's ValueError (parameter groups differ) as a ``CheckpointError``."""
    try:
        optimizer.load_state_dict(copy.deepcopy(dict(state)))
    except ValueError as e:
        raise CheckpointError(f"state dict 'optimizer' does not fit this policy's optimizer: {e}") from e


def get_policy_cls(cfg: Mapping[str, Any]) -> type[Policy]:
    """The policy class named by ``cfg.type`` (after importing ``cfg.import_names``)."""
    if "type" not in cfg or not cfg["type"]:
        known = ", ".join(POLICY_REGISTRY.query())
        raise ConfigError(f"policy.type: missing; name a registered policy (known: {known})")
    import_module(cfg.get("import_names"))
    return POLICY_REGISTRY.get(cfg["type"], where="policy.type")


def create_policy(cfg: Mapping[str, Any], **kwargs: Any) -> Policy:
    """``get_policy_cls(cfg)(cfg, **kwargs)``; kwargs are ``model`` and ``enable_field``. When the command mode is
    enabled and a class is registered as ``<type>_command`` (DI-engine's way of adding the command mode to a policy,
    see ``ding.policy.command_mode_policy_instance``), that class is built instead."""
    cls = get_policy_cls(cfg)
    enable_field = kwargs.get("enable_field")
    if enable_field is None or "command" in enable_field:
        cls = command_mode_cls(cls, cfg["type"])
    return cls(cfg, **kwargs)


def command_mode_cls(cls: type[Policy], policy_type: str) -> type[Policy]:
    """The class registered as ``<policy_type>_command`` when there is one (and it is a ``Policy``), else ``cls``."""
    if policy_type.endswith("_command"):
        return cls
    command_cls = POLICY_REGISTRY.get(f"{policy_type}_command", None)
    if command_cls is None:
        return cls
    if not (isinstance(command_cls, type) and issubclass(command_cls, Policy)):
        raise ConfigError(f"policy.type: {policy_type!r}: the class registered as '{policy_type}_command' "
                          f"({command_cls!r}) is not a ding Policy")
    return command_cls


class CommandModePolicy(Policy):
    """DI-engine's base of policies with a command mode. In ding every :class:`Policy` has one (``_init_command``
    and the three ``_get_setting_*`` hooks); this class names it for files that subclass it, e.g. through
    :mod:`ding.policy.command_mode_policy_instance`."""

    command_function = PolicyCommandMode
    # DI-engine's policies exchange tensors with the workers; known from the start, so that transitions collected
    # before the policy's first forward (random warm-up actions) are converted too.
    tensor_io = True
