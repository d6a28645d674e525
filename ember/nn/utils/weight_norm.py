"""Weight normalisation, the hook-based form (``nn.utils.weight_norm``)."""

from __future__ import annotations

import warnings

from ..parameter import Parameter
from .parametrizations import _norm_except_dim

__all__ = ["weight_norm", "remove_weight_norm", "WeightNorm"]


class WeightNorm:
    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    @staticmethod
    def apply(module, name, dim):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g",
                                  Parameter(_norm_except_dim(weight, fn.dim).detach().clone()))
        module.register_parameter(name + "_v", Parameter(weight.detach().clone()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        from ...autograd.grad_mode import no_grad

        with no_grad():
            weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``name`` as ``name_g * name_v / ||name_v||`` (Salimans & Kingma, 2016).
    Deprecated in favour of ``nn.utils.parametrizations.weight_norm`` (warns FutureWarning).

    Args:
        module (Module): the module to change.
        name (str): the parameter. Default: ``"weight"``.
        dim (int or None): the dimension kept by the norm (None: the whole tensor). Default: 0.

    Returns:
        Module: ``module``, with parameters ``name_g`` and ``name_v``.

    Example:
        >>> import ember, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     m = weight_norm(ember.nn.Linear(4, 3))
        >>> tuple(m.weight_g.shape), tuple(m.weight_v.shape)
        ((3, 1), (3, 4))
    """
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo :func:`weight_norm`: ``name`` becomes a plain parameter again.

    Args:
        module (Module): the module.
        name (str): the parameter. Default: ``"weight"``.

    Returns:
        Module: ``module``.

    Example:
        >>> import ember, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     m = remove_weight_norm(weight_norm(ember.nn.Linear(4, 3)))
        >>> sorted(name for name, _ in m.named_parameters())
        ['bias', 'weight']
    """
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
