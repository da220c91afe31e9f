"""Configs for the PettingZoo envs."""
