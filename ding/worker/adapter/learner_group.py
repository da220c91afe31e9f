"""The learners of one run as a ``torch.distributed`` process group: rendezvous, messages, gradient averaging.

Several learners (``policy.learn.learner.learner_num > 1``) train one policy together. Rank 0 is the
:class:`~ding.worker.adapter.learner_aggregator.LearnerAggregator`, the only learner the coordinator talks to; ranks
1.. are :class:`~ding.worker.adapter.learner_aggregator.LearnerGroupMember` processes that talk to rank 0 only,
through this group. Nothing here is our own transport or allreduce: the group is ``torch.distributed`` (gloo on CPU,
nccl where the policy runs on GPUs), and the rendezvous is its ``TCPStore``.

Rendezvous: rank 0 opens a ``TCPStore`` on a free port of its listening address and writes that address to
``<run dir>/learner_group.json`` (atomically; the run directory is the parent of ``path_data``, which every host
shares). The other ranks read that file and connect; a stale file from an earlier run points at a closed port, so
they re-read it until the group forms or ``group_timeout`` passes. Rank 0 removes the file when it closes.

Messages (rank 0 to all, ``broadcast``; all to rank 0, ``gather``) are bytes in uint8 tensors: the start task as
JSON and the batches and learn infos in the safe sample format (:mod:`ding.torch_utils.codec`); nothing received
through the group is unpickled.
"""
from __future__ import annotations

import functools
import json
import logging
import os
import re
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

import torch

from ding.utils import DingError, atomic_write
from ding.worker.learner.learner_hook import allreduce_mean

_T = TypeVar("_T")

RENDEZVOUS_FILE = "learner_group.json"
KIND_STOP, KIND_DATA, KIND_KEEPALIVE = 0, 1, 2


class LearnerGroupError(DingError, RuntimeError):
    """The learner group could not form, or lost a member (one message naming the rank and the cause)."""


def rendezvous_path(path_data: str) -> str:
    """Where rank 0 writes the group's address: next to the run's data directory (on the shared filesystem)."""
    return os.path.join(os.path.dirname(os.path.normpath(path_data)) or ".", RENDEZVOUS_FILE)


def pick_backend(use_cuda: bool) -> str:
    """nccl where the policy runs on a GPU and nccl exists, gloo otherwise."""
    import torch.distributed as dist

    if use_cuda and torch.cuda.is_available() and dist.is_nccl_available():
        return "nccl"
    return "gloo"


