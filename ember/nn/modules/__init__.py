"""The layers. One family per module; each class's forward calls ember.nn.functional."""

from .activation import (
    CELU, ELU, GELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU,
    LogSigmoid, LogSoftmax, Mish, PReLU, ReLU, ReLU6, RReLU, Sigmoid, SiLU, Softmax,
    Softmax2d, Softmin, Softplus, Softshrink, Softsign, Tanh, Tanhshrink, Threshold,
)
from .adaptive import AdaptiveLogSoftmaxWithLoss
from .container import (
    Container, ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential,
)
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .dropout import (
    AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout,
)
from .flatten import Flatten, Unflatten
from .lazy import (
    LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d,
    LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d,
    LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear, LazyModuleMixin,
)
from .linear import Bilinear, Identity, Linear
from .loss import (
    BCELoss, BCEWithLogitsLoss, CosineEmbeddingLoss, CosineSimilarity, CrossEntropyLoss,
    CTCLoss, GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss,
    LinearCrossEntropyLoss, LinearCrossEntropyOptions, MarginRankingLoss, MSELoss,
    MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss, NLLLoss2d,
    PairwiseDistance, PoissonNLLLoss, SmoothL1Loss, SoftMarginLoss, TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)
from .module import Module, register_module_forward_hook, register_module_forward_pre_hook
from .normalization import (
    BatchNorm1d, BatchNorm2d, BatchNorm3d, CrossMapLRN2d, GroupNorm, InstanceNorm1d,
    InstanceNorm2d, InstanceNorm3d, LayerNorm, LocalResponseNorm, RMSNorm, SyncBatchNorm,
)
from .padding import (
    CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d,
    ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d, ReplicationPad2d,
    ReplicationPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d,
)
from .pooling import (
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d,
    AdaptiveMaxPool2d, AdaptiveMaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d, FractionalMaxPool2d,
    FractionalMaxPool3d, LPPool1d, LPPool2d, LPPool3d, MaxPool1d, MaxPool2d, MaxPool3d,
    MaxUnpool1d, MaxUnpool2d, MaxUnpool3d,
)
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .sampling import (
    ChannelShuffle, Fold, PixelShuffle, PixelUnshuffle, Unfold, Upsample, UpsamplingBilinear2d,
    UpsamplingNearest2d,
)
from .sparse import Embedding, EmbeddingBag
from .transformer import (
    MultiheadAttention, Transformer, TransformerDecoder, TransformerDecoderLayer,
    TransformerEncoder, TransformerEncoderLayer,
)

__all__ = [name for name in dir() if name[0].isupper()] + [
    "register_module_forward_hook", "register_module_forward_pre_hook"]
