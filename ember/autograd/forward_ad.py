"""Forward-mode automatic differentiation: ``ember.autograd.forward_ad``.

Inside a dual level, a *dual tensor* made by ``make_dual(primal, tangent)`` carries its
tangent through every op; ``unpack_dual`` reads the output's tangent, the Jacobian-vector
product ``J @ tangent``. How it works: NOTE [ Forward-mode AD as a mode ] in
ember/autograd/_forward.py.

Example::

    >>> import ember
    >>> import ember.autograd.forward_ad as fwAD
    >>> x = ember.tensor([1., 2.])
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(x, ember.ones(2)) ** 2
    ...     fwAD.unpack_dual(y).tangent
    tensor([2., 4.])
"""

from __future__ import annotations

from typing import NamedTuple

from .._core.tensor import Tensor
from . import _forward

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual",
           "unpack_dual", "dual_level"]


def enter_dual_level():
    """Enter a new dual level (prefer the ``dual_level`` context manager).

    Returns:
        int: the level's index (0; levels do not nest).

    Raises:
        RuntimeError: a dual level is already active on this thread.

    Example::

        >>> lvl = enter_dual_level()
        >>> exit_dual_level(level=lvl)
    """
    return _forward.enter().index


def exit_dual_level(*, level=None):
    """Leave the current dual level; every tangent it gave is dropped.

    Args:
        level (int, optional): the level to leave, which must be the last one entered.
            Default: the current level.

    Raises:
        RuntimeError: no level is active, or ``level`` is not the last one entered.

    Example::

        >>> lvl = enter_dual_level()
        >>> exit_dual_level()
    """
    stack = _forward.levels.stack
    if not stack:
        raise RuntimeError("Dual level must be a positive number.")
    if level is None:
        level = stack[-1].index
    if level != stack[-1].index:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. "
            "This is not supported.")
    _forward.exit_level(stack[-1])


def _level_obj(level, what):
    stack = _forward.levels.stack
    if level is None:
        return stack[-1] if stack else None
    for lvl in stack:
        if lvl.index == level:
            return lvl
    return None


def _check_dtype(t, what):
    if t._data.dtype.kind not in "fc":
        raise ValueError(
            f"Expected {what} to be floating point or complex, but got: {t.dtype}")


def make_dual(tensor, tangent, *, level=None):
    """A view of ``tensor`` carrying ``tangent`` as its forward gradient at ``level``.

    Args:
        tensor (Tensor): the primal, floating point or complex.
        tangent (Tensor): its tangent: same shape, floating point or complex.
        level (int, optional): the dual level. Default: the current one.

    Returns:
        Tensor: the dual tensor (a view of ``tensor``).

    Raises:
        RuntimeError: no dual level is active, ``level`` names none that is, or the shapes
            differ.
        ValueError: ``tensor`` or ``tangent`` is not floating point or complex.

    Example::

        >>> import ember
        >>> with dual_level():
        ...     d = make_dual(ember.tensor([1.]), ember.tensor([3.]))
        ...     unpack_dual(d).tangent
        tensor([3.])
    """
    lvl = _level_obj(level, "make_dual")
    if lvl is None and level is not None and level >= 0:
        if level == 0 and not _forward.levels.stack:
            raise RuntimeError(
                "Trying to access a forward AD level with an invalid index. This index was "
                "either not created or is already deleted.")
        raise RuntimeError("Invalid level given to _make_dual")
    if lvl is None:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first.")
    if not isinstance(tensor, Tensor):
        raise TypeError(f"make_dual(): argument 'tensor' must be Tensor, not "
                        f"{type(tensor).__name__}")
    if not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual(): argument 'tangent' must be Tensor, not "
                        f"{type(tangent).__name__}")
    _check_dtype(tensor, "primal")
    _check_dtype(tangent, "tangent")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}.")
    if tensor.device != tangent.device:
        raise RuntimeError(
            "Trying to set a forward gradient that is on a different device than that of the "
            f"original Tensor: {tensor.device} and {tangent.device}.")
    dual = _primal_view(tensor)
    _forward.set_tangent(dual, lvl, tangent)
    return dual


