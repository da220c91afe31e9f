"""PettingZoo multi-agent envs under DI-engine's module paths (the ``petting_zoo`` extra)."""
