"""Pruning: masks that zero parameter entries, applied by a forward pre-hook.

Pruning ``name`` keeps the dense values in ``<name>_orig`` (a parameter) and the mask in the
``<name>_mask`` buffer; ``module.<name>`` is recomputed as ``orig * mask`` before each
forward. Pruning again combines masks; ``remove`` makes the pruning permanent.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


def _amount(amount, n):
    if isinstance(amount, numbers.Integral):
        if amount < 0:
            raise ValueError(f"amount={amount} should either be a float in the range [0, 1] "
                             "or a non-negative integer")
        if amount > n:
            raise ValueError(f"amount={amount} should be smaller than the number of "
                             f"parameters to prune={n}")
        return amount
    if not 0.0 <= amount <= 1.0:
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")
    return round(amount * n)


class BasePruningMethod(ABC):
    """Base class of the pruning methods: a subclass implements ``compute_mask(t,
    default_mask)``; ``apply`` installs the mask on a module (combining it with any earlier
    pruning of the same tensor through a PruningContainer).

    Returns:
        A pruning method.

    Example:
        >>> import ember
        >>> class KeepFirst(BasePruningMethod):
        ...     PRUNING_TYPE = "unstructured"
        ...     def compute_mask(self, t, default_mask):
        ...         mask = default_mask.clone()
        ...         mask.view(-1)[1:] = 0
        ...         return mask
        >>> layer = ember.nn.Linear(2, 2)
        >>> _ = KeepFirst.apply(layer, "weight")
        >>> int(layer.weight_mask.sum())
        1
    """

    PRUNING_TYPE = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The new mask for tensor ``t`` given the current ``default_mask``."""

    def apply_mask(self, module):
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return orig * mask.to(dtype=orig.dtype)

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        from ... import ones_like
        from ...autograd.grad_mode import no_grad

        old = None
        hooks = [(k, h) for k, h in module._forward_pre_hooks.items()
                 if isinstance(h, BasePruningMethod) and h._tensor_name == name]
        if len(hooks) > 1:
            raise RuntimeError(f"More than one pruning hook on {name}")
        if hooks:
            k, old = hooks[0]
            del module._forward_pre_hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old is not None:
            container = old if isinstance(old, PruningContainer) else PruningContainer(old)
            container.add_pruning_method(method)
            method = container
        orig = getattr(module, name)
        scores = importance_scores if importance_scores is not None else orig
        if old is None:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        with no_grad():
            mask = method.compute_mask(scores, default_mask)
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        from ... import ones_like

        scores = importance_scores if importance_scores is not None else t
        mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(scores, mask)

    def remove(self, module):
        from ..parameter import Parameter

        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig if isinstance(orig, Parameter) else
                Parameter(orig))


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods applied one after another to the same tensor (what
    ``apply`` builds when a tensor is pruned twice).

    Args:
        *methods (BasePruningMethod): the methods, in order.

    Returns:
        A pruning method; ``apply(module, name, ...)`` prunes a module's tensor.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(4, 3)
        >>> _ = l1_unstructured(l1_unstructured(layer, 'weight', 2), 'weight', 2)
        >>> int(layer.weight_mask.sum())
        8
    """

    def __init__(self, *methods):
        self._pruning_methods = ()
        for m in methods:
            self.add_pruning_method(m)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        self._tensor_name = method._tensor_name
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, i):
        return self._pruning_methods[i]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        if method.PRUNING_TYPE == "unstructured":
            keep = default_mask == 1
            sub = method.compute_mask(t[keep], default_mask[keep])
            new = default_mask.clone()
            new[keep] = sub.to(new.dtype)
            return new
        return method.compute_mask(t, default_mask) * default_mask


class Identity(BasePruningMethod):
    """A pruning method that prunes nothing (a mask of ones).

    Args:
        (none)

    Returns:
        A pruning method; ``apply(module, name, ...)`` prunes a module's tensor.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(4, 3)
        >>> _ = Identity.apply(layer, 'weight')
        >>> int(layer.weight_mask.sum())
        12
    """

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prune a random ``amount`` of a tensor's entries.

    Args:
        amount (int or float): how many entries (int) or what fraction (float).

    Returns:
        A pruning method; ``apply(module, name, ...)`` prunes a module's tensor.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(4, 3)
        >>> _ = RandomUnstructured.apply(layer, 'weight', amount=0.5)
        >>> int(layer.weight_mask.sum())
        6
    """

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        self.amount = amount

    def compute_mask(self, t, default_mask):
        from ... import rand_like, topk

        n = t.numel()
        k = _amount(self.amount, n)
        mask = default_mask.clone()
        if k:
            idx = topk(rand_like(t).reshape(-1), k).indices
            mask.reshape(-1)[idx] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prune the ``amount`` entries of smallest absolute value.

    Args:
        amount (int or float): how many entries (int) or what fraction (float).

    Returns:
        A pruning method; ``apply(module, name, ...)`` prunes a module's tensor.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(4, 3)
        >>> _ = L1Unstructured.apply(layer, 'weight', amount=3)
        >>> int(layer.weight_mask.sum())
        9
    """

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        self.amount = amount

    def compute_mask(self, t, default_mask):
        from ... import topk

        k = _amount(self.amount, t.numel())
        mask = default_mask.clone()
        if k:
            idx = topk(t.abs().reshape(-1), k, largest=False).indices
            mask.reshape(-1)[idx] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _structured_mask(t, default_mask, dim, keep_idx):
    from ... import zeros_like

    mask = zeros_like(t)
    sl = [slice(None)] * t.dim()
    sl[dim] = keep_idx
    mask[tuple(sl)] = 1
    return mask * default_mask


class RandomStructured(BasePruningMethod):
    """Prune ``amount`` random slices of a tensor along ``dim``.

    Args:
        amount (int or float): how many slices (int) or what fraction (float).
        dim (int): the dimension of the slices. Default: -1.

    Returns:
        A pruning method; ``apply(module, name, ...)`` prunes a module's tensor.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(4, 3)
        >>> _ = RandomStructured.apply(layer, 'weight', amount=1, dim=0)
        >>> int(layer.weight_mask.sum())
        8
    """

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        from ... import rand

        n = t.shape[self.dim]
        k = _amount(self.amount, n)
        if k == 0:  # nothing to prune, nothing drawn
            return default_mask
        # one uniform score per slice; the k lowest are pruned (PyTorch's draw and rule, so a
        # seeded program prunes the same slices)
        score = rand(n)
        keep = (score > score.kthvalue(k).values).nonzero().flatten()
        return _structured_mask(t, default_mask, self.dim, keep)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prune the ``amount`` slices along ``dim`` of smallest L``n`` norm.

    Args:
        amount (int or float): how many slices (int) or what fraction (float).
        n (int, float, inf or str): the norm.
        dim (int): the dimension of the slices. Default: -1.

    Returns:
        A pruning method; ``apply(module, name, ...)`` prunes a module's tensor.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(4, 3)
        >>> _ = LnStructured.apply(layer, 'weight', amount=1, n=2, dim=0)
        >>> int(layer.weight_mask.sum())
        8
    """

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        from ... import topk

        d = self.dim % t.dim()
        size = t.shape[d]
        k = _amount(self.amount, size)
        dims = [i for i in range(t.dim()) if i != d]
        norms = t.norm(p=self.n, dim=dims)
        keep = topk(norms, size - k).indices.sort().values
        return _structured_mask(t, default_mask, d, keep)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune with a given mask.

    Args:
        mask (Tensor): 1 keeps an entry, 0 prunes it.

    Returns:
        A pruning method; ``apply(module, name, ...)`` prunes a module's tensor.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(4, 3)
        >>> _ = CustomFromMask.apply(layer, 'bias', mask=ember.tensor([1.0, 0.0, 1.0]))
        >>> layer.bias_mask
        tensor([1., 0., 1.])
    """

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Put ``module.<name>`` under pruning with a mask of ones (prunes nothing).

    Args:
        module (Module): the module.
        name (str): the parameter to prune (e.g. ``"weight"``).

    Returns:
        Module: ``module``, with ``name_orig`` (a parameter), ``name_mask`` (a buffer) and a
        forward pre-hook that sets ``name = name_orig * name_mask``.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(4, 3)
        >>> _ = identity(layer, 'weight')
        >>> int(layer.weight_mask.sum())
        12
    """
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Zero a random ``amount`` (fraction or count) of ``module.<name>``'s entries.

    Args:
        module (Module): the module.
        name (str): the parameter to prune (e.g. ``"weight"``).
        amount (int or float): how many entries (int) or what fraction (float).

    Returns:
        Module: ``module``, with ``name_orig`` (a parameter), ``name_mask`` (a buffer) and a
        forward pre-hook that sets ``name = name_orig * name_mask``.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(4, 3)
        >>> _ = random_unstructured(layer, 'weight', amount=0.25)
        >>> int(layer.weight_mask.sum())
        9
    """
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Zero the ``amount`` entries of ``module.<name>`` of smallest magnitude.

    Args:
        module (Module): the module.
        name (str): the parameter to prune (e.g. ``"weight"``).
        amount (int or float): how many entries (int) or what fraction (float).
        importance_scores (Tensor, optional): rank by these instead of the tensor.

    Returns:
        Module: ``module``, with ``name_orig`` (a parameter), ``name_mask`` (a buffer) and a
        forward pre-hook that sets ``name = name_orig * name_mask``.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(4, 3)
        >>> _ = l1_unstructured(layer, 'weight', amount=0.5)
        >>> int((layer.weight == 0).sum())
        6
    """
    L1Unstructured.apply(module, name, amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Zero ``amount`` random slices of ``module.<name>`` along ``dim``.

    Args:
        module (Module): the module.
        name (str): the parameter to prune (e.g. ``"weight"``).
        amount (int or float): how many slices (int) or what fraction (float).
        dim (int): the dimension of the slices.

    Returns:
        Module: ``module``, with ``name_orig`` (a parameter), ``name_mask`` (a buffer) and a
        forward pre-hook that sets ``name = name_orig * name_mask``.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(4, 3)
        >>> _ = random_structured(layer, 'weight', amount=1, dim=1)
        >>> int(layer.weight_mask.sum())
        9
    """
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Zero the ``amount`` slices of ``module.<name>`` along ``dim`` of smallest L``n``
    norm (e.g. whole output channels).

    Args:
        module (Module): the module.
        name (str): the parameter to prune (e.g. ``"weight"``).
        amount (int or float): how many slices (int) or what fraction (float).
        n (int, float, inf or str): the norm.
        dim (int): the dimension of the slices.
        importance_scores (Tensor, optional): rank by these instead of the tensor.

    Returns:
        Module: ``module``, with ``name_orig`` (a parameter), ``name_mask`` (a buffer) and a
        forward pre-hook that sets ``name = name_orig * name_mask``.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(4, 3)
        >>> _ = ln_structured(layer, 'weight', amount=1, n=1, dim=0)
        >>> int(layer.weight_mask.sum())
        8
    """
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune across several ``(module, name)`` pairs at once, ranking all their entries
    together as one flattened tensor.

    Args:
        parameters (iterable of (Module, str)): the tensors to prune.
        pruning_method (type): an unstructured method, e.g. ``L1Unstructured``.
        importance_scores (dict, optional): ``(module, name) -> scores`` to rank by.
        **kwargs: the method's arguments (``amount``...).

    Returns:
        None.

    Example:
        >>> import ember
        >>> a, b = ember.nn.Linear(4, 3), ember.nn.Linear(3, 2)
        >>> global_unstructured([(a, "weight"), (b, "weight")], pruning_method=L1Unstructured,
        ...                     amount=9)
        >>> int(a.weight_mask.sum() + b.weight_mask.sum())
        9
    """
    from ... import cat

    parameters = list(parameters)
    importance_scores = importance_scores or {}
    scores = cat([importance_scores.get((m, n), getattr(m, n)).reshape(-1)
                  for m, n in parameters])
    masks = cat([getattr(m, n + "_mask", None).reshape(-1) if hasattr(m, n + "_mask")
                 else getattr(m, n).new_ones(getattr(m, n).numel()) for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final = container.compute_mask(scores, masks)
    offset = 0
    for m, n in parameters:
        numel = getattr(m, n).numel()
        custom_from_mask(m, n, final[offset:offset + numel].view_as(getattr(m, n)))
        offset += numel


def custom_from_mask(module, name, mask):
    """Prune ``module.<name>`` with the given mask.

    Args:
        module (Module): the module.
        name (str): the parameter to prune (e.g. ``"weight"``).
        mask (Tensor): 1 keeps an entry, 0 prunes it.

    Returns:
        Module: ``module``, with ``name_orig`` (a parameter), ``name_mask`` (a buffer) and a
        forward pre-hook that sets ``name = name_orig * name_mask``.

    Example:
        >>> import ember
        >>> layer = ember.nn.Linear(4, 3)
        >>> _ = custom_from_mask(layer, 'bias', ember.tensor([0.0, 1.0, 1.0]))
        >>> layer.bias_mask
        tensor([0., 1., 1.])
    """
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent: the pruned values become a plain
    parameter and the mask and hook are dropped.

    Args:
        module (Module): the module.
        name (str): the pruned tensor.

    Returns:
        Module: ``module``.

    Example:
        >>> import ember
        >>> layer = l1_unstructured(ember.nn.Linear(4, 3), "weight", amount=2)
        >>> sorted(remove(layer, "weight").state_dict())
        ['bias', 'weight']
    """
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     "can be removed")


def is_pruned(module):
    """Whether any tensor of ``module`` or its submodules is under pruning.

    Args:
        module (Module): the module.

    Returns:
        bool.

    Example:
        >>> import ember
        >>> is_pruned(ember.nn.Linear(2, 2))
        False
    """
    return any(isinstance(h, BasePruningMethod) for m in module.modules()
               for h in m._forward_pre_hooks.values())
