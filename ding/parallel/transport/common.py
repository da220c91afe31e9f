"""DI-engine's small interaction helpers (``ding.interaction.base``'s ``common`` and ``threading`` parts)."""
from __future__ import annotations

import secrets
import string
import threading
from abc import ABCMeta, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any


def random_token(length: int | None = None) -> str:
    """A random string of ``length`` hex digits (either case; 64 when ``length`` is None)."""
    n = 64 if length is None else length
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"random_token: length must be a non-negative int, got {length!r}")
    return "".join(secrets.choice(string.hexdigits) for _ in range(n))


def translate_dict_func(d: Mapping[str, Callable[..., Any]]) -> Callable[..., dict[str, Any]]:
    """A function whose call gives ``{key: f(*args, **kwargs)}`` for each ``key: f`` of ``d``."""
    funcs = dict(d)

    def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return {key: f(*args, **kwargs) for key, f in funcs.items()}

    return call


def default_func(return_value: Any = None) -> Callable[[Callable[..., Any] | None], Callable[..., Any]]:
    """``default_func(v)(f)`` is ``f``, or, when ``f`` is None, a function of any arguments returning ``v``."""
    def fallback(*args: Any, **kwargs: Any) -> Any:
        return return_value

    def decorator(func: Callable[..., Any] | None) -> Callable[..., Any]:
        return fallback if func is None else func

    return decorator


class ControllableContext(metaclass=ABCMeta):
    """Something started and closed: ``with obj:`` calls ``start()`` on entry and ``close()`` on exit."""

    @abstractmethod
    def start(self) -> Any:
        raise NotImplementedError

    @abstractmethod
    def close(self) -> Any:
        raise NotImplementedError

    def __enter__(self) -> ControllableContext:
        self.start()
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> None:
        self.close()


class ControllableService(ControllableContext):
    """A service that shuts down asynchronously: ``close()`` is ``shutdown()`` then ``join()``."""

    @abstractmethod
    def shutdown(self) -> Any:
        raise NotImplementedError

    @abstractmethod
    def join(self) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        self.shutdown()
        self.join()


class DblEvent:
    """An event that is either open or closed, with a wait for each state."""

    def __init__(self, opened: bool = False) -> None:
        self._opened = threading.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        (self._opened if opened else self._closed).set()

    def wait_for_open(self, timeout: float | None = None) -> bool:
        return self._opened.wait(timeout=timeout)

    def wait_for_close(self, timeout: float | None = None) -> bool:
        return self._closed.wait(timeout=timeout)

    def open(self) -> None:
        with self._lock:
            self._opened.set()
            self._closed.clear()

    def close(self) -> None:
        with self._lock:
            self._closed.set()
            self._opened.clear()

    def is_open(self) -> bool:
        with self._lock:
            return self._opened.is_set()

    def is_close(self) -> bool:
        with self._lock:
            return self._closed.is_set()


__all__ = ["random_token", "translate_dict_func", "default_func", "ControllableContext", "ControllableService",
           "DblEvent"]
