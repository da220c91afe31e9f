"""Multi-agent pieces: QMIX/VDN mixing (hand-computed, monotonic), masking of padded steps and unavailable actions,
MAPPO's per-agent advantages, MASAC's update (discrete, and ``sac`` + ``multi_agent`` on Box actions), and QMIX on
the QMIX paper's cooperative matrix game."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from ding.envs import BaseEnvTimestep
from ding.model.template.mavac import MASKED_LOGIT, MAVAC, mask_logit
from ding.model.template.qmix import Mixer, QMix, VDNMixer
from ding.policy import MAPPOPolicy, MASACPolicy, PPOPolicy, QMIXPolicy, SACPolicy, create_policy
from ding.policy.masac_continuous import ContinuousMASACPolicy
from ding.policy.multi_agent_data import masked_epsilon_greedy
from ding.rl_utils import gae, gae_data

A, OBS, STATE, N_ACT = 3, 6, 10, 5


def _obs(rng, mask=None, agent_specific=False):
    state = rng.standard_normal((A, STATE) if agent_specific else STATE).astype(np.float32)
    return {"agent_state": rng.standard_normal((A, OBS)).astype(np.float32), "global_state": state,
            "action_mask": np.ones((A, N_ACT), np.float32) if mask is None else mask}


def _ts(obs, reward, done, truncated=False):
    return BaseEnvTimestep(obs, np.array([reward], np.float32), done, {"truncated": truncated})


# ---------------------------------------------------------------------------------------------------- mixers
def test_vdn_mixes_by_summing_the_agents_q_values():
    q = torch.tensor([[1.0, 2.0, 3.0], [-1.5, 0.5, 4.0]])
    assert torch.equal(VDNMixer()(q), torch.tensor([6.0, 3.0]))


def test_qmix_mixer_matches_a_hand_computed_value():
    """2 agents, embedding 2: hypernetwork outputs set through the last layers' biases (weights zero)."""
    mixer = Mixer(agent_num=2, state_dim=3, embed_dim=2, hypernet_embed=4)
    with torch.no_grad():
        for p in mixer.parameters():
            p.zero_()
        mixer.hyper_w1[2].bias.copy_(torch.tensor([1.0, 2.0, -3.0, 0.5]))  # W1 = |[[1, 2], [-3, 0.5]]|
        mixer.hyper_b1.bias.copy_(torch.tensor([0.5, -1.0]))
        mixer.hyper_w2[2].bias.copy_(torch.tensor([2.0, -1.0]))  # w2 = |[2, -1]|
        mixer.hyper_v[0].bias.copy_(torch.tensor([1.0, 0.0]))  # V = [3, 5] . relu([1, 0]) + 0.25
        mixer.hyper_v[2].weight.copy_(torch.tensor([[3.0, 5.0]]))
        mixer.hyper_v[2].bias.fill_(0.25)
    q = torch.tensor([[1.0, -2.0]])
    # hidden = elu([1*1 + -2*3 + 0.5, 1*2 + -2*0.5 - 1]) = [e^-4.5 - 1, 0]; Q_tot = 2 * hidden_0 + 1 * 0 + 3.25
    expected = 2 * (math.exp(-4.5) - 1) + 3.25
    assert mixer(q, torch.zeros(1, 3)).item() == pytest.approx(expected, abs=1e-6)


def test_qmix_mixer_is_monotonic_in_every_agent_q():
    torch.manual_seed(0)
    mixer = Mixer(agent_num=4, state_dim=7, embed_dim=16)
    q = torch.randn(256, 4, requires_grad=True)
    total = mixer(q, torch.randn(256, 7))
    (grad,) = torch.autograd.grad(total.sum(), q)
    assert (grad >= 0).all() and (grad > 0).any()


def test_qmix_model_shapes_and_total_q():
    model = QMix(agent_num=A, obs_shape=OBS, global_obs_shape=STATE, action_shape=N_ACT, hidden_size_list=[16, 8])
    obs = {"agent_state": torch.randn(2, 4, A, OBS), "global_state": torch.randn(2, 4, STATE)}
    out = model({"obs": obs, "action": torch.zeros(2, 4, A, dtype=torch.long)})
    assert out["logit"].shape == (2, 4, A, N_ACT) and out["next_state"].shape == (2, A, 8)
    assert out["total_q"].shape == (2, 4)


