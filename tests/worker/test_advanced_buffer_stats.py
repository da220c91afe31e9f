"""Statistics of prioritized sampling: frequencies, importance weights and beta annealing match the formulas."""
from __future__ import annotations

import numpy as np
import pytest

from ding.worker.replay_buffer import AdvancedReplayBuffer

PRIORITIES = np.array([0.1, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 0.05, 21.0])
CHI2_CRITICAL_DF9_P001 = 27.877  # chi-square quantile 0.999 with 9 degrees of freedom


def _buffer_with_known_priorities(alpha: float, **cfg) -> AdvancedReplayBuffer:
    # 10 items serve batches of 64 (with replacement) thanks to sample_min_limit_ratio below 1
    buffer = AdvancedReplayBuffer(dict(replay_buffer_size=16, alpha=alpha, seed=2024,
                                       thruput_controller=dict(sample_min_limit_ratio=0.1), **cfg))
    buffer.push([{"i": i, "priority": float(p)} for i, p in enumerate(PRIORITIES)], cur_collector_envstep=0)
    return buffer


def _frequencies(buffer: AdvancedReplayBuffer, batches: int, batch_size: int = 64) -> np.ndarray:
    drawn = [d["i"] for _ in range(batches) for d in buffer.sample(batch_size, 0)]
    return np.bincount(drawn, minlength=len(PRIORITIES))


@pytest.mark.parametrize("alpha", [0.6, 1.0, 0.0])
def test_sampling_frequency_matches_p_alpha_over_sum(alpha):
    buffer = _buffer_with_known_priorities(alpha)
    counts = _frequencies(buffer, batches=2000)
    expected = PRIORITIES ** alpha / (PRIORITIES ** alpha).sum()
    observed = counts / counts.sum()
    np.testing.assert_allclose(observed, expected, rtol=0.05, atol=0.002)
    # Stratified draws vary less than independent ones, so a multinomial chi-square test is conservative here.
    chi2 = ((counts - expected * counts.sum()) ** 2 / (expected * counts.sum())).sum()
    assert chi2 < CHI2_CRITICAL_DF9_P001


def test_frequency_follows_priority_updates():
    buffer = _buffer_with_known_priorities(alpha=0.6)
    new = PRIORITIES[::-1].copy()
    ids: dict[int, tuple[int, int]] = {}
    for _ in range(100):  # collect every item's ids from samples
        ids.update({d["i"]: (d["replay_unique_id"], d["replay_buffer_idx"]) for d in buffer.sample(64, 0)})
        if len(ids) == len(PRIORITIES):
            break
    assert len(ids) == len(PRIORITIES)
    order = sorted(ids)
    buffer.update({"priority": new[order], "replay_unique_id": [ids[i][0] for i in order],
                   "replay_buffer_idx": [ids[i][1] for i in order]})
    counts = _frequencies(buffer, batches=1500)
    expected = new ** 0.6 / (new ** 0.6).sum()
    np.testing.assert_allclose(counts / counts.sum(), expected, rtol=0.05, atol=0.002)


def test_frequency_inside_a_sample_range_is_renormalised():
    buffer = _buffer_with_known_priorities(alpha=1.0)
    drawn = [d["i"] for _ in range(1500) for d in buffer.sample(32, 0, sample_range=slice(-4, None))]
    counts = np.bincount(drawn, minlength=len(PRIORITIES))
    window = PRIORITIES[-4:]
    np.testing.assert_allclose(counts[-4:] / counts.sum(), window / window.sum(), rtol=0.05, atol=0.002)
    assert counts[:-4].sum() == 0


@pytest.mark.parametrize("beta", [0.4, 0.7, 1.0])
def test_importance_weights_match_the_formula(beta):
    alpha = 0.6
    buffer = _buffer_with_known_priorities(alpha, beta=beta, anneal_step=0)
    n = len(PRIORITIES)
    probability = PRIORITIES ** alpha / (PRIORITIES ** alpha).sum()
    max_weight = ((n * probability) ** -beta).max()
    for _ in range(20):
        current_beta = buffer.beta
        for item in buffer.sample(64, 0):
            expected = (n * probability[item["i"]]) ** -current_beta / max_weight
            assert item["IS"] == pytest.approx(expected, rel=1e-9)
    # the weight of the least likely item is exactly 1, every other is smaller
    assert max(d["IS"] for _ in range(20) for d in buffer.sample(64, 0)) == pytest.approx(1.0)


def test_importance_weights_use_the_annealed_beta_of_each_call():
    alpha, n = 0.6, len(PRIORITIES)
    buffer = _buffer_with_known_priorities(alpha, beta=0.4, anneal_step=30)
    probability = PRIORITIES ** alpha / (PRIORITIES ** alpha).sum()
    for call in range(40):
        beta = buffer.beta
        assert beta == pytest.approx(min(1.0, 0.4 + 0.6 * call / 30))
        item = buffer.sample(1, 0)[0]
        expected = (n * probability[item["i"]]) ** -beta / ((n * probability) ** -beta).max()
        assert item["IS"] == pytest.approx(expected, rel=1e-9)


def test_beta_reaches_one_after_anneal_step_samples():
    buffer = _buffer_with_known_priorities(0.6, beta=0.4, anneal_step=100)
    for _ in range(99):
        buffer.sample(8, 0)
    assert buffer.beta < 1.0
    buffer.sample(8, 0)
    assert buffer.beta == 1.0
    buffer.sample(8, 0)
    assert buffer.beta == 1.0
    constant = _buffer_with_known_priorities(0.6, beta=0.4, anneal_step=0)
    for _ in range(10):
        constant.sample(8, 0)
    assert constant.beta == 0.4
