"""``ding -m parallel`` on a league config: the one_vs_one commander and two marine collectors train Connect Four by
self-play, the win rate against the scripted player improves, and a collector killed mid-battle adds nothing to the
payoff table (its task's games never arrive) while the run goes on and ends cleanly."""
from __future__ import annotations

import json
import os
import signal

import pytest

from ._parallel import (
    CONNECT_FOUR_LEAGUE,
    FAST_FAULTS,
    ding_cmd,
    eval_rows,
    processes_mentioning,
    read_log,
    result,
    role_pid,
    start,
    wait_for,
    write_config,
)


@pytest.mark.timeout(180)
def test_league_run_improves_on_the_scripted_player_and_a_killed_collector_leaves_the_payoff_whole(workdir):
    exp = "league"
    # undecayed counts: the table's games are exactly the games of the finished tasks
    main = {"policy": {"other": {"league": {"payoff": {"decay": 1.0}}, "commander": {"eval_interval": 5}}}}
    cfg = write_config(workdir, exp, main=main, system=FAST_FAULTS, base=CONNECT_FOUR_LEAGUE)
    proc = start(ding_cmd("-m", "parallel", "-c", cfg, "-s", "0", "--env-step", "6000"), workdir)
    wait_for(lambda: eval_rows(workdir, exp) >= 1, 120, "the first evaluation", proc=proc)
    os.kill(wait_for(lambda: role_pid(workdir, "collector0"), 10, "collector0's pid"), signal.SIGKILL)
    code = proc.wait(timeout=150)
    log = read_log(workdir)
    assert code == 0, log
    r = result(workdir, exp)
    counters = r["counters"]
    assert counters.get("lost_collector", 0) >= 1 and counters.get("joins_collector0", 0) >= 2, counters
    assert counters.get("failed_collector_tasks", 0) >= 1, f"collector0 was not killed mid-battle: {counters}"
    with open(os.path.join(str(workdir), exp, "parallel_state.json")) as f:
        state = json.load(f)["commander"]
    league = state["league"]
    games = sum(rec[5] for rec in league["payoff"]["records"])
    assert games == state["league_games"] > 0, (games, state["league_games"])
    assert league["historical"], "no snapshot of the main player was taken"
    for hp in league["historical"]:  # snapshots are published side by side with the learner's policy file
        assert os.path.normpath(os.path.dirname(os.path.join(str(workdir), hp["checkpoint_path"]))) == os.path.join(
            str(workdir), exp, "policy")
        assert os.path.exists(os.path.join(str(workdir), hp["checkpoint_path"]))
    rates = [e["win_rate"] for e in state["eval_history"]]
    assert None not in rates and len(rates) >= 2, rates
    # the untrained greedy policy soon plays into a full column and loses every game; a later one wins at least 3 of
    # the 40 games (random legal play wins about 6%: this checks that the run improves, not that it masters the game)
    assert rates[0] == 0.0 and max(rates[1:]) >= 0.075, f"no better against the scripted player: {rates}"
    assert "win rate" in log
    assert not processes_mentioning(str(workdir)), "a role process outlived the launcher"
    print(f"league run: win rates {rates}, {games:g} games counted, counters {counters}")
