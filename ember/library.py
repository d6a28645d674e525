"""``ember.library``: custom operators, and extending ember with new devices and kernels.

Custom operators, with torch's API (``torch.library`` under ``import ember as torch``)::

    @ember.library.custom_op("mylib::numpy_sin", mutates_args=())
    def numpy_sin(x: ember.Tensor) -> ember.Tensor:
        return ember.from_numpy(np.sin(x.numpy()))

    @numpy_sin.register_fake
    def _(x):
        return ember.empty_like(x)

    numpy_sin.register_autograd(backward, setup_context=setup_context)

or, one step at a time, ``Library("mylib", "DEF")`` with ``.define("mysin(Tensor x) ->
Tensor")`` and ``.impl("mysin", fn, "CPU")``. Either way the operator is one of ember's ops:
listed by ``ember.list_ops()``, callable as ``ember.ops.mylib.numpy_sin`` (and
``.default``), seen by dispatch modes, with kernels per device type (NOTE [ Custom ops ] in
ember/_library/custom_ops.py). ``opcheck`` tests that its registrations are consistent.

A new device is an array library: ``register_backend("mydev", xp, ArrayType, to_device)``
makes ``ember.device("mydev")`` usable, and every op whose kernel is written against ``xp``
runs on it at once (autograd sits above the backends, so gradients come for free).
``impl(op, "mydev")`` gives one of ember's ops an array kernel of its own on that device,
e.g. a faster one; an op with neither raises NotImplementedError naming the op and device.
"""

from __future__ import annotations

import contextlib
import enum
import re
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from . import _dispatch
from ._core.device import device, known_types
from ._library import registration as _reg
from ._library import schema as _schema
from ._library.custom_ops import (
    AUTOGRAD, KERNEL, RULE, Formula, LibraryOp, fallthrough_kernel,
)
from ._library.opcheck import opcheck
from ._library.registration import Library
from ._library.registration import scoped_library as _scoped_library  # noqa: F401  (torch name)
from ._ops._registry import ops
from ._dispatch import OpOverload  # noqa: F401  (torch.library re-exports its OpOverload)

#: what ``device_types`` arguments accept: one device type, several, or None (every one)
device_types_t = str | Sequence[str] | None
#: a schema without an operator name, as ``custom_op(..., schema=)`` takes it
NAMELESS_SCHEMA = re.compile(r"\(.*\) -> .*")


class EffectType(enum.Enum):
    """Side effects an operator may declare: ``ORDERED`` calls must run in program order
    (ember runs every call eagerly and in order, so the declaration is always met).

    Example::

        >>> ember.library.EffectType.ORDERED.value
        'Ordered'
    """

    ORDERED = "Ordered"

__all__ = ["Library", "custom_op", "CustomOpDef", "define", "impl", "register_kernel",
           "register_fake", "register_autograd", "register_autocast", "register_torch_dispatch",
           "register_vmap", "get_ctx", "get_kernel", "triton_op", "wrap_triton", "opcheck",
           "infer_schema", "fallthrough_kernel", "impl_abstract", "register_backend",
           "backends", "registered_ops", "OpOverload", "EffectType", "NAMELESS_SCHEMA",
           "device_types_t", "SubclassNamespace"]

# ------------------------------------------------------------------------------------------------
# custom_op


