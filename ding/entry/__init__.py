"""The doors into ding: ``Trainer``, ``serial_pipeline``, ``serial_pipeline_onpolicy``, ``parallel_pipeline``,
``eval``, ``load_policy`` and the ``ding`` command."""
from .application_entry import eval
from .deploy import LoadedPolicy, load_policy
from .parallel_entry import parallel_pipeline
from .serial_entry import serial_pipeline
from .serial_entry_onpolicy import serial_pipeline_onpolicy
from .trainer import Trainer
