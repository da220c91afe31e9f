"""``split_data_generator``: minibatches of a batched dict (DI-engine's name and behaviour)."""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

import numpy as np


def split_data_generator(data: Mapping[str, Any], split_size: int, shuffle: bool = True) -> Iterator[dict]:
    """Yield minibatches of ``split_size`` rows of ``data`` (a dict of tensors / arrays with the batch first, nested
    dicts and lists allowed; None values pass through). With ``shuffle`` the rows are permuted with numpy's global
    RNG; a short last minibatch is filled up with rows from the start of the order so every one has ``split_size``
    rows (the data must have at least that many)."""
    n = _batch_size(data)
    if n is None:
        raise ValueError("split_data_generator: data holds no tensor or array to take the batch size from")
    if split_size < 1:
        raise ValueError(f"split_data_generator: split_size must be >= 1, got {split_size}")
    if n < split_size:
        raise ValueError(f"split_data_generator: {n} rows cannot fill a minibatch of {split_size} "
                         f"(collect at least batch_size samples per train call)")
    import torch  # lazily: `import ding.utils` stays free of torch (fast CLI start)

    order = np.random.permutation(n) if shuffle else np.arange(n)
    for start in range(0, n, split_size):
        idx = order[start:start + split_size]
        if len(idx) < split_size:
            idx = np.concatenate([idx, order[:split_size - len(idx)]])
        yield _take(data, torch.from_numpy(idx))


def _batch_size(data: Any) -> int | None:
    import torch

    if isinstance(data, (torch.Tensor, np.ndarray)):
        return int(data.shape[0])
    if isinstance(data, Mapping):
        for v in data.values():
            n = _batch_size(v)
            if n is not None:
                return n
    if isinstance(data, (list, tuple)):
        for v in data:
            n = _batch_size(v)
            if n is not None:
                return n
    return None


def _take(data: Any, idx: torch.Tensor) -> Any:
    import torch

    if isinstance(data, torch.Tensor):
        return data[idx.to(data.device)]
    if isinstance(data, np.ndarray):
        return data[idx.numpy()]
    if isinstance(data, Mapping):
        return {k: _take(v, idx) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(_take(v, idx) for v in data)
    return data
