from .codec import DEFAULT_LIMITS, DecodeLimits, decode, encode, load_file, save_file
from .contrastive_loss import ContrastiveLoss
from .data_helper import default_collate, default_decollate, obs_to_float, to_device, to_ndarray, to_tensor
from .optimizer_helper import Adam, RMSprop
from .tensor_helper import squeeze, to_dtype, unsqueeze
