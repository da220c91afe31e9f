"""Atomic file writes: write to a temp file in the same directory, fsync, then rename over the target."""
from __future__ import annotations

import io
import os
import shutil
import tempfile
from typing import Any, Callable


def atomic_write(path: str, writer: Callable[[io.BufferedWriter], Any] | bytes, fsync: bool = True) -> None:
    """Write ``path`` atomically. ``writer`` is bytes or a function that writes into the open binary file.

    A crash mid-write leaves the previous file (if any) untouched and at most a stray ``.tmp`` file. ``fsync=False``
    keeps the atomicity (readers see the old file or the whole new one) but not durability across a power loss:
    right for replay data that is worthless after a crash anyway, and much cheaper per small file (no disk flush).
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            if isinstance(writer, (bytes, bytearray, memoryview)):
                f.write(writer)
            else:
                writer(f)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: str, text: str) -> None:
    atomic_write(path, text.encode("utf-8"))


def torch_save_atomic(obj: Any, path: str) -> None:
    """``torch.save`` through :func:`atomic_write`."""
    import torch

    atomic_write(path, lambda f: torch.save(obj, f))


def shown_dir(path: str) -> str:
    """A directory as a message shows it: ``./run/`` for a relative one, ``/abs/run/`` for an absolute one."""
    path = os.fspath(path).rstrip("/\\") or "/"
    return f"{path}/" if os.path.isabs(path) or path.startswith((".", "~")) else f"./{path}/"


def read_regular_file(path: str, max_bytes: int, what: str = "file") -> bytes:
    """The bytes of ``path``, which must be a regular file of at most ``max_bytes`` bytes.

    For files another process may have planted (parallel mode's shared directory): a symbolic link is refused
    (``O_NOFOLLOW``: a link to ``/dev/zero`` would be an endless read), so is anything that is not a regular file
    (a FIFO is opened with ``O_NONBLOCK`` and refused before any read, so it never blocks), and so is a file larger
    than ``max_bytes`` (checked before reading, and again while reading in case it grows). Every refusal is a
    :class:`~ding.utils.DataFileError` naming ``path``; a missing file is a ``FileNotFoundError``.
    """
    import stat

    from .errors import DataFileError

    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except IsADirectoryError as e:
        raise DataFileError(f"{what} '{path}' is a directory, not a regular file") from e
    except OSError as e:
        if os.path.islink(path):
            raise DataFileError(f"{what} '{path}' is a symbolic link; only regular files are read (remove it)") from e
        raise DataFileError(f"{what} '{path}' cannot be opened ({e.strerror or e})") from e
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                    else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                    else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise DataFileError(f"{what} '{path}' is {kind}, not a regular file; only regular files are read")
        if st.st_size > max_bytes:
            raise DataFileError(f"{what} '{path}' is {st.st_size} bytes, over the limit of {max_bytes} bytes")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(max_bytes + 1 - total, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise DataFileError(f"{what} '{path}' grew past the limit of {max_bytes} bytes while being read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _local_only(fs_type: str | None, fn: str) -> None:
    if fs_type not in (None, "normal"):
        raise ValueError(f"{fn}: fs_type {fs_type!r} is not supported (ding reads and writes local files only; "
                         "DI-engine's 'ceph' and 'mc' back-ends were dropped); pass fs_type=None")


def save_file(path: str, data: Any, fs_type: str | None = None, use_lock: bool = False) -> None:
    """DI-engine's ``save_file``: ``torch.save(data)`` to ``path``, atomically (a reader sees the old file or the
    whole new one, so ``use_lock`` is accepted and not needed)."""
    _local_only(fs_type, "save_file")
    torch_save_atomic(data, path)


def read_file(path: str, fs_type: str | None = None, use_lock: bool = False) -> Any:
    """DI-engine's ``read_file``: what :func:`save_file` wrote, loaded on the CPU with ``torch.load`` (tensors and
    plain containers only; ``weights_only``)."""
    import torch

    _local_only(fs_type, "read_file")
    return torch.load(path, map_location="cpu", weights_only=True)


def remove_file(path: str, fs_type: str | None = None) -> None:
    """Delete ``path``, a file or (as DI-engine's ``rm -rf``) a directory with everything in it; a missing path is
    no error. A symbolic link is removed, never followed."""
    _local_only(fs_type, "remove_file")
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)
    except FileNotFoundError:
        pass
