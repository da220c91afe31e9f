"""The coordinator's side of a parallel run, for every launcher: limits and resumed counters, each evaluation recorded
(``log/eval.csv``, the progress line, the state ``--resume`` continues from), the wait for the end, ``result``."""
from __future__ import annotations

import json
import os
import time
from contextlib import closing
from typing import TYPE_CHECKING, Any, Callable

from ding.engine.training_view import EvalCSV, GracefulStop, ProgressView
from ding.utils import DingError, ResumeError, atomic_write_text, shown_dir
from ding.utils.tracking import role_writer

if TYPE_CHECKING:
    from ding.parallel.coordinator import Coordinator
    from ding.parallel.launch.supervisor import RoleSupervisor

STATE_FILE = "parallel_state.json"
NO_LIMIT = int(1e10)  # a limit at or above this is no limit


class ParallelRunError(DingError, RuntimeError):
    """The parallel run ended with an error (a role could not start or kept crashing); the message says which."""


def read_state(exp_dir: str) -> dict[str, Any]:
    """The coordinator state of a stopped run (``<exp_dir>/parallel_state.json``), checked to hold one."""
    path = os.path.join(exp_dir, STATE_FILE)
    try:
        with open(path) as f:
            state = json.load(f)
    except FileNotFoundError:
        raise ResumeError(f"resume: '{exp_dir}' has no {STATE_FILE}; it was not written by ding -m parallel (a serial "
                          "run resumes with ding -m serial --resume)") from None
    except (OSError, ValueError) as e:
        raise ResumeError(f"resume: {path} cannot be read ({e}); the run cannot be continued") from e
    if not isinstance(state, dict) or not isinstance(state.get("commander"), dict):
        raise ResumeError(f"resume: {path} holds no coordinator state; the run cannot be continued")
    return state


def check_resumable(exp_dir: str, state: dict[str, Any], max_env_step: int | None,
                    max_train_iter: int | None, extend: bool = False) -> None:
    """Refuse a resume of a finished run (unless ``extend``), or of one already past the limits given."""
    commander = state["commander"]
    if commander.get("reached_stop_value") and not extend:
        best = commander.get("best_return")
        raise ResumeError(
            f"resume: run '{exp_dir}' is finished: an evaluation reached the stop value (best return {best}). "
            "Resuming would train it further and overwrite its result. To extend it on purpose, add --extend with a "
            "higher --train-iter or --env-step (extend=True from Python; the stop value then no longer ends it), or "
            f"raise env.stop_value above {best} in the config.")
    env_step, train_iter = int(commander.get("envstep", 0)), int(commander.get("learner_step", 0))
    for what, flag, limit, now in (("env step", "--env-step", max_env_step, env_step),
                                   ("train iter", "--train-iter", max_train_iter, train_iter)):
        if limit is not None and limit < NO_LIMIT and now >= limit:
            raise ResumeError(f"resume: run '{exp_dir}' is already at {what} {now:,}: nothing is left to do under "
                              f"{flag} {limit}. Raise {flag} above it to continue.")


