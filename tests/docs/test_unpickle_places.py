"""Issue 36: every place in ding/ and dizoo/ that unpickles (``weights_only=False`` or ``pickle.load``) is named in
docs/parallel.md's Security table, with who writes what it reads; a new one fails here until it is listed there."""
from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATTERN = re.compile(r"weights_only=False|pickle\.load")


def _places() -> set[str]:
    found = set()
    for base, _, files in (w for pkg in ("ding", "dizoo") for w in os.walk(os.path.join(ROOT, pkg))):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(base, name)
                with open(path, encoding="utf-8") as f:
                    if PATTERN.search(f.read()):
                        found.add(os.path.relpath(path, ROOT).replace(os.sep, "/"))
    return found


def test_every_unpickling_place_is_in_the_security_table():
    with open(os.path.join(ROOT, "docs", "parallel.md"), encoding="utf-8") as f:
        doc = f.read()
    table = doc[doc.index("**The places that unpickle.**"):doc.index("**What each role trusts.**")]
    rows = [line for line in table.splitlines() if line.startswith(("| `ding/", "| `dizoo/"))]
    listed = {re.match(r"\| `([^`]+)`", row).group(1) for row in rows}
    places = _places()
    assert places, "the grep found nothing: the pattern or the tree moved"
    assert places == listed, f"unlisted: {sorted(places - listed)}; listed but gone: {sorted(listed - places)}"
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 4 and all(cells), row  # what, who wrote it, why it is safe
