"""Runs DI-engine's league demo main (the user's unchanged modules in the current directory) and prints one JSON
line: wall time, env steps, the last result of each evaluator. Used by ``bench_league_demo.py`` and the league-demo
tests under ding's and DI-engine's interpreters alike; it only wraps the evaluators' ``eval`` to record results.

    python league_demo_driver.py [max_env_step] [seed]
"""
import json
import sys
import time

T0 = time.perf_counter()
sys.path.insert(0, ".")
import league_demo_ppo_main as demo  # noqa: E402

RECORD = []
_eval = demo.BattleInteractionSerialEvaluator.eval


def _recording_eval(self, *args, **kwargs):
    out = _eval(self, *args, **kwargs)
    envstep = args[2] if len(args) > 2 else kwargs.get("envstep", -1)
    RECORD.append((self._instance_name, bool(out[0]), int(envstep)))
    return out


demo.BattleInteractionSerialEvaluator.eval = _recording_eval
cap = int(sys.argv[1]) if len(sys.argv) > 1 else int(1e8)
seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
demo.main(demo.league_demo_ppo_config, seed=seed, max_env_step=cap)
last = {name: {"stop": flag, "envstep": step} for name, flag, step in RECORD}
print(json.dumps({"wall_s": round(time.perf_counter() - T0, 2), "max_env_step": cap, "seed": seed,
                  "evals": len(RECORD), "last": last,
                  "both_stop": bool(last.get("fixed_evaluator", {}).get("stop")
                                    and last.get("uniform_evaluator", {}).get("stop"))}))