class CustomOpDef:
    """A custom operator made by ``custom_op``: callable, and the place to register its
    kernels per device type, its fake (meta) rule and its autograd formula.

    Its operator is ``self._opoverload`` (``ember.ops.<ns>.<name>.default``).

    Args:
        namespace (str): the operator's namespace (``"mylib"``).
        name (str): its name.
        schema: its schema (parsed from ``fn``'s annotations by ``custom_op``).
        fn (callable): the Python implementation (the default kernel).
        tags (sequence of ember.Tag, optional): the operator's tags.

    Example::

        >>> @ember.library.custom_op("doc_cod::scale", mutates_args=())
        ... def scale(x: ember.Tensor, k: float) -> ember.Tensor:
        ...     return x * k
        >>> scale(ember.ones(2), 3.0)
        tensor([3., 3.])
        >>> scale
        <CustomOpDef(doc_cod::scale)>
    """

    def __init__(self, namespace: str, name: str, schema, fn: Callable, tags=None):
        if isinstance(schema, str):
            schema = _schema.parse_schema(schema, need_name=False)
        self._namespace = namespace
        self._name = name
        self._qualname = f"{namespace}::{name}"
        self._init_fn = fn
        self._tags = tags
        self._op = LibraryOp(self._qualname, schema, from_custom_op=True)
        self._op.opdef = self
        self._schema = self._op.schema
        self._opoverload = self._op.handle
        self.__name__ = getattr(fn, "__name__", name)
        self.__qualname__ = getattr(fn, "__qualname__", name)
        self.__module__ = getattr(fn, "__module__", None)
        self.__doc__ = getattr(fn, "__doc__", None)

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"

    def __call__(self, *args, **kwargs):
        """Run the operator (through the dispatcher, as ``ember.ops.<ns>.<name>`` does)."""
        return self._opoverload(*args, **kwargs)

    def register_kernel(self, device_types, fn: Callable | None = None, /):
        """Register ``fn`` as the kernel for ``device_types`` (usable as a decorator).

        Args:
            device_types: ``"cpu"``, ``"cuda"``, a sequence of them, or None for every
                device type.
            fn: the kernel, with the operator's signature.

        Returns:
            ``fn`` (or a decorator when ``fn`` is omitted).

        Example::

            >>> @ember.library.custom_op("doc_rk::plus", mutates_args=(), device_types="cpu")
            ... def plus(x: ember.Tensor) -> ember.Tensor:
            ...     return x + 1
            >>> @plus.register_kernel("cpu")
            ... def _(x):
            ...     return x + 2
            >>> plus(ember.zeros(1))
            tensor([2.])
        """

        def deco(f):
            for t in _reg.device_types_of(device_types):
                slot, key = _reg.slot_for_device_type(t)
                _reg.register(self._op, slot, key, f, None)
            return f

        return deco if fn is None else deco(fn)

    def register_fake(self, fn: Callable, /):
        """Register the fake rule: from inputs on the meta device, outputs of the right
        shapes and dtypes (usable as a decorator). It is the operator's kernel for the meta
        device, and ``opcheck`` compares it with the real kernel.

        Args:
            fn: a function with the operator's signature written in ember ops that never
                reads tensor data, e.g. ``lambda x: ember.empty_like(x)``.

        Returns:
            ``fn``.

        Example::

            >>> @ember.library.custom_op("doc_rf::numpy_neg", mutates_args=())
            ... def numpy_neg(x: ember.Tensor) -> ember.Tensor:
            ...     return ember.from_numpy(-x.numpy())
            >>> @numpy_neg.register_fake
            ... def _(x):
            ...     return ember.empty_like(x)
        """
        _reg.register(self._op, KERNEL, "meta", fn, None)
        return fn

    def register_vmap(self, fn: Callable | None = None, /):
        """Register how the operator runs under ``ember.vmap`` (usable as a decorator); see
        :func:`register_vmap`.

        Args:
            fn: ``fn(info, in_dims, *args, **kwargs) -> (output, out_dims)``.

        Returns:
            ``fn`` (or a decorator when ``fn`` is omitted).

        Example::

            >>> @ember.library.custom_op("doc_cvm::twice", mutates_args=())
            ... def twice(x: ember.Tensor) -> ember.Tensor:
            ...     return x * 2
            >>> @twice.register_vmap
            ... def _(info, in_dims, x):
            ...     return twice(x), in_dims[0]
        """
        return register_vmap(self, fn)

    def register_autocast(self, device_type: str, cast_inputs) -> None:
        """Register how the op runs under autocast; see ``ember.library.register_autocast``.

        Example::

            >>> @ember.library.custom_op("doc_rac::half", mutates_args=())
            ... def half(x: ember.Tensor) -> ember.Tensor:
            ...     return x / 2
            >>> half.register_autocast("cpu", ember.float32)
            >>> with ember.autocast("cpu", dtype=ember.bfloat16):
            ...     half(ember.ones(2, dtype=ember.bfloat16)).dtype
            ember.float32
        """
        register_autocast(self, device_type, cast_inputs)

    def register_autograd(self, backward: Callable, /, *,
                          setup_context: Callable | None = None) -> None:
        """Register the backward formula; see ``ember.library.register_autograd``.

        Example::

            >>> @ember.library.custom_op("doc_ra::cube", mutates_args=())
            ... def cube(x: ember.Tensor) -> ember.Tensor:
            ...     return x ** 3
            >>> def setup_context(ctx, inputs, output):
            ...     ctx.save_for_backward(inputs[0])
            >>> def backward(ctx, grad):
            ...     x, = ctx.saved_tensors
            ...     return grad * 3 * x ** 2
            >>> cube.register_autograd(backward, setup_context=setup_context)
            >>> x = ember.tensor([2.0], requires_grad=True)
            >>> cube(x).backward()
            >>> x.grad
            tensor([12.])
        """
        register_autograd(self, backward, setup_context=setup_context)

    def register_torch_dispatch(self, torch_dispatch_class, fn: Callable | None = None, /):
        """Register how the operator runs under a dispatch mode of class
        ``torch_dispatch_class`` (a decorator when ``fn`` is omitted); see
        ``ember.library.register_torch_dispatch``.

        Args:
            torch_dispatch_class: a ``TorchDispatchMode`` subclass.
            fn: ``fn(mode, func, types, args, kwargs)``, run instead of the mode's
                ``__torch_dispatch__`` for this operator.

        Returns:
            ``fn``, or a decorator.

        Example::

            >>> from ember.utils._python_dispatch import TorchDispatchMode
            >>> @ember.library.custom_op("doc_cod_rtd::neg", mutates_args=())
            ... def neg(x: ember.Tensor) -> ember.Tensor:
            ...     return -x
            >>> class Zeros(TorchDispatchMode):
            ...     pass
            >>> _ = neg.register_torch_dispatch(Zeros, lambda mode, func, types, args, kw:
            ...                                 ember.zeros(1))
            >>> with Zeros():
            ...     print(neg(ember.ones(1)))
            tensor([0.])
        """
        return register_torch_dispatch(self, torch_dispatch_class, fn)

    @contextlib.contextmanager
    def set_kernel_enabled(self, device_type: str, enabled: bool = True):
        """Context manager: turn the kernel registered for ``device_type`` off (or back on)
        while the ``with`` block runs; the kernel for every device type then runs instead.

        Args:
            device_type: e.g. ``"cpu"``.
            enabled: False to disable the kernel, True to enable it.

        Example::

            >>> @ember.library.custom_op("doc_ske::f", mutates_args=())
            ... def f(x: ember.Tensor) -> ember.Tensor:
            ...     return ember.zeros(1)
            >>> @f.register_kernel("cpu")
            ... def _(x):
            ...     return ember.ones(1)
            >>> with f.set_kernel_enabled("cpu", enabled=False):
            ...     print(f(ember.ones(1)))
            tensor([0.])
        """
        op = self._op
        action = "enable" if enabled else "disable"
        if op.active(KERNEL, device_type) is None:
            warnings.warn(f"Attempted to {action} kernel for {device_type} but no kernel was "
                          "registered for this device type.", stacklevel=3)
            yield
            return
        was_disabled = device_type in op.disabled
        if enabled != was_disabled:  # already in the state asked for
            yield
            return
        self._set_enabled(device_type, enabled)
        try:
            yield
        finally:
            self._set_enabled(device_type, not enabled)

    def _set_enabled(self, device_type, enabled):
        if enabled:
            self._op.disabled.discard(device_type)
        else:
            self._op.disabled.add(device_type)
        self._op._sync()


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args,
              device_types=None, schema: str | None = None, tags=None):
    """Make a custom operator from a Python function (usable as a decorator).

    The function's type annotations give the operator's schema (``Tensor``, ``int``,
    ``float``, ``bool``, ``str``, ``Optional[...]``, ``list[Tensor]``, ``Sequence[int]``,
    ``ember.dtype``, ``ember.device``, ...), unless ``schema`` is given. The operator is one
    of ember's ops: listed by ``ember.list_ops()``, callable as ``ember.ops.<ns>.<name>``
    and seen by dispatch modes (NOTE [ Custom ops ] in ember/_library/custom_ops.py).

    Args:
        name: ``"namespace::name"``, e.g. ``"mylib::my_linear"``.
        fn: the kernel: takes and returns Tensors; it must not return an input or a view of
            one.
        mutates_args: the names of the arguments ``fn`` writes to (their version counters
            are bumped), ``()`` for none, or ``"unknown"`` (every Tensor argument).
        device_types: the device type(s) ``fn`` is the kernel for; None: every device type.
        schema: a schema string such as ``"(Tensor x, int n) -> Tensor"``, instead of
            inferring one.
        tags: accepted for compatibility.

    Returns:
        A ``CustomOpDef`` (or a decorator making one).

    Example::

        >>> import numpy as np
        >>> @ember.library.custom_op("doc_co::numpy_sin", mutates_args=())
        ... def numpy_sin(x: ember.Tensor) -> ember.Tensor:
        ...     return ember.from_numpy(np.sin(x.numpy()))
        >>> numpy_sin(ember.zeros(2))
        tensor([0., 0.])
        >>> ember.ops.doc_co.numpy_sin.default._schema
        FunctionSchema('doc_co::numpy_sin(Tensor x) -> Tensor')
    """

    def inner(f):
        ns, opname = _reg.split_qualname(name, "custom_op")
        if "." in opname:
            raise ValueError(f"custom_op: {name!r} must not name an overload")
        _reg.own_namespace(ns, "custom_op")
        if schema is None:
            s = _schema.infer(f, mutates_args)
        else:
            s = _schema.parse_schema(schema, need_name=False)
            if s.name:
                raise ValueError(f"custom_op: the schema must not include a name (it is "
                                 f"{name!r}); got {schema!r}")
            if mutates_args != "unknown":
                if isinstance(mutates_args, str):
                    raise ValueError(
                        "mutates_args must either be a sequence of the names of the arguments "
                        "that are mutated or the string 'unknown'. ")
                if set(mutates_args) != s.mutated_names():
                    raise ValueError(
                        f"Attempted to create a custom op with `mutates_args={mutates_args}` "
                        f"and `schema={schema}. The schema suggests that the op mutates "
                        f"{s.mutated_names()}which is different from what was provided to us "
                        "in `mutates_args`. Please make these consistent.")
        qualname = f"{ns}::{opname}"
        existing = ops.get(qualname)
        if existing is not None:
            if isinstance(existing, LibraryOp) and existing.from_custom_op:
                existing.destroy()  # redefining a custom op (a re-run cell) replaces it
            else:
                raise RuntimeError(f"custom_op: an operator named {qualname} already exists")
        opdef = CustomOpDef(ns, opname, s, f, tags)
        opdef.register_kernel(device_types, f)
        return opdef

    return inner if fn is None else inner(fn)


