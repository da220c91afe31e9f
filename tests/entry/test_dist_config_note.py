"""``ding -m dist --module config`` prints role commands that work in any order (without an address the roles wait
for the coordinator's address file): its note said "start the roles (the coordinator first)", which
docs/distributed.md's own commands -- learner and collectors first, the coordinator last -- contradict."""
from __future__ import annotations

from easydict import EasyDict

from ding.parallel.launch.dist import print_role_commands


def test_the_printed_note_says_the_roles_start_in_any_order(capsys):
    cfg = EasyDict(main=dict(exp_name="by_hand"), system=dict(coordinator={}, learner0={}, collector0={},
                                                              collector1={}))
    print_role_commands(cfg)
    out = capsys.readouterr().out
    assert "coordinator first)" not in out.splitlines()[0]
    assert out.splitlines()[0] == "ding: wrote by_hand/total_config.py; start the roles, in any order, with"
    assert [line.split()[4] for line in out.splitlines() if line.startswith("  ding -m")] == [
        "coordinator", "learner", "collector", "collector"]
    assert "wait for the coordinator's address in by_hand/coordinator.json" in out
    assert "a role given an address needs the coordinator started first" in out
