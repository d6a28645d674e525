"""``ember.nn.utils``: gradient clipping, parameter vectors, rnn packing and more."""

from . import rnn  # noqa: F401
from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