# ------------------------------------------------------------------------------------------------
# the module-level registration functions


def define(qualname: str, schema: str, *, lib: Library | None = None, tags=()) -> None:
    """Define an operator from a qualified name and a nameless schema.

    Args:
        qualname: ``"namespace::name"``.
        schema: ``"(Tensor x) -> Tensor"`` (NOTE [ Schemas ]).
        lib: the Library whose lifetime the definition shares; default: forever.
        tags: accepted for compatibility.

    Example::

        >>> ember.library.define("doc_def::mysin", "(Tensor x) -> Tensor")
        >>> @ember.library.impl("doc_def::mysin", "cpu")
        ... def _(x):
        ...     return x.sin()
        >>> ember.ops.doc_def.mysin(ember.zeros(1))
        tensor([0.])
    """
    ns, name = _reg.split_qualname(qualname, "define")
    if not isinstance(schema, str) or not schema.lstrip().startswith("("):
        raise ValueError(f"define: expected a schema without a name, such as "
                         f"'(Tensor x) -> Tensor', got {schema!r}")
    _reg.library_for(qualname, lib).define(name + schema, tags=tags)


def impl(qualname, types=None, func: Callable | None = None, *, lib: Library | None = None):
    """Register a kernel of an operator for device types (usable as a decorator).

    Three forms share this name:

    - ``impl("namespace::name", types)``: torch's form, for custom operators. ``types`` is a
      device type (``"cpu"``, ``"cuda"``, ``"meta"``; ``"default"`` for every device type),
      one of torch's dispatch keys (``"CPU"``, ``"Autograd"``,
      ``"CompositeImplicitAutograd"``, ...) or a sequence of them; the kernel takes and
      returns Tensors.
    - ``impl(op_name, device_type)`` with one of ember's own ops (``"softmax"``): the
      kernel ``fn(*arrays, **params)`` takes and returns backend arrays, and replaces the
      op's kernel on that device type (e.g. a faster one, or one for a new backend).
    - ``impl(lib, name, dispatch_key="")``: torch's older form, a decorator that registers
      its function with ``lib.impl(name, fn, dispatch_key)``.

    Args:
        qualname: ``"namespace::name"`` or the name of one of ember's ops.
        types: device types or dispatch keys.
        func: the kernel; omitted, ``impl`` returns a decorator.
        lib: the Library whose lifetime the registration shares.

    Returns:
        ``func``, or a decorator.

    Example::

        >>> ember.library.define("doc_impl2::twice", "(Tensor x) -> Tensor")
        >>> @ember.library.impl("doc_impl2::twice", "cpu")
        ... def _(x):
        ...     return x * 2
        >>> ember.ops.doc_impl2.twice(ember.ones(1))
        tensor([2.])
    """
    if isinstance(qualname, Library):
        return _impl_in_library(qualname, types, func)
    if isinstance(qualname, str) and "::" not in qualname:
        return _impl_array_kernel(qualname, types, func)
    if types is None:
        raise TypeError("impl() missing 1 required positional argument: 'types'")
    pairs = []
    for t in ([types] if isinstance(types, str) else list(types)):
        if _reg.is_dispatch_key(t):
            pairs.append(_reg.slot_for_key(t, "impl"))
        else:
            pairs.append(_reg.slot_for_device_type(t))
    op = _reg.lookup(qualname, "impl")

    def register(fn):
        for slot, key in pairs:
            _reg.register(op, slot, key, fn, lib)
        return fn

    return register if func is None else register(func)


