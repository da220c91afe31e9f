"""DI-engine's ``ding.torch_utils.loss`` path for the losses ding ships (one implementation each)."""
from ding.torch_utils.contrastive_loss import ContrastiveLoss

__all__ = ["ContrastiveLoss"]
