"""The learners of one run as a ``torch.distributed`` process group (gloo on CPU, nccl on GPUs); docs/distributed.md.

``torch.distributed`` authenticates nobody, so before anything else flows every rank proves it holds the run's token
(:meth:`LearnerGroup._prove_membership`). Messages are bytes in uint8 tensors, never unpickled."""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import socket
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from ding.utils import DataFileError, DingError, atomic_write, read_regular_file
from ding.worker.learner.learner_hook import allreduce_mean

_T = TypeVar("_T")

RENDEZVOUS_FILE = "learner_group.json"
KIND_STOP, KIND_DATA, KIND_KEEPALIVE = 0, 1, 2
_NONCE_BYTES = 32
_PROOF_DOMAIN = b"ding learner group membership v1"
_MAX_RENDEZVOUS_BYTES = 4096
_SIOCGIFADDR = 0x8915  # Linux ioctl: an interface's IPv4 address


class LearnerGroupError(DingError, RuntimeError):
    """The learner group could not form, or lost a member (one message naming the rank and the cause)."""


def rendezvous_path(path_data: str) -> str:
    """Where rank 0 writes the group's address: next to the run's (shared) data directory."""
    return os.path.join(os.path.dirname(os.path.normpath(path_data)) or ".", RENDEZVOUS_FILE)


def pick_backend(use_cuda: bool) -> str:
    """nccl where the policy runs on a GPU and nccl exists, gloo otherwise."""
    return "nccl" if use_cuda and torch.cuda.is_available() and dist.is_nccl_available() else "gloo"


def _bytes(t: torch.Tensor) -> bytes:
    return bytes(t.cpu().numpy().tobytes())