def _impl_in_library(lib, name, dispatch_key):
    """torch's older form ``impl(lib, name, dispatch_key="")``: a decorator registering its
    function with ``lib.impl(name, fn, dispatch_key)``."""
    if dispatch_key is None:
        dispatch_key = ""
    if not isinstance(dispatch_key, str):
        raise TypeError(f"impl(lib, name, dispatch_key): expected a dispatch key such as "
                        f"'CPU', got {type(dispatch_key).__name__}")

    def register(fn):
        lib.impl(name, fn, dispatch_key)
        return fn

    return register


def _impl_array_kernel(op_name, device_type, func):
    """ember's own form of ``impl``: an array kernel for one of ember's ops."""
    if op_name not in ops or isinstance(ops[op_name], LibraryOp):
        raise ValueError(f"impl: no op named '{op_name}' (see ember.list_ops()); custom "
                         "operators are named 'namespace::name'")
    if not isinstance(device_type, str):
        raise TypeError(f"impl: expected a device type such as 'cpu', got {device_type!r}")

    def register(fn):
        ops[op_name].register_kernel(device_type, fn)
        return fn

    return register if func is None else register(func)


def register_kernel(op, device_types, func: Callable | None = None, /, *,
                    lib: Library | None = None):
    """Register ``func`` as an operator's kernel for ``device_types`` (a decorator when
    ``func`` is omitted).

    Args:
        op: a CustomOpDef, an OpOverload or ``"namespace::name"``.
        device_types: ``"cpu"``, ``"cuda"``, a sequence of them, or None for every device
            type.
        func: the kernel, with the operator's signature.
        lib: the Library whose lifetime the registration shares.

    Returns:
        ``func``, or a decorator.

    Example::

        >>> ember.library.define("doc_regk::inc", "(Tensor x) -> Tensor")
        >>> _ = ember.library.register_kernel("doc_regk::inc", "cpu", lambda x: x + 1)
        >>> ember.ops.doc_regk.inc(ember.zeros(1))
        tensor([1.])
    """
    target = _reg.lookup(op, "register_kernel")
    pairs = [_reg.slot_for_device_type(t) for t in _reg.device_types_of(device_types)]

    def register(fn):
        for slot, key in pairs:
            _reg.register(target, slot, key, fn, lib)
        return fn

    return register if func is None else register(func)


def register_fake(op, func: Callable | None = None, /, *, lib: Library | None = None,
                  _stacklevel: int = 1, allow_override: bool = True):
    """Register an operator's fake rule (a decorator when ``func`` is omitted).

    The fake rule takes inputs that carry no data (meta tensors) and returns outputs of the
    right shapes, dtypes and devices, written in ember ops without reading tensor data. It is
    the operator's kernel on the meta device, and ``opcheck`` checks it against the real
    kernel.

    Args:
        op: a CustomOpDef, an OpOverload or ``"namespace::name"``.
        func: the fake rule, with the operator's signature.
        lib: the Library whose lifetime the registration shares.
        allow_override: False to refuse replacing a fake rule registered before (custom
            ops made by ``custom_op`` always allow it).

    Returns:
        ``func``, or a decorator.

    Example::

        >>> ember.library.define("doc_fake::lin", "(Tensor x, Tensor w) -> Tensor")
        >>> @ember.library.register_fake("doc_fake::lin")
        ... def _(x, w):
        ...     return x.new_empty(x.shape[0], w.shape[0])
    """
    target = _reg.lookup(op, "register_fake")

    def register(fn):
        if (not allow_override and not target.from_custom_op
                and target.active(KERNEL, "meta") is not None):
            raise RuntimeError(f"register_fake(...): the operator {target.name} already has a "
                               "fake impl registered")
        return _reg.register(target, KERNEL, "meta", fn, lib)

    return register if func is None else register(func)


