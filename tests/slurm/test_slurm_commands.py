"""The Slurm launcher's pure parts, without Slurm: node lists and CPU counts from Slurm's environment, the srun
command of each role built from system_config, the config keys' ranges, and 'auto' addresses."""
from __future__ import annotations

import pytest

from ding.config import compile_config_parallel, read_config_with_system
from ding.parallel.launch.slurm_env import (
    SlurmJob,
    StepSpec,
    check_fits,
    expand_cpus_per_node,
    expand_nodelist,
    srun_command,
    step_specs,
)
from ding.parallel.transport import local_address, resolve_advertise_host
from ding.utils import ConfigError

CONFIG = "config/parallel/cartpole_dqn.py"


@pytest.mark.parametrize("text, names", [
    ("node1", ["node1"]),
    ("node[1-3,5]", ["node1", "node2", "node3", "node5"]),
    ("gpu[08-11],cpu3", ["gpu08", "gpu09", "gpu10", "gpu11", "cpu3"]),
    ("a[1-2]b[7,9]", ["a1b7", "a1b9", "a2b7", "a2b9"]),
    ("sh-idc1-10-5-36-[64-65]", ["sh-idc1-10-5-36-64", "sh-idc1-10-5-36-65"]),
    ("n[9-10]", ["n9", "n10"]),
])
def test_nodelist_expands_like_slurm(text, names):
    assert expand_nodelist(text) == names


@pytest.mark.parametrize("text, problem", [
    ("node[1-3", "'[' without ']'"), ("node1]", "']' without '['"), ("node[3-1]", "runs backwards"),
    ("node[a-b]", "is not a number"), ("n1,,n2", "an empty name"), ("n[[1]]", "nested brackets"),
])
def test_malformed_nodelist_is_one_error_naming_it(text, problem):
    with pytest.raises(ConfigError, match="Slurm node list") as e:
        expand_nodelist(text)
    assert problem in str(e.value) and repr(text) in str(e.value)


def test_cpus_per_node_and_the_job_from_the_environment():
    assert expand_cpus_per_node("4(x2),2") == [4, 4, 2]
    with pytest.raises(ConfigError, match="SLURM_JOB_CPUS_PER_NODE"):
        expand_cpus_per_node("4x2")
    job = SlurmJob.from_env({"SLURM_JOB_ID": "77", "SLURM_JOB_NODELIST": "c[1-2]", "SLURM_JOB_CPUS_PER_NODE": "3(x2)"})
    assert job == SlurmJob("77", ("c1", "c2"), (3, 3)) and job.cpus == 6
    assert SlurmJob.from_env({"SLURM_NODELIST": "c1"}) is None  # no job id: not inside an allocation


def _compiled(tmp_path, monkeypatch, system_update=None, platform="slurm"):
    monkeypatch.chdir(tmp_path)
    import os

    main, create, system = read_config_with_system(os.path.join(os.path.dirname(__file__), "..", "..", CONFIG))
    for k, v in (system_update or {}).items():
        system[k] = v
    return compile_config_parallel(main, create, system, platform=platform)


