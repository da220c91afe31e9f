"""Act with a policy exported by ``ding -m export --format onnx``, using only onnxruntime and numpy.

    python entry/onnx_policy.py cartpole_dqn_seed0_ckpt_best.onnx --obs observations.npy [--out actions.npy]

``observations.npy`` holds a batch ``(N, *obs_shape)``; the actions are those ``ding.load_policy(...)
.compute_actions`` gives for it (for a recurrent policy the rows are one episode, in order). Copy this file next to
your deployment: nothing from ding or torch is imported.
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np
import onnxruntime as ort


class OnnxPolicy:
    """``act(obs_batch) -> actions``; a recurrent policy keeps its state between calls until :meth:`reset`."""

    def __init__(self, path: str) -> None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # small RL networks: one thread is fastest and never spins
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.meta = json.loads(self.session.get_modelmeta().custom_metadata_map["ding"])
        self.obs_dtype = np.dtype(self.meta["obs_dtype"])
        self.state: np.ndarray | None = None

    @property
    def recurrent(self) -> bool:
        return self.meta["state_shape"] is not None

    def reset(self) -> None:
        """Start new episodes: the next call begins from zero states."""
        self.state = None

    def act(self, obs: np.ndarray, env_action: bool = False) -> np.ndarray:
        """Actions for a batch of observations (first axis); ``env_action=True`` gives them on the env's action
        bounds where the env scales actions (the file then has an ``env_action`` output)."""
        obs = np.asarray(obs, dtype=self.obs_dtype)
        if obs.shape[1:] != tuple(self.meta["obs_shape"]):
            expected = tuple(self.meta["obs_shape"])
            raise ValueError(f"observations of shape {obs.shape[1:]}, the policy expects {expected}")
        feed = {"obs": obs}
        if self.recurrent:
            if self.state is None or len(self.state) != len(obs):
                self.state = np.zeros((len(obs), *self.meta["state_shape"]), np.float32)
            feed["state"] = self.state
        outputs = dict(zip(self.meta["outputs"], self.session.run(self.meta["outputs"], feed)))
        if self.recurrent:
            self.state = outputs["next_state"]
        if env_action:
            if "env_action" not in outputs:
                raise ValueError("this file has no env_action output: its env does not scale actions")
            return outputs["env_action"]
        return outputs["action"]


def main(argv: list[str] | None = None) -> np.ndarray:
    p = argparse.ArgumentParser(description="actions of an exported ding policy for a batch of observations")
    p.add_argument("model", help="the .onnx file ding -m export wrote")
    p.add_argument("--obs", required=True, help=".npy file of observations (N, *obs_shape)")
    p.add_argument("--out", default=None, help="write the actions to this .npy file (default: print them)")
    args = p.parse_args(argv)
    policy = OnnxPolicy(args.model)
    obs = np.load(args.obs)
    actions = np.stack([policy.act(o[None])[0] for o in obs]) if policy.recurrent else policy.act(obs)
    if args.out:
        np.save(args.out, actions)
    else:
        print(actions)
    return actions


if __name__ == "__main__":
    main(sys.argv[1:])
