"""The layers. One family per module; each class's forward calls ember.nn.functional."""

from .activation import LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .linear import Identity, Linear
from .loss import CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module, register_module_forward_hook, register_module_forward_pre_hook

__all__ = [
    "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "register_module_forward_hook", "register_module_forward_pre_hook", "Identity", "Linear",
    "ReLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax", "MSELoss", "NLLLoss",
    "CrossEntropyLoss",
]
