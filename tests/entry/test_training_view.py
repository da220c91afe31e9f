"""The console view: log lines and the progress line never share a terminal line."""
from __future__ import annotations

import logging

from ding.engine.training_view import ProgressView
from ding.utils import ConsoleStream


def test_progress_line_is_redrawn_below_log_lines(capsys):
    log = logging.getLogger("ding.test_view")
    handler = logging.StreamHandler(ConsoleStream())
    log.addHandler(handler)
    log.propagate = False
    try:
        view = ProgressView(max_env_step=1000, max_train_iter=int(1e10), stop_value=195, enabled=True,
                            min_interval=0.0)
        view.update(100, 10)
        log.warning("[eval] iter 10 | return 20.0")
        view.eval(20.0)
        view.update(200, 20)
        view.close()
    finally:
        log.removeHandler(handler)
    out = capsys.readouterr().out
    lines = out.split("\n")
    # the log line starts on a cleared line, and the status line is drawn again after it
    assert lines[0].endswith("\r\033[K[eval] iter 10 | return 20.0")
    assert "env steps 100/1,000" in lines[0]
    assert lines[1].startswith("env steps 100/1,000")
    assert "env steps 200/1,000 [####" in lines[1] and "eval 20.0/195" in lines[1]
    assert out.endswith("\r\033[K")  # closed: nothing left on the terminal line
    assert ConsoleStream.status is None


def test_no_progress_line_when_not_a_terminal(capsys):
    view = ProgressView(max_env_step=1000, max_train_iter=int(1e10), stop_value=195)
    view.update(100, 10)
    view.close()
    assert capsys.readouterr().out == ""


def test_progress_line_without_a_stop_value_shows_the_return_alone():
    view = ProgressView(max_env_step=int(1e10), max_train_iter=int(1e10), stop_value=float("inf"), enabled=False)
    view.update(100, 10)
    view.eval(20.0)
    parts = view.line().split(" | ")
    assert parts[:3] == ["env steps 100", "iter 10", "eval 20.0"] and all(parts)
