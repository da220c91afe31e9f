"""One clear message for a user module that imports something ding does not have (typically a DI-engine name)."""
from __future__ import annotations

import re
import traceback

_CANNOT_IMPORT = re.compile(r"cannot import name '([^']+)' from '([^']+)'")


def missing_ding_name(error: ImportError) -> str | None:
    """When ``error`` is a module importing a name or a module of ``ding`` that does not exist, a message naming that
    name, the ding module, and the file and line that imported it; else None."""
    if isinstance(error, ModuleNotFoundError) and error.name == "gym":
        frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith("<frozen")]
        where = f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
        return (f"user code imports the classic 'gym' package{where}, which is not installed: pip install "
                "'ding[gym]' (DingEnvWrapper converts a gym env's step API), or write `import gymnasium as gym`")
    match = _CANNOT_IMPORT.search(str(error))
    if match and (match.group(2) == "ding" or match.group(2).startswith("ding.")):
        what = f"'{match.group(1)}' from '{match.group(2)}'"
    elif isinstance(error, ModuleNotFoundError) and error.name and error.name.startswith("ding."):
        what = f"the module '{error.name}'"
    else:
        return None
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith("<frozen")]
    where = f" ({frames[-1].filename}, line {frames[-1].lineno})" if frames else ""
    return (f"{what} is imported by user code{where} but ding does not provide it. ding provides DI-engine's "
            f"names that policy files use (see docs/policies.md, 'Bringing a policy from DI-engine'); replace this "
            f"one or write it in your own module")
