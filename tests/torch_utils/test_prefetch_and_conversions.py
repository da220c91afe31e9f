"""CudaFetcher (background prefetch onto a device), build_log_buffer, and the converters' DI-engine rules."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from ding.torch_utils import CudaFetcher, build_log_buffer, to_device, to_ndarray, to_tensor


def test_cuda_fetcher_keeps_order_ends_and_reraises():
    fetcher = CudaFetcher(iter([torch.tensor(i) for i in range(5)]), device="cpu", queue_size=2, sleep=0.01)
    fetcher.run()
    try:
        assert [int(x) for x in fetcher] == [0, 1, 2, 3, 4]
        with pytest.raises(StopIteration):
            next(fetcher)
    finally:
        fetcher.close()

    def broken():
        yield torch.zeros(1)
        raise ValueError("source broke")

    bad = CudaFetcher(broken(), device="cpu", sleep=0.01)
    with pytest.raises(RuntimeError, match="call run"):
        next(bad)
    bad.run()
    try:
        next(bad)
        with pytest.raises(ValueError, match="source broke"):
            next(bad)
    finally:
        bad.close()


def test_log_buffer_stores_tensors_as_lists():
    buf = build_log_buffer()
    buf["loss"] = torch.tensor([1.0, 2.0])
    buf.update({"x": torch.tensor(3.0), "y": 4})
    assert buf == {"loss": [1.0, 2.0], "x": 3.0, "y": 4}


def test_converter_rules():
    assert torch.equal(to_tensor([1.0, 2.0], torch.float32), torch.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="to_tensor: unsupported item type set"):
        to_tensor({1, 2})
    with pytest.raises(TypeError, match="to_ndarray: unsupported item type object"):
        to_ndarray(object())
    data = {"w": torch.zeros(2), "module": nn.Linear(2, 2), "name": "x"}
    moved = to_device(data, "cpu", ignore_keys=["module"])
    assert moved["module"] is data["module"] and moved["name"] == "x"
