"""The layers. One family per module; each class's forward calls ember.nn.functional."""

from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .module import Module, register_module_forward_hook, register_module_forward_pre_hook

__all__ = [
    "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "register_module_forward_hook", "register_module_forward_pre_hook",
]
