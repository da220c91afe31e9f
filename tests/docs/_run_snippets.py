"""Runs the code blocks of one documentation page in order (called by test_doc_snippets.py in a fresh process).

Usage: ``python _run_snippets.py blocks.json``. Python blocks share one namespace (a page's later block may use what
an earlier one defined, as a reader would); bash blocks run with ``bash -eo pipefail`` in the same working
directory. The first failure prints ``SNIPPET FAILED: <page>:<line>`` with the block and the error, and exits 1.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback


def main(path: str) -> int:
    with open(path) as f:
        blocks = json.load(f)
    namespace: dict = {"__name__": "__doc_snippet__"}
    for block in blocks:
        where = f"{block['page']}:{block['line']}"
        print(f"--- running {where} ({block['lang']})", flush=True)
        try:
            if block["lang"] == "python":
                exec(compile(block["code"], where, "exec"), namespace)
            else:
                proc = subprocess.run(["bash", "-eo", "pipefail", "-c", block["code"]], stdout=sys.stdout,
                                      stderr=subprocess.STDOUT, timeout=block.get("timeout", 300))
                if proc.returncode != 0:
                    raise RuntimeError(f"bash exited with code {proc.returncode}")
        except BaseException:  # noqa: BLE001 -- the report names the block whatever went wrong
            sys.stdout.flush()
            print(f"\nSNIPPET FAILED: {where}\n{block['code']}\n{traceback.format_exc()}", flush=True)
            if not os.environ.get("DOC_SNIPPETS_KEEP_GOING"):  # (set by hand: list every failing block of a page)
                return 1
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
