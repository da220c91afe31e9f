from .data_helper import default_collate, default_decollate, to_device, to_ndarray, to_tensor
