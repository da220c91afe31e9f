"""Experiment tracking beside TensorBoard: the fan-out writer and the W&B and MLflow trackers (docs/tracking.md)."""
from .base import (
    LOGGER_CONFIG,
    RunInfo,
    Scalar,
    Tracker,
    TrackingWriter,
    build_tracking_writer,
    flatten_params,
    role_writer,
    run_writer,
)
from .mlflow_tracker import MlflowTracker
from .wandb_tracker import WandbTracker, step_metric
