"""Episode callbacks: user code run by the serial collectors at episode boundaries (in the spirit of RLlib's).

Subclass ``EpisodeCallback``, override what you need, then either register the class and name it in the collector
config (``callbacks=[dict(type='my_cb', **kwargs)]`` + ``import_names``) or pass an instance to
``collector.register_callback(cb)``. With no callback registered the collector's step loop does no callback work.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ding.utils import EPISODE_CALLBACK_REGISTRY, ConfigError, import_module

if TYPE_CHECKING:
    from ding.envs import BaseEnvTimestep


class EpisodeCallback:
    """No-op base class; each method is called by the collector at the moment its name says.

    Order per env: ``on_episode_start`` (before the episode's first ``on_episode_step``), ``on_episode_step`` for every
    step, ``on_episode_end`` when the env reports ``done``. ``on_sample_end`` runs once per ``collect`` call with the
    data it returns. An abnormal episode (``info['abnormal']``) is dropped without ``on_episode_end``; the env's next
    episode starts with a new ``on_episode_start``.
    """

    def setup(self, collector: Any) -> None:
        """Called once when the callback is attached to ``collector``."""

    def on_episode_start(self, env_id: int) -> None:
        """A new episode of env ``env_id`` starts."""

    def on_episode_step(self, env_id: int, timestep: BaseEnvTimestep, transition: dict) -> None:
        """One step: the env's ``timestep`` and the ``transition`` the policy built from it (mutable)."""

    def on_episode_end(self, env_id: int, episode_info: dict) -> dict | None:
        """The episode ended. ``episode_info`` has ``env_id, eval_episode_return, step, train_sample, train_iter``.

        Return a dict of custom metrics (name -> number): their means are logged to TensorBoard as
        ``<collector>_step/custom/<name>`` together with the collector's own statistics.
        """
        return None

    def on_sample_end(self, samples: list) -> list | None:
        """The data a ``collect`` call is about to return; return a new list to replace it, or None to keep it."""
        return None


def build_episode_callbacks(cfgs: Iterable[Mapping] | None, import_names: Iterable[str] | None = None,
                            where: str = "collector.callbacks") -> list[EpisodeCallback]:
    """Instances from config entries ``dict(type='name', **kwargs)`` looked up in ``EPISODE_CALLBACK_REGISTRY``."""
    import_module(import_names)
    callbacks = []
    for i, item in enumerate(cfgs or ()):
        if not isinstance(item, Mapping) or "type" not in item:
            raise ConfigError(f"{where}[{i}]: expected dict(type='<registered callback name>', **kwargs), got {item!r}")
        kwargs = {k: v for k, v in item.items() if k != "type"}
        cls = EPISODE_CALLBACK_REGISTRY.get(item["type"], where=f"{where}[{i}].type")
        callbacks.append(check_callback(cls(**kwargs)))
    return callbacks


def check_callback(cb: Any) -> EpisodeCallback:
    if not isinstance(cb, EpisodeCallback):
        raise TypeError(f"an episode callback must be an EpisodeCallback instance, got {cb!r}")
    return cb
