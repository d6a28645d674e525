"""``ember._foreach_*``: one op applied to every tensor of a list (PyTorch's foreach ops).

Optimizer libraries (timm's, Hugging Face's, lucidrains') write their steps with these:
``_foreach_mul_(exp_avgs, beta1)``, ``_foreach_addcdiv_(params, exp_avgs, denoms, -lr)``.
Each is a loop over ember's own ops, so dtypes, broadcasting, autograd, version counters
and error messages are those of the single-tensor op; what the list form adds is checked
here: the lists' lengths, the scalar-list form, the results as a tuple (in-place forms return
the list they were given).

NOTE [ Foreach forms ]
A binary op's second operand is one of: a Python number (applied to every tensor), a list
of numbers (one per tensor), a list of tensors (one per tensor, ``alpha`` allowed for
add/sub), or a single tensor (applied to every tensor; a 0-dim tensor or one
broadcastable to each). ``addcmul``/``addcdiv`` take their ``value`` as a number, a list
of numbers or a 1-D tensor of one value per tensor; ``lerp`` its ``weight`` as a number, a
list of numbers or a list of tensors. ``pow`` also accepts a number as the base.
"""

from __future__ import annotations

from numbers import Number

from ._core.tensor import Tensor

__all__: list = []  # filled below: every ``_foreach_<name>`` and ``_foreach_<name>_``


def _tensor_list(tensors, fname):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fname}() expected a list or tuple of Tensors as its first argument, "
                        f"got {type(tensors).__name__}")
    if len(tensors) == 0:
        raise RuntimeError("Tensor list must have at least one tensor.")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{fname}() expected a list of Tensors, got an element of type "
                            f"{type(t).__name__}")
    return tensors


def _per_tensor(other, n, fname, what="other"):
    """``other`` spread to one operand per tensor (NOTE [ Foreach forms ])."""
    if isinstance(other, (list, tuple)):
        if len(other) != n:
            if other and all(isinstance(o, Tensor) for o in other):
                raise RuntimeError(f"Tensor lists must have the same number of tensors, got {n} "
                                   f"and {len(other)}")
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(other)
    if isinstance(other, (Tensor, Number)) or other is None:
        return [other] * n
    raise TypeError(f"{fname}(): {what} must be a number, a list of numbers, a Tensor or a list "
                    f"of Tensors, got {type(other).__name__}")


def _result(out, tensors, inplace):
    return tensors if inplace else tuple(out)


def _make_unary(name, inplace):
    import ember

    fname = f"_foreach_{name}{'_' if inplace else ''}"

    def op(self):
        tensors = _tensor_list(self, fname)
        if inplace:
            for t in tensors:
                getattr(t, name + "_")()
            return tensors
        fn = getattr(ember, name)
        return tuple(fn(t) for t in tensors)

    op.__name__ = op.__qualname__ = fname
    op.__doc__ = f"""``ember.{name}`` of every tensor of a list{', in place' if inplace else ''}.

    Args:
        self (list of Tensors): the tensors.

    Returns:
        {'the same list, its tensors changed in place' if inplace else 'tuple of Tensors'}.

    Example:
        >>> import ember
        >>> len(ember.{fname}([ember.ones(2), ember.ones(3)]))
        2
    """
    return op


_EXAMPLE = {"add": "[3., 3.]", "sub": "[-1., -1.]", "mul": "[2., 2.]", "div": "[0.5000, 0.5000]",
            "clamp_max": "[1., 1.]", "clamp_min": "[2., 2.]", "maximum": "[2., 2.]",
            "minimum": "[1., 1.]"}
#: the ops that also take one tensor for the whole list
_TENSOR_FORM = {"add", "mul", "div"}
#: the scalar form of the ops whose single-tensor function takes tensors only
_SCALAR_FORM = {"maximum": "clamp_min", "minimum": "clamp_max"}


