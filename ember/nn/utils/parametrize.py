"""Parametrizations: a tensor attribute computed from others on every access.

``register_parametrization(module, "weight", P)`` moves the tensor to
``module.parametrizations.weight.original`` and turns ``module.weight`` into a property
returning ``P(original)``. The module's class is swapped for a one-off subclass holding the
property, so other instances are untouched; state_dict keys follow PyTorch
(``parametrizations.weight.original``).
"""

from __future__ import annotations

import contextlib

from ..._core.tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached",
           "ParametrizationList", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Within the block, each parametrized tensor is computed once and reused (saves
    recomputation when a parametrized weight is read many times, as in an RNN).

    Returns:
        A context manager.

    Example:
        >>> import ember
        >>> from ember.nn.utils import parametrize
        >>> with parametrize.cached():
        ...     y = ember.nn.Linear(2, 2)(ember.ones(1, 2))
    """
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and its ``original`` (or
    ``original0``, ``original1``... when ``right_inverse`` returns several tensors).

    Args:
        modules (sequence of Module): the parametrizations.
        original (Tensor): the tensor being parametrized.
        unsafe (bool): skip the consistency checks. Default: False.

    Returns:
        A module; calling it computes the parametrized tensor.

    Example:
        >>> import ember
        >>> from ember.nn.utils import parametrize
        >>> m = ember.nn.Linear(2, 2)
        >>> _ = parametrize.register_parametrization(m, "weight", ember.nn.Identity())
        >>> type(m.parametrizations.weight).__name__
        'ParametrizationList'
    """

    def __init__(self, modules, original, unsafe=False):
        super().__init__(modules)
        self.unsafe = unsafe
        from ...autograd.grad_mode import no_grad

        new = original
        with no_grad():
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    new = m.right_inverse(new)
        if isinstance(new, Tensor):
            self.is_tensor = True
            self.ntensors = 1
            _set_original(self, "original", original, new)
        else:
            self.is_tensor = False
            self.ntensors = len(new)
            for i, t in enumerate(new):
                p = Parameter(t.detach().clone(), original.requires_grad) if isinstance(
                    original, Parameter) else t
                self.register_parameter(f"original{i}", p) if isinstance(p, Parameter) else \
                    self.register_buffer(f"original{i}", p)

    def right_inverse(self, value):
        """Store ``value`` by running it back through each parametrization's
        ``right_inverse``, last registered first (what ``module.weight = value`` does).

        Args:
            value: the tensor the parametrized attribute should now equal.

        Returns:
            None. Raises RuntimeError when a parametrization has no ``right_inverse``, and
            ValueError when the result does not match the originals it replaces; then
            nothing is changed.

        Example:
            >>> import ember
            >>> from ember.nn.utils import parametrize
            >>> m = ember.nn.Linear(2, 2)
            >>> _ = parametrize.register_parametrization(m, "weight", ember.nn.Identity())
            >>> m.weight = ember.ones(2, 2)
            >>> m.parametrizations.weight.original.sum().item()
            4.0
        """
        from ...autograd.grad_mode import no_grad

        with no_grad():
            for m in reversed(list(self)):
                if not hasattr(m, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(m).__name__} does not "
                                       f"implement right_inverse.")
                value = m.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. "
                                     f"Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                # set_ (not copy_): like torch, a new value may bring a new shape
                self.original.set_(value)
                return
            if not isinstance(value, (list, tuple)):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. "
                                 f"Got {type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of "
                                 f"length {self.ntensors}. Got a sequence of length "
                                 f"{len(value)}.")
            # every piece is checked before any original changes
            originals = [getattr(self, f"original{i}") for i in range(self.ntensors)]
            for i, (t, orig) in enumerate(zip(value, originals)):
                if not isinstance(t, Tensor):
                    raise ValueError(f"`right_inverse` must return a sequence of tensors. "
                                     f"Got element {i} of type {type(t).__name__}")
                if t.dtype != orig.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                     f"{t.dtype} while `original{i}` has dtype {orig.dtype}")
            for t, orig in zip(value, originals):
                orig.set_(t)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in list(self)[1:]:
            x = m(x)
        return x


def _set_original(plist, name, original, new):
    from ...autograd.grad_mode import no_grad

    if isinstance(original, Parameter):
        if new is original:
            plist.register_parameter(name, original)
        else:
            with no_grad():
                if new.shape == original.shape and new.dtype == original.dtype:
                    original.copy_(new)
                    plist.register_parameter(name, original)
                else:
                    plist.register_parameter(name, Parameter(new, original.requires_grad))
    else:
        plist.register_buffer(name, new if new is not original else original)


def _inject_new_class(module):
    cls = module.__class__

    def getstate(self):
        raise RuntimeError(
            "Serialization of parametrized modules is only supported through state_dict().")

    param_cls = type(f"Parametrized{cls.__name__}", (cls,), {"__getstate__": getstate})
    module.__class__ = param_cls


