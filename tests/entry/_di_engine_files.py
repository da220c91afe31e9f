"""DI-engine 0.5.3's own config files, for tests that run them unchanged.

The files are read from the ``di-engine==0.5.3`` wheel (downloaded once with ``pip download --no-deps`` into
``$DING_TEST_CACHE`` or ``~/.cache/ding-tests``; PyPI must be reachable the first time) and copied into the test's
temp directory. Nothing of DI-engine is committed to this repository, and DI-engine is never installed or imported.
"""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import zipfile

WHEEL_SPEC = "di-engine==0.5.3"


def _cache_dir() -> str:
    return os.environ.get("DING_TEST_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ding-tests")


def di_engine_wheel() -> str:
    """Path of the DI-engine 0.5.3 wheel, downloaded on first use."""
    folder = os.path.join(_cache_dir(), "di-engine-0.5.3")
    found = glob.glob(os.path.join(folder, "DI_engine-0.5.3-*.whl"))
    if not found:
        os.makedirs(folder, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", folder, WHEEL_SPEC],
                       check=True, timeout=600)
        found = glob.glob(os.path.join(folder, "DI_engine-0.5.3-*.whl"))
    assert found, f"pip download of {WHEEL_SPEC} left no wheel in {folder}"
    return found[0]


def copy_di_engine_file(path_in_wheel: str, dest_dir: str) -> str:
    """Copy one file of the wheel (e.g. ``dizoo/classic_control/cartpole/config/cartpole_c51_config.py``) into
    ``dest_dir``; return the copy's path."""
    with zipfile.ZipFile(di_engine_wheel()) as wheel:
        data = wheel.read(path_in_wheel)
    dest = os.path.join(dest_dir, os.path.basename(path_in_wheel))
    with open(dest, "wb") as f:
        f.write(data)
    return dest