def impl_abstract(qualname, func=None, *, lib=None, _stacklevel=1):
    """Deprecated name of ``register_fake``.

    Args:
        qualname (str): the operator, ``"namespace::name"``.
        func (callable, optional): the fake (meta) rule; without it, a decorator is returned.
        lib (Library, optional): the library the registration belongs to. Keyword-only.

    Example::

        >>> ember.library.define("doc_abs::f", "(Tensor x) -> Tensor")
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     _ = ember.library.impl_abstract("doc_abs::f", lambda x: ember.empty_like(x))
    """
    warnings.warn("`ember.library.impl_abstract` was renamed to `ember.library.register_fake`. "
                  "Please use that instead.", FutureWarning, stacklevel=2)
    return register_fake(qualname, func, lib=lib)


def register_autograd(op, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib: Library | None = None) -> None:
    """Register the backward formula of an operator, so gradients flow through it.

    ``setup_context(ctx, inputs, output)`` runs in the forward pass (for an operator with
    keyword-only arguments: ``setup_context(ctx, inputs, keyword_only_inputs, output)``,
    called with those keyword names); it saves what backward needs with
    ``ctx.save_for_backward(...)`` or as attributes of ``ctx``. ``backward(ctx, *grads)``
    gets one gradient per output and returns one per positional input (None for non-Tensor
    inputs, a list for a list of Tensors), and may read ``ctx.needs_input_grad``. Written in
    ember ops it is itself differentiable (``create_graph=True``).

    Args:
        op: a CustomOpDef, an OpOverload or ``"namespace::name"``; it must not mutate its
            arguments.
        backward: ``backward(ctx, *grads)``.
        setup_context: ``setup_context(ctx, inputs, output)``, or None.
        lib: the Library whose lifetime the registration shares.

    Example::

        >>> @ember.library.custom_op("doc_rega::mul3", mutates_args=())
        ... def mul3(x: ember.Tensor) -> ember.Tensor:
        ...     return x * 3
        >>> ember.library.register_autograd("doc_rega::mul3", lambda ctx, g: g * 3)
        >>> x = ember.ones(2, requires_grad=True)
        >>> mul3(x).sum().backward()
        >>> x.grad
        tensor([3., 3.])
    """
    target = _reg.lookup(op, "register_autograd")
    if target.schema.is_mutable:
        raise RuntimeError(
            f"Cannot register autograd formula for non-functional operator "
            f"{target.describe()} with schema {target.schema}. Please create a functional "
            "operator and register an autograd formula for that.")
    if not callable(backward):
        raise TypeError(f"register_autograd: backward must be callable, got "
                        f"{type(backward).__name__}")
    if setup_context is not None and not callable(setup_context):
        raise TypeError(f"register_autograd: setup_context must be callable, got "
                        f"{type(setup_context).__name__}")
    _reg.register(target, AUTOGRAD, None, Formula(backward, setup_context), lib)


_AUTOCAST_DEVICES = ("cpu", "cuda")


def register_autocast(op, device_type: str, cast_inputs, /, *, lib: Library | None = None) -> None:
    """Register how a custom operator runs under ``ember.autocast(device_type)``: its
    floating-point Tensor inputs on that device are cast to ``cast_inputs``, then it runs
    with autocast off (so the ops inside it are not cast again). Outside autocast, or on
    another device type, nothing changes.

    Args:
        op: a CustomOpDef, an OpOverload or ``"namespace::name"``.
        device_type: ``"cpu"`` or ``"cuda"``.
        cast_inputs: the dtype (an ``ember.dtype``) floating-point inputs are cast to.
        lib: the Library whose lifetime the registration shares.

    Example::

        >>> @ember.library.custom_op("doc_autocast::double", mutates_args=())
        ... def double(x: ember.Tensor) -> ember.Tensor:
        ...     return x * 2
        >>> ember.library.register_autocast("doc_autocast::double", "cpu", ember.float16)
        >>> with ember.autocast("cpu", dtype=ember.bfloat16):
        ...     double(ember.ones(2)).dtype
        ember.float16
    """
    from ._core.dtype import dtype as _dtype
    from ._library.custom_ops import AUTOCAST

    target = _reg.lookup(op, "register_autocast")
    if device_type not in _AUTOCAST_DEVICES:
        raise RuntimeError(
            f"register_autocast: expected device_type 'cpu' or 'cuda', but got "
            f"{device_type!r}")
    if not isinstance(cast_inputs, _dtype):
        raise TypeError(f"register_autocast: cast_inputs must be a dtype (e.g. "
                        f"ember.float16), not {type(cast_inputs).__name__}")
    _reg.register(target, AUTOCAST, device_type, cast_inputs, lib)


