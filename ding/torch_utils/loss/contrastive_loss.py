"""DI-engine's module path of :class:`~ding.torch_utils.contrastive_loss.ContrastiveLoss`."""
from ding.torch_utils.contrastive_loss import ContrastiveLoss

__all__ = ["ContrastiveLoss"]
