"""DI-engine's own config files, read from its released wheel, for tests that run them unchanged.

The wheel is fetched once with ``pip download --no-deps di-engine==0.5.3`` into a cache directory
(``$DING_TEST_CACHE`` or ``~/.cache/ding-tests``); the files are copied out of it into a test's temp dir. Nothing of
DI-engine is kept in this repository.
"""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import zipfile

DI_ENGINE_VERSION = "0.5.3"


def _cache_dir() -> str:
    return os.environ.get("DING_TEST_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ding-tests")


def di_engine_wheel() -> str:
    """Path of the DI-engine wheel, downloaded on first use (a failed download raises with pip's output)."""
    cache = os.path.join(_cache_dir(), f"di-engine-{DI_ENGINE_VERSION}")
    found = glob.glob(os.path.join(cache, "*.whl"))
    if found:
        return found[0]
    os.makedirs(cache, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check",
           f"di-engine=={DI_ENGINE_VERSION}", "-d", cache]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    found = glob.glob(os.path.join(cache, "*.whl"))
    if proc.returncode != 0 or not found:
        raise RuntimeError(f"could not download DI-engine {DI_ENGINE_VERSION} ({' '.join(cmd)}):\n"
                           f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return found[0]


def copy_di_engine_file(path_in_wheel: str, dest_dir: str) -> str:
    """Copy ``path_in_wheel`` (e.g. ``dizoo/classic_control/pendulum/config/pendulum_sac_config.py``) into
    ``dest_dir``; return the copy's path."""
    with zipfile.ZipFile(di_engine_wheel()) as wheel:
        data = wheel.read(path_in_wheel)
    dest = os.path.join(dest_dir, os.path.basename(path_in_wheel))
    with open(dest, "wb") as f:
        f.write(data)
    return dest


# DI-engine's league demo as a user's project: its main file and the three modules it imports from
# ``dizoo.league_demo``, with only those imports pointed at the copies (``game_env`` stays ding's dizoo module).
LEAGUE_DEMO_MODULES = ("league_demo_ppo_main", "demo_league", "league_demo_collector", "league_demo_ppo_config")


def league_demo_project(dest_dir: str) -> str:
    """Copy DI-engine's league demo into ``dest_dir`` as a user's own modules; return ``dest_dir``."""
    import re

    pattern = re.compile(r"from dizoo\.league_demo\.(" + "|".join(LEAGUE_DEMO_MODULES[1:]) + r") import")
    for name in LEAGUE_DEMO_MODULES:
        path = copy_di_engine_file(f"dizoo/league_demo/{name}.py", dest_dir)
        with open(path, encoding="utf-8") as f:
            src = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(pattern.sub(r"from \1 import", src))
    return dest_dir
