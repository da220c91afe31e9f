"""Config keys every offline policy reads (DI-engine's names), in one place."""
from __future__ import annotations

# policy.collect: where the data set is, and where collect_demo_data writes one
OFFLINE_COLLECT = dict(
    # 'hdf5' (DI-engine's layout, or D4RL's: read either way), 'd4rl', 'minari' (data_path is the dataset id) or
    # 'naive' (a pickle: only with allow_pickle=True).
    data_type="hdf5",
    # The data set the offline pipeline trains on.
    data_path=None,
    # Where collect_demo_data writes when no path is passed.
    save_path=None,
    # Unpickle a 'naive' data set (runs whatever code the file holds: only for files you trust).
    allow_pickle=False,
    # Normalise observations by the data set's mean and std, in training and in the evaluator's envs (what DI-engine's
    # env.norm_obs.offline_stats.use_offline_stats=True becomes in serial_pipeline_offline).
    normalize_obs=False,
    # An HDF5 data set whose fields take more than this many MB is streamed from the file a window at a time
    # (each window at most half of it) instead of loaded; None: always loaded.
    memory_budget_mb=4096.0,
)
# policy.learn: passes over the data set (the offline pipeline's limit; max_train_iter also limits it)
OFFLINE_LEARN = dict(train_epoch=30000)