def _primal_view(t):
    """A view of ``t`` (graph kept) that carries no tangent of any level."""
    from .._dispatch import apply
    from .._ops.shape import alias_op

    saved = _forward.levels.stack
    v = apply(alias_op, (t,), {}) if not saved else _no_fw(lambda: apply(alias_op, (t,), {}))
    v._tangent = {lvl: None for lvl in saved} if saved else None
    return v


def _no_fw(fn):
    """Run ``fn`` with this thread's dual levels off the mode stack."""
    from .. import _dispatch

    modes = _dispatch.state.modes
    _dispatch.state.modes = tuple(m for m in modes if not isinstance(m, _forward.DualLevel))
    try:
        return fn()
    finally:
        _dispatch.state.modes = modes


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal (a view of the dual tensor) and its tangent
    (None when it has none at that level).

    Args:
        primal (Tensor): the primal value.
        tangent (Tensor or None): its tangent at the current level.

    Example::

        >>> import ember.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     d = fwAD.make_dual(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 0.0]))
        ...     p, t = fwAD.unpack_dual(d * d)
        >>> p, t
        (tensor([1., 4.]), tensor([2., 0.]))
    """

    primal: Tensor
    tangent: Tensor | None


def unpack_dual(tensor, *, level=None):
    """Split a dual tensor into its primal and its tangent at ``level``.

    Args:
        tensor (Tensor): a tensor, dual or not.
        level (int, optional): the dual level. Default: the current one.

    Returns:
        UnpackedDualTensor: ``(primal, tangent)``; outside a dual level ``(tensor, None)``.

    Example::

        >>> import ember
        >>> with dual_level():
        ...     p, t = unpack_dual(make_dual(ember.zeros(1), ember.ones(1)))
        ...     t
        tensor([1.])
    """
    lvl = _level_obj(level, "unpack_dual")
    if lvl is None and level is not None and level >= 0 and _forward.levels.stack:
        raise RuntimeError("Invalid level given to _fw_primal")
    if lvl is None or not isinstance(tensor, Tensor):
        return UnpackedDualTensor(tensor, None)
    tangent = _forward.get_tangent(tensor, lvl)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    primal = _fw_primal_of(tensor, lvl)
    return UnpackedDualTensor(primal, tangent)


def _fw_primal_of(tensor, lvl):
    v = _no_fw(lambda: _primal_alias(tensor))
    d = dict(tensor._tangent) if getattr(tensor, "_tangent", None) else {}
    d[lvl] = None
    for other in _forward.levels.stack:
        if other is not lvl and other not in d:
            t = _forward.get_tangent(tensor, other)
            if t is not None:
                d[other] = t
    v._tangent = d
    return v


def _primal_alias(t):
    from .._dispatch import apply
    from .._ops.shape import alias_op

    return apply(alias_op, (t,), {})


def _fw_primal(self, level):
    """The primal of ``self`` at dual level ``level``: a view without that level's tangent.

    Args:
        level (int): the dual level.

    Returns:
        Tensor: a view of ``self``.

    Example::

        >>> import ember
        >>> with dual_level() as lvl:
        ...     make_dual(ember.ones(1), ember.ones(1))._fw_primal(lvl)
        tensor([1.])
    """
    lvl = _level_obj(level, "_fw_primal")
    if lvl is None:
        return _primal_alias(self)
    return _fw_primal_of(self, lvl)


Tensor._fw_primal = _fw_primal


class dual_level:
    """Context manager: enter a dual level on entry and leave it (dropping its tangents) on
    exit. Gives the level's index.

    Example::

        >>> import ember
        >>> with dual_level():
        ...     y = make_dual(ember.tensor(2.), ember.tensor(1.)).exp()
        ...     round(unpack_dual(y).tangent.item(), 4)
        7.3891
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()
        return None

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)

        return wrapper