class LearnerGroup:
    """One process's membership in the learner group: rank 0 opens a ``TCPStore`` on its own address only (torch's
    would bind every interface) and writes that address to ``<run dir>/learner_group.json``; the others join there."""

    def __init__(self, rank: int, size: int, backend: str, store: Any, timeout_s: float, name: str,
                 token: str, local_address: str = "") -> None:
        self.rank, self.size, self.backend, self.name = rank, size, backend, name
        if backend == "nccl":  # one GPU per learner of a host (nccl refuses two ranks on one device)
            torch.cuda.set_device(rank % torch.cuda.device_count())
        self._device = torch.device("cuda", torch.cuda.current_device()) if backend == "nccl" else torch.device("cpu")
        self._logger = logging.getLogger(f"ding.learner_group.{name}")
        if backend == "gloo" and local_address and "GLOO_SOCKET_IFNAME" not in os.environ:
            interface = _interface_of(local_address)  # gloo's sockets on the run's interface only (by default it
            if interface:  # takes the host name's address, often loopback or every interface)
                os.environ["GLOO_SOCKET_IFNAME"] = interface
        try:
            dist.init_process_group(backend, store=store, rank=rank, world_size=size,
                                    timeout=timedelta(seconds=float(timeout_s)))
        except Exception as e:  # noqa: BLE001 -- one message naming what failed
            raise LearnerGroupError(f"{name}: the learner group ({size} learners, {backend}) did not form within "
                                    f"group_timeout ({float(timeout_s):g} s): {type(e).__name__}: {e}") from e
        self._closed = False
        self.sent_at = 0.0  # time.monotonic() of the last send (rank 0 keeps the others' wait alive)
        self._listener: socket.socket | None = None
        try:
            self._prove_membership(token)
        except BaseException:
            self.close()
            raise

    @classmethod
    def host(cls, path: str, bind_host: str, advertise_host: str, size: int, backend: str, timeout_s: float,
             name: str, token: str) -> LearnerGroup:
        """Rank 0: open the store on a free port of ``bind_host`` only, announce its address in ``path``, wait for
        the other ranks (``timeout_s``) and check that each holds ``token``."""
        listener = None
        try:
            listener = _listen(bind_host)
            store = dist.TCPStore(bind_host, listener.getsockname()[1], size, True,
                                  timedelta(seconds=float(timeout_s)), wait_for_workers=False,
                                  master_listen_fd=listener.fileno())
        except Exception as e:  # noqa: BLE001
            if listener is not None:
                listener.close()
            raise LearnerGroupError(f"{name}: cannot open the learner group's rendezvous on {bind_host}: {e}") from e
        atomic_write(path, json.dumps({"host": advertise_host, "port": int(store.port), "size": int(size),
                                       "backend": backend}).encode())
        try:
            group = cls(0, size, backend, store, timeout_s, name, token, _address_of(bind_host))
        except BaseException:
            _remove(path)
            listener.close()
            raise
        group._listener = listener  # the store serves on this socket (not a copy of it): closed with the group
        return group

    @classmethod
    def join(cls, path: str, rank: int, size: int, timeout_s: float, name: str, token: str) -> LearnerGroup:
        """Rank > 0: read rank 0's address from ``path`` (a regular file, capped) and join, proving ``token``;
        a missing or stale file is read again until ``timeout_s``."""
        deadline = time.monotonic() + float(timeout_s)
        last = "no rendezvous file yet"
        while True:
            try:
                where = json.loads(read_regular_file(path, _MAX_RENDEZVOUS_BYTES, "the learner group's rendezvous "
                                                     "file"))
                host, port, backend = str(where["host"]), int(where["port"]), str(where["backend"])
                if int(where["size"]) != size:
                    raise LearnerGroupError(f"{name}: {path} announces a group of {where['size']} learners, this "
                                            f"learner was started for {size} (learner_num); start every learner "
                                            "from the same config")
                left = max(1.0, min(10.0, deadline - time.monotonic()))
                store = dist.TCPStore(host, port, size, False, timedelta(seconds=left))
                return cls(rank, size, backend, store, max(1.0, deadline - time.monotonic()), name, token,
                           _route_to(host, port))
            except LearnerGroupError:
                raise
            except DataFileError as e:  # a link, a FIFO, a huge file: not one rank 0 wrote
                raise LearnerGroupError(f"{name}: cannot read the learner group's rendezvous file: {e}") from e
            except (OSError, ValueError, KeyError, TypeError, RuntimeError) as e:  # not there yet / stale / closed
                last = f"{type(e).__name__}: {e}"
            if time.monotonic() >= deadline:
                raise LearnerGroupError(f"{name}: could not join the learner group through {path} within "
                                        f"group_timeout ({timeout_s:g} s): {last}. Is learner0 running, and is the "
                                        "run directory shared with this host?")
            time.sleep(0.2)

    def close(self, path: str | None = None) -> None:
        """Leave the group (rank 0 also removes the rendezvous file ``path``). Idempotent."""
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
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def _prove_membership(self, token: str) -> None:
        """Every rank shows every other one that it holds ``token`` before anything else flows: all exchange fresh
        nonces, then each sends HMAC-SHA256(token, domain | all nonces | its rank) and checks everyone else's."""
        nonces = self._zeros(_NONCE_BYTES)
        self._collective(dist.all_gather, nonces, self._tensor(secrets.token_bytes(_NONCE_BYTES)))
        seen = b"".join(_bytes(t) for t in nonces)
        proofs = [hmac.new(token.encode(), _PROOF_DOMAIN + seen + r.to_bytes(4, "big"), hashlib.sha256).digest()
                  for r in range(self.size)]
        got = self._zeros(len(proofs[0]))
        self._collective(dist.all_gather, got, self._tensor(proofs[self.rank]))
        bad = [r for r in range(self.size) if r != self.rank and not hmac.compare_digest(_bytes(got[r]), proofs[r])]
        if bad:
            raise LearnerGroupError(
                f"{self.name} (rank {self.rank} of {self.size}): rank(s) {', '.join(map(str, bad))} of the learner "
                "group did not prove the run's auth token: a process that does not hold the token joined the group's "
                "rendezvous, or the learners were started with different tokens (system_config.auth_token / "
                "DING_AUTH_TOKEN). Nothing was sent to the group; the run ends")

    def _tensor(self, data: bytes) -> torch.Tensor:
        return torch.frombuffer(bytearray(data), dtype=torch.uint8).to(self._device)

    def _zeros(self, n: int, dtype: torch.dtype = torch.uint8) -> list[torch.Tensor]:
        """One zero tensor of ``n`` elements per rank (a gather's receive buffers)."""
        return [torch.zeros(n, dtype=dtype, device=self._device) for _ in range(self.size)]

    def send(self, kind: int, payload: bytes = b"") -> None:
        """Rank 0: send a message of ``kind`` (KIND_*) to every other rank."""
        self._broadcast_header(kind, len(payload))
        if payload:
            self._collective(dist.broadcast, self._tensor(payload), src=0)
        self.sent_at = time.monotonic()

    def receive(self) -> tuple[int, bytes]:
        """Rank > 0: the next message from rank 0, as (kind, payload)."""
        kind, n = self._broadcast_header(0, 0)
        if n == 0:
            return kind, b""
        buf = torch.empty(n, dtype=torch.uint8, device=self._device)
        self._collective(dist.broadcast, buf, src=0)
        return kind, _bytes(buf)

    def _broadcast_header(self, kind: int, n: int) -> tuple[int, int]:
        header = torch.tensor([kind, n], dtype=torch.int64, device=self._device)
        self._collective(dist.broadcast, header, src=0)
        return int(header[0]), int(header[1])

    def gather(self, payload: bytes) -> list[bytes] | None:
        """Every rank's ``payload``, in rank order, at rank 0 (None at the other ranks)."""
        sizes = self._zeros(1, torch.int64)
        self._collective(dist.all_gather, sizes, torch.tensor([len(payload)], device=self._device))
        n = max(int(s.item()) for s in sizes)
        mine = torch.zeros(n, dtype=torch.uint8, device=self._device)
        if payload:
            mine[:len(payload)] = self._tensor(payload)
        out = self._zeros(n) if self.rank == 0 else None
        self._collective(dist.gather, mine, out, dst=0)
        if out is None:
            return None
        return [_bytes(t[:int(s.item())]) for t, s in zip(out, sizes)]

    def broadcast_tensors(self, tensors: list[torch.Tensor]) -> None:
        """Overwrite ``tensors`` (in place) with rank 0's."""
        for t in tensors:
            buf = t.data if t.device == self._device else t.data.to(self._device)
            self._collective(dist.broadcast, buf, src=0)
            if buf is not t.data:
                t.data.copy_(buf)

    def average_gradients(self, params: list[torch.Tensor]) -> None:
        """Replace each parameter's gradient by the mean over the group (one allreduce of all of them)."""
        self._average([p.grad for p in params if p.grad is not None])

    def average_buffers(self, buffers: list[torch.Tensor]) -> None:
        """Floating buffers (BatchNorm's running statistics) become the group's mean, the others
        (``num_batches_tracked``) rank 0's."""
        self._average([b for b in buffers if b.is_floating_point()])
        self.broadcast_tensors([b for b in buffers if not b.is_floating_point()])

    def _average(self, tensors: list[torch.Tensor]) -> None:
        """Each tensor (in place) replaced by its mean over the group, in one allreduce."""
        if not tensors:
            return
        flat = torch.cat([t.detach().reshape(-1).to(self._device) for t in tensors])
        self._collective(dist.all_reduce, flat)
        flat /= self.size
        offset = 0
        for t in tensors:
            t.data.copy_(flat[offset:offset + t.numel()].view_as(t))
            offset += t.numel()

    def all_reduce_mean(self, values: dict[str, float], world_size: int | None = None) -> dict[str, float]:
        """Each value's mean over the group (a :class:`LogReduceHook`'s reducer: the learners' logged scalars)."""
        return self._collective(allreduce_mean, values, world_size or self.size, self._device)

    def _collective(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 -- gloo/nccl errors: a member left (killed, lost host) or timed out
            raise LearnerGroupError(f"{self.name} (rank {self.rank} of {self.size}): the learner group broke "
                                    f"({_short_cause(e)}): a learner was lost; the group is not rebuilt (see "
                                    "docs/distributed.md, Several learners): the run ends, resume it from its last "
                                    "checkpoint") from e


def _listen(host: str) -> socket.socket:
    """A listening TCP socket on a free port of ``host`` only (IPv4 or IPv6, as ``host`` resolves)."""
    family, kind, proto, _, address = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    return sock


def _address_of(host: str) -> str:
    """``host``'s IPv4 address; '' for every interface (0.0.0.0) or a name that does not resolve to IPv4."""
    try:
        address = socket.gethostbyname(host)
    except OSError:
        return ""
    return "" if address == "0.0.0.0" else address


def _route_to(host: str, port: int) -> str:
    """The local address this host reaches ``host:port`` from ('' if unknown); no packet is sent."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((host, port))
            return str(probe.getsockname()[0])
    except OSError:
        return ""


def _interface_of(address: str) -> str | None:
    """The name of the network interface holding IPv4 ``address`` (Linux); None if none or unknown."""
    try:
        import fcntl
        import struct
    except ImportError:
        return None
    for _, interface in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                packed = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, struct.pack("256s", interface.encode()[:15]))
            except OSError:  # no IPv4 address
                continue
        if socket.inet_ntoa(packed[20:24]) == address:
            return interface
    return None


def _short_cause(e: BaseException) -> str:
    """gloo's message without its source location and advice ('Read error [127.0.0.1]:45977: Connection reset')."""
    text = (str(e).splitlines() or [""])[0]
    text = re.sub(r"^\[[^\]]*\.(cc|cpp|h):\d+\]\s*", "", text)
    return text.split(" This is typically")[0].rstrip(". ") or type(e).__name__


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
