"""Building a model from its config through ``MODEL_REGISTRY``, with argument checks that name the config key."""
from __future__ import annotations

import difflib
import inspect
from typing import Any, Mapping

import torch.nn as nn

from ding.config.ranges import check_ranges, ranges_of
from ding.utils import MODEL_REGISTRY, ConfigError, import_module


def check_model_kwargs(model_cls: type, kwargs: Mapping[str, Any], where: str = "model") -> None:
    """Raise ``ConfigError`` if ``kwargs`` has a key ``model_cls`` does not accept or misses a required one."""
    params = inspect.signature(model_cls).parameters
    accepted = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    takes_any = any(p.kind == p.VAR_KEYWORD for p in params.values())
    name = f"{model_cls.__module__}.{model_cls.__qualname__}"
    problems = []
    if not takes_any:
        for key in kwargs:
            if key not in accepted:
                close = difflib.get_close_matches(key, accepted, n=1, cutoff=0.6)
                hint = f" did you mean {close[0]!r}?" if close else ""
                problems.append(f"{where}.{key}: unknown argument of model {name};{hint} accepted arguments: "
                                f"{', '.join(accepted)}")
    for n, p in params.items():
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.default is p.empty and n not in kwargs:
            problems.append(f"{where}.{n}: required by model {name} but missing from the config")
    if problems:
        raise ConfigError("\n".join(problems))


def create_model(cfg: Mapping[str, Any], where: str = "model") -> nn.Module:
    """Build ``MODEL_REGISTRY[cfg['type']](**rest)`` after importing ``cfg['import_names']``.

    The arguments are checked first: unknown or missing ones, and values outside the model class's
    ``config_ranges``. ``where`` is the config path used in error messages (the policy passes ``'policy.model'``).
    """
    kwargs = dict(cfg)
    if "type" not in kwargs:
        known = ", ".join(MODEL_REGISTRY.query())
        raise ConfigError(f"{where}.type: missing; name a registered model (known: {known})")
    model_type = kwargs.pop("type")
    import_module(kwargs.pop("import_names", None))
    model_cls = MODEL_REGISTRY.get(model_type, where=f"{where}.type")
    check_model_kwargs(model_cls, kwargs, where)
    check_ranges(kwargs, ranges_of(model_cls), where)
    if isinstance(kwargs.get("activation"), str):  # a config file names it: 'tanh' for nn.Tanh()
        kwargs["activation"] = activation_by_name(kwargs["activation"], f"{where}.activation")
    return model_cls(**kwargs)


# Activations a config may name (the model templates take an ``nn.Module``; DI-engine's files pass ``nn.ReLU()``).
ACTIVATIONS: dict[str, type[nn.Module]] = {
    "relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU, "silu": nn.SiLU, "swish": nn.SiLU, "elu": nn.ELU,
    "leaky_relu": nn.LeakyReLU, "sigmoid": nn.Sigmoid, "softplus": nn.Softplus, "mish": nn.Mish,
}


def activation_by_name(name: str, where: str = "model.activation") -> nn.Module:
    """``'tanh'`` -> ``nn.Tanh()`` (case-insensitive); an unknown name is a ``ConfigError`` listing the known ones."""
    key = name.strip().lower()
    cls = ACTIVATIONS.get(key)
    if cls is None:
        close = difflib.get_close_matches(key, list(ACTIVATIONS), n=1, cutoff=0.6)
        hint = f" did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{where}: unknown activation {name!r};{hint} known: {', '.join(ACTIVATIONS)} (or pass an "
                          "nn.Module such as torch.nn.Tanh())")
    return cls()
