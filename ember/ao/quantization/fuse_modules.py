"""``fuse_modules`` and ``fuse_modules_qat``: replace runs of modules (conv, bn, relu) by one
fused module (``torch.ao.quantization.fuse_modules``)."""

import copy

from ... import nn
from .fuser_method_mappings import get_fuser_method

__all__ = ["fuse_known_modules", "fuse_modules", "fuse_modules_qat"]


def _get_module(model, name):
    for token in name.split("."):
        model = getattr(model, token)
    return model


def _set_module(model, name, module):
    *path, last = name.split(".")
    for token in path:
        model = getattr(model, token)
    setattr(model, last, module)


def fuse_known_modules(mod_list, is_qat, additional_fuser_method_mapping=None):
    """Fuse a list of modules of a known pattern into one; the others become ``nn.Identity``.

    The first module's forward pre-hooks and the last one's forward hooks move to the fused
    module.

    Args:
        mod_list (list of nn.Module): the modules, in order.
        is_qat (bool): fusing for quantization-aware training.
        additional_fuser_method_mapping (dict, optional): more patterns.

    Returns:
        list of nn.Module: the fused module, then one ``nn.Identity`` per other module.

    Raises:
        NotImplementedError: for a pattern with no fusion.

    Example:
        >>> out = fuse_known_modules([nn.Linear(2, 2), nn.ReLU()], False)
        >>> [type(m).__name__ for m in out]
        ['LinearReLU', 'Identity']
    """
    types = tuple(type(m) for m in mod_list)
    fuser = get_fuser_method(types, additional_fuser_method_mapping)
    if fuser is None:
        raise NotImplementedError(f"Cannot fuse modules: {types}")
    fused = fuser(is_qat, *mod_list)
    for hook in mod_list[0]._forward_pre_hooks.values():
        fused.register_forward_pre_hook(hook)
    mod_list[0]._forward_pre_hooks.clear()
    for hook in mod_list[-1]._forward_hooks.values():
        fused.register_forward_hook(hook)
    mod_list[-1]._forward_hooks.clear()
    out = [fused]
    for _ in mod_list[1:]:
        identity = nn.Identity()
        identity.training = mod_list[0].training
        out.append(identity)
    return out


def _fuse_one(model, names, is_qat, fuser_func, fuse_custom_config_dict):
    extra = (fuse_custom_config_dict or {}).get("additional_fuser_method_mapping", {})
    mods = [_get_module(model, name) for name in names]
    for name, new in zip(names, fuser_func(mods, is_qat, extra)):
        _set_module(model, name, new)


def _fuse_modules(model, modules_to_fuse, is_qat, inplace, fuser_func, fuse_custom_config_dict):
    if not inplace:
        model = copy.deepcopy(model)
    if all(isinstance(m, str) for m in modules_to_fuse):
        _fuse_one(model, modules_to_fuse, is_qat, fuser_func, fuse_custom_config_dict)
    else:
        for names in modules_to_fuse:
            _fuse_one(model, names, is_qat, fuser_func, fuse_custom_config_dict)
    return model


def fuse_modules(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                 fuse_custom_config_dict=None):
    """Fuse runs of modules for post-training quantization (the model must be in eval mode
    for patterns with a batch norm, which is folded into the conv or linear before it).

    Fusions: conv + bn, conv + bn + relu (→ ``ConvReLU2d`` with the folded conv), conv + relu
    (→ ``ConvReLU2d``), linear + relu (→ ``LinearReLU``), linear + bn, bn + relu
    (→ ``BNReLU2d``). The first named module is replaced by the fused one, the rest by
    ``nn.Identity``.

    Args:
        model (nn.Module): the model.
        modules_to_fuse (list of str, or list of lists of str): dotted submodule names.
        inplace (bool): change ``model`` itself rather than a deep copy.
        fuser_func (callable): ``fuser_func(mods, is_qat, extra_mapping)``.
        fuse_custom_config_dict (dict, optional): ``{"additional_fuser_method_mapping": ...}``.

    Returns:
        nn.Module: the fused model.

    Example:
        >>> m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU()).eval()
        >>> [type(c).__name__ for c in fuse_modules(m, ["0", "1", "2"])]
        ['ConvReLU2d', 'Identity', 'Identity']
    """
    return _fuse_modules(model, modules_to_fuse, False, inplace, fuser_func,
                         fuse_custom_config_dict)


def fuse_modules_qat(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                     fuse_custom_config_dict=None):
    """Fuse runs of modules for quantization-aware training: as :func:`fuse_modules`, but a
    batch norm stays a module (``ConvBn2d``, ``ConvBnReLU2d``, ``LinearBn1d``) for
    ``prepare_qat`` to fold while training.

    Args:
        as :func:`fuse_modules`.

    Returns:
        nn.Module: the fused model.

    Example:
        >>> m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU())
        >>> type(fuse_modules_qat(m, ["0", "1", "2"])[0]).__name__
        'ConvBnReLU2d'
    """
    return _fuse_modules(model, modules_to_fuse, True, inplace, fuser_func,
                         fuse_custom_config_dict)