# ---------------------------------------------------------------------------------------------------- masks
def test_masked_epsilon_greedy_never_picks_an_unavailable_action():
    np.random.seed(0)
    q = np.random.standard_normal((64, A, N_ACT))
    avail = (np.random.random_sample((64, A, N_ACT)) < 0.5).astype(np.float32)
    avail[..., 2] = 1.0  # at least one available action each
    for eps in (0.0, 1.0):
        action = masked_epsilon_greedy(q, avail, eps)
        assert action.shape == (64, A) and action.dtype == np.int64
        assert avail[np.arange(64)[:, None], np.arange(A)[None], action].all()
    greedy = masked_epsilon_greedy(q, avail, 0.0)
    assert np.array_equal(greedy, np.where(avail > 0, q, -np.inf).argmax(-1))
    explored = masked_epsilon_greedy(q, avail, 1.0)
    assert len(np.unique(explored)) > 1


def test_mavac_masks_unavailable_actions_and_has_per_agent_values():
    model = MAVAC(agent_obs_shape=OBS, global_obs_shape=STATE, action_shape=N_ACT, agent_num=A,
                  actor_head_hidden_size=16, critic_head_hidden_size=16)
    mask = torch.ones(4, A, N_ACT)
    mask[:, 0, 1:] = 0  # agent 0 may only take action 0
    out = model({"agent_state": torch.randn(4, A, OBS), "global_state": torch.randn(4, STATE), "action_mask": mask},
                mode="compute_actor_critic")
    assert out["logit"].shape == (4, A, N_ACT) and out["value"].shape == (4, A)
    assert (out["logit"][:, 0, 1:] == MASKED_LOGIT).all()
    assert torch.softmax(out["logit"], -1)[:, 0, 0].allclose(torch.ones(4))
    assert torch.equal(mask_logit(out["logit"], None), out["logit"])


# ---------------------------------------------------------------------------------------------------- QMIX
def qmix_policy(mixer=True, unroll_len=4, **learn):
    torch.manual_seed(0)
    return create_policy(dict(
        type="qmix", model=dict(agent_num=A, obs_shape=OBS, global_obs_shape=STATE, action_shape=N_ACT,
                                hidden_size_list=[16, 16], mixer=mixer),
        learn=dict(batch_size=4, **learn), collect=dict(n_sample=4, unroll_len=unroll_len),
        other=dict(eps=dict(type="exp", start=1.0, end=0.05, decay=1000))))


def _qmix_chunk(policy, n, truncated_end, seed=0):
    rng = np.random.default_rng(seed)
    obs = [_obs(rng) for _ in range(n + 1)]
    chunk = []
    for t in range(n):
        out = policy.collect_mode.forward({0: obs[t]}, eps=0.5)[0]
        last = t == n - 1
        chunk.append(policy.collect_mode.process_transition(obs[t], out, _ts(obs[t + 1], -1.0, last,
                                                                            truncated_end and last)))
    return chunk


def test_qmix_sequences_are_padded_with_a_mask_and_a_truncated_end_bootstraps():
    policy = qmix_policy(unroll_len=4)
    chunk = _qmix_chunk(policy, 6, truncated_end=True)
    seqs = policy.collect_mode.get_train_sample(chunk)
    assert len(seqs) == 2
    assert seqs[0]["obs"]["agent_state"].shape == (5, A, OBS) and seqs[0]["action"].shape == (4, A)
    assert seqs[0]["prev_state"].shape == (A, 16)
    assert seqs[1]["mask"].tolist() == [True, True, False, False]
    assert not seqs[1]["done"].any()  # cut by max_cycles: not terminal, the final obs is kept for the bootstrap
    assert np.array_equal(seqs[1]["obs"]["agent_state"][2], chunk[-1]["next_obs"]["agent_state"])
    terminal = policy.collect_mode.get_train_sample(_qmix_chunk(policy, 2, truncated_end=False))
    assert terminal[0]["done"].tolist() == [False, True, False, False]