def _make_binary(name, method, inplace, alpha=False):
    import ember

    fname = f"_foreach_{name}{'_' if inplace else ''}"

    def op(self, other, *, alpha=None):
        tensors = _tensor_list(self, fname)
        if isinstance(other, Tensor):
            # one tensor for the whole list: add/mul/div take a 0-dim one as a tensor, the
            # others only as the number it holds
            if method in _TENSOR_FORM:
                if other.dim() != 0:
                    raise RuntimeError(f"{fname}(): a single Tensor operand must be 0-dim, got "
                                       f"shape {tuple(other.shape)}")
            elif other.dim() == 0 and alpha is None:
                other = other.item()
            else:
                raise TypeError(f"{fname}(): argument 'other' (position 2) must be a number, a "
                                "list of numbers or a list of Tensors, not Tensor")
        if alpha is not None and isinstance(other, Tensor) and method != "add":
            raise TypeError(f"{fname}() takes alpha with a list of Tensors only")
        others = _per_tensor(other, len(tensors), fname)
        kw = {} if alpha is None else {"alpha": alpha}
        if kw and not all(isinstance(o, Tensor) for o in others):
            raise TypeError(f"{fname}() got an unexpected keyword argument 'alpha' for a "
                            "scalar operand")

        def name_for(o):
            return _SCALAR_FORM.get(method, method) if isinstance(o, Number) else method

        if inplace:
            for t, o in zip(tensors, others):
                m = name_for(o)
                if hasattr(t, m + "_"):
                    getattr(t, m + "_")(o, **kw)
                else:  # maximum/minimum have no in-place method of their own
                    t.copy_(getattr(ember, m)(t, o))
            return tensors
        return tuple(getattr(ember, name_for(o))(t, o, **kw) for t, o in zip(tensors, others))

    if not alpha:
        def op_no_alpha(self, other):
            return op(self, other)
        run = op_no_alpha
    else:
        run = op
    run.__name__ = run.__qualname__ = fname
    run.__doc__ = f"""``ember.{method}`` of every tensor of a list with its operand{
        ', in place' if inplace else ''} (NOTE [ Foreach forms ] in ember/_foreach.py).

    Args:
        self (list of Tensors): the tensors.
        other (number, list of numbers, Tensor or list of Tensors): the second operand(s).{'''
        alpha (number, optional): multiplier of a tensor operand.''' if alpha else ''}

    Returns:
        {'the same list, changed in place' if inplace else 'tuple of Tensors'}.

    Example:
        >>> import ember
        >>> ember.{fname}([ember.ones(2), ember.zeros(1)], 2)[0]
        tensor({_EXAMPLE[method]})
    """
    return run


def _make_pointwise3(name, inplace):
    import ember

    fname = f"_foreach_{name}{'_' if inplace else ''}"

    def op(self, tensor1, tensor2, value=1):
        tensors = _tensor_list(self, fname)
        n = len(tensors)
        t1 = _per_tensor(tensor1, n, fname, "tensor1")
        t2 = _per_tensor(tensor2, n, fname, "tensor2")
        if isinstance(value, Tensor):
            if value.dim() != 1 or value.numel() != n:
                raise RuntimeError(f"{fname}(): a Tensor value must be 1-D with one scalar per "
                                   f"tensor ({n}), got shape {tuple(value.shape)}")
            values = [v for v in value.tolist()]
        else:
            values = _per_tensor(value, n, fname, "value")
        if inplace:
            for t, a, b, v in zip(tensors, t1, t2, values):
                getattr(t, name + "_")(a, b, value=v)
            return tensors
        fn = getattr(ember, name)
        return tuple(fn(t, a, b, value=v) for t, a, b, v in zip(tensors, t1, t2, values))

    op.__name__ = op.__qualname__ = fname
    op.__doc__ = f"""``ember.{name}`` over lists: ``self[i] + value[i] * (tensor1[i] {
        '*' if name == 'addcmul' else '/'} tensor2[i])``{', in place' if inplace else ''}.

    Args:
        self, tensor1, tensor2 (lists of Tensors): the operands, one per position.
        value (number, list of numbers or 1-D Tensor): the multiplier(s). Default: 1.

    Returns:
        {'the same list, changed in place' if inplace else 'tuple of Tensors'}.

    Example:
        >>> import ember
        >>> ember.{fname}([ember.zeros(2)], [ember.ones(2)], [ember.ones(2)], 3)[0]
        tensor([3., 3.])
    """
    return op


