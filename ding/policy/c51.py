"""C51: distributional DQN on a categorical support, with double Q, n-step returns and prioritized replay."""
from __future__ import annotations

from typing import Any

import torch

from ding.config.ranges import at_least
from ding.rl_utils import dist_nstep_td_data, dist_nstep_td_error
from ding.utils import POLICY_REGISTRY, ConfigError

from .dqn import DQNPolicy


@POLICY_REGISTRY.register("c51")
class C51Policy(DQNPolicy):
    """C51 (Bellemare et al. 2017): the model predicts a return distribution per action on ``n_atom`` atoms between
    ``v_min`` and ``v_max``; the n-step Bellman target distribution is projected onto those atoms and the loss is its
    cross-entropy with the predicted one. The online network picks the next action (double Q), the target network
    gives its distribution. With ``priority`` each sample's cross-entropy is its priority.

    Collection (epsilon-greedy on the expected Q), evaluation, n-step samples and the checkpoint state are DQN's.
    """

    _learn_takes_columns = True  # its learn step reads a ColumnBatch's columns (ding.utils.data.column_batch)

    config = dict(
        type="c51",
        # Model kwargs; v_min / v_max / n_atom define the support of the return distribution.
        model=dict(v_min=-10, v_max=10, n_atom=51),
    )
    config_ranges = {**DQNPolicy.config_ranges, "model.n_atom": at_least(2, integer=True)}

    def default_model(self) -> tuple[str, list[str]]:
        return "c51dqn", ["ding.model.template.q_learning"]

    def _init_learn(self) -> None:
        super()._init_learn()
        self._support = self._support_of(self._model)

    def _support_of(self, model: torch.nn.Module) -> tuple[float, float, int]:
        """``(v_min, v_max, n_atom)`` of the model (a custom model must have these attributes)."""
        missing = [k for k in ("v_min", "v_max", "n_atom") if not hasattr(model, k)]
        if missing:
            raise ConfigError(f"policy.model: {type(self).__name__} needs a distributional model with attributes "
                              f"v_min, v_max and n_atom; {type(model).__name__} lacks {missing} (use the default "
                              f"model {self.default_model()[0]!r} or add them)")
        v_min, v_max, n_atom = (getattr(model, k) for k in ("v_min", "v_max", "n_atom"))
        return float(v_min), float(v_max), int(n_atom)

    def _forward_learn(self, data: list[dict[str, Any]]) -> dict[str, Any]:
        """One C51 gradient step; ``'priority'`` (when ``priority``) is each sample's cross-entropy."""
        batch = self._collate(data)
        self._set_train(True)
        out = self._model(batch["obs"])
        with torch.no_grad():
            next_dist = self._target_model(batch["next_obs"])["distribution"]
            next_action = self._model(batch["next_obs"])["logit"].argmax(dim=1)
        done = torch.zeros_like(batch["done"]) if self._ignore_done else batch["done"]
        reward = batch["reward"].t() if batch["reward"].dim() == 2 else batch["reward"]  # (nstep, B)
        td_data = dist_nstep_td_data(out["distribution"], next_dist, batch["action"], next_action, reward, done,
                                     batch.get("IS"))
        v_min, v_max, n_atom = self._support
        loss, per_sample = dist_nstep_td_error(td_data, self._gamma, v_min, v_max, n_atom, self._nstep,
                                               value_gamma=batch.get("value_gamma"),
                                               log_dist=out["log_distribution"])
        self._optimize(loss)

        output = {
            "cur_lr": self._optimizer.param_groups[0]["lr"],
            "total_loss": loss.item(),
            "q_value": out["logit"].detach().mean().item(),
        }
        if self._priority:
            output["priority"] = per_sample.cpu().numpy()
        return output

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", "total_loss", "q_value"]

# DI-engine's config files name the command-mode twin 'c51_command'; here the command mode is part of the policy.
POLICY_REGISTRY.register("c51_command", C51Policy)