class LearnerGroup:
    """One process's membership in the learner group (see the module docstring)."""

    def __init__(self, rank: int, size: int, backend: str, store: Any, timeout_s: float, name: str) -> None:
        import torch.distributed as dist

        self.rank, self.size, self.backend, self.name = rank, size, backend, name
        self._store = store
        self._timeout_s = float(timeout_s)
        if backend == "nccl":  # one GPU per learner of a host (nccl refuses two ranks on one device); the policy's
            torch.cuda.set_device(rank % torch.cuda.device_count())  # 'cuda' is then this one
        self._device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")
        self._logger = logging.getLogger(f"ding.learner_group.{name}")
        try:
            dist.init_process_group(backend, store=store, rank=rank, world_size=size,
                                    timeout=timedelta(seconds=self._timeout_s))
        except Exception as e:  # noqa: BLE001 -- one message naming what failed
            raise LearnerGroupError(f"{name}: the learner group ({size} learners, {backend}) did not form within "
                                    f"group_timeout ({self._timeout_s:g} s): {type(e).__name__}: {e}") from e
        self._closed = False

    # ---------------------------------------------------------------- forming and leaving
    @classmethod
    def host(cls, path: str, bind_host: str, advertise_host: str, size: int, backend: str, timeout_s: float,
             name: str, port: int = 0) -> LearnerGroup:
        """Rank 0: open the store, announce its address in ``path``, wait for the other ranks (``timeout_s``)."""
        import torch.distributed as dist

        try:
            store = dist.TCPStore(bind_host, int(port), size, True, timedelta(seconds=float(timeout_s)),
                                  wait_for_workers=False)
        except Exception as e:  # noqa: BLE001
            raise LearnerGroupError(f"{name}: cannot open the learner group's rendezvous on {bind_host}:{port}: "
                                    f"{e}") from e
        atomic_write(path, json.dumps({"host": advertise_host, "port": int(store.port), "size": int(size),
                                       "backend": backend}).encode())
        try:
            return cls(0, size, backend, store, timeout_s, name)
        except BaseException:
            _remove(path)
            raise

    @classmethod
    def join(cls, path: str, rank: int, size: int, timeout_s: float, name: str) -> LearnerGroup:
        """Rank > 0: read rank 0's address from ``path`` and join, retrying until ``timeout_s`` has passed."""
        import torch.distributed as dist

        deadline = time.monotonic() + float(timeout_s)
        last = "no rendezvous file yet"
        while True:
            try:
                with open(path) as f:
                    where = json.load(f)
                host, port, backend = str(where["host"]), int(where["port"]), str(where["backend"])
                if int(where["size"]) != size:
                    raise LearnerGroupError(f"{name}: {path} announces a group of {where['size']} learners, this "
                                            f"learner was started for {size} (learner_num); start every learner "
                                            "from the same config")
                left = max(1.0, min(10.0, deadline - time.monotonic()))
                store = dist.TCPStore(host, port, size, False, timedelta(seconds=left))
                return cls(rank, size, backend, store, max(1.0, deadline - time.monotonic()), name)
            except LearnerGroupError:
                raise
            except (OSError, ValueError, KeyError, TypeError, RuntimeError) as e:  # not there yet / stale / closed
                last = f"{type(e).__name__}: {e}"
            if time.monotonic() >= deadline:
                raise LearnerGroupError(f"{name}: could not join the learner group through {path} within "
                                        f"group_timeout ({timeout_s:g} s): {last}. Is learner0 running, and is the "
                                        "run directory shared with this host?")
            time.sleep(0.2)

    def close(self, path: str | None = None) -> None:
        """Leave the group (rank 0 also removes the rendezvous file ``path``). Idempotent."""
        import torch.distributed as dist

        if self._closed:
            return
        self._closed = True
        if path is not None:
            _remove(path)
        try:
            if dist.is_initialized():
                dist.destroy_process_group()
        except Exception as e:  # noqa: BLE001 -- a broken group cannot be left cleanly; the process ends anyway
            self._logger.warning(f"{self.name}: leaving the learner group: {e}")
        self._store = None

    # ---------------------------------------------------------------- messages
    def send(self, kind: int, payload: bytes = b"") -> None:
        """Rank 0: send a message of ``kind`` (KIND_*) to every other rank."""
        self._broadcast_header(kind, len(payload))
        if payload:
            self._broadcast(torch.frombuffer(bytearray(payload), dtype=torch.uint8))

    def receive(self) -> tuple[int, bytes]:
        """Rank > 0: the next message from rank 0, as (kind, payload)."""
        kind, n = self._broadcast_header(0, 0)
        if n == 0:
            return kind, b""
        buf = torch.empty(n, dtype=torch.uint8, device=self._device)
        self._broadcast(buf)
        return kind, bytes(buf.cpu().numpy().tobytes())

    def _broadcast_header(self, kind: int, n: int) -> tuple[int, int]:
        header = torch.tensor([kind, n], dtype=torch.int64, device=self._device)
        self._broadcast(header)
        return int(header[0]), int(header[1])

    def _broadcast(self, tensor: torch.Tensor) -> None:
        import torch.distributed as dist

        self._collective(lambda: dist.broadcast(tensor.to(self._device) if tensor.device != self._device
                                                else tensor, src=0))

    def gather(self, payload: bytes) -> list[bytes] | None:
        """Every rank's ``payload``, in rank order, at rank 0 (None at the other ranks)."""
        import torch.distributed as dist

        size = torch.tensor([len(payload)], dtype=torch.int64, device=self._device)
        sizes = [torch.zeros(1, dtype=torch.int64, device=self._device) for _ in range(self.size)]
        self._collective(lambda: dist.all_gather(sizes, size))
        n = max(int(s.item()) for s in sizes)
        mine = torch.zeros(n, dtype=torch.uint8, device=self._device)
        if payload:
            mine[:len(payload)] = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(self._device)
        out = [torch.zeros(n, dtype=torch.uint8, device=self._device) for _ in range(self.size)] if self.rank == 0 \
            else None
        self._collective(lambda: dist.gather(mine, out, dst=0))
        if out is None:
            return None
        return [bytes(t[:int(s.item())].cpu().numpy().tobytes()) for t, s in zip(out, sizes)]

    # ---------------------------------------------------------------- the model
    def broadcast_tensors(self, tensors: list[torch.Tensor]) -> None:
        """Overwrite ``tensors`` (in place) with rank 0's."""
        import torch.distributed as dist

        for t in tensors:
            buf = t.data if t.device == self._device else t.data.to(self._device)
            self._collective(functools.partial(dist.broadcast, buf, src=0))
            if buf is not t.data:
                t.data.copy_(buf)

    def average_gradients(self, params: list[torch.Tensor]) -> None:
        """Replace each parameter's gradient by the mean over the group (one allreduce of all of them)."""
        self._average([p.grad for p in params if p.grad is not None])

    def average_buffers(self, buffers: list[torch.Tensor]) -> None:
        """Keep the models' buffers identical: floating ones (BatchNorm's running statistics) become the group's
        mean (one allreduce), the others (``num_batches_tracked``) rank 0's."""
        self._average([b for b in buffers if b.is_floating_point()])
        self.broadcast_tensors([b for b in buffers if not b.is_floating_point()])

    def _average(self, tensors: list[torch.Tensor]) -> None:
        """Each tensor (in place) replaced by its mean over the group, in one allreduce."""
        import torch.distributed as dist

        if not tensors:
            return
        flat = torch.cat([t.detach().reshape(-1).to(self._device) for t in tensors])
        self._collective(lambda: dist.all_reduce(flat))
        flat /= self.size
        offset = 0
        for t in tensors:
            n = t.numel()
            t.data.copy_(flat[offset:offset + n].view_as(t))
            offset += n

    def all_reduce_mean(self, values: dict[str, float], world_size: int | None = None) -> dict[str, float]:
        """Each value's mean over the group (a :class:`LogReduceHook`'s reducer: the learners' logged scalars)."""
        return self._collective(lambda: allreduce_mean(values, world_size or self.size, self._device))

    def _collective(self, fn: Callable[[], _T]) -> _T:
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 -- gloo/nccl errors: a member left (killed, lost host) or timed out
            raise LearnerGroupError(f"{self.name} (rank {self.rank} of {self.size}): the learner group broke "
                                    f"({_short_cause(e)}): a learner was lost; the group is not rebuilt (see "
                                    "docs/distributed.md, Several learners): the run ends, resume it from its last "
                                    "checkpoint") from e


def _short_cause(e: BaseException) -> str:
    """gloo's message without its source location and advice: 'Read error [127.0.0.1]:45977: Connection reset by
    peer'."""
    text = (str(e).splitlines() or [""])[0]
    text = re.sub(r"^\[[^\]]*\.(cc|cpp|h):\d+\]\s*", "", text)
    return text.split(" This is typically")[0].rstrip(". ") or type(e).__name__


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