def register_torch_dispatch(op, torch_dispatch_class, func: Callable | None = None, /, *,
                            lib: Library | None = None):
    """Register how an operator runs under a dispatch mode of class ``torch_dispatch_class``
    (a decorator when ``func`` is omitted).

    While such a mode is the innermost one, a call of the operator runs
    ``func(mode, func_overload, types, args, kwargs)`` instead of the mode's
    ``__torch_dispatch__``.

    Args:
        op: a CustomOpDef, an OpOverload or ``"namespace::name"``.
        torch_dispatch_class: a ``TorchDispatchMode`` subclass.
        func: the rule.
        lib: the Library whose lifetime the registration shares.

    Returns:
        ``func``, or a decorator.

    Example::

        >>> from ember.utils._python_dispatch import TorchDispatchMode
        >>> @ember.library.custom_op("doc_rtd::ident", mutates_args=())
        ... def ident(x: ember.Tensor) -> ember.Tensor:
        ...     return x.clone()
        >>> class AddOne(TorchDispatchMode):
        ...     def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        ...         return func(*args, **(kwargs or {}))
        >>> @ember.library.register_torch_dispatch("doc_rtd::ident", AddOne)
        ... def _(mode, func, types, args, kwargs):
        ...     return args[0] + 1
        >>> with AddOne():
        ...     y = ident(ember.zeros(1))
        >>> y
        tensor([1.])
    """
    target = _reg.lookup(op, "register_torch_dispatch")
    if not isinstance(torch_dispatch_class, type):
        raise TypeError(f"register_torch_dispatch: expected a TorchDispatchMode subclass, "
                        f"got {torch_dispatch_class!r}")

    def register(fn):
        return _reg.register(target, RULE, torch_dispatch_class, fn, lib)

    return register if func is None else register(func)


def infer_schema(prototype_function: Callable, /, *, mutates_args, op_name: str | None = None,
                 tags=()) -> str:
    """The schema of a function, inferred from its type annotations (as ``custom_op`` does).

    Args:
        prototype_function: the annotated function.
        mutates_args: the names of the arguments it writes to, or ``"unknown"``.
        op_name: a name to put in front of the schema.
        tags: accepted for compatibility.

    Returns:
        The schema string.

    Example::

        >>> def f(x: ember.Tensor, n: int = 2) -> ember.Tensor: ...
        >>> ember.library.infer_schema(f, mutates_args=())
        '(Tensor x, SymInt n=2) -> Tensor'
        >>> ember.library.infer_schema(f, mutates_args={"x"}, op_name="f")
        'f(Tensor(a0!) x, SymInt n=2) -> Tensor'
    """
    return str(_schema.infer(prototype_function, mutates_args, op_name, python_text=True))


# ------------------------------------------------------------------------------------------------
# backends and the op listing


