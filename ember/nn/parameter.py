"""``Parameter`` and ``Buffer``: tensors that modules register as their state."""

from __future__ import annotations

from .._core.tensor import Tensor
from .._overrides import _disabled_torch_function_impl


def _alias(cls, data):
    """A ``cls`` instance sharing ``data``'s storage and version counter, outside any graph."""
    return Tensor._make_subclass(cls, data)


class Parameter(Tensor):
    """A tensor that is a module parameter: assigning it to a Module attribute registers it.

    ``Parameter(data, requires_grad=True)`` shares ``data``'s memory. Operations on a
    Parameter return plain Tensors.

    Args:
        data (Tensor, optional): the values (default: an empty tensor).
        requires_grad (bool): whether it is trained. Default: True.

    Returns:
        The parameter.

    Example:
        >>> import ember
        >>> w = ember.nn.Parameter(ember.zeros(2))
        >>> w
        Parameter containing:
        tensor([0., 0.], requires_grad=True)
    """

    __slots__ = ()
    # operations on it give plain Tensors (NOTE [ __torch_function__ ])
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from .. import empty

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter(): expected data to be a Tensor, got {type(data).__name__}")
        as_parameter = getattr(type(data), "_as_parameter", None)
        if as_parameter is not None:  # a tensor subclass that stays itself (DTensor)
            return as_parameter(data, requires_grad)
        p = _alias(cls, data)
        if requires_grad:
            p.requires_grad_(True)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self.detach(), self._rg))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self._rg)
        memo[id(self)] = result
        return result


def _rebuild_parameter(data, requires_grad):
    return Parameter(data, requires_grad)


class UninitializedTensorMixin:
    """What the lazy modules' placeholders share (``UninitializedParameter``,
    ``UninitializedBuffer``): no shape or values until ``materialize(shape)`` gives them
    some and turns them into the class they stand for (``cls_to_become``).

    Example:
        >>> import ember
        >>> from ember.nn.parameter import UninitializedTensorMixin
        >>> isinstance(ember.nn.UninitializedBuffer(), UninitializedTensorMixin)
        True
    """

    __slots__ = ()

    def materialize(self, shape, device=None, dtype=None):
        """Give the placeholder its shape (uninitialised values) and turn it into
        ``cls_to_become``.

        Args:
            shape (tuple of int): the shape.
            device, dtype: where and how to create it (default: the placeholder's).

        Returns:
            None; the object itself changes class.

        Example:
            >>> import ember
            >>> b = ember.nn.UninitializedBuffer()
            >>> b.materialize((2,)); tuple(b.shape)
            (2,)
        """
        from .. import empty

        data = empty(*shape, dtype=dtype or self.dtype, device=device or self.device)
        self._data = data._data
        self.__class__ = self.cls_to_become

    def __repr__(self):
        return f"<{type(self).__name__}>"

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into "
            "an initialized one. Call `forward` to initialize the parameters before accessing "
            "their attributes.")


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (used by the Lazy modules); reading its
    shape or values is an error until ``materialize(shape)`` turns it into a Parameter.

    Args:
        requires_grad (bool): Default: True.
        device, dtype: where and how it will be created.

    Returns:
        The placeholder.

    Example:
        >>> import ember
        >>> p = ember.nn.UninitializedParameter()
        >>> p.materialize((2, 3))
        >>> type(p).__name__, tuple(p.shape)
        ('Parameter', (2, 3))
    """

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        from .. import empty

        p = Parameter.__new__(cls, empty(0, dtype=dtype, device=device), requires_grad)
        return p

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        # a fresh placeholder (Parameter's deepcopy would pass the data where the
        # placeholder takes requires_grad); the copy materialises on its own first call
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.requires_grad, self.device, self.dtype)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        return (type(self), (self.requires_grad, self.device, self.dtype))


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (used by the Lazy modules); reading its shape
    is an error until ``materialize(shape)`` gives it one.

    Args:
        requires_grad (bool): Default: False.
        device, dtype: where and how it will be created.

    Returns:
        The placeholder.

    Example:
        >>> import ember
        >>> b = ember.nn.UninitializedBuffer()
        >>> b.materialize((4,))
        >>> type(b).__name__, tuple(b.shape)
        ('Tensor', (4,))
    """

    __slots__ = ()
    # operations on it give plain Tensors (NOTE [ __torch_function__ ])
    __torch_function__ = _disabled_torch_function_impl
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        from .. import empty

        return _alias(cls, empty(0, dtype=dtype, device=device))

    def __init__(self, requires_grad=False, device=None, dtype=None):
        pass

    def __deepcopy__(self, memo):
        # as PyTorch: an uninitialized buffer cannot be copied (so neither can a lazy
        # module holding one, e.g. LazyBatchNorm1d, before its first call)
        raise ValueError(
            "Attempted to use an uninitialized parameter in Tensor.__deepcopy__. This error "
            "happens when you are using a `LazyModule` or explicitly manipulating "
            "`ember.nn.parameter.UninitializedBuffer` objects. When using LazyModules Call "
            "`forward` with a dummy batch to initialize the parameters before calling ember "
            "functions")


def is_lazy(param):
    """Whether ``param`` is a lazy module's placeholder, not materialised yet.

    Args:
        param: a parameter, buffer or tensor.

    Returns:
        bool: True for an ``UninitializedParameter`` or ``UninitializedBuffer``.

    Example:
        >>> import ember
        >>> from ember.nn.parameter import UninitializedParameter, is_lazy
        >>> is_lazy(UninitializedParameter()), is_lazy(ember.ones(1))
        (True, False)
    """
    return isinstance(param, UninitializedTensorMixin)


class _BufferMeta(type):
    # NOTE [ Buffers are plain tensors ]
    # As in torch, ``Buffer(t)`` is not an instance of a subclass: it returns a plain Tensor
    # (so it prints, pickles and computes as one) tagged ``_is_buffer`` and ``persistent``
    # in its ``__dict__``. ``isinstance(x, Buffer)`` reads the tag, so Module's attribute
    # assignment still recognises a buffer, and the tag survives pickling with the dict.
    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and bool(
                getattr(instance, "__dict__", {}).get("_is_buffer", False))
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """Marks a tensor as a module buffer when assigned to a Module attribute: state that is
    saved and moved with the module but not trained.

    Args:
        data (Tensor, optional): the values (default: an empty tensor).
        persistent (bool): include it in ``state_dict`` when assigned as an attribute.
            Default: True.

    Returns:
        Tensor: a plain tensor sharing ``data``'s memory, tagged as a buffer
        (``isinstance(b, Buffer)`` is True).

    Example:
        >>> import ember
        >>> m = ember.nn.Module()
        >>> m.steps = ember.nn.Buffer(ember.zeros(1))
        >>> list(m.state_dict()), type(m.steps).__name__
        (['steps'], 'Tensor')
    """

    __slots__ = ()
    # never instantiated (``__new__`` returns a plain Tensor): a class outside the
    # ``__torch_function__`` protocol, so defining it keeps the hot path's switch off
    __torch_function__ = _disabled_torch_function_impl

    def __new__(cls, data=None, *, persistent=True):
        from .. import empty

        if data is None:
            data = empty(0)
        b = data.detach().requires_grad_(data.requires_grad)
        b.__dict__["persistent"] = persistent
        b.__dict__["_is_buffer"] = True
        return b