def test_qmix_loss_ignores_padded_steps():
    base = qmix_policy(unroll_len=4)
    seqs = base.collect_mode.get_train_sample(_qmix_chunk(base, 6, truncated_end=False))
    changed = copy.deepcopy(seqs)
    changed[1]["reward"][2:] = 1000.0  # padding (mask 0): must not matter
    changed[1]["action"][2:] = 4
    losses = [qmix_policy(unroll_len=4).learn_mode.forward(s)["total_loss"] for s in (seqs, changed)]
    assert losses[0] == pytest.approx(losses[1], rel=1e-6)
    changed[1]["reward"][0] = 1000.0  # a real step: it does
    assert qmix_policy(unroll_len=4).learn_mode.forward(changed)["total_loss"] > 10 * losses[0]


def test_qmix_collect_respects_the_action_mask_and_keeps_a_gru_state_per_env():
    policy = qmix_policy()
    rng = np.random.default_rng(1)
    mask = np.zeros((A, N_ACT), np.float32)
    mask[:, 3] = 1.0
    out = policy.collect_mode.forward({0: _obs(rng, mask), 5: _obs(rng, mask)}, eps=1.0)
    assert all((o["action"] == 3).all() for o in out.values())
    assert out[0]["prev_state"].shape == (A, 16) and not out[0]["prev_state"].any()  # a new episode starts at zero
    again = policy.collect_mode.forward({0: _obs(rng, mask)}, eps=0.0)
    assert again[0]["prev_state"].any()
    policy.collect_mode.reset([0])
    assert not policy.collect_mode.forward({0: _obs(rng, mask)}, eps=0.0)[0]["prev_state"].any()


GAME_2B = np.array([[0, 1], [1, 8]], np.float32)


def _two_step_obs(state):
    one_hot = np.eye(3, dtype=np.float32)[state]
    return {"agent_state": np.stack([one_hot, one_hot]), "global_state": one_hot}


def _two_step_sequence(first, second):
    """One episode of the two-step game: agent 0's first action picks state 2A (1) or 2B (2)."""
    state = 1 if first[0] == 0 else 2
    reward = 7.0 if state == 1 else float(GAME_2B[second[0], second[1]])
    obs = [_two_step_obs(0), _two_step_obs(state), _two_step_obs(state)]
    return {"obs": {k: np.stack([o[k] for o in obs]) for k in obs[0]}, "action": np.array([first, second]),
            "reward": np.array([0.0, reward], np.float32), "done": np.array([False, True]),
            "mask": np.array([True, True]), "prev_state": np.zeros((2, 16), np.float32)}


@pytest.mark.parametrize("mixer, best_return", [(True, 8.0), (False, 7.0)])
def test_qmix_finds_the_optimal_joint_actions_of_the_qmix_papers_two_step_game(mixer, best_return):
    """The two-step cooperative game of the QMIX paper's appendix (Rashid et al. 2018): in state 1 agent 0 chooses
    between 2A (every joint action pays 7) and 2B (pays [[0, 1], [1, 8]]). Trained on every joint action (the paper's
    full exploration), QMIX's greedy agents go to 2B and both take action 1 (return 8); VDN's additive Q-values
    undervalue 2B and settle for 7, as in the paper."""
    batch = [_two_step_sequence((a0, a1), (b0, b1)) for a0 in range(2) for a1 in range(2) for b0 in range(2)
             for b1 in range(2)]
    torch.manual_seed(0)
    policy = create_policy(dict(
        type="qmix", model=dict(agent_num=2, obs_shape=3, global_obs_shape=3, action_shape=2, hidden_size_list=[16, 16],
                                mixer=mixer),
        learn=dict(batch_size=16, learning_rate=5e-3, target_update_theta=0.05), collect=dict(unroll_len=2),
        other=dict(eps=dict(type="exp", start=1.0, end=1.0, decay=1))), enable_field=["learn", "eval"])
    for _ in range(300):
        policy.learn_mode.forward(batch)
    first = policy.eval_mode.forward({0: _two_step_obs(0)})[0]["action"]
    state = 1 if first[0] == 0 else 2
    second = policy.eval_mode.forward({0: _two_step_obs(state)})[0]["action"]
    got = 7.0 if state == 1 else float(GAME_2B[second[0], second[1]])
    assert got == best_return


