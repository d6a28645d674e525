"""``ember.utils.swap_tensors``: exchange the contents of two tensor objects in place."""

from __future__ import annotations

import copyreg
import weakref

from .._core.tensor import Tensor

# NOTE [ Swapping tensors ]
# An ember tensor is its slots (array, autograd links, hooks, version counter) plus its
# class and __dict__, so swapping all three exchanges everything a tensor is while each
# Python object keeps its identity. A leaf's AccumulateGrad node, built by an earlier
# forward, still writes into the object it was made for, which now holds the other
# tensor's contents: the node is poisoned so that such a backward raises instead of
# silently writing the wrong gradient, and each tensor gets a fresh node on next use.

_POISONED = (
    "Trying to execute AccumulateGrad node that was poisoned by swap_tensors this can happen "
    "when you try to run backward on a tensor that was swapped. For a module m with "
    "`torch.__future__.set_swap_module_params_on_conversion(True)` you should not change the "
    "device or dtype of the module (e.g. `m.cpu()` or `m.half()`) between running forward and "
    "backward. To resolve this, please only change the device/dtype before running forward "
    "(or after both forward and backward).")


def _slots(cls):
    return set(copyreg._slotnames(cls)) | {
        s for k in cls.__mro__ for s in getattr(k, "__slots__", ())
        if s not in ("__dict__", "__weakref__")}


def _poison_accumulator(t):
    ref = getattr(t, "_accum", None)
    node = ref() if isinstance(ref, weakref.ref) else ref
    if node is None:
        return

    def refuse(grad_outputs):
        raise RuntimeError(_POISONED)

    node.register_prehook(refuse)


def swap_tensors(t1, t2):
    """Exchange everything two tensors hold (data, dtype, autograd state, class, attributes)
    while each Python object keeps its identity.

    References to ``t1`` see ``t2``'s former contents afterwards and vice versa; this is how
    a module's parameters change dtype or device in place without breaking references held
    elsewhere (``nn.Module._apply`` with swapping turned on).

    Args:
        t1 (Tensor): the first tensor.
        t2 (Tensor): the second tensor.

    Returns:
        None

    Raises:
        RuntimeError: if either tensor is weakly referenced (the reference would silently
            change meaning), or their classes have different slots.

    Example:
        >>> import ember
        >>> a, b = ember.ones(2), ember.zeros(3, dtype=ember.int64)
        >>> ember.utils.swap_tensors(a, b)
        >>> a, b
        (tensor([0, 0, 0]), tensor([1., 1.]))
    """
    for name, t in (("t1", t1), ("t2", t2)):
        if weakref.getweakrefs(t):
            raise RuntimeError(f"Cannot swap {name} because it has weakref associated with it")
    for name, t in (("t1", t1), ("t2", t2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"swap_tensors(): expected {name} to be a Tensor, but got "
                            f"{type(t).__name__}")
    slots = _slots(type(t1))
    if slots != _slots(type(t2)):
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    _poison_accumulator(t1)
    _poison_accumulator(t2)

    t1.__class__, t2.__class__ = t2.__class__, t1.__class__
    d1, d2 = t1.__dict__, t2.__dict__
    t1.__dict__, t2.__dict__ = d2, d1
    missing = object()
    for slot in slots:
        v1, v2 = getattr(t1, slot, missing), getattr(t2, slot, missing)
        for t, v in ((t1, v2), (t2, v1)):
            if v is missing:
                if hasattr(t, slot):
                    delattr(t, slot)
            else:
                setattr(t, slot, v)
    t1._accum = t2._accum = None
