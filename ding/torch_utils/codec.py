"""A safe binary format for samples exchanged through files in parallel mode (no pickle anywhere).

``encode(obj)`` accepts nested dicts / lists / tuples of numpy arrays, numpy scalars, torch tensors, ``None``,
bools, ints, floats and strings. The file is ``MAGIC | flags | crc32 | body``; the body is a JSON header (the
structure, with array leaves pointing into a blob table) followed by the raw array bytes, zlib-compressed when asked.
``decode`` checks the magic and the checksum first, so a truncated or damaged file is a :class:`DataFileError`, never
garbage data, and it can only ever build the types above.
"""
from __future__ import annotations

import json
import struct
import zlib
from typing import Any

import numpy as np

from ding.utils import DataFileError

MAGIC = b"DINGD1"
_FLAG_ZLIB = 1
_HEAD = struct.Struct("<6sBI")  # magic, flags, crc32 of the stored body
_LEN = struct.Struct("<I")


def encode(obj: Any, compress: bool = True, level: int = 1) -> bytes:
    """``obj`` as bytes (see the module docstring for what it may contain)."""
    blobs: list[bytes] = []
    table: list[list[Any]] = []
    tree = _pack(obj, blobs, table, "sample")
    header = json.dumps({"tree": tree, "blobs": table}, separators=(",", ":"), allow_nan=True).encode("utf-8")
    body = b"".join([_LEN.pack(len(header)), header, *blobs])
    flags = 0
    if compress:
        body = zlib.compress(body, level)
        flags |= _FLAG_ZLIB
    return _HEAD.pack(MAGIC, flags, zlib.crc32(body)) + body


def decode(data: bytes, where: str = "data") -> Any:
    """The object ``encode`` stored; ``where`` (e.g. the file path) names the data in errors."""
    if len(data) < _HEAD.size or data[:len(MAGIC)] != MAGIC:
        raise DataFileError(f"{where}: not a ding data file (bad magic; {len(data)} bytes)")
    _, flags, crc = _HEAD.unpack_from(data)
    body = memoryview(data)[_HEAD.size:]
    if zlib.crc32(body) != crc:
        raise DataFileError(f"{where}: checksum mismatch (the file is truncated or damaged)")
    try:
        raw = zlib.decompress(body) if flags & _FLAG_ZLIB else bytes(body)
        (n,) = _LEN.unpack_from(raw)
        header = json.loads(raw[_LEN.size:_LEN.size + n].decode("utf-8"))
        blobs = raw[_LEN.size + n:]
        arrays = [np.frombuffer(blobs, dtype=np.dtype(dt), count=int(np.prod(shape, dtype=np.int64)),
                                offset=off).reshape(shape).copy() for dt, shape, off in header["blobs"]]
        return _unpack(header["tree"], arrays)
    except (zlib.error, struct.error, ValueError, KeyError, TypeError, IndexError) as e:
        raise DataFileError(f"{where}: unreadable content ({type(e).__name__}: {e})") from e


def _pack(obj: Any, blobs: list[bytes], table: list[list[Any]], path: str) -> Any:
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj):
            return {"$d": {k: _pack(v, blobs, table, f"{path}.{k}") for k, v in obj.items()}}
        return {"$dk": [[_pack(k, blobs, table, f"{path} key"), _pack(v, blobs, table, f"{path}[{k!r}]")]
                        for k, v in obj.items()]}
    if isinstance(obj, list):
        return [_pack(v, blobs, table, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, tuple):
        return {"$tu": [_pack(v, blobs, table, f"{path}[{i}]") for i, v in enumerate(obj)]}
    kind = "$a"
    if isinstance(obj, np.generic):
        kind, obj = "$s", np.asarray(obj)
    elif type(obj).__module__.startswith("torch") and hasattr(obj, "detach"):
        kind, obj = "$t", obj.detach().cpu().numpy()
    if not isinstance(obj, np.ndarray):
        raise TypeError(f"{path}: cannot store a {type(obj).__module__}.{type(obj).__qualname__} in a data file; "
                        "samples may hold numpy arrays, torch tensors, scalars, strings, None and dicts/lists of them")
    if obj.dtype.hasobject:
        raise TypeError(f"{path}: object arrays cannot be stored in a data file (dtype {obj.dtype})")
    arr = obj if obj.flags.c_contiguous else obj.copy(order="C")  # (ascontiguousarray makes 0-d arrays 1-d)
    offset = sum(len(b) for b in blobs)
    table.append([arr.dtype.str, list(arr.shape), offset])
    blobs.append(arr.tobytes())
    return {kind: len(table) - 1}


def _unpack(node: Any, arrays: list[np.ndarray]) -> Any:
    if isinstance(node, list):
        return [_unpack(v, arrays) for v in node]
    if not isinstance(node, dict):
        return node
    if "$d" in node:
        return {k: _unpack(v, arrays) for k, v in node["$d"].items()}
    if "$dk" in node:
        return {_unpack(k, arrays): _unpack(v, arrays) for k, v in node["$dk"]}
    if "$tu" in node:
        return tuple(_unpack(v, arrays) for v in node["$tu"])
    if "$a" in node:
        return arrays[node["$a"]]
    if "$s" in node:
        return arrays[node["$s"]][()]
    if "$t" in node:
        import torch

        return torch.from_numpy(arrays[node["$t"]])
    raise ValueError(f"unknown node {sorted(node)}")


def save_file(obj: Any, path: str, compress: bool = True, fsync: bool = False) -> int:
    """Write ``encode(obj)`` to ``path`` atomically (readers never see a partial file); returns the size."""
    from ding.utils import atomic_write

    data = encode(obj, compress=compress)
    atomic_write(path, data, fsync=fsync)
    return len(data)


def load_file(path: str) -> Any:
    """Read a file written by :func:`save_file`; a missing or damaged file is a :class:`DataFileError`."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError as e:
        raise DataFileError(f"{path}: data file not found (deleted, or never fully written)") from e
    except IsADirectoryError as e:
        raise DataFileError(f"{path}: is a directory, not a data file") from e
    return decode(data, where=path)
