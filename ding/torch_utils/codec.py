"""A safe binary format for samples exchanged through files in parallel mode (no pickle anywhere).

``encode(obj)`` accepts nested dicts / lists / tuples of numpy arrays, numpy scalars, torch tensors, ``None``,
bools, ints, floats and strings. The file is ``MAGIC | flags | crc32 | body``; the body is a JSON header (the
structure, with array leaves pointing into a blob table) followed by the raw array bytes, zlib-compressed when asked.
``decode`` checks the magic and the checksum first, so a truncated or damaged file is a :class:`DataFileError`, never
garbage data, and it can only ever build the types above. The files come from other processes, so ``decode`` also
treats a file with a valid checksum as hostile: it accepts only the structure ``encode`` writes, decompresses no more
than :class:`DecodeLimits` allows, sizes every array before allocating it and bounds the nesting depth; ``load_file``
reads regular files only. Every one of these refusals is the same :class:`DataFileError`.
"""
from __future__ import annotations

import json
import math
import struct
import zlib
from dataclasses import dataclass
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
    tree = _pack(obj, blobs, table, "sample", {})
    header = json.dumps({"tree": tree, "blobs": table}, separators=(",", ":"), allow_nan=True).encode("utf-8")
    body = b"".join([_LEN.pack(len(header)), header, *blobs])
    flags = 0
    if compress:
        body = zlib.compress(body, level)
        flags |= _FLAG_ZLIB
    return _HEAD.pack(MAGIC, flags, zlib.crc32(body)) + body


@dataclass(frozen=True)
class DecodeLimits:
    """What one data file may cost its reader; anything over a limit is a :class:`DataFileError`, never an attempt.

    ``max_file_bytes`` caps the stored file, ``max_decoded_bytes`` what it decompresses to and the sum of its arrays'
    sizes (so a small file cannot decode into a huge array), ``max_depth`` the nesting of dicts/lists/tuples, and
    ``max_arrays`` the number of arrays. The defaults fit samples of up to a few tens of MiB (an Atari frame stack
    is ~0.1 MiB); a run with larger samples sets the learner's ``max_data_file_mb``.
    """

    max_file_bytes: int = 64 * 1024 * 1024
    max_decoded_bytes: int = 64 * 1024 * 1024
    max_depth: int = 32
    max_arrays: int = 100_000


DEFAULT_LIMITS = DecodeLimits()
_DTYPE_KINDS = "biufc?SU"  # plain numeric, bool, bytes and str arrays; never object or structured
_NODE_TAGS = ("$d", "$dk", "$tu", "$a", "$s", "$t")


def decode(data: bytes, where: str = "data", limits: DecodeLimits = DEFAULT_LIMITS) -> Any:
    """The object ``encode`` stored; ``where`` (e.g. the file path) names the data in errors.

    Any problem with the bytes (damage, a foreign format, a structure ``encode`` never writes, a size or depth over
    ``limits``) is one :class:`DataFileError` naming ``where``.
    """
    if len(data) > limits.max_file_bytes:
        raise DataFileError(f"{where}: {len(data)} bytes, over the limit of {limits.max_file_bytes} bytes per data "
                            "file")
    if len(data) < _HEAD.size or data[:len(MAGIC)] != MAGIC:
        raise DataFileError(f"{where}: not a ding data file (bad magic; {len(data)} bytes)")
    _, flags, crc = _HEAD.unpack_from(data)
    body = memoryview(data)[_HEAD.size:]
    if zlib.crc32(body) != crc:
        raise DataFileError(f"{where}: checksum mismatch (the file is truncated or damaged)")
    if flags & ~_FLAG_ZLIB:
        raise DataFileError(f"{where}: unknown format flags {flags:#x}")
    try:
        raw = _inflate(body, limits.max_decoded_bytes, where) if flags & _FLAG_ZLIB else bytes(body)
        (n,) = _LEN.unpack_from(raw)
        if n > len(raw) - _LEN.size:
            raise DataFileError(f"{where}: the header length {n} runs past the end of the data")
        header = json.loads(raw[_LEN.size:_LEN.size + n].decode("utf-8"))
        if not isinstance(header, dict) or set(header) != {"tree", "blobs"} or not isinstance(header["blobs"], list):
            raise DataFileError(f"{where}: the header must be an object with exactly 'tree' and a 'blobs' list")
        arrays = _arrays(header["blobs"], memoryview(raw)[_LEN.size + n:], limits, where)
        return _unpack(header["tree"], arrays, 0, limits.max_depth, where)
    except DataFileError:
        raise
    except RecursionError as e:
        raise DataFileError(f"{where}: nested too deeply to read") from e
    except (zlib.error, struct.error, ValueError, KeyError, TypeError, IndexError, AttributeError,
            OverflowError) as e:
        raise DataFileError(f"{where}: unreadable content ({type(e).__name__}: {e})") from e


