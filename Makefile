# Two commands do all set-up on a fresh machine (only Python 3.10+ needed):
#   make run    set up .venv, then train the default example (CartPole DQN)
#   make test   set up .venv, then run the test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build of torch is installed first, pinned, so nothing later pulls the multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0

.PHONY: setup run test test-all test-e2e-repeat test-slurm test-netns count-parallel lint clean

setup: $(VENV)/.ding-installed

$(VENV)/.ding-installed: pyproject.toml setup.py ding/worker/replay_buffer/_segtree.c
	@echo "setup 1/4: creating the virtual environment $(VENV)"
	$(PYTHON) -m venv $(VENV)
	@echo "setup 2/4: upgrading pip"
	$(PY) -m pip install --quiet --upgrade pip
	@echo "setup 3/4: installing the CPU build of $(TORCH_SPEC) (~200 MB; the longest step)"
	$(PY) -m pip install "$(TORCH_SPEC)"
	@echo "setup 4/4: installing ding and its test dependencies (pip install -e .[test])"
	$(PY) -m pip install --quiet -e ".[test]"
	@echo "setup: done"
	touch $@

run: setup
	$(VENV)/bin/ding -m serial -c config/serial/cartpole_dqn.py -s 0

test: setup
	$(PY) -m pytest -q tests

# everything, including the slow convergence runs of every shipped config (and the Slurm tests where they can run)
test-all: setup
	$(PY) -m pip install --quiet -e ".[mujoco,envpool,atari,wandb,mlflow,tune,offline,petting_zoo,onnx,league,gym]"
	$(PY) -m pytest -q -m "" tests

# the parallel-mode e2e fault tests 5 times in a row: each test's slowest run against its bound (docs/parallel.md)
test-e2e-repeat: setup
	nice -n 10 $(PY) tests/e2e/repeat.py --runs 5

# `ding -m dist -P slurm` on a real single-node Slurm cluster that the tests start and remove (needs root; installs
# Debian's slurm-wlm and munge when missing); fails, not skips, where the machine cannot run it
test-slurm: setup
	DING_REQUIRE_SLURM=1 $(PY) -m pytest -q -m slurm tests/slurm

# parallel mode across hosts: coordinator, learner and collectors in Linux network namespaces joined by veth links
# (tests/netns/setup_netns.sh creates and removes them; needs root and iproute2); fails, not skips, where it cannot run
test-netns: setup
	DING_REQUIRE_NETNS=1 $(PY) -m pytest -q -m netns tests/netns

# the lines of parallel mode (ding/parallel, its doors, the re-export modules), and before it had a wing (at 892509a,
# the last commit before the move)
count-parallel:
	$(PYTHON) tests/benchmark/count_parallel_lines.py --before $${BEFORE:-892509a}

lint: setup
	$(PY) -m pip install --quiet -e ".[dev]"
	$(PY) -m ruff check .
	$(PY) -m mypy

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache ding/worker/replay_buffer/_segtree*.so
