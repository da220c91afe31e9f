"""ding: a reinforcement-learning platform with DI-engine's worker-component design."""
__version__ = "0.1.0"
