"""Aliases for module paths DI-engine's config files name in ``import_names``."""