def test_srun_commands_follow_system_config(tmp_path, monkeypatch):
    cfg = _compiled(tmp_path, monkeypatch, {
        "slurm": {"partition": "cpu", "cpus": 2, "memory": "2G", "srun_args": ["--time=01:00:00"]},
        "coordinator": {"cpus": 1, "node": "head1"},
        "learner0": {"partition": "gpu", "memory": 8192},
        "collector1": {"node": "c7"},
    })
    specs = {s.name: s for s in step_specs(cfg.system)}
    assert list(specs) == ["coordinator", "learner0", "collector0", "collector1"]
    assert specs["coordinator"] == StepSpec("coordinator", "coordinator", "cpu", "head1", 1, "2G", ("--time=01:00:00",))
    assert specs["learner0"] == StepSpec("learner0", "learner", "gpu", None, 2, "8192", ("--time=01:00:00",))
    alone = srun_command(specs["collector1"], "ding-abc-collector1", None, ["python", "-m", "ding"])
    assert alone == ["srun", "--job-name=ding-abc-collector1", "--ntasks=1", "--nodes=1", "--cpus-per-task=2",
                     "--kill-on-bad-exit=1", "--quiet", "--partition=cpu", "--nodelist=c7", "--mem=2G",
                     "--time=01:00:00", "python", "-m", "ding"]
    inside = srun_command(specs["learner0"], "s", SlurmJob("42", ("a",), (8,)), ["x"])
    assert inside[inside.index("--quiet") + 1:inside.index("--quiet") + 3] == ["--jobid=42", "--exact"]
    assert "--partition=gpu" in inside and "--mem=8192" in inside and inside[-1] == "x"
    # every role binds all interfaces and advertises the address its node has, found where it starts
    assert cfg.system.coordinator.host == "auto" and cfg.system.coordinator.advertise_host == "auto"
    assert cfg.system.learner0.host == "auto" and cfg.system.learner0.advertise_host == "auto"  # (issue 36, item 7)


def test_roles_that_do_not_fit_the_allocation_are_refused_before_any_step():
    specs = [StepSpec("coordinator", "coordinator"), StepSpec("learner0", "learner", cpus=4),
             StepSpec("collector0", "collector")]
    check_fits(specs, SlurmJob("9", ("n1",), (6,)))  # 6 = 1 + 4 + 1
    check_fits(specs, None)
    with pytest.raises(ConfigError, match=r"job 9 has 5 CPUs but the run's 3 roles ask for 6 \(coordinator 1, "
                                          r"learner0 4, collector0 1\)"):
        check_fits(specs, SlurmJob("9", ("n1",), (5,)))


def test_slurm_keys_out_of_range_are_named(tmp_path, monkeypatch):
    with pytest.raises(ConfigError) as e:
        _compiled(tmp_path, monkeypatch, {"slurm": {"cpus": 0, "memory": "4X", "start_timeout": 0},
                                          "collector0": {"cpus": 1.5}, "learner0": {"memory": -1},
                                          "coordinator": {"memory": "0G"}})
    text = str(e.value)
    for key in ("system_config.slurm.cpus", "system_config.slurm.memory", "system_config.slurm.start_timeout",
                "system_config.collector0.cpus", "system_config.learner0.memory", "system_config.coordinator.memory"):
        assert key in text, (key, text)
    with pytest.raises(ConfigError, match="system_config.slurm.partiton: unknown key.*did you mean 'partition'"):
        _compiled(tmp_path, monkeypatch, {"slurm": {"partiton": "x"}})
    with pytest.raises(ConfigError, match="platform 'k8s'"):
        _compiled(tmp_path, monkeypatch, platform="k8s")


def test_local_layout_is_unchanged_by_the_slurm_keys(tmp_path, monkeypatch):
    cfg = _compiled(tmp_path, monkeypatch, {"collector0": {"node": "c1", "cpus": 2}}, platform="local")
    assert cfg.system.coordinator.host == "127.0.0.1" and cfg.system.coordinator.advertise_host is None
    assert cfg.system.collector0.host == "127.0.0.1" and cfg.system.collector0.node == "c1"


def test_auto_advertise_host_is_the_address_that_routes_to_the_peer():
    assert local_address("127.0.0.1") == "127.0.0.1"
    assert resolve_advertise_host("auto", towards="127.0.0.1") == "127.0.0.1"
    assert resolve_advertise_host("10.1.2.3", towards="127.0.0.1") == "10.1.2.3"
    assert resolve_advertise_host(None) is None