def test_qmix_trains_on_sequences_of_one_step():
    """unroll_len=1: the collated fields keep their time axis (default_collate would drop a length-1 axis)."""
    payoff = GAME_2B  # monotonic: QMIX fits it exactly
    obs = {"agent_state": np.ones((2, 2, 2), np.float32), "global_state": np.ones((2, 2), np.float32)}
    batch = [{"obs": obs, "action": np.array([[a0, a1]]), "reward": np.array([payoff[a0, a1]]),
              "done": np.array([True]), "mask": np.array([True]), "prev_state": np.zeros((2, 8), np.float32)}
             for a0 in range(2) for a1 in range(2)]
    torch.manual_seed(0)
    policy = create_policy(dict(
        type="qmix", model=dict(agent_num=2, obs_shape=2, global_obs_shape=2, action_shape=2, hidden_size_list=[8, 8]),
        learn=dict(batch_size=4, learning_rate=1e-2), collect=dict(unroll_len=1)), enable_field=["learn"])
    losses = [policy.learn_mode.forward(batch)["total_loss"] for _ in range(200)]
    assert losses[-1] < 0.01 * losses[0]


def test_vdn_is_qmix_with_mixer_false():
    policy = qmix_policy(mixer=False)
    assert isinstance(policy._model.mixer, VDNMixer) and isinstance(policy, QMIXPolicy)
    seqs = policy.collect_mode.get_train_sample(_qmix_chunk(policy, 4, truncated_end=False))
    assert np.isfinite(policy.learn_mode.forward(seqs)["total_loss"])


# ---------------------------------------------------------------------------------------------------- MAPPO
def mappo_policy(**learn):
    torch.manual_seed(0)
    return create_policy(dict(
        type="ppo", multi_agent=True,
        model=dict(agent_obs_shape=OBS, global_obs_shape=OBS + STATE, action_shape=N_ACT, agent_num=A,
                   actor_head_hidden_size=16, critic_head_hidden_size=16),
        learn=dict(epoch_per_collect=1, batch_size=64, **learn), collect=dict(n_sample=16, discount_factor=0.9)))


def test_ppo_with_multi_agent_builds_mappo_on_a_mavac_model():
    policy = mappo_policy()
    assert type(policy) is MAPPOPolicy and isinstance(policy, PPOPolicy)
    assert isinstance(policy._model, MAVAC)
    single = create_policy(dict(type="ppo", model=dict(obs_shape=4, action_shape=2), collect=dict(n_sample=8)))
    assert type(single) is PPOPolicy  # the single-agent path is untouched


def test_mappo_advantages_are_per_agent_gae_with_the_team_reward():
    policy = mappo_policy()
    rng = np.random.default_rng(0)
    obs = [_obs(rng, agent_specific=True) for _ in range(9)]
    obs = [dict(o, global_state=np.concatenate([o["agent_state"], o["global_state"]], 1)) for o in obs]
    chunk = []
    for t in range(8):
        out = policy.collect_mode.forward({0: obs[t]})[0]
        assert out["action"].shape == (A,) and out["logit"].shape == (A, N_ACT) and out["value"].shape == (A,)
        chunk.append(policy.collect_mode.process_transition(obs[t], out, _ts(obs[t + 1], float(t), t == 7, True)))
    samples = policy.collect_mode.get_train_sample(chunk)
    batch = policy._collate(samples, "test")
    policy._set_targets(batch)
    assert batch["adv"].shape == (8, A) and batch["return"].shape == (8, A) and batch["reward"].shape == (8, A)
    assert not batch["done"].any() and batch["traj_flag"][-1].all()  # truncated: bootstrapped, segment ends
    with torch.no_grad():  # each agent's column is the single-agent GAE of that agent's values
        v = policy._model(batch["obs"], mode="compute_critic")["value"]
        nv = policy._model(batch["next_obs"], mode="compute_critic")["value"]
    scale = 1.0  # value_norm's std before its first update
    for agent in range(A):
        want = gae(gae_data(v[:, agent] * scale, nv[:, agent] * scale, batch["reward"][:, agent],
                            batch["done"][:, agent], batch["traj_flag"][:, agent]), 0.9, 0.95)
        assert torch.allclose(batch["adv"][:, agent], want, atol=1e-5)
    logs = policy.learn_mode.forward(samples)
    assert all(np.isfinite(log["total_loss"]) for log in logs)


