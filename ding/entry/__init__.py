"""The doors into ding: ``serial_pipeline``, ``serial_pipeline_onpolicy``, ``parallel_pipeline``, ``eval`` and the
``ding`` command."""
from .application_entry import eval
from .parallel_entry import parallel_pipeline
from .serial_entry import serial_pipeline
from .serial_entry_onpolicy import serial_pipeline_onpolicy
