"""DI-engine's ``ding.data`` import paths, kept so DI-engine users' config files run unchanged (see buffer/)."""
