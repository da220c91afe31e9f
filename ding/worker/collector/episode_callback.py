"""Episode callbacks: user code run at the points of a training round (in the spirit of RLlib's callbacks).

Subclass ``EpisodeCallback``, override what you need, then either register the class and name it in the collector
config (``callbacks=[dict(type='my_cb', **kwargs)]`` + ``import_names``) or pass an instance to
``collector.register_callback(cb)``. The collector calls the episode and sample methods; the serial loops call
``on_learn_on_batch`` and the :class:`~ding.entry.Trainer` calls ``on_train_result`` on the collector's callbacks.
With no callback registered the collector's step loop does no callback work. A callback that raises stops the run
with one :class:`~ding.utils.CallbackError` naming the class and method (the original exception is its cause).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ding.utils import EPISODE_CALLBACK_REGISTRY, CallbackError, ConfigError, import_module

if TYPE_CHECKING:
    from ding.envs import BaseEnvTimestep


class EpisodeCallback:
    """No-op base class; each method is called by the collector at the moment its name says.

    Order per env: ``on_episode_start`` (before the episode's first ``on_episode_step``), ``on_episode_step`` for every
    step, ``on_episode_end`` when the env reports ``done``. ``on_postprocess_trajectory`` runs each time the collector
    turns a piece of an env's trajectory into train samples (at the episode's end, or when the collector cuts the
    trajectory), before they are counted; ``on_sample_end`` runs once per ``collect`` call with the data it returns.
    An abnormal episode (``info['abnormal']``) is dropped without ``on_episode_end``; the env's next episode starts
    with a new ``on_episode_start``. In a training round: collect (the methods above) → ``on_learn_on_batch`` before
    each ``learner.train`` call → ``on_train_result`` with the round's result dict.
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

    def on_postprocess_trajectory(self, env_id: int, trajectory: list, samples: list) -> list | None:
        """``samples``: the train samples ``policy.get_train_sample`` built from ``trajectory`` (env ``env_id``'s
        transitions since the last cut; the collector reuses that list afterwards, so copy what you keep). Return a
        new list of samples to replace them (e.g. relabelled rewards), or None to keep them."""
        return None

    def on_sample_end(self, samples: list) -> list | None:
        """The data a ``collect`` call is about to return; return a new list to replace it, or None to keep it."""
        return None

    def on_learn_on_batch(self, batch: Any, train_iter: int, result: dict) -> None:
        """Before ``learner.train(batch)`` (a sampled batch off-policy, the collected data on-policy), at learner
        iteration ``train_iter``. ``batch`` may be changed in place; keys put into ``result`` go into the round's
        result dict (the last value set in a round wins)."""

    def on_train_result(self, result: dict) -> dict | None:
        """The end of a training round (:meth:`ding.entry.Trainer.train`) with its flat result dict. Add keys to it
        in place or return a dict of keys to add; the changed dict is what the trainer returns."""
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


def call_callback(cb: EpisodeCallback, method: str, *args: Any) -> Any:
    """``cb.<method>(*args)``; an exception from it becomes one :class:`CallbackError` naming the callback."""
    try:
        return getattr(cb, method)(*args)
    except CallbackError:
        raise
    except Exception as e:
        raise CallbackError(f"episode callback {type(cb).__name__}.{method} raised {type(e).__name__}: {e}") from e


def check_callback(cb: Any) -> EpisodeCallback:
    if not isinstance(cb, EpisodeCallback):
        raise TypeError(f"an episode callback must be an EpisodeCallback instance, got {cb!r}")
    return cb