def _inflate(body: memoryview, max_bytes: int, where: str) -> bytes:
    """zlib-decompress ``body`` without ever producing more than ``max_bytes`` bytes."""
    d = zlib.decompressobj()
    raw = d.decompress(body, max_bytes + 1)
    if len(raw) > max_bytes or d.unconsumed_tail:
        raise DataFileError(f"{where}: decompresses to more than the limit of {max_bytes} bytes")
    if not d.eof:
        raise DataFileError(f"{where}: the compressed data is incomplete")
    return raw


def _arrays(table: list, blobs: memoryview, limits: DecodeLimits, where: str) -> list[np.ndarray]:
    """The arrays of the blob table, each checked (dtype, shape, bounds) before any memory is given to it."""
    if len(table) > limits.max_arrays:
        raise DataFileError(f"{where}: {len(table)} arrays, over the limit of {limits.max_arrays}")
    total = 0
    arrays = []
    for i, entry in enumerate(table):
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
                and isinstance(entry[1], list) and all(type(d) is int and d >= 0 for d in entry[1])
                and type(entry[2]) is int and entry[2] >= 0 and len(entry[1]) <= 32):
            raise DataFileError(f"{where}: array {i} has a malformed entry (expected [dtype, shape, offset])")
        dtype = np.dtype(entry[0])
        if dtype.kind not in _DTYPE_KINDS or dtype.fields is not None or dtype.subdtype is not None:
            raise DataFileError(f"{where}: array {i} has dtype {entry[0]!r}; only numeric, bool and string arrays "
                                "are stored")
        count = math.prod(entry[1])
        nbytes = count * dtype.itemsize
        total += max(nbytes, count)
        if total > limits.max_decoded_bytes:
            raise DataFileError(f"{where}: its arrays add up to more than the limit of {limits.max_decoded_bytes} "
                                "bytes")
        if entry[2] + nbytes > len(blobs):
            raise DataFileError(f"{where}: array {i} runs past the end of the data")
        arr = np.frombuffer(blobs, dtype=dtype, count=count, offset=entry[2]) if count else np.empty(0, dtype)
        arrays.append(arr.reshape(entry[1]).copy())
    return arrays


