"""Crafted data files (fault class 3 of issue 16): each is one DataFileError, never another exception, a hang or a
huge allocation."""
from __future__ import annotations

import json
import os
import struct
import threading
import zlib

import numpy as np
import pytest

from ding.torch_utils import DEFAULT_LIMITS, DecodeLimits, decode, encode, load_file
from ding.torch_utils.codec import _HEAD, _LEN, MAGIC
from ding.utils import DataFileError, read_regular_file


def _craft(header: object, blobs: bytes = b"", compress: bool = True, header_bytes: bytes | None = None) -> bytes:
    """A file with a valid magic and checksum around whatever header we like (what a hostile writer can do)."""
    raw = header_bytes if header_bytes is not None else json.dumps(header).encode("utf-8")
    body = _LEN.pack(len(raw)) + raw + blobs
    flags = 0
    if compress:
        body, flags = zlib.compress(body, 1), 1
    return _HEAD.pack(MAGIC, flags, zlib.crc32(body)) + body


@pytest.mark.parametrize("header, match", [
    ({"tree": {"$d": [1, 2]}, "blobs": []}, r"'\$d' node must hold an object"),
    ({"tree": {"$x": 1}, "blobs": []}, "unknown node"),
    ({"tree": {"$d": {}, "$a": 0}, "blobs": []}, "unknown node"),
    ({"tree": {"$a": 3}, "blobs": []}, "names array 3, but the file has 0"),
    ({"tree": {"$a": True}, "blobs": [["<f4", [0], 0]]}, "names array True"),
    ({"tree": {"$dk": [[[1], 2]]}, "blobs": []}, "dict key of type list"),
    ({"tree": {"$dk": [1]}, "blobs": []}, r"\[key, value\] pairs"),
    ({"tree": 1}, "exactly 'tree' and a 'blobs' list"),
    ([1, 2], "exactly 'tree'"),
    ({"tree": {"$a": 0}, "blobs": [["|O", [1], 0]]}, "only numeric, bool and string"),
    ({"tree": {"$a": 0}, "blobs": [["<f4", [1], 0]]}, "runs past the end"),
    ({"tree": {"$a": 0}, "blobs": [["<f4", [-1], 0]]}, "malformed entry"),
    ({"tree": {"$a": 0}, "blobs": [["not a dtype", [1], 0]]}, "unreadable content"),
    ({"tree": {"$s": 0}, "blobs": [["<f4", [0], 0]]}, "scalar"),
])
def test_valid_checksum_bad_structure_is_one_data_file_error(header, match):
    with pytest.raises(DataFileError, match=match):
        decode(_craft(header), where="crafted")


def test_deep_nesting_is_refused_not_a_recursion_error():
    deep = "[" * 100_000 + "]" * 100_000  # the JSON parser itself would recurse
    with pytest.raises(DataFileError, match="crafted: nested too deeply"):
        decode(_craft(None, header_bytes=f'{{"tree": {deep}, "blobs": []}}'.encode()), where="crafted")
    tree: object = 1
    for _ in range(40):
        tree = [tree]
    with pytest.raises(DataFileError, match="nested deeper than the limit of 32"):
        decode(_craft({"tree": tree, "blobs": []}), where="crafted")
    assert decode(_craft({"tree": tree, "blobs": []}), limits=DecodeLimits(max_depth=64))  # a limit, not a ban


def test_decompression_bomb_stops_at_the_limit_without_inflating_it():
    # ~1 MiB that inflates to a header plus 1 GiB of zeros, declared as one 1 GiB array. Built from one compressed
    # 16 MiB block repeated (a full flush makes the blocks identical), so making it is cheap too.
    header = json.dumps({"tree": {"$a": 0}, "blobs": [["|u1", [1 << 30], 0]]}).encode()
    prefix = _LEN.pack(len(header)) + header
    comp = zlib.compressobj(9)
    zeros = bytes(1 << 24)
    head = comp.compress(prefix) + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    # a final empty block, then a dummy trailer: the reader must stop at its limit, long before it gets there
    body = head + block * 64 + b"\x03\x00" + struct.pack(">I", 0)
    assert len(body) < 2 << 20
    data = _HEAD.pack(MAGIC, 1, zlib.crc32(body)) + body
    assert DEFAULT_LIMITS.max_decoded_bytes < 1 << 30  # the default limit stops this bomb; a smaller one is cheaper
    with pytest.raises(DataFileError, match="bomb: decompresses to more than the limit of 16777216 bytes"):
        decode(data, where="bomb", limits=DecodeLimits(max_decoded_bytes=1 << 24))
    small = _LEN.pack(len(header)) + header + bytes(100)
    with pytest.raises(DataFileError, match="decompresses to more than the limit of 64 bytes"):
        decode(_craft(None, header_bytes=small[_LEN.size:]), limits=DecodeLimits(max_decoded_bytes=64))