def drive_coordinator(cfg: Any, *, mode: str, on_listen: Callable[[Coordinator], None],
                      supervisor: RoleSupervisor | None = None, token: str | None = None,
                      max_env_step: int | None = None, max_train_iter: int | None = None,
                      resume_state: dict[str, Any] | None = None, extend: bool = False,
                      token_source: str | None = None) -> dict[str, Any]:
    """Run the coordinator of compiled config ``cfg`` to the run's end and return its result. ``on_listen`` is called
    once it listens; ``supervisor`` is ticked every 0.2 s and aborted on a second Ctrl-C. ``extend``: only the limits
    end the run, not the stop value; ``token_source``: where the token came from, named in the error when requests
    with a wrong token reached it."""
    from ding.parallel.coordinator import Coordinator
    from ding.parallel.transport import resolve_advertise_host

    exp = cfg.main.exp_name
    eval_csv = EvalCSV(os.path.join(exp, "log", "eval.csv"))
    view = ProgressView(max_env_step=max_env_step or NO_LIMIT, max_train_iter=max_train_iter or NO_LIMIT,
                        stop_value=cfg.main.env.get("stop_value"))

    def on_eval(record: Any) -> None:
        eval_csv.append(record.train_iter, record.env_step, record.eval_return_mean, record.eval_return_std,
                        record.wall_time)
        view.eval(record.eval_return_mean)
        save_state(None)

    def save_state(ended: str | None) -> None:  # what --resume continues from; at every evaluation and at the end
        state = {"commander": coordinator.commander.state_dict(), "ended": ended}
        atomic_write_text(os.path.join(exp, STATE_FILE), json.dumps(state, indent=1) + "\n")

    for key in ("advertise_host", "host"):  # 'auto': the address here; as host (-P slurm) it binds only there
        cfg.system.coordinator[key] = resolve_advertise_host(cfg.system.coordinator.get(key))
    tracking = role_writer(cfg.main, "coordinator", os.path.join(exp, "log", "coordinator"))
    with closing(tracking):
        coordinator = Coordinator(cfg, token=token, on_eval=on_eval, max_env_step=max_env_step,
                                  max_train_iter=max_train_iter, resume=resume_state is not None, tb_logger=tracking)
        coordinator.commander.stop_at_stop_value = not extend
        if resume_state is not None:
            coordinator.commander.load_state_dict(resume_state["commander"])
            print(f"ding: resuming '{exp}' at env step {int(resume_state['commander'].get('envstep', 0)):,} (the "
                  "learner continues from its latest checkpoint, the coordinator with its saved replay buffer)",
                  flush=True)
        tracking.start(cfg.main)
        t0 = time.monotonic()
        interrupted = False
        with GracefulStop() as stop:
            try:
                coordinator.start()
                on_listen(coordinator)
                try:
                    while not coordinator.wait(0.2):
                        if stop.requested and not interrupted:
                            interrupted = True
                            coordinator.end(f"interrupted by {stop.signal_name}")
                        if supervisor is not None:
                            supervisor.tick()
                        status = coordinator.status()
                        view.update(status["envstep"], status["learner_step"])
                except KeyboardInterrupt:  # a second Ctrl-C: stop now, without the orderly shutdown
                    coordinator.abort("aborted by a second interrupt")
                    if supervisor is not None:
                        supervisor.abort()
                    raise
                finally:
                    view.close()
                    coordinator.close()  # the learner writes its checkpoint, every role is told to shut down
            except BaseException:
                coordinator.end("error in the coordinator's process")
                coordinator.close()
                raise
        wall = time.monotonic() - t0
        result = _result(cfg, coordinator, wall, interrupted, mode)
        save_state(coordinator.end_reason)
        atomic_write_text(os.path.join(exp, "result"), json.dumps(result, indent=2) + "\n")
        tracking.finish(result, "interrupted" if interrupted else "error" if coordinator.fatal_error else "finished")
        print(f"ding: {coordinator.end_reason} after {result['env_step']:,} env steps and {result['train_iter']:,} "
              f"iterations ({wall:.1f} s); results in {shown_dir(exp)}", flush=True)
        if coordinator.fatal_error:
            refused = coordinator.refused_requests() if token_source else 0
            raise ParallelRunError(coordinator.fatal_error + (
                f"; {refused} request(s) reached this coordinator with a missing or wrong auth token: its token came "
                f"from {token_source}, give every role the same one" if refused else ""))
        stop.reraise(exp)
        return result


def _result(cfg: Any, coordinator: Any, wall: float, interrupted: bool, mode: str) -> dict[str, Any]:
    status = coordinator.status()
    last = status.get("last_eval") or {}
    learner = None  # the learner's own speed, if it closed cleanly
    closed = coordinator.learner_closed
    if closed is not None and closed.train_s:
        busy = closed.train_s - closed.data_wait_s  # busy_iters_per_s: its speed while it had a batch
        learner = {"trained": closed.trained, "train_s": round(closed.train_s, 3),
                   "data_wait_s": round(closed.data_wait_s, 3),
                   "busy_iters_per_s": round(closed.trained / busy, 2) if busy > 0 else None}
    return {
        "exp_name": cfg.main.exp_name, "mode": mode, "stop_flag": bool(coordinator.commander.reached_stop_value),
        "interrupted": interrupted, "end_reason": coordinator.end_reason, "error": coordinator.fatal_error,
        "stop_value": cfg.main.env.get("stop_value"), "env_step": int(status["envstep"]),
        "train_iter": int(status["learner_step"]), "eval_return": last.get("eval_return_mean"),
        "eval_return_std": last.get("eval_return_std"), "best_eval_return": status.get("best_return"),
        "wall_time_s": round(wall, 3), "seed": cfg.seed,
        "train_time_s": None if coordinator.training_seconds is None else round(coordinator.training_seconds, 3),
        "counters": {k: int(v) for k, v in sorted(coordinator.stats.items())},
        "learner": learner,
    }
