"""DI-engine's ``ding.interaction.config`` host constants: the address that listens on every interface and the
loopback one."""
GLOBAL_HOST = "0.0.0.0"
LOCAL_HOST = "127.0.0.1"

__all__ = ["GLOBAL_HOST", "LOCAL_HOST"]