def register_backend(name, xp, array_type, to_device, device_of=None):
    """Add device type ``name`` whose arrays are ``array_type`` instances from library ``xp``.

    Args:
        name: the device type, an identifier (``"mydev"``).
        xp: the array namespace (NumPy-like) its kernels are written against.
        array_type: the type of its arrays.
        to_device: ``to_device(array)`` converts an array of any backend to this one.
        device_of: ``device_of(array) -> ember.device``; default: ``device(name)``.

    Example::

        >>> import numpy as np
        >>> class DocArray(np.ndarray): pass
        >>> ember.library.register_backend("docdev", np, DocArray,
        ...                                lambda a: np.asarray(a).view(DocArray))
        >>> "docdev" in ember.library.backends()
        True
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"register_backend: device type must be an identifier, got {name!r}")
    if name in _dispatch.backends_by_name:
        raise RuntimeError(f"register_backend: device type '{name}' is already registered")
    known_types.add(name)
    dev = device(name)
    if xp is np and isinstance(array_type, type) and issubclass(array_type, np.ndarray) and \
            array_type is not np.ndarray:
        xp = SubclassNamespace(np, array_type)

    def default_device_of(a):
        return dev

    _dispatch.register_backend(_dispatch.Backend(name, xp, array_type,
                                                 device_of or default_device_of, to_device))


class SubclassNamespace:
    """NumPy as the namespace of a device whose arrays are an ``ndarray`` subclass.

    NumPy's ufuncs keep a subclass by themselves, but its factories (``np.ones``) and many
    functions return plain ndarrays, which ember would take for CPU arrays; this namespace
    gives back every array a NumPy function returns as ``array_type`` (a view, no copy), so
    that kernels, autograd's gradients and optimizers' buffers stay on the device.
    ``register_backend`` uses it when given ``np`` itself with such a subclass.

    Args:
        module: ``numpy`` or one of its submodules.
        array_type: the device's ``ndarray`` subclass.

    Example::

        >>> class SubArray(np.ndarray): pass
        >>> type(SubclassNamespace(np, SubArray).ones(2)).__name__
        'SubArray'
    """

    def __init__(self, module, array_type):
        self._module = module
        self._array_type = array_type

    def _as_device(self, r):
        if isinstance(r, np.ndarray) and type(r) is not self._array_type:
            return r.view(self._array_type)
        if type(r) is tuple or type(r) is list:
            return type(r)(self._as_device(x) for x in r)
        if isinstance(r, tuple) and hasattr(r, "_fields"):  # NumPy's named results
            return type(r)(*(self._as_device(x) for x in r))
        return r

    def __getattr__(self, name):
        attr = getattr(self._module, name)
        if isinstance(attr, type(np)):  # np.linalg, np.fft, np.random
            wrapped = SubclassNamespace(attr, self._array_type)
        elif isinstance(attr, (type, np.ufunc)) or not callable(attr):
            wrapped = attr  # dtypes, classes, constants; ufuncs keep the subclass
        else:
            def wrapped(*args, __f=attr, **kwargs):
                return self._as_device(__f(*args, **kwargs))

            wrapped.__name__ = getattr(attr, "__name__", name)
        self.__dict__[name] = wrapped
        return wrapped


def backends() -> list:
    """The registered device types.

    Returns:
        The device type names, sorted (``"cpu"`` always among them).

    Example::

        >>> "cpu" in ember.library.backends()
        True
    """
    return sorted(_dispatch.backends_by_name)


def registered_ops() -> list:
    """Every op -- built-in and custom -- with its signature (a custom op's is its schema),
    the backends with kernels for it, and whether it is differentiable (``ember.list_ops``).

    Returns:
        A list of dicts with keys ``name``, ``signature``, ``backends``, ``differentiable``.

    Example::

        >>> any(row["name"] == "add" for row in ember.library.registered_ops())
        True
    """
    from ._ops._registry import list_ops

    rows = list_ops()
    for row in rows:
        op = ops.get(row["name"])
        if isinstance(op, LibraryOp):
            row["signature"] = op.schema.signature()
    return rows


# ------------------------------------------------------------------------------------------------
# vmap rules, fake-rule context, kernels by dispatch key, triton


#: the registration slot of a custom op's vmap rule (NOTE [ Custom ops ])
VMAP = "vmap"


def register_vmap(op, func: Callable | None = None, /, *, lib: Library | None = None):
    """Register how a custom operator runs under ``ember.vmap`` (a decorator when ``func``
    is omitted).

    Without a rule, ``vmap`` runs the operator once per example. With one, it calls
    ``func(info, in_dims, *args, **kwargs)`` once with the batched arguments: ``in_dims``
    holds, per positional argument, the dimension being mapped over (None for arguments
    not mapped, and for non-tensors); ``info.batch_size`` is the size of that dimension and
    ``info.randomness`` the ``vmap`` call's ``randomness``. It returns ``(output,
    out_dims)``, ``out_dims`` giving, per output, where its batch dimension is (or None).

    Args:
        op: a CustomOpDef, an OpOverload or ``"namespace::name"``.
        func: the rule.
        lib: the Library whose lifetime the registration shares.

    Returns:
        ``func``, or a decorator.

    Example::

        >>> @ember.library.custom_op("doc_vmap::mul", mutates_args=())
        ... def mul(x: ember.Tensor, y: ember.Tensor) -> ember.Tensor:
        ...     return x * y
        >>> @ember.library.register_vmap("doc_vmap::mul")
        ... def _(info, in_dims, x, y):
        ...     x = x.movedim(in_dims[0], 0) if in_dims[0] is not None else x
        ...     y = y.movedim(in_dims[1], 0) if in_dims[1] is not None else y
        ...     return x * y, 0
        >>> ember.vmap(mul)(ember.ones(3, 2), ember.ones(3, 2)).shape
        ember.Size([3, 2])
    """
    target = _reg.lookup(op, "register_vmap")

    def register(fn):
        if not callable(fn):
            raise TypeError(f"register_vmap: expected a function, got {type(fn).__name__}")
        return _reg.register(target, VMAP, None, fn, lib)

    return register if func is None else register(func)


def vmap_rule(op):
    """The rule ``register_vmap`` gave ``op`` (a registry op), or None.

    Args:
        op: an op of the registry (``ember.library.ops["ns::name"]``).

    Returns:
        The function registered with ``register_vmap``, or None when it has none (or is
        one of ember's own ops).

    Example::

        >>> @ember.library.custom_op("docvmap::twice", mutates_args=())
        ... def twice(x: ember.Tensor) -> ember.Tensor:
        ...     return x * 2
        >>> ember.library.vmap_rule(ember.library.ops["docvmap::twice"]) is None
        True
    """
    return op.active(VMAP) if isinstance(op, LibraryOp) else None


class FakeImplCtx:
    """What ``get_ctx()`` returns inside a fake rule.

    Example::

        >>> ctx = ember.library.get_ctx()
        >>> isinstance(ctx, ember.library.FakeImplCtx)
        True
    """

    def new_dynamic_size(self, *, min=0, max=None):
        """A size known only once the real kernel runs (the output of ``nonzero``, say).

        ember's fake rules run on the meta device, whose tensors have concrete shapes and no
        values, so such a size cannot be made there.

        Raises:
            NotImplementedError: always, naming the meta device.
        """
        raise NotImplementedError(
            "new_dynamic_size: this output's size depends on the input's values, which meta "
            "tensors do not have; ember has no symbolic sizes (run the op on real tensors)")

    new_unbacked_symint = new_dynamic_size
    create_unbacked_symint = new_dynamic_size  # torch._custom_ops' older name


def get_ctx() -> FakeImplCtx:
    """The context object of fake rules (``register_fake``); see :class:`FakeImplCtx`.

    Returns:
        A :class:`FakeImplCtx`.

    Example::

        >>> ember.library.get_ctx().new_dynamic_size.__name__
        'new_dynamic_size'
    """
    return FakeImplCtx()


class SafeKernelFunction:
    """A kernel found by :func:`get_kernel`; ``call_boxed(keyset, *args, **kwargs)`` runs it
    on those arguments, with no dispatch mode, autograd or other kernel in between.

    Args:
        name: the operator's name, for printing.
        key: the dispatch key it was found for, for printing.
        run: the kernel, called with the arguments of ``call_boxed``.

    Example::

        >>> k = ember.library.get_kernel("aten::mul.Tensor", "CPU")
        >>> k.call_boxed(None, ember.ones(2), ember.full((2,), 3.0))
        tensor([3., 3.])
    """

    def __init__(self, name, key, run):
        self._name, self._key, self._run = name, key, run

    def call_boxed(self, keyset, *args, **kwargs):
        """Run the kernel. ``keyset`` (the first argument of a ``with_keyset=True`` kernel)
        is accepted for torch's signature and not read."""
        return self._run(*args, **kwargs)

    def __repr__(self):
        return f"SafeKernelFunction(op={self._name}, dispatch_key={self._key})"


def get_kernel(op, dispatch_key) -> SafeKernelFunction:
    """The kernel an operator runs for a dispatch key (``"CPU"``, ``"CUDA"``, ``"Meta"``,
    ``"CompositeExplicitAutograd"``), so that a kernel registered later can call the one
    it replaces.

    Args:
        op: ``"aten::sin"``, ``"ns::name"`` (an optional ``.overload`` is read past), an
            OpOverload or a CustomOpDef.
        dispatch_key: the key, a string.

    Returns:
        A :class:`SafeKernelFunction`.

    Raises:
        RuntimeError: when the operator does not exist or has no kernel for the key.

    Example::

        >>> k = ember.library.get_kernel("aten::add.Tensor", "CPU")
        >>> k.call_boxed(None, ember.ones(2), ember.ones(2))
        tensor([2., 2.])
    """
    key = getattr(dispatch_key, "name", dispatch_key)
    slot, device_type = _reg.slot_for_key(key, "get_kernel")
    if isinstance(op, str) and op.startswith("aten::"):
        name = op[len("aten::"):].split(".")[0]
        target = ops.get(name)
        if target is None:
            raise RuntimeError(f"get_kernel: operator {op} does not exist")
    elif isinstance(op, _dispatch.OpOverload) and not isinstance(op.op, LibraryOp):
        target = op.op
        if target is None:
            raise RuntimeError(f"get_kernel: {op} has no kernel of its own (it is made of "
                               "other ops)")
    else:
        target = _reg.lookup(op, "get_kernel")
    if isinstance(target, LibraryOp):
        fn = target.active(slot, device_type)
        if fn is None and slot == KERNEL:
            fn = target.active(KERNEL, None)
        if fn is None:
            raise RuntimeError(f"get_kernel: {target.name} has no kernel for {key}")
        return SafeKernelFunction(target.name, key, fn)
    if slot != KERNEL:
        raise RuntimeError(f"get_kernel: ember's own ops have array kernels per device "
                           f"type only, not for {key}")
    backend = _dispatch.backends_by_name.get(device_type or "cpu")
    if backend is None:
        raise RuntimeError(f"get_kernel: no backend for {key}")
    array_kernel = target.resolve(backend.array_type)

    def run(*args, **kwargs):
        from ._core.tensor import Tensor, wrap

        arrays = [a._data if isinstance(a, Tensor) else a for a in args]
        res = array_kernel(*arrays, **kwargs)
        if isinstance(res, tuple):
            return tuple(wrap(backend.xp.asarray(r)) for r in res)
        return wrap(backend.xp.asarray(res))

    return SafeKernelFunction(target.name, key, run)


def triton_op(name: str, fn: Callable | None = None, /, *, mutates_args,
              schema: str | None = None):
    """Define a custom operator whose implementation launches Triton kernels through
    :func:`wrap_triton`. ember runs it eagerly like any ``custom_op`` (there is no graph
    compiler to see through it), so this is ``custom_op`` with the device types open.

    Args:
        name: ``"namespace::name"``.
        fn: the implementation (a decorator when omitted).
        mutates_args: names of the arguments it writes, or ``()``.
        schema: the schema, when it cannot be inferred from annotations.

    Returns:
        A :class:`CustomOpDef`.

    Example::

        >>> @ember.library.triton_op("doc_triton::plus", mutates_args=())
        ... def plus(x: ember.Tensor) -> ember.Tensor:
        ...     return x + 1
        >>> plus(ember.zeros(1))
        tensor([1.])
    """
    return custom_op(name, fn, mutates_args=mutates_args, schema=schema)


class _TritonLauncher:
    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            return self.kernel[grid](*args, **kwargs)

        return launch

    def run(self, *args, grid, warmup=False, **kwargs):
        return self.kernel.run(*args, grid=grid, warmup=warmup, **kwargs)


def wrap_triton(triton_kernel, /):
    """Make a Triton kernel callable from a :func:`triton_op` implementation:
    ``wrap_triton(kernel)[grid](*args)`` launches it (Triton itself, and a GPU, must be
    present; ember adds no compiler of its own).

    Args:
        triton_kernel: a ``@triton.jit`` function.

    Returns:
        An object that launches the kernel when indexed by a grid and called.

    Raises:
        RuntimeError: when ``triton_kernel`` is not a Triton kernel.

    Example::

        >>> ember.library.wrap_triton  # doctest: +ELLIPSIS
        <function wrap_triton at ...>
    """
    if not (hasattr(triton_kernel, "__getitem__") and hasattr(triton_kernel, "run")):
        raise RuntimeError("wrap_triton only works on functions annotated with triton.jit "
                           "or triton.autotune")
    return _TritonLauncher(triton_kernel)
