"""DI-engine's league demo: a one-step two-player matrix game (prisoner's dilemma, a zero-sum game) and its configs."""