def test_without_srun_the_launcher_says_where_to_run_and_writes_nothing(in_tmp_dir, monkeypatch):
    import os

    from ding.entry.parallel_entry import parallel_pipeline

    config = os.path.join(os.path.dirname(__file__), "..", "..", CONFIG)
    monkeypatch.setenv("PATH", str(in_tmp_dir))  # no srun here
    with pytest.raises(ConfigError, match="-P slurm: srun is not on PATH; run the launcher on a Slurm login node or "
                                          "inside an sbatch/salloc allocation"):
        parallel_pipeline(config, seed=0, platform="slurm")
    with pytest.raises(ConfigError, match="platform must be 'local' or 'slurm', got 'k8s'"):
        parallel_pipeline(config, seed=0, platform="k8s")
    assert os.listdir(in_tmp_dir) == []


def test_only_an_address_file_signed_with_the_runs_token_is_taken(tmp_path):
    """Issue 36, item 10: a coordinator.json planted while the coordinator's step is pending would have sent every
    role, and their token, elsewhere; item 12: it is read as a regular file only (a FIFO never blocks the launcher, a
    link to /dev/zero is never read)."""
    import json
    import os

    from ding.parallel.launch.slurm import ADDRESS_FILE, read_address, write_address

    token, path = "k" * 32, tmp_path / ADDRESS_FILE
    path.write_text(json.dumps({"host": "10.6.6.6", "port": 4444, "node": "evil", "pid": 1}))
    assert read_address(str(tmp_path), token) is None  # unsigned: planted
    write_address(str(tmp_path), "10.0.0.1", 29000, "x" * 32)
    assert read_address(str(tmp_path), token) is None  # signed with another token: another run's
    write_address(str(tmp_path), "10.0.0.1", 29000, token)
    assert read_address(str(tmp_path), token) == ("10.0.0.1", 29000)
    record = json.loads(path.read_text())
    record["host"] = "10.6.6.6"  # tampered
    path.write_text(json.dumps(record))
    assert read_address(str(tmp_path), token) is None
    os.remove(path)
    os.mkfifo(path)
    assert read_address(str(tmp_path), token) is None  # at once: no writer needed
    os.remove(path)
    os.symlink("/dev/zero", path)
    assert read_address(str(tmp_path), token) is None


def test_a_lost_learner_group_member_stops_the_rest_of_the_group_at_once(tmp_path):
    """Issue 36, item 15: under -P slurm the other learners of a group waited in a collective until group_timeout
    when one member's step died (ding -m parallel stops them); real processes stand in for the srun steps."""
    import subprocess
    import sys

    from ding.parallel.launch.slurm import SlurmStarter
    from ding.parallel.launch.slurm_env import StepSpec
    from ding.parallel.launch.supervisor import RoleSupervisor

    class Local(SlurmStarter):  # Slurm's policy (SIGTERM to a step's srun), a plain process for the srun
        def start(self, role, log_path):
            code = "import sys; sys.exit(3)" if role.name == "learner1" else "import time; time.sleep(120)"
            return subprocess.Popen([sys.executable, "-c", code])

    starter = Local(None, {}, "total_config.py", runner=lambda *a, **k: subprocess.CompletedProcess(a, 0, "", ""))
    said, failed = [], []
    with RoleSupervisor(starter, str(tmp_path), max_restarts=3) as steps:
        steps.report_to(said.append, failed.append, lambda: False)
        for name in ("learner0", "learner1", "learner2", "collector0"):
            steps.start(StepSpec(name, name.rstrip("012")))
        steps.children["learner1"].proc.wait(timeout=30)
        steps.tick()
        assert len(failed) == 1 and "learner step 'learner1' (one of 3 learners" in failed[0]
        assert "exited with code 3" in failed[0] and steps.failure == failed[0]
        assert said == [f"stopping learner step '{n}' (its learner group lost 'learner1')" for n in ("learner0",
                                                                                                     "learner2")]
        for name in ("learner0", "learner2"):
            assert steps.children[name].proc.wait(timeout=10) == -15  # SIGTERM (srun's cancel), not left waiting
        assert steps.children["collector0"].running()  # the coordinator ends the collectors in order
        steps.stop(grace=0.0)
        assert not steps.alive()
