"""The custom-policy example in docs/policies.md runs as written."""
import pathlib
import re

import numpy as np

from ding.utils import POLICY_REGISTRY

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "policies.md"


def python_blocks(section_title):
    text = DOC.read_text()
    section = text.split(f"## {section_title}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_custom_policy_example_runs():
    blocks = python_blocks("Writing a custom policy")
    class_block = next(b for b in blocks if "class SoftmaxQPolicy" in b)
    usage_block = next(b for b in blocks if "create_policy(dict(type='softmax_q'" in b)
    namespace = {}
    try:
        exec(compile(class_block, "docs/policies.md", "exec"), namespace)
        exec(compile(usage_block, "docs/policies.md", "exec"), namespace)
    finally:
        POLICY_REGISTRY.pop("softmax_q", None)
    output, log = namespace["output"], namespace["log"]
    assert set(output) == {0, 1} and output[0]["action"].shape == () and output[0]["logit"].shape == (2,)
    assert set(log) == {"total_loss", "q_value"} and np.isfinite(log["total_loss"])
    assert namespace["setting"] == {"temperature": 1.0}
