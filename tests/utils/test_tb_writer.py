"""build_tb_writer: event files that never replace each other, closed once even when closes race at exit."""
from __future__ import annotations

import os
import threading

from ding.utils.log_helper import build_tb_writer


def test_closes_from_several_threads_and_the_exit_hook_are_one_close(tmp_path):
    writer = build_tb_writer(str(tmp_path))
    writer.add_scalar("x", 1.0, 0)
    events = writer.file_writer.event_writer
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def close() -> None:
        start.wait()
        try:
            events.close()  # what tensorboardX's atexit hook calls, here from 8 threads at once
        except BaseException as e:  # noqa: BLE001 -- collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=close) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    assert errors == []
    assert events._closed
    assert [f for f in os.listdir(tmp_path) if f.startswith("events.out.tfevents")]


def test_two_writers_in_one_directory_keep_both_event_files(tmp_path):
    a, b = build_tb_writer(str(tmp_path)), build_tb_writer(str(tmp_path))
    a.close()
    b.close()
    assert len([f for f in os.listdir(tmp_path) if f.startswith("events.out.tfevents")]) == 2
