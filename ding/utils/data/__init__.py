"""DI-engine's ``ding.utils.data`` import path: batching samples (``default_collate``, ``default_decollate``,
``timestep_collate``), and a batch already stacked per field (``ColumnBatch``, read with ``stack_field``)."""
from .collate_fn import default_collate, default_decollate, diff_shape_collate, timestep_collate
from .column_batch import SAMPLE_BATCH_TYPES, ColumnBatch, learn_takes_columns, stack_field
from .offline_dataset import OfflineDataset, create_dataset, load_hdf5, load_minari, load_pickle
from .offline_stream import StreamedHDF5Dataset
from .offline_writer import offline_data_save_type, save_hdf5, save_minari, transitions_to_arrays

__all__ = ["default_collate", "diff_shape_collate", "default_decollate", "timestep_collate", "ColumnBatch",
           "SAMPLE_BATCH_TYPES", "learn_takes_columns", "stack_field", "OfflineDataset", "create_dataset", "load_hdf5",
           "load_minari", "load_pickle", "StreamedHDF5Dataset", "save_hdf5", "save_minari", "transitions_to_arrays",
           "offline_data_save_type"]
