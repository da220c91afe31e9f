"""The documentation's code runs: every fenced ``bash`` / ``python`` block of README.md and docs/*.md.

Convention (also explained to writers in docs/architecture.md, "Docs"): a block is **executed** unless the line right
before its opening fence is an HTML comment ``<!-- illustrative: <reason> -->`` -- the reason (a non-empty text) says
why it cannot run here: a fragment of a larger file, a command for several machines, a set-up command that
``make test`` itself runs, an hour-long benchmark. Every other block runs; a block that stops working fails this test
with the page, the line of the block and the error.

How a page runs: its blocks in order, in one fresh process (``_run_snippets.py``) whose working directory is a new
temporary directory holding links to the repository's ``config/``, ``entry/`` and ``tests/`` (the docs' paths are
relative to the repository root). Python blocks share one namespace, as for a reader who runs them one after another;
bash blocks run with ``bash -eo pipefail``, with the venv's ``ding`` first on ``PATH``. A page's run has 15 minutes.

Small limits: where a block would run long, :data:`SUBSTITUTIONS` replaces a piece of its text before it runs, and
says why; a substitution whose text is no longer in the page fails the test (so it never goes stale silently). The
CartPole trainings the docs show take a few seconds each and run unchanged.
"""
from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGES = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
LANGS = ("bash", "python")
ILLUSTRATIVE = re.compile(r"^\s*<!--\s*illustrative:\s*(?P<reason>\S.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[A-Za-z0-9_+-]*)\s*$")

# page -> [(text in an executed block, what it becomes, why)]
SUBSTITUTIONS: dict[str, list[tuple[str, str, str]]] = {
    "README.md": [
        ("source .venv/bin/activate", "true  # (the test puts the venv's bin first on PATH)",
         "the test's working directory has no .venv; its PATH already starts with the venv's bin"),
        ("-s 0 -s 1 -s 2   # three seeds", "-s 0 -s 1 --train-iter 100   # three seeds",
         "two seeds and 100 iterations show the same thing in a fraction of the time"),
        ("ding -m parallel -c config/parallel/cartpole_dqn.py -s 0 ",
         "ding -m parallel -c config/parallel/cartpole_dqn.py -s 0 --train-iter 60 ",
         "a parallel run to the stop value is ~15 s more; the suite's e2e tests run it to its end"),
    ],
    "docs/tuning.md": [
        ("--trials 16 --env-step 4000", "--trials 2 --env-step 200",
         "16 trials of 4,000 env steps take minutes; test_tune.py's slow test runs them, two short ones show the "
         "command"),
    ],
    "docs/python_api.md": [
        ("budget=6000", "budget=600", "three trials of up to 6,000 env steps take a minute; 600 shows the same"),
    ],
    "docs/serial.md": [
        ('"config/serial/cartpole_ppo.py", seed=0)', '"config/serial/cartpole_ppo.py", seed=0, max_env_step=2000)',
         "PPO to its stop value takes ~30 s; a short run checks the same door"),
    ],
    "docs/parallel.md": [
        ("ding -m parallel -c config/parallel/cartpole_dqn.py -s 0\n",
         "ding -m parallel -c config/parallel/cartpole_dqn.py -s 0 --train-iter 60\n",
         "a parallel run to the stop value takes 15-60 s on a busy machine; tests/e2e runs it to its end"),
        ("--train-iter 200  ", "--train-iter 40  ", "the same stop-resume-extend sequence with smaller limits"),
        ("--train-iter 400 --resume", "--train-iter 80 --resume", "(as above)"),
        ("--train-iter 800 --resume --extend", "--train-iter 120 --resume --extend", "(as above)"),
        ("main_config, create_config, system_config), seed=0)", "main_config, create_config, system_config), seed=0, "
         "max_train_iter=40)", "the page's first block already runs parallel mode"),
    ],
}


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    reason: str | None  # set: illustrative, not run


def read_blocks(page: str) -> list[Block]:
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, indent, lang = i, len(m.group("indent")), m.group("lang")
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        i += 1
        if lang not in LANGS:
            continue
        prev = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marked = ILLUSTRATIVE.match(prev)
        blocks.append(Block(page, start + 1, lang, "\n".join(body) + "\n", marked.group("reason") if marked else None))
    return blocks


def _substituted(page: str, blocks: list[Block]) -> list[Block]:
    runnable = [b for b in blocks if b.reason is None]
    for old, new, why in SUBSTITUTIONS.get(page, []):
        hits = [b for b in runnable if old in b.code]
        assert hits, (f"{page}: the substitution for {old!r} ({why}) no longer matches any executed block; update "
                      "SUBSTITUTIONS in tests/docs/test_doc_snippets.py to the page's new text")
        for b in hits:
            b.code = b.code.replace(old, new)
    return runnable


def test_every_block_is_run_or_marked_with_a_reason():
    """Nothing is silently skipped: a block is either run, or carries the marker with a reason."""
    langs = set()
    for page in PAGES:
        for b in read_blocks(page):
            langs.add(b.lang)
            if b.reason is not None:
                assert len(b.reason) >= 10, f"{page}:{b.line}: say why the block is illustrative, not just that it is"
    assert langs == set(LANGS)


COMMAND_LINE = re.compile(r"^(\$ )?(ding|python|python3|make|pip|\.venv/bin/python) ")


def test_commands_are_in_bash_blocks():
    """A block of shell commands is a ``bash`` block (run, or marked illustrative with its reason): in an untagged
    block (``` alone, or another tag) a reader's command would go untested. Output and diagrams stay untagged."""
    found = []
    for page in PAGES:
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            lines = f.read().split("\n")
        lang, start = None, 0
        for i, line in enumerate(lines):
            m = FENCE.match(line)
            if m and lang is None:
                lang, start = m.group("lang"), i + 1
            elif lang is not None and re.match(r"^\s*```\s*$", line):
                lang = None
            elif lang is not None and lang not in LANGS and COMMAND_LINE.match(line):
                found.append(f"{page}:{start} ({lang or 'untagged'}): {line.strip()[:70]}")
    assert not found, "commands outside bash blocks (make the block ```bash, run or marked):\n" + "\n".join(found)


@pytest.mark.parametrize("page", PAGES)
def test_page_snippets_run(page, tmp_path):
    blocks = _substituted(page, read_blocks(page))
    if not blocks:
        return
    for name in ("config", "entry", "tests"):
        os.symlink(os.path.join(ROOT, name), tmp_path / name)
    spec = tmp_path / "_blocks.json"
    spec.write_text(json.dumps([dict(page=b.page, line=b.line, lang=b.lang, code=b.code) for b in blocks]))
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["MPLBACKEND"] = "Agg"  # plt.show() draws nothing and returns
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as for the whole suite (conftest.py): no spinning OpenMP threads
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "docs", "_run_snippets.py"), str(spec)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        failed = re.search(r"SNIPPET FAILED: (\S+)", out)
        where = failed.group(1) if failed else page
        pytest.fail(f"documentation code block {where} does not run (fix the page or the code; see "
                    f"tests/docs/test_doc_snippets.py for the conventions):\n{out[-6000:]}")
