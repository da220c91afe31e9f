"""Package metadata: the license is an SPDX expression (the TOML-table form warns at every install)."""
from __future__ import annotations

import importlib.metadata
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_license_is_an_spdx_string():
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    assert re.search(r'^license = "Apache-2.0"$', text, re.MULTILINE)
    assert re.search(r'^requires = \["setuptools>=77"\]', text, re.MULTILINE)  # the first to read that form
    assert importlib.metadata.metadata("ding")["License-Expression"] == "Apache-2.0"