def test_arrays_are_sized_before_allocation():
    # uncompressed: one small blob that 1000 table entries all point at (would copy it 1000 times)
    blob = bytes(1 << 20)
    table = [["|u1", [1 << 20], 0]] * 1000
    with pytest.raises(DataFileError, match="arrays add up to more than the limit"):
        decode(_craft({"tree": {"$a": 0}, "blobs": table}, blob, compress=False), where="f")
    # a shape that claims 2**62 elements of a zero-size dtype
    with pytest.raises(DataFileError, match="more than the limit"):
        decode(_craft({"tree": {"$a": 0}, "blobs": [["|S0", [1 << 62], 0]]}), where="f")
    with pytest.raises(DataFileError, match="11 arrays, over the limit of 10"):
        decode(_craft({"tree": None, "blobs": [["|u1", [0], 0]] * 11}), limits=DecodeLimits(max_arrays=10))


def test_oversized_file_and_unknown_flags_are_refused():
    data = encode({"x": np.zeros(1000, dtype=np.float32)}, compress=False)
    with pytest.raises(DataFileError, match="over the limit of 100 bytes per data file"):
        decode(data, limits=DecodeLimits(max_file_bytes=100))
    body = data[_HEAD.size:]
    with pytest.raises(DataFileError, match="unknown format flags"):
        decode(_HEAD.pack(MAGIC, 6, zlib.crc32(body)) + body)
    with pytest.raises(DataFileError, match="header length"):
        decode(_HEAD.pack(MAGIC, 0, zlib.crc32(b"\xff\xff\x00\x00")) + b"\xff\xff\x00\x00")


def test_fifo_symlink_and_device_are_refused_without_reading(tmp_path):
    good = str(tmp_path / "good")
    with open(good, "wb") as f:
        f.write(encode({"a": 1}))
    fifo = str(tmp_path / "collector_task_1_0")
    os.mkfifo(fifo)
    result: dict = {}

    def read_fifo() -> None:
        try:
            load_file(fifo)
        except DataFileError as e:
            result["error"] = str(e)

    t = threading.Thread(target=read_fifo, daemon=True)
    t.start()
    t.join(timeout=10.0)
    if t.is_alive():  # unblock the reader before failing, so the test process can exit
        with open(fifo, "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert "is a FIFO, not a regular file" in result["error"]
    link = str(tmp_path / "collector_task_1_1")
    os.symlink("/dev/zero", link)
    with pytest.raises(DataFileError, match="is a symbolic link"):
        load_file(link)
    os.symlink(good, str(tmp_path / "to_good"))
    with pytest.raises(DataFileError, match="is a symbolic link"):  # even a link to a good file
        load_file(str(tmp_path / "to_good"))
    with pytest.raises(DataFileError, match="is a device"):
        read_regular_file("/dev/zero", 100)
    assert load_file(good) == {"a": 1}


def test_file_over_the_size_cap_is_refused_before_reading(tmp_path):
    path = str(tmp_path / "big")
    with open(path, "wb") as f:
        f.write(encode({"x": np.zeros(1000, dtype=np.float32)}, compress=False))
    with pytest.raises(DataFileError, match=r"is \d+ bytes, over the limit of 1000 bytes"):
        load_file(path, limits=DecodeLimits(max_file_bytes=1000))
    assert read_regular_file(path, 1 << 20) == open(path, "rb").read()


def test_header_struct_error_is_a_data_file_error():
    body = b"\x01"
    with pytest.raises(DataFileError, match="unreadable content"):
        decode(_HEAD.pack(MAGIC, 0, zlib.crc32(body)) + body)
