import gymnasium as gym
import numpy as np
import pytest

from ding.policy import DQNPolicy, PolicyFactory, get_random_policy
from ding.utils import set_pkg_seed


def make_collect_view():
    return DQNPolicy(dict(model=dict(obs_shape=4, action_shape=3, encoder_hidden_size_list=[8])),
                     enable_field=["collect"]).collect_mode


def obs(n):
    return {env_id: np.zeros(4, np.float32) for env_id in range(n)}


def test_discrete_random_policy_matches_dqn_output_format():
    real = make_collect_view()
    rand = get_random_policy(real, gym.spaces.Discrete(3))
    out = rand.forward(obs(64), eps=0.5)
    real_out = real.forward(obs(2), eps=0.5)
    assert list(out) == list(range(64))
    for value in out.values():
        assert set(value) == set(real_out[0])
        assert value["action"].shape == () and value["action"].dtype == np.int64
        assert value["logit"].shape == (3,) and value["logit"].dtype == np.float32
    actions = np.array([v["action"] for v in out.values()])
    assert set(actions.tolist()) == {0, 1, 2}
    # Everything but forward is the real policy's.
    assert rand.process_transition == real.process_transition and rand.get_train_sample == real.get_train_sample
    assert rand.get_attribute("nstep") == 1


def test_random_policy_is_reproducible_under_set_pkg_seed():
    rand = PolicyFactory.get_random_policy(make_collect_view(), gym.spaces.Discrete(3))
    set_pkg_seed(7)
    a = [v["action"].item() for v in rand.forward(obs(16)).values()]
    set_pkg_seed(7)
    b = [v["action"].item() for v in rand.forward(obs(16)).values()]
    assert a == b


def test_box_and_multidiscrete_spaces():
    space = gym.spaces.Box(low=-2.0, high=1.0, shape=(2,), dtype=np.float32)
    out = get_random_policy(make_collect_view(), space).forward(obs(50))
    actions = np.stack([v["action"] for v in out.values()])
    assert actions.shape == (50, 2) and actions.dtype == np.float32
    assert (actions >= -2.0).all() and (actions <= 1.0).all() and "logit" not in out[0]
    out = get_random_policy(make_collect_view(), gym.spaces.MultiDiscrete([2, 5])).forward(obs(40))
    actions = np.stack([v["action"] for v in out.values()])
    assert actions.shape == (40, 2) and (actions[:, 1] < 5).all() and actions[:, 1].max() > 1


def test_custom_forward_fn_and_errors():
    calls = []

    def forward_fn(data, **kwargs):
        calls.append(kwargs)
        return {k: {"action": np.array(0)} for k in data}

    rand = get_random_policy(make_collect_view(), forward_fn=forward_fn)
    assert rand.forward(obs(2), eps=0.3)[1]["action"] == 0 and calls == [{"eps": 0.3}]
    with pytest.raises(ValueError, match="pass the env's action_space"):
        get_random_policy(make_collect_view())
    with pytest.raises(TypeError, match="action_space must be a gymnasium space, got int"):
        get_random_policy(make_collect_view(), 3)
