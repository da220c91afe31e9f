"""DI-engine 0.5.3's own policy files turned into a user's policy package, the way a DI-engine user brings one over.

Only these edits are applied to each file: relative imports made absolute (``.base_policy`` / ``.common_utils`` to
ding's modules, a sibling policy file such as ``.dqn`` to the user's copy of it), every registered name prefixed
with ``user_``, and a ``user_<x>_command`` class registered next to the policy the way DI-engine's
``command_mode_policy_instance.py`` does. DI-engine's dizoo config files are edited to name those policies
(``policy=dict(type='user_<x>', import_names=['<package>.<x>'])``). Nothing of DI-engine is kept in the repository:
the files are read from its wheel (see ``tests/di_engine_files.py``).
"""
from __future__ import annotations

import os
import re
import zipfile

from tests.di_engine_files import di_engine_wheel

PACKAGE = "user_policies"
# policy file -> (registered name of the class given a command mode, its class, command-mode base)
POLICIES = {
    "dqn": ("dqn", "DQNPolicy", "EpsCommandModePolicy"),
    "c51": ("c51", "C51Policy", "EpsCommandModePolicy"),
    "ppo": ("ppo", "PPOPolicy", "DummyCommandModePolicy"),
    "a2c": ("a2c", "A2CPolicy", "DummyCommandModePolicy"),
    "sac": ("sac", "SACPolicy", "DummyCommandModePolicy"),
    "ddpg": ("ddpg", "DDPGPolicy", "DummyCommandModePolicy"),
    "td3": ("td3", "TD3Policy", "DummyCommandModePolicy"),
}
SIBLINGS = {"c51": ["dqn"], "td3": ["ddpg"]}


def _read(path_in_wheel: str) -> str:
    with zipfile.ZipFile(di_engine_wheel()) as wheel:
        return wheel.read(path_in_wheel).decode()


def user_policy_source(name: str) -> str:
    """DI-engine's ``ding/policy/<name>.py`` with the user's edits applied."""
    text = _read(f"ding/policy/{name}.py")
    text = re.sub(r"^from \.(base_policy|common_utils) import", r"from ding.policy.\1 import", text, flags=re.M)
    text = re.sub(r"^from \.(\w+) import", rf"from {PACKAGE}.\1 import", text, flags=re.M)
    text = re.sub(r"POLICY_REGISTRY\.register\('(\w+)'\)", r"POLICY_REGISTRY.register('user_\1')", text)
    registered, cls, base = POLICIES[name]
    text += (f"\n\nfrom ding.policy.command_mode_policy_instance import {base}\n\n\n"
             f"@POLICY_REGISTRY.register('user_{registered}_command')\n"
             f"class User{cls[:-len('Policy')]}CommandModePolicy({cls}, {base}):\n    pass\n")
    return text


def write_user_package(root: str, names: list[str]) -> str:
    """Write ``<root>/user_policies/`` with the user's copies of ``names`` (and the files they import); return root
    (put it on ``sys.path`` / ``PYTHONPATH``)."""
    pkg = os.path.join(root, PACKAGE)
    os.makedirs(pkg, exist_ok=True)
    with open(os.path.join(pkg, "__init__.py"), "w") as f:
        f.write("")
    todo = list(names)
    while todo:
        name = todo.pop()
        todo += [s for s in SIBLINGS.get(name, []) if not os.path.exists(os.path.join(pkg, f"{s}.py"))]
        with open(os.path.join(pkg, f"{name}.py"), "w") as f:
            f.write(user_policy_source(name))
    return root


def write_user_config(dest_dir: str, path_in_wheel: str, name: str, exp_name: str) -> str:
    """DI-engine's dizoo config ``path_in_wheel`` naming the user's ``user_<name>`` policy; returns its path."""
    text = _read(path_in_wheel)
    registered = POLICIES[name][0]
    text, n = re.subn(rf"policy=dict\(type='{registered}'\)",
                      f"policy=dict(type='user_{registered}', import_names=['{PACKAGE}.{name}'])", text)
    assert n == 1, f"{path_in_wheel}: the create config's policy type was not found"
    text = re.sub(r"exp_name='[^']*'", f"exp_name='{exp_name}'", text, count=1)
    dest = os.path.join(dest_dir, os.path.basename(path_in_wheel))
    with open(dest, "w") as f:
        f.write(text)
    return dest
