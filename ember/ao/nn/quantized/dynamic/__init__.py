"""Dynamically quantized modules (``torch.ao.nn.quantized.dynamic``): float in, float out;
the weight is stored quantized and each input is quantized on the fly."""

from .linear import Linear
from .rnn import LSTM

__all__ = ["LSTM", "Linear"]
