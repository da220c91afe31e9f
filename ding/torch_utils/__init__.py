from .codec import decode, encode, load_file, save_file
from .data_helper import default_collate, default_decollate, to_device, to_ndarray, to_tensor
from .contrastive_loss import ContrastiveLoss
from .optimizer_helper import RMSprop, Adam
from .tensor_helper import squeeze, to_dtype, unsqueeze
