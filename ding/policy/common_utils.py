"""Helpers shared by policies: batching the per-env observations of a collect/eval step, and DI-engine's
``default_preprocess_learn`` (a list of train samples -> one batch dict)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import torch

from ding.torch_utils.data_helper import obs_to_float
from ding.torch_utils.fast_import import make_adam
from ding.utils.data import default_collate


def batch_obs(
    data: Mapping[int, Any], device: torch.device, expected_shape: Sequence[int] | None = None, where: str = "policy"
) -> tuple[list[int], torch.Tensor]:
    """``{env_id: obs}`` -> ``(env_ids, float32 tensor (B, *obs_shape))`` with ONE stack and one ``from_numpy``.

    uint8 observations (pixels) stay uint8 until they are on ``device`` and become float there, scaled to [0, 1]
    (:func:`ding.torch_utils.obs_to_float`): a quarter of the bytes to move.

    ``expected_shape`` (the model's obs shape) is checked so a wrong observation fails with a clear message
    instead of a matrix-size error deep inside the network.
    """
    env_ids = list(data.keys())
    values = list(data.values())
    if isinstance(values[0], torch.Tensor):
        obs = torch.stack(values)
    else:
        try:
            stacked = np.array(values)  # one copy into a (B, *obs_shape) array, cheaper than np.stack here
            if stacked.dtype == object:
                raise ValueError("ragged observations")
        except ValueError as e:
            shapes = {env_id: np.shape(v) for env_id, v in data.items()}
            raise ValueError(f"{where}: observations of different shapes cannot be batched: {shapes}") from e
        if stacked.dtype != np.float32 and stacked.dtype != np.uint8:
            stacked = stacked.astype(np.float32)
        obs = torch.from_numpy(stacked)
    if expected_shape is not None and obs.shape[1:] != tuple(expected_shape):
        raise ValueError(
            f"{where}: observations have shape {tuple(obs.shape[1:])} but the model expects {tuple(expected_shape)} "
            f"(policy.model.obs_shape); check the env's observation space against the config"
        )
    return env_ids, obs_to_float(obs if device.type == "cpu" else obs.to(device))


def model_obs_shape(model: torch.nn.Module) -> tuple[int, ...] | None:
    """The model's ``obs_shape`` attribute as a tuple (an int becomes ``(n,)``), or None when it has none."""
    shape = getattr(model, "obs_shape", None)
    if shape is None:
        return None
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def build_adam(model: torch.nn.Module, lr: float, **kwargs: Any) -> torch.optim.Adam:
    """Adam over ``model``'s parameters, using torch's fused kernel when every parameter is a floating-point tensor
    on CPU or CUDA (one kernel over all parameters instead of a loop of small ops per tensor), and without the
    ``torch._dynamo`` import torch's optimizers trigger (see ``ding.torch_utils.fast_import``)."""
    params = list(model.parameters())
    fused = bool(params) and all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in params)
    return make_adam(params, lr=lr, fused=fused, **kwargs)


def step_transition(obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
    """The transition of one env step for the Q-learning policies (DQN family, SAC, DDPG, TD3): ``{'obs',
    'next_obs', 'action', 'reward', 'done', 'truncated'}``; ``done`` is termination only, so an episode cut by a
    time limit (``info['truncated']``) is bootstrapped."""
    truncated = bool(timestep.done) and bool(timestep.info.get("truncated", False))
    return {
        "obs": obs,
        "next_obs": timestep.obs,
        "action": policy_output["action"],
        "reward": timestep.reward,
        "done": bool(timestep.done) and not truncated,
        "truncated": truncated,
    }


def default_preprocess_learn(data: Sequence[Mapping[str, Any]], use_priority_IS_weight: bool = False,
                             use_priority: bool = False, use_nstep: bool = False,
                             ignore_done: bool = False) -> dict[str, Any]:
    """Collate a list of train samples into one dict of batched tensors, the way DI-engine's policies expect it.

    Integer actions make shape-(1,) fields collapse to (B,); ``done`` becomes float (all zeros with
    ``ignore_done``); ``weight`` is the buffer's importance-sampling weight ``IS`` (or ``priority_IS``) when
    ``use_priority and use_priority_IS_weight``, else the samples' own ``weight`` or None; with ``use_nstep`` the
    reward is laid out ``(nstep, B)`` (``(nstep, B, K)`` for a (B, K, nstep) reward), else a (B, 1) reward becomes
    (B,). ``value`` and ``adv`` of shape (B, 1) become (B,).
    """
    if not data:
        raise ValueError("default_preprocess_learn: got no samples")
    if use_priority_IS_weight and not use_priority:
        raise ValueError("default_preprocess_learn: use_priority_IS_weight needs use_priority (policy.priority=True)")
    action = data[0].get("action")
    int_action = isinstance(action, (np.ndarray, torch.Tensor)) and action.dtype in (np.int64, torch.int64)
    batch = default_collate(list(data), cat_1dim=int_action)
    for key in ("value", "adv"):
        if key in batch and isinstance(batch[key], torch.Tensor) and batch[key].dim() == 2 \
                and batch[key].shape[1] == 1:
            batch[key] = batch[key].squeeze(-1)
    done = batch["done"]
    done = torch.zeros_like(done, dtype=torch.float32) if ignore_done else done.float()
    batch["done"] = done.squeeze(-1) if done.dim() == 2 and done.shape[1] == 1 else done
    if use_priority and use_priority_IS_weight:
        if "priority_IS" in batch:
            batch["weight"] = batch["priority_IS"]
        elif "IS" in batch:
            batch["weight"] = batch["IS"]
        else:
            raise KeyError("default_preprocess_learn: priority_IS_weight is set but the samples carry no 'IS' "
                           "weight; use a prioritized buffer (replay_buffer type 'advanced')")
    else:
        batch["weight"] = batch.get("weight", None)
    reward = batch["reward"]
    if use_nstep:
        if reward.dim() == 1:
            reward = reward.unsqueeze(1)
        if reward.dim() == 2:
            batch["reward"] = reward.transpose(0, 1).contiguous()
        elif reward.dim() == 3:
            batch["reward"] = reward.permute(2, 0, 1).contiguous()
        else:
            raise ValueError(f"default_preprocess_learn: reward must be 1-, 2- or 3-D, got shape "
                             f"{tuple(reward.shape)}")
    elif reward.dim() == 2 and reward.shape[1] == 1:
        batch["reward"] = reward.squeeze(-1)
    return batch
