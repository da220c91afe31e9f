"""build_logger with DI-engine's need_text / text_level and the text logger's get_tabulate_vars(_hor)."""
import logging

import pytest

from ding.utils import TextLogger, build_logger, close_logger


def test_text_level_and_the_log_file(tmp_path):
    logger, tb = build_logger(str(tmp_path), name="run", need_tb=False, text_level=logging.DEBUG)
    assert isinstance(logger, TextLogger) and tb is None
    logger.debug("a debug line")
    logger.info("an info line")
    close_logger(logger)
    text = (tmp_path / "run_logger.txt").read_text()
    assert "a debug line" in text and "an info line" in text
    quiet, _ = build_logger(str(tmp_path), name="quiet", need_tb=False, text_level="warning")
    quiet.info("not written")
    quiet.warning("written")
    close_logger(quiet)
    text = (tmp_path / "quiet_logger.txt").read_text()
    assert "written" in text and "not written" not in text


def test_need_text_false_and_the_default_name(tmp_path):
    logger, tb = build_logger(str(tmp_path), need_tb=False, need_text=False)
    assert logger is None and tb is None
    logger, _ = build_logger(str(tmp_path), need_tb=False)
    logger.info("x")
    close_logger(logger)
    assert (tmp_path / "default_logger.txt").exists()


def test_a_bad_text_level_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown logging level 'LOUD'"):
        build_logger(str(tmp_path), need_tb=False, text_level="LOUD")


def test_tabulate_vars():
    table = TextLogger.get_tabulate_vars({"aa": 3.0, "bb": 4, "cc": "x"})
    lines = table.strip().splitlines()
    assert lines[1].split("|")[1:3] == [" Name ", " Value    "]
    assert set(lines[2]) == {"+", "="}  # the header rule
    assert "| aa   | 3.000000 |" in table and "| bb   | 4.000000 |" in table and "| cc   | x        |" in table
    assert len({len(line) for line in lines}) == 1  # every line of the grid is as wide


def test_tabulate_vars_hor_wraps_columns():
    table = TextLogger.get_tabulate_vars_hor({f"v{i}": i for i in range(6)})
    rows = [line for line in table.splitlines() if line.startswith("| Name")]
    assert len(rows) == 2 and rows[0].count("|") == 6 and rows[1].count("|") == 4  # 4 names, then 2
    assert "| Value | 0.000000 |" in table