def _pack(obj: Any, blobs: list[bytes], table: list[list[Any]], path: str, seen: dict[int, int]) -> Any:
    """``seen`` maps the id of each numpy array already written to its table index: an array that the sample holds
    twice (an Atari frame stack that is one transition's ``next_obs`` and the next one's ``obs``) is written once, and
    decoding gives both places the same array again."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj):
            return {"$d": {k: _pack(v, blobs, table, f"{path}.{k}", seen) for k, v in obj.items()}}
        return {"$dk": [[_pack(k, blobs, table, f"{path} key", seen), _pack(v, blobs, table, f"{path}[{k!r}]", seen)]
                        for k, v in obj.items()]}
    if isinstance(obj, list):
        return [_pack(v, blobs, table, f"{path}[{i}]", seen) for i, v in enumerate(obj)]
    if isinstance(obj, tuple):
        return {"$tu": [_pack(v, blobs, table, f"{path}[{i}]", seen) for i, v in enumerate(obj)]}
    kind = "$a"
    if type(obj) is np.ndarray and id(obj) in seen:  # the tree holds every packed array until encode returns
        return {kind: seen[id(obj)]}
    original = obj
    if isinstance(obj, np.generic):
        kind, obj = "$s", np.asarray(obj)
    elif type(obj).__module__.startswith("torch") and hasattr(obj, "detach"):
        try:
            kind, obj = "$t", obj.detach().cpu().numpy()
        except TypeError as e:  # e.g. bfloat16, which numpy has no dtype for
            raise TypeError(f"{path}: a torch tensor of dtype {obj.dtype} cannot be stored in a ding file (numpy has "
                            "no such dtype); cast it first, e.g. .float()") from e
    if not isinstance(obj, np.ndarray):
        raise TypeError(f"{path}: cannot store a {type(obj).__module__}.{type(obj).__qualname__} in a data file; "
                        "samples may hold numpy arrays, torch tensors, scalars, strings, None and dicts/lists of them")
    if obj.dtype.hasobject:
        raise TypeError(f"{path}: object arrays cannot be stored in a data file (dtype {obj.dtype})")
    arr = obj if obj.flags.c_contiguous else obj.copy(order="C")  # (ascontiguousarray makes 0-d arrays 1-d)
    offset = sum(len(b) for b in blobs)
    table.append([arr.dtype.str, list(arr.shape), offset])
    blobs.append(arr.tobytes())
    if kind == "$a" and type(original) is np.ndarray:
        seen[id(original)] = len(table) - 1
    return {kind: len(table) - 1}


def _unpack(node: Any, arrays: list[np.ndarray], depth: int, max_depth: int, where: str) -> Any:
    """Rebuild the tree, accepting only the node shapes ``_pack`` writes (anything else is a DataFileError)."""
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if depth >= max_depth:
        raise DataFileError(f"{where}: nested deeper than the limit of {max_depth} levels")
    if isinstance(node, list):
        return [_unpack(v, arrays, depth + 1, max_depth, where) for v in node]
    if not isinstance(node, dict) or len(node) != 1 or next(iter(node)) not in _NODE_TAGS:
        raise DataFileError(f"{where}: unknown node {_short(node)} (a ding data file holds only the nodes "
                            f"{', '.join(_NODE_TAGS)})")
    tag, value = next(iter(node.items()))
    if tag == "$d":
        if not isinstance(value, dict):
            raise DataFileError(f"{where}: a '$d' node must hold an object, got {type(value).__name__}")
        return {k: _unpack(v, arrays, depth + 1, max_depth, where) for k, v in value.items()}
    if tag in ("$dk", "$tu"):
        if not isinstance(value, list):
            raise DataFileError(f"{where}: a '{tag}' node must hold a list, got {type(value).__name__}")
        if tag == "$tu":
            return tuple(_unpack(v, arrays, depth + 1, max_depth, where) for v in value)
        out = {}
        for pair in value:
            if not isinstance(pair, list) or len(pair) != 2:
                raise DataFileError(f"{where}: a '$dk' node must hold [key, value] pairs")
            key = _unpack(pair[0], arrays, depth + 1, max_depth, where)
            try:
                out[key] = _unpack(pair[1], arrays, depth + 1, max_depth, where)
            except TypeError as e:
                raise DataFileError(f"{where}: a dict key of type {type(key).__name__} cannot be used") from e
        return out
    if type(value) is not int or not 0 <= value < len(arrays):
        raise DataFileError(f"{where}: a '{tag}' node names array {_short(value)}, but the file has {len(arrays)}")
    arr = arrays[value]
    if tag == "$a":
        return arr
    if tag == "$s":
        if arr.ndim:
            raise DataFileError(f"{where}: a '$s' (scalar) node names an array of shape {arr.shape}")
        return arr[()]
    import torch

    try:
        return torch.from_numpy(arr)
    except TypeError as e:
        raise DataFileError(f"{where}: a '$t' (tensor) node names an array of dtype {arr.dtype}, which torch cannot "
                            "hold") from e


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def save_file(obj: Any, path: str, compress: bool = True, fsync: bool = False) -> int:
    """Write ``encode(obj)`` to ``path`` atomically (readers never see a partial file); returns the size."""
    from ding.utils import atomic_write

    data = encode(obj, compress=compress)
    atomic_write(path, data, fsync=fsync)
    return len(data)


def load_file(path: str, limits: DecodeLimits = DEFAULT_LIMITS) -> Any:
    """Read a file written by :func:`save_file`; a missing, damaged or crafted file is a :class:`DataFileError`.

    Only a regular file is read (a symbolic link, FIFO or device is refused without reading from it), and only up to
    ``limits.max_file_bytes``; see :class:`DecodeLimits` for the rest.
    """
    from ding.utils import read_regular_file

    try:
        data = read_regular_file(path, limits.max_file_bytes, what="data file")
    except FileNotFoundError as e:
        raise DataFileError(f"{path}: data file not found (deleted, or never fully written)") from e
    return decode(data, where=path, limits=limits)
