"""Config files: read, compile (defaults merge + validation with "did you mean"), save."""
from .compiler import DEFAULT_EVALUATOR, DEFAULT_LEARNER, CompiledConfig, compile_config, compile_run_config
from .components import ENV_COMMON_CONFIG, PARTS, POLICY_TEMPLATE
from .exp_dir import announce_exp_dir, claim_exp_dir, claim_run_dir
from .loader import read_config, read_config_directly, read_config_with_system
from .validation import find_config_problems, validate_config
from .writer import save_config, save_config_formatted

__all__ = [
    "compile_config", "compile_run_config", "CompiledConfig", "claim_exp_dir", "claim_run_dir", "announce_exp_dir",
    "read_config", "read_config_directly", "read_config_with_system", "save_config", "save_config_formatted",
    "validate_config", "find_config_problems", "DEFAULT_LEARNER", "DEFAULT_EVALUATOR", "ENV_COMMON_CONFIG",
    "POLICY_TEMPLATE", "PARTS",
]
from .parallel import COORDINATOR_CONFIG, SYSTEM_CONFIG, compile_config_parallel, rename_experiment

__all__ += ["compile_config_parallel", "rename_experiment", "COORDINATOR_CONFIG", "SYSTEM_CONFIG"]