def _inject_property(module, name):
    def get(self):
        plist = self.parametrizations[name]
        if _cache_enabled:
            key = (id(self), name)
            if key not in _cache:
                _cache[key] = plist()
            return _cache[key]
        return plist()

    def set_(self, value):
        self.parametrizations[name].right_inverse(value)

    setattr(module.__class__, name, property(get, set_))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Parametrize ``module.<tensor_name>`` by the module ``parametrization``: the stored
    tensor becomes ``module.parametrizations.<tensor_name>.original`` and reading the
    attribute returns ``parametrization(original)``. Registering again chains them.

    Args:
        module (Module): the module.
        tensor_name (str): a parameter or buffer of ``module``.
        parametrization (Module): maps the original to the value; may define
            ``right_inverse`` to map an assigned value back.
        unsafe (bool): skip the shape/dtype consistency checks. Default: False.

    Returns:
        Module: ``module`` (its class is swapped for a ``Parametrized...`` subclass).

    Example:
        >>> import ember
        >>> class Symmetric(ember.nn.Module):
        ...     def forward(self, x):
        ...         return x.triu() + x.triu(1).T
        >>> from ember.nn.utils import parametrize
        >>> layer = parametrize.register_parametrization(ember.nn.Linear(3, 3), "weight",
        ...                                              Symmetric())
        >>> bool((layer.weight == layer.weight.T).all())
        True
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        module.parametrizations[tensor_name].append(parametrization)
        return module
    if tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
        if not unsafe:
            out = plist()
            if not isinstance(out, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(out).__name__}.")
            if out.dtype != original.dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    f"unless `unsafe` flag is enabled.\nunparametrized dtype: "
                    f"{original.dtype}\nparametrized dtype: {out.dtype}")
            if out.shape != original.shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    f"unless `unsafe` flag is enabled.\nunparametrized shape: "
                    f"{original.shape}\nparametrized shape: {out.shape}")
        return module
    raise ValueError(
        f"Module '{module}' does not have a parameter, a buffer, or a parametrized element "
        f"with name '{tensor_name}'")


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has parametrizations (on ``tensor_name``, if given).

    Args:
        module (Module): the module.
        tensor_name (str, optional): a tensor name.

    Returns:
        bool.

    Example:
        >>> import ember
        >>> from ember.nn.utils import parametrize
        >>> parametrize.is_parametrized(ember.nn.Linear(2, 2))
        False
    """
    plists = module.__dict__.get("_modules", {}).get("parametrizations")
    if plists is None or not isinstance(plists, ModuleDict):
        return False
    return len(plists) > 0 if tensor_name is None else tensor_name in plists


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo :func:`register_parametrization` on ``tensor_name``.

    Args:
        module (Module): the module.
        tensor_name (str): the parametrized tensor.
        leave_parametrized (bool): keep the current (parametrized) value; False restores
            the original. Default: True.

    Returns:
        Module: ``module``, its original class restored when nothing is left parametrized.

    Example:
        >>> import ember
        >>> class Symmetric(ember.nn.Module):
        ...     def forward(self, x):
        ...         return x.triu() + x.triu(1).T
        >>> from ember.nn.utils import parametrize
        >>> layer = parametrize.register_parametrization(ember.nn.Linear(3, 3), "weight",
        ...                                              Symmetric())
        >>> type(parametrize.remove_parametrizations(layer, "weight")).__name__
        'Linear'
    """
    from ...autograd.grad_mode import no_grad

    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
            with no_grad():
                if value.shape == original.shape and value.dtype == original.dtype:
                    original.copy_(value)
                else:
                    original = Parameter(value.detach(), original.requires_grad) if isinstance(
                        original, Parameter) else value.detach()
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a "
                             "tensor that is parametrized in terms of a sequence of tensors.")
        # NOTE [ Removing a multi-tensor parametrization ]
        # The value is computed under the caller's grad mode, as PyTorch does: it stays a
        # Parameter only when it requires grad (some original did, and grad mode is on);
        # under no_grad, or with every original frozen, it comes back as a buffer.
        value = getattr(module, tensor_name)
        original = Parameter(value.detach(), True) if value.requires_grad else value
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(original, Parameter):
        module.register_parameter(tensor_name, original)
    else:
        module.register_buffer(tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The class of ``module`` before parametrizations swapped it.

    Args:
        module (Module): the module.

    Returns:
        type.

    Example:
        >>> import ember
        >>> from ember.nn.utils import parametrize
        >>> m = parametrize.register_parametrization(ember.nn.Linear(2, 2), "weight",
        ...                                          ember.nn.Identity())
        >>> parametrize.type_before_parametrizations(m).__name__
        'Linear'
    """
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Copy the parametrizations (and their originals) of ``from_module`` to
    ``to_module``.

    Args:
        from_module (Module): the parametrized module.
        to_module (Module): the module to receive them.
        tensor_name (str, optional): only this tensor (default: all).

    Returns:
        Module: ``to_module``.

    Example:
        >>> import ember
        >>> from ember.nn.utils import parametrize
        >>> a = parametrize.register_parametrization(ember.nn.Linear(2, 2), "weight",
        ...                                          ember.nn.Identity())
        >>> b = parametrize.transfer_parametrizations_and_params(a, ember.nn.Linear(2, 2))
        >>> parametrize.is_parametrized(b, "weight")
        True
    """
    if not is_parametrized(from_module):
        return to_module
    names = [tensor_name] if tensor_name else list(from_module.parametrizations.keys())
    for name in names:
        plist = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach().clone()))
        for p in plist:
            register_parametrization(to_module, name, p)
        if plist.is_tensor:
            to_module.parametrizations[name].original = plist.original
    return to_module

