"""DI-engine's ``ding.utils.data`` import path: batching samples (``default_collate``, ``default_decollate``,
``timestep_collate``)."""
from .collate_fn import default_collate, default_decollate, timestep_collate

__all__ = ["default_collate", "default_decollate", "timestep_collate"]
