"""The doors into ding: ``serial_pipeline``, ``eval`` and the ``ding`` command."""
from .application_entry import eval
from .serial_entry import serial_pipeline