# ---------------------------------------------------------------------------------------------------- MASAC
def test_masac_update_and_actions():
    torch.manual_seed(0)
    policy = create_policy(dict(
        type="discrete_sac", multi_agent=True,
        model=dict(agent_obs_shape=OBS, global_obs_shape=STATE, action_shape=N_ACT, twin_critic=True,
                   actor_head_hidden_size=16, critic_head_hidden_size=16),
        learn=dict(batch_size=8, target_entropy=-2)))
    assert isinstance(policy, MASACPolicy)
    rng = np.random.default_rng(0)
    mask = np.ones((A, N_ACT), np.float32)
    mask[1, :4] = 0
    obs = [_obs(rng, mask) for _ in range(9)]
    samples = []
    for t in range(8):
        out = policy.collect_mode.forward({0: obs[t]})[0]
        assert out["action"].shape == (A,) and out["action"][1] == 4
        samples.append(policy.collect_mode.process_transition(obs[t], out, _ts(obs[t + 1], -1.0, t == 7, True)))
    before = policy._log_alpha.item()
    log = policy.learn_mode.forward(samples)
    assert np.isfinite(log["critic_loss"]) and np.isfinite(log["policy_loss"])
    assert policy._log_alpha.item() < before  # the entropy is above the target -2: alpha falls
    assert policy.eval_mode.forward({0: obs[0]})[0]["action"][1] == 4


def _continuous_masac(**learn):
    return create_policy(dict(
        type="sac", multi_agent=True, random_collect_size=0,
        model=dict(agent_obs_shape=OBS, global_obs_shape=STATE, action_shape=2, twin_critic=True,
                   actor_head_hidden_size=16, critic_head_hidden_size=16),
        learn=dict(batch_size=8, **learn)))


def test_sac_with_multi_agent_is_masac_on_box_actions():
    """DI-engine's naming: ``sac`` + ``multi_agent=True`` is MASAC for Box actions (model ``continuous_maqac``);
    ``discrete_sac`` + ``multi_agent=True`` the discrete one; plain ``sac`` stays single-agent."""
    from ding.model.template.maqac import MAQAC, ContinuousMAQAC
    from ding.utils import MODEL_REGISTRY

    policy = _continuous_masac()
    assert type(policy) is ContinuousMASACPolicy and isinstance(policy._model, ContinuousMAQAC)
    assert type(create_policy(dict(type="sac", model=dict(obs_shape=3, action_shape=1)))) is SACPolicy
    assert type(create_policy(dict(type="discrete_sac", multi_agent=True, model=dict(
        agent_obs_shape=OBS, global_obs_shape=STATE, action_shape=N_ACT)))._model) is MAQAC
    assert MODEL_REGISTRY.get("discrete_maqac") is MAQAC and MODEL_REGISTRY.get("continuous_maqac") is ContinuousMAQAC