def _make_lerp(inplace):
    import ember

    fname = f"_foreach_lerp{'_' if inplace else ''}"

    def op(self, tensors1, weight):
        tensors = _tensor_list(self, fname)
        ends = _per_tensor(tensors1, len(tensors), fname, "tensors1")
        weights = _per_tensor(weight, len(tensors), fname, "weight")
        if inplace:
            for t, e, w in zip(tensors, ends, weights):
                t.lerp_(e, w)
            return tensors
        return tuple(ember.lerp(t, e, w) for t, e, w in zip(tensors, ends, weights))

    op.__name__ = op.__qualname__ = fname
    op.__doc__ = f"""``ember.lerp`` over lists: ``self[i] + weight * (tensors1[i] - self[i])``{
        ', in place' if inplace else ''}.

    Args:
        self, tensors1 (lists of Tensors): the start and end points.
        weight (number, list of numbers or list of Tensors): the interpolation weight(s).

    Returns:
        {'the same list, changed in place' if inplace else 'tuple of Tensors'}.

    Example:
        >>> import ember
        >>> ember.{fname}([ember.zeros(2)], [ember.ones(2)], 0.25)[0]
        tensor([0.2500, 0.2500])
    """
    return op


def _make_pow(inplace):
    import ember

    fname = f"_foreach_pow{'_' if inplace else ''}"

    def op(self, exponent):
        if isinstance(self, Number) and not inplace:
            tensors = _tensor_list(exponent, fname)
            return tuple(ember.pow(self, t) for t in tensors)
        tensors = _tensor_list(self, fname)
        exps = _per_tensor(exponent, len(tensors), fname, "exponent")
        if inplace:
            for t, e in zip(tensors, exps):
                t.pow_(e)
            return tensors
        return tuple(ember.pow(t, e) for t, e in zip(tensors, exps))

    op.__name__ = op.__qualname__ = fname
    op.__doc__ = f"""``ember.pow`` over a list: each tensor to its exponent{
        ', in place' if inplace else ' (or a number to each tensor as exponent)'}.

    Args:
        self (list of Tensors{'' if inplace else ', or a number'}): the bases.
        exponent (number, list of numbers, Tensor or list of Tensors): the exponent(s).

    Returns:
        {'the same list, changed in place' if inplace else 'tuple of Tensors'}.

    Example:
        >>> import ember
        >>> ember.{fname}([ember.full((2,), 3.0)], 2)[0]
        tensor([9., 9.])
    """
    return op


def _foreach_norm(self, ord=2, dtype=None):
    """The vector norm of every tensor of a list (``ember.linalg.vector_norm`` of each).

    Args:
        self (list of Tensors): the tensors.
        ord (number): the norm's order. Default: 2.
        dtype (ember.dtype, optional): compute and return in this type.

    Returns:
        tuple of 0-dim Tensors.

    Example:
        >>> import ember
        >>> ember._foreach_norm([ember.tensor([3.0, 4.0])])
        (tensor(5.),)
    """
    import ember

    tensors = _tensor_list(self, "_foreach_norm")
    return tuple(ember.linalg.vector_norm(t, ord, dtype=dtype) for t in tensors)


def _foreach_powsum(self, ord=2, dtype=None):
    """The sum of ``|x| ** ord`` over every tensor of a list (a norm before its root).

    Args:
        self (list of Tensors): the tensors.
        ord (number): the power. Default: 2.
        dtype (ember.dtype, optional): compute and return in this type.

    Returns:
        tuple of 0-dim Tensors.

    Example:
        >>> import ember
        >>> ember._foreach_powsum([ember.tensor([1.0, -2.0])])
        (tensor(5.),)
    """
    tensors = _tensor_list(self, "_foreach_powsum")
    out = []
    for t in tensors:
        x = t.to(dtype) if dtype is not None else t
        out.append(x.abs().pow(ord).sum())
    return tuple(out)


def _foreach_max(self):
    """The largest element of every tensor of a list.

    Args:
        self (list of Tensors): non-empty tensors.

    Returns:
        tuple of 0-dim Tensors.

    Example:
        >>> import ember
        >>> ember._foreach_max([ember.tensor([1, 5, 2])])
        (tensor(5),)
    """
    tensors = _tensor_list(self, "_foreach_max")
    for t in tensors:
        if t.numel() == 0:
            raise RuntimeError("_foreach_max cannot compute the maximum of an empty tensor; max "
                               "over zero elements is undefined.")
    return tuple(t.max() for t in tensors)


