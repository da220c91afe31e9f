"""The file format of ``save_data`` / ``load_data``: a small versioned header, then a pickled dict of plain data.

Layout::

    b"DINGBUF\\n"                      8 bytes, magic
    format version, payload length,   struct "<HQI" (uint16, uint64, uint32 CRC-32 of the payload)
    payload                           pickle (protocol 4) of {"buffer_type": str, "items": list, ...}

Only the standard library is needed to read it. A reader accepts every format version up to its own and migrates
older payloads; a newer file gets a clear "upgrade ding" error. The CRC catches truncated or damaged files.
Pickle runs code on load: load only files you (or your own runs) wrote.
"""
from __future__ import annotations

import os
import pickle
import struct
import zlib
from typing import Any

from ding.utils import ReplayBufferError, atomic_write

MAGIC = b"DINGBUF\n"
FORMAT_VERSION = 1
_HEADER = struct.Struct("<HQI")


def write_buffer_file(file_name: str, buffer_type: str, items: list[Any], **extra: Any) -> None:
    """Write ``items`` (oldest first) and ``extra`` fields atomically."""
    payload = pickle.dumps({"buffer_type": buffer_type, "items": items, **extra}, protocol=4)
    header = MAGIC + _HEADER.pack(FORMAT_VERSION, len(payload), zlib.crc32(payload))

    def _write(f: Any) -> None:
        f.write(header)
        f.write(payload)

    atomic_write(file_name, _write)


def read_buffer_file(file_name: str) -> dict[str, Any]:
    """Read a file written by :func:`write_buffer_file` (any format version up to ``FORMAT_VERSION``)."""
    if not os.path.isfile(file_name):
        raise ReplayBufferError(f"load_data: no such file '{file_name}'; pass a path written by save_data()")
    with open(file_name, "rb") as f:
        magic = f.read(len(MAGIC))
        if magic != MAGIC:
            raise ReplayBufferError(f"load_data: '{file_name}' is not a ding replay-buffer file (it does not start "
                                    "with the save_data() header)")
        header = f.read(_HEADER.size)
        if len(header) != _HEADER.size:
            raise ReplayBufferError(f"load_data: '{file_name}' is truncated (incomplete header)")
        version, length, crc = _HEADER.unpack(header)
        if version > FORMAT_VERSION:
            raise ReplayBufferError(f"load_data: '{file_name}' uses buffer file format {version}, this ding reads up "
                                    f"to {FORMAT_VERSION}; upgrade ding to load it")
        payload = f.read(length + 1)
    if len(payload) != length or zlib.crc32(payload) != crc:
        raise ReplayBufferError(f"load_data: '{file_name}' is truncated or corrupt (expected {length} payload bytes "
                                f"with CRC {crc:#010x}); restore it from a copy or save it again")
    data = pickle.loads(payload)
    return _migrate(data, version, file_name)


def _migrate(data: Any, version: int, file_name: str) -> dict[str, Any]:
    """Bring an older payload to the current layout (version 1 is the first, so nothing to do yet)."""
    if not isinstance(data, dict) or "items" not in data or not isinstance(data["items"], list):
        raise ReplayBufferError(f"load_data: '{file_name}' has a valid header but no 'items' list in its payload")
    return data
