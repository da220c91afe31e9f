"""Commanders: the serial commander (the parallel coordinator and commanders live here too)."""
from .base_serial_commander import BaseSerialCommander, create_serial_commander

__all__ = ["BaseSerialCommander", "create_serial_commander"]
