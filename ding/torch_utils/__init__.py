from .codec import DEFAULT_LIMITS, DecodeLimits, decode, encode, load_file, save_file
from .data_helper import default_collate, default_decollate, to_device, to_ndarray, to_tensor