def _foreach_mm(self, mat2):
    """The matrix product of each pair of matrices of two lists.

    Args:
        self, mat2 (lists of 2-D Tensors): the left and right factors.

    Returns:
        tuple of Tensors.

    Example:
        >>> import ember
        >>> ember._foreach_mm([ember.ones(2, 3)], [ember.ones(3, 1)])[0].shape
        ember.Size([2, 1])
    """
    import ember

    tensors = _tensor_list(self, "_foreach_mm")
    others = _per_tensor(_tensor_list(mat2, "_foreach_mm"), len(tensors), "_foreach_mm", "mat2")
    return tuple(ember.mm(a, b) for a, b in zip(tensors, others))


def _foreach_clone(self, *, memory_format=None):
    """A copy of every tensor of a list.

    Args:
        self (list of Tensors): the tensors.
        memory_format (ember.memory_format, optional): the copies' layout.

    Returns:
        tuple of Tensors.

    Example:
        >>> import ember
        >>> ember._foreach_clone([ember.ones(2)])
        (tensor([1., 1.]),)
    """
    tensors = _tensor_list(self, "_foreach_clone")
    kw = {} if memory_format is None else {"memory_format": memory_format}
    return tuple(t.clone(**kw) for t in tensors)


def _foreach_copy_(self, src, non_blocking=False):
    """Copy every tensor of ``src`` into the tensor at the same position of ``self``.

    Args:
        self (list of Tensors): the destinations.
        src (list of Tensors): the sources, each broadcastable to its destination.
        non_blocking (bool): accepted for PyTorch's signature. Default: False.

    Returns:
        ``self``, changed in place.

    Example:
        >>> import ember
        >>> ember._foreach_copy_([ember.ones(2)], [ember.zeros(2)])
        [tensor([0., 0.])]
    """
    tensors = _tensor_list(self, "_foreach_copy_")
    srcs = _per_tensor(_tensor_list(src, "_foreach_copy_"), len(tensors), "_foreach_copy_",
                       "src")
    for t, s in zip(tensors, srcs):
        t.copy_(s, non_blocking=non_blocking)
    return tensors


def _foreach_zero_(self):
    """Fill every tensor of a list with zeros.

    Args:
        self (list of Tensors): the tensors.

    Returns:
        ``self``, changed in place.

    Example:
        >>> import ember
        >>> ember._foreach_zero_([ember.ones(2)])
        [tensor([0., 0.])]
    """
    tensors = _tensor_list(self, "_foreach_zero_")
    for t in tensors:
        t.zero_()
    return tensors


_UNARY = ("abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 "
          "log1p log2 neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh "
          "trunc").split()
#: name -> (the single-tensor op, whether it takes alpha)
_BINARY = {"add": ("add", True), "sub": ("sub", True), "mul": ("mul", False),
           "div": ("div", False), "clamp_max": ("clamp_max", False),
           "clamp_min": ("clamp_min", False), "maximum": ("maximum", False),
           "minimum": ("minimum", False)}


def _install(ns):
    for n in _UNARY:
        for inplace in (False, True):
            f = _make_unary(n, inplace)
            ns[f.__name__] = f
    for n, (method, alpha) in _BINARY.items():
        for inplace in (False, True):
            f = _make_binary(n, method, inplace, alpha)
            ns[f.__name__] = f
    for n in ("addcmul", "addcdiv"):
        for inplace in (False, True):
            f = _make_pointwise3(n, inplace)
            ns[f.__name__] = f
    for inplace in (False, True):
        for f in (_make_lerp(inplace), _make_pow(inplace)):
            ns[f.__name__] = f
    for f in (_foreach_norm, _foreach_powsum, _foreach_max, _foreach_mm, _foreach_clone,
              _foreach_copy_, _foreach_zero_):
        ns[f.__name__] = f
    __all__.extend(sorted(n for n in ns if n.startswith("_foreach_")))


_install(globals())