def test_continuous_masac_update_targets_and_actions():
    torch.manual_seed(0)
    policy = _continuous_masac(target_entropy=-1.0, discount_factor=0.5)
    rng = np.random.default_rng(0)
    obs = [_obs(rng, agent_specific=True) for _ in range(9)]
    samples = []
    for t in range(8):
        out = policy.collect_mode.forward({0: obs[t]})[0]
        assert out["action"].shape == (A, 2) and np.all(np.abs(out["action"]) < 1)
        samples.append(policy.collect_mode.process_transition(obs[t], out, _ts(obs[t + 1], -1.0, t == 7, t == 7)))
    # the critics' target by hand, for the first sample (truncated: bootstraps; reward -1, gamma 0.5)
    model, target_model = copy.deepcopy(policy._model), copy.deepcopy(policy._target_model)
    torch.manual_seed(1)
    log = policy.learn_mode.forward(samples)
    torch.manual_seed(1)
    nxt = {k: torch.from_numpy(np.stack([s["next_obs"][k] for s in samples])) for k in ("agent_state", "global_state")}
    mu, sigma = model.compute_actor(nxt)["logit"]
    from ding.rl_utils import min_q, squashed_gaussian_sample
    a2, logp2 = squashed_gaussian_sample(mu, sigma)
    q2 = min_q(target_model.compute_critic({"obs": nxt, "action": a2})["q_value"])
    target = -1.0 + 0.5 * (q2 - 0.2 * logp2)
    act = torch.from_numpy(np.stack([s["action"] for s in samples]))
    cur = {k: torch.from_numpy(np.stack([s["obs"][k] for s in samples])) for k in ("agent_state", "global_state")}
    q = model.compute_critic({"obs": cur, "action": act})["q_value"]
    expected = sum(float(((qi - target) ** 2).mean()) for qi in q)
    assert log["critic_loss"] == pytest.approx(expected, rel=1e-5)
    assert target.shape == (8, A)
    assert np.isfinite(log["policy_loss"]) and log["alpha"] == pytest.approx(0.2)
    evaluated = policy.eval_mode.forward({0: obs[0]})[0]["action"]
    mu0 = policy._model.compute_actor({"agent_state": torch.from_numpy(obs[0]["agent_state"][None])})["logit"][0]
    assert np.allclose(evaluated, torch.tanh(mu0)[0].detach().numpy(), atol=1e-6)


def test_continuous_masac_fit_check_names_act_scale():
    import gymnasium as gym

    from ding.policy.multi_agent_data import check_multi_agent_fit

    policy = _continuous_masac()
    obs_space = gym.spaces.Dict({"agent_state": gym.spaces.Box(-1, 1, (A, OBS)),
                                 "global_state": gym.spaces.Box(-1, 1, (A, STATE))})
    box01 = gym.spaces.Dict({str(i): gym.spaces.Box(0.0, 1.0, (2,), np.float32) for i in range(A)})
    problems = check_multi_agent_fit(policy, obs_space, box01, "env 'x'")
    assert len(problems) == 1 and "env.act_scale" in problems[0] and "set env.act_scale=True" in problems[0]
    box3 = gym.spaces.Dict({str(i): gym.spaces.Box(-1.0, 1.0, (3,), np.float32) for i in range(A)})
    assert "policy.model.action_shape=3" in check_multi_agent_fit(policy, obs_space, box3, "env 'x'")[0]
    discrete = gym.spaces.Dict({str(i): gym.spaces.Discrete(5) for i in range(A)})
    assert "env.continuous_actions=True" in check_multi_agent_fit(policy, obs_space, discrete, "env 'x'")[0]
    fits = gym.spaces.Dict({str(i): gym.spaces.Box(-1.0, 1.0, (2,), np.float32) for i in range(A)})
    assert check_multi_agent_fit(policy, obs_space, fits, "env 'x'") == []


def test_independent_ppo_baseline_critic_reads_only_each_agents_observation():
    """IPPO, the independent-learner baseline: MAVAC with critic_input='agent_state' (no global state at all)."""
    model = MAVAC(agent_obs_shape=OBS, global_obs_shape=OBS, action_shape=N_ACT, agent_num=A,
                  actor_head_hidden_size=16, critic_head_hidden_size=16, critic_input="agent_state")
    obs = {"agent_state": torch.randn(4, A, OBS)}
    value = model(obs, mode="compute_critic")["value"]
    assert value.shape == (4, A)
    swapped = {"agent_state": obs["agent_state"][:, [1, 0, 2]]}  # each agent's value follows its own observation
    assert torch.allclose(model(swapped, mode="compute_critic")["value"], value[:, [1, 0, 2]])
