from .codec import DEFAULT_LIMITS, DecodeLimits, decode, encode, load_file, save_file
from .contrastive_loss import ContrastiveLoss
from .data_helper import (
    default_collate,
    default_decollate,
    get_null_data,
    get_tensor_data,
    obs_to_float,
    same_shape,
    tensor_to_list,
    to_device,
    to_item,
    to_list,
    to_ndarray,
    to_tensor,
)
from .nn_test_helper import is_differentiable
from .optimizer_helper import Adam, RMSprop, calculate_grad_norm, calculate_grad_norm_without_bias_two_norm
from .prefetch import CudaFetcher, LogDict, build_log_buffer
from .tensor_helper import squeeze, to_dtype, unsqueeze
