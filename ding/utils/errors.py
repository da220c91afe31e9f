"""Exceptions that users see. Each message names the thing, where it came from and what to do."""
from __future__ import annotations


class DingError(Exception):
    """Base class of every error ding raises on purpose."""


class ConfigError(DingError, ValueError):
    """A config value or key is wrong. The message lists every problem found, one per line."""


class RegistryError(DingError, KeyError):
    """A registry lookup or registration failed."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class RegistryNameTaken(RegistryError, AssertionError):
    """A name registered twice without ``force_overwrite``: a :class:`RegistryError`, and DI-engine's
    ``AssertionError`` for code catching that."""


class EnvError(DingError, RuntimeError):
    """An environment or env-manager worker failed; the message names the env id."""


class CheckpointError(DingError, RuntimeError):
    """A checkpoint is missing, corrupt or does not fit the model."""


class ReplayBufferError(DingError, RuntimeError):
    """A replay buffer was used in a way it cannot serve."""


class DataFileError(DingError, ValueError):
    """A data or policy file exchanged between parallel-mode processes is missing, corrupt or of an unknown format."""


class TrainingError(DingError, RuntimeError):
    """Training cannot go on (e.g. a NaN/Inf loss); the message names the iteration and what went wrong."""


class RunDataError(DingError, FileNotFoundError):
    """A run directory given to a command (e.g. ``ding -m plot``), or the log it reads there, is missing or empty."""


class LockError(DingError, RuntimeError):
    """A directory is in use by another ding process (its lock is held); the message names it and the holder."""


class ResumeError(DingError, RuntimeError):
    """A run cannot be continued as asked (e.g. it is finished); the message says how to continue it on purpose."""


class CallbackError(DingError, RuntimeError):
    """User callback code raised; the message names the callback class and method (the original is the cause)."""


class LeagueError(DingError, ValueError):
    """A league was asked about a player it does not have, or given a game result it cannot read."""


class ExportError(DingError, ValueError):
    """A policy cannot be exported as asked (``ding -m export``): an unsupported policy, format or output path."""


class ProtocolError(DingError, ValueError):
    """A message between processes does not match its record (see :mod:`ding.utils.json_record`): ``record``,
    ``field`` and ``peer`` say which, ``problem`` what is wrong."""

    def __init__(self, record: str, field_name: str, problem: str, peer: str) -> None:
        super().__init__(f"malformed {record} from {peer}: field '{field_name}' {problem}")
        self.record, self.field, self.problem, self.peer = record, field_name, problem, peer

    def __reduce__(self) -> tuple:
        return type(self), (self.record, self.field, self.problem, self.peer)


class DatasetError(DingError, ValueError):
    """An offline-RL data set is missing, malformed or does not fit the policy; the message names the file and field."""
