"""``ember.amp.autocast``: mixed precision as a layer of the dispatcher's mode stack.

NOTE [ Autocast ]
While autocast is enabled for a device type on a thread, ``_AutocastMode`` sits on that
thread's mode stack at level 10 (NOTE [ Dispatch ] in ember/_dispatch.py) and sees every op
call. For an op of the device's list (NOTE [ Autocast op lists ] in ``_policy.py``) it casts
the floating-point inputs -- with ``Tensor.to``, which autograd records, so gradients flow
back to the inputs in their own dtype (float32 parameters get float32 ``.grad``) -- and calls
the op's handle, which runs the op with autocast popped: the ops a kernel is made of are not
cast again, as in PyTorch where the autocast kernel excludes its own dispatch key.

The state (enabled and dtype per device type, the cast cache, the nesting depth) is
thread-local, like the mode stack. The mode is pushed when a device type is enabled on the
thread and popped when none is, so with autocast off nothing is on the hot path.

Cast cache: inside the outermost autocast region, the low-precision copy of a float32 leaf
that requires grad (a parameter) is made once and reused; it is dropped when the outermost
region exits. As in PyTorch, an in-place update of the parameter inside the same region
(an optimizer step inside ``with autocast``) does not refresh the copy.
"""

from __future__ import annotations

import functools
import threading
import warnings
from typing import Any

from .. import _dispatch, _overrides
from .._core import dtype as _dt
from .._core.backend import backends_by_type
from .._core.tensor import Tensor
from .._library.custom_ops import AUTOCAST as _AUTOCAST
from . import _policy

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available"]

# PyTorch's device-type names (the message for another one lists them)
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip",
                 "ve", "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")
_NO_AUTOCAST = ("meta", "lazy", "hip", "mkldnn", "opengl", "opencl", "ideep", "ve", "fpga",
                "vulkan")
_BF16_DEFAULT = ("cpu", "hpu", "xla", "maia")
_CPU_DTYPES = (_dt.bfloat16, _dt.float16)
# float64 never takes part (NOTE [ Autocast op lists ])
_ELIGIBLE = {d.np for d in (_dt.float16, _dt.bfloat16, _dt.float32)}


def _device_type(device_type, what="device_type") -> str:
    """The device type of a device string (``"cuda:0"`` -> ``"cuda"``), checked."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `{what}` of type `str`, got: `{type(device_type)}`")
    name = device_type.split(":", 1)[0]
    if name not in _DEVICE_TYPES:
        raise RuntimeError(
            f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of device "
            f"string: {device_type}")
    return name


class _State(threading.local):
    def __init__(self):
        self.enabled = {}  # device type -> bool
        self.dtype = {}  # device type -> ember dtype
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}  # id(parameter) -> (parameter, its low-precision copy)
        self.mode = None  # the (_AutocastMode, _AutocastFunctionMode) pushed, or None
        self.suspended = 0  # > 0 while an autocast policy runs its op (NOTE [ Autocast ])


_state = _State()


def _default_dtype(device_type):
    if device_type in ("meta", "lazy"):
        raise RuntimeError("unsupported scalarType")
    return _dt.bfloat16 if device_type in _BF16_DEFAULT else _dt.float16


# ------------------------------------------------------------------------------------------
# the mode


def _tensor_device(t) -> str:
    return backends_by_type[type(t._data)].name


def _first_device(args, kwargs):
    for a in args:
        if isinstance(a, Tensor):
            return _tensor_device(a)
        if isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, Tensor):
                    return _tensor_device(x)
    for a in kwargs.values():
        if isinstance(a, Tensor):
            return _tensor_device(a)
    return "cpu"


def _eligible(t, device_type) -> bool:
    return t._data.dtype in _ELIGIBLE and _tensor_device(t) == device_type


def _cast_tensor(t, dtype, device_type, lower):
    if not _eligible(t, device_type) or t._data.dtype == dtype.np:
        return t
    st = _state
    if (dtype is lower and t._data.dtype == _dt.float32.np and st.cache_enabled and t._rg
            and t._grad_fn is None and t._base is None and _dispatch.state.grad_enabled):
        hit = st.cache.get(id(t))
        if hit is not None and hit[0] is t:
            return hit[1]
        c = t.to(dtype)
        st.cache[id(t)] = (t, c)
        return c
    return t.to(dtype)


def _cast_all(x, dtype, device_type, lower):
    if isinstance(x, Tensor):
        return _cast_tensor(x, dtype, device_type, lower)
    if isinstance(x, (list, tuple)) and any(isinstance(v, (Tensor, list, tuple)) for v in x):
        return type(x)(_cast_all(v, dtype, device_type, lower) for v in x)
    return x


def _tensors(x):
    if isinstance(x, Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _tensors(v)


def _widest(args, kwargs, device_type, lower):
    """PyTorch's promotion among autocast inputs: float32 wins over the autocast dtype;
    any other lower precision beside the autocast dtype is an error."""
    current = lower
    for t in _tensors((args, tuple(kwargs.values()))):
        if not _eligible(t, device_type):
            continue
        d = t.dtype
        if current is _dt.float32 or d is _dt.float32:
            current = _dt.float32
        elif not (current is lower and d is lower):
            raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current


def _run(call, policy, round_trip, device_type, args, kwargs):
    """Apply ``policy`` to one call (NOTE [ Autocast ]): cast the arguments, run ``call``
    with autocast suspended, cast the outputs where the policy says so."""
    st = _state
    lower = st.dtype.get(device_type) or _default_dtype(device_type)
    if isinstance(policy, _dt.dtype):  # a custom op's register_autocast dtype
        to = policy
    elif policy == _policy.PLAIN:
        to = None
    elif policy == _policy.LOWER:
        to = lower
    elif policy == _policy.PROMOTE:
        to = _widest(args, kwargs, device_type, lower)
    elif policy == _policy.FP32_IF_OPT_DTYPE and kwargs.get("dtype") is not None:
        to = None
    elif policy == _policy.BANNED:
        raise RuntimeError(_policy.BANNED_MESSAGE)
    else:
        to = _dt.float32
    if to is not None:
        args = _cast_all(tuple(args), to, device_type, lower)
        kwargs = {k: _cast_all(v, to, device_type, lower) for k, v in kwargs.items()}
        if policy == _policy.LOWER and round_trip:
            # NOTE [ Autocast round trip ] in _policy.py
            args = _cast_all(args, _dt.float32, device_type, lower)
            kwargs = {k: _cast_all(v, _dt.float32, device_type, lower)
                      for k, v in kwargs.items()}
            policy = _policy.FP32_THEN_LOWER
    st.suspended += 1
    try:
        out = call(*args, **kwargs)
    finally:
        st.suspended -= 1
    if policy == _policy.FP32_THEN_LOWER:
        out = _cast_all(out, lower, device_type, lower)
    return out


class _AutocastMode(_dispatch.Mode):
    """The door layer: casts the inputs of the ops in the autocast lists (NOTE [ Autocast ])."""

    level = 10
    #: every other built-in op passes this layer unchanged, so its calls skip the stack
    #: (NOTE [ Modes that name their ops ] in ember/_dispatch.py)
    _ember_ops = frozenset(name for table in _policy.POLICIES.values() for name in table)
    #: casts change the calls, never what a tensor holds (``_dispatch.plain_data``)
    _ember_keeps_data = True

    def dispatch(self, handle, args, kwargs):
        st = _state
        packet = getattr(handle, "overloadpacket", None)
        if st.suspended or packet is None or handle.is_inplace or handle._overloadname == "out":
            return handle(*args, **kwargs)
        device_type = _first_device(args, kwargs)
        if not st.enabled.get(device_type):
            return handle(*args, **kwargs)
        op = handle.op
        if op is not None and not op.is_builtin:  # a custom op: its register_autocast rule
            to = op.active(_AUTOCAST, device_type)
            if to is None:
                return handle(*args, **kwargs)
            if callable(to) and not isinstance(to, _dt.dtype):  # a kernel at Autocast<Device>
                st.suspended += 1
                try:
                    return to(*args, **kwargs)
                finally:
                    st.suspended -= 1
            return _run(handle, to, False, device_type, args, kwargs)
        name = packet.__name__
        policy = _policy.POLICIES.get(device_type, {}).get(name)
        if policy is not None and callable(policy):
            policy = policy(handle, args, kwargs)
        if policy is None:
            return handle(*args, **kwargs)
        # (the round trip is for the CPU's kernels; CUDA's take half precision natively)
        return _run(handle, policy, device_type == "cpu" and name in _policy.ROUND_TRIP,
                    device_type, args, kwargs)


class _AutocastFunctionMode:
    """The outer layer, on the ``__torch_function__`` stack: applies the policies to public
    calls before they validate their arguments (NOTE [ Autocast before validation ])."""

    #: the only functions this layer acts on: calls of others skip it (``_overrides._consult``)
    _ember_names = _policy.FUNCTION_NAMES

    def __torch_function__(self, func, types, args=(), kwargs=None):
        st = _state
        name = getattr(func, "__name__", None)
        module = getattr(func, "__module__", None) or ""
        if name not in _policy.FUNCTION_NAMES or st.suspended or types or \
                not (module == "ember" or module.startswith("ember.")):
            return NotImplemented
        kwargs = kwargs or {}
        device_type = _first_device(args, kwargs)
        if not st.enabled.get(device_type):
            return NotImplemented
        policy = _policy.FUNCTION_POLICIES.get(device_type, {}).get(name)
        if policy is None:
            return NotImplemented
        if callable(policy):
            policy = policy(func, args, kwargs)
        trip = device_type == "cpu" and name in _policy.FUNCTIONS_ROUND_TRIP
        return _run(func, policy, trip, device_type, args, kwargs)


def _sync_mode():
    """Push the two layers when some device type is enabled on this thread, pop them when
    none is."""
    st = _state
    on = any(st.enabled.values())
    if on and st.mode is None:
        st.mode = (_AutocastMode(), _AutocastFunctionMode())
        _dispatch.push_mode(st.mode[0])
        _overrides.push_mode(st.mode[1])
    elif not on and st.mode is not None:
        (door, outer), st.mode = st.mode, None
        _overrides.pop_mode(outer)
        _dispatch.pop_mode(door)


# ------------------------------------------------------------------------------------------
# the state functions (``torch.is_autocast_enabled`` and friends)


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is enabled for ``device_type`` on this thread.

    Args:
        device_type: ``"cpu"``, ``"cuda"``, ...; without it, CUDA (PyTorch's legacy form).

    Returns:
        bool.

    Example::

        >>> with ember.autocast("cpu"):
        ...     ember.is_autocast_enabled("cpu")
        True
    """
    d = "cuda" if device_type is None else _device_type(device_type)
    return bool(_state.enabled.get(d, False))


def set_autocast_enabled(*args) -> None:
    """Enable or disable autocast for a device type on this thread:
    ``set_autocast_enabled(device_type, enabled)``, or ``set_autocast_enabled(enabled)`` for
    CUDA. Prefer ``ember.autocast`` as a context manager, which restores the state.

    Args:
        device_type (str): the device type.
        enabled (bool): the new state.

    Returns:
        None.

    Example::

        >>> ember.set_autocast_enabled("cpu", True)
        >>> ember.is_autocast_enabled("cpu")
        True
        >>> ember.set_autocast_enabled("cpu", False)
    """
    if len(args) == 1:
        d, enabled = "cuda", args[0]
    elif len(args) == 2:
        d, enabled = _device_type(args[0]), args[1]
    else:
        raise TypeError(f"set_autocast_enabled() takes 1 or 2 arguments ({len(args)} given)")
    _state.enabled[d] = bool(enabled)
    _sync_mode()


def get_autocast_dtype(device_type: str):
    """The dtype autocast casts to on ``device_type`` (bfloat16 on the CPU by default,
    float16 on CUDA).

    Args:
        device_type (str): the device type.

    Returns:
        ember.dtype.

    Example::

        >>> ember.get_autocast_dtype("cpu")
        ember.bfloat16
    """
    d = _device_type(device_type)
    return _state.dtype.get(d) or _default_dtype(d)


def set_autocast_dtype(device_type: str, dtype) -> None:
    """Set the dtype autocast casts to on ``device_type`` for this thread.

    Args:
        device_type (str): the device type.
        dtype (ember.dtype): the new autocast dtype.

    Returns:
        None.

    Example::

        >>> ember.set_autocast_dtype("cpu", ember.float16)
        >>> ember.get_autocast_dtype("cpu")
        ember.float16
        >>> ember.set_autocast_dtype("cpu", ember.bfloat16)
    """
    _state.dtype[_device_type(device_type)] = dtype


def is_autocast_cache_enabled() -> bool:
    """Whether autocast caches the low-precision copies of parameters (NOTE [ Autocast ]).

    Returns:
        bool.

    Example::

        >>> ember.is_autocast_cache_enabled()
        True
    """
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn autocast's cast cache on or off for this thread.

    Args:
        enabled (bool): the new state.

    Returns:
        None.

    Example::

        >>> ember.set_autocast_cache_enabled(True)
    """
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop autocast's cached low-precision copies of parameters.

    Returns:
        None.

    Example::

        >>> ember.clear_autocast_cache()
    """
    _state.cache.clear()


def autocast_increment_nesting() -> int:
    """Count one more entered autocast region; returns the new depth.

    Returns:
        int.

    Example::

        >>> ember.autocast_increment_nesting()
        1
        >>> ember.autocast_decrement_nesting()
        0
    """
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    """Count one autocast region less; returns the new depth (0: the outermost exited).

    Returns:
        int.

    Example::

        >>> ember.autocast_increment_nesting()
        1
        >>> ember.autocast_decrement_nesting()
        0
    """
    _state.nesting -= 1
    return _state.nesting


def _legacy(name, device_type, kind):
    """One of the per-device legacy functions (``is_autocast_cpu_enabled`` ...): it warns
    with DeprecationWarning, as PyTorch does, and calls the device-type form."""
    forms = {
        "is": ("()", f"is_autocast_enabled('{device_type}')",
               lambda: is_autocast_enabled(device_type)),
        "set": ("(enabled)", f"set_autocast_enabled('{device_type}', enabled)",
                lambda enabled: set_autocast_enabled(device_type, enabled)),
        "get_dtype": ("()", f"get_autocast_dtype('{device_type}')",
                      lambda: get_autocast_dtype(device_type)),
        "set_dtype": ("(dtype)", f"set_autocast_dtype('{device_type}', dtype)",
                      lambda dtype: set_autocast_dtype(device_type, dtype)),
    }
    args, new, impl = forms[kind]

    def fn(*a):
        warnings.warn(f"torch.{name}{args} is deprecated. Please use torch.{new} instead.",
                      DeprecationWarning, stacklevel=2)
        return impl(*a)

    fn.__name__ = fn.__qualname__ = name
    example = {"is": f"is_autocast_enabled('{device_type}')",
               "set": f"set_autocast_enabled('{device_type}', False)",
               "get_dtype": f"get_autocast_dtype('{device_type}')",
               "set_dtype": f"set_autocast_dtype('{device_type}', "
                            f"ember.get_autocast_dtype('{device_type}'))"}[kind]
    fn.__doc__ = (f"Deprecated form of ``{new}``.\n\n"
                  f"    Args:\n        *a: the arguments ``{args}`` of the new form, "
                  f"passed on.\n\n"
                  f"    Returns:\n        What ``{new}`` returns.\n\n"
                  f"    Example::\n\n"
                  f"        >>> _ = ember.{example}\n")
    return fn


is_autocast_cpu_enabled = _legacy("is_autocast_cpu_enabled", "cpu", "is")
set_autocast_cpu_enabled = _legacy("set_autocast_cpu_enabled", "cpu", "set")
get_autocast_cpu_dtype = _legacy("get_autocast_cpu_dtype", "cpu", "get_dtype")
set_autocast_cpu_dtype = _legacy("set_autocast_cpu_dtype", "cpu", "set_dtype")
get_autocast_gpu_dtype = _legacy("get_autocast_gpu_dtype", "cuda", "get_dtype")
set_autocast_gpu_dtype = _legacy("set_autocast_gpu_dtype", "cuda", "set_dtype")
is_autocast_xla_enabled = _legacy("is_autocast_xla_enabled", "xla", "is")
set_autocast_xla_enabled = _legacy("set_autocast_xla_enabled", "xla", "set")
get_autocast_xla_dtype = _legacy("get_autocast_xla_dtype", "xla", "get_dtype")
set_autocast_xla_dtype = _legacy("set_autocast_xla_dtype", "xla", "set_dtype")
is_autocast_ipu_enabled = _legacy("is_autocast_ipu_enabled", "ipu", "is")
set_autocast_ipu_enabled = _legacy("set_autocast_ipu_enabled", "ipu", "set")
get_autocast_ipu_dtype = _legacy("get_autocast_ipu_dtype", "ipu", "get_dtype")
set_autocast_ipu_dtype = _legacy("set_autocast_ipu_dtype", "ipu", "set_dtype")


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast supports ``device_type``.

    Args:
        device_type (str): ``"cpu"``, ``"cuda"``, ...

    Returns:
        bool.

    Example::

        >>> ember.amp.is_autocast_available("cpu")
        True
    """
    return _device_type(device_type) not in _NO_AUTOCAST


# ------------------------------------------------------------------------------------------
# the context manager


def _cuda_available() -> bool:
    import sys

    cuda = sys.modules.get("ember.cuda")
    try:
        return bool(cuda is not None and cuda.is_available())
    except Exception:  # a broken CuPy install counts as no CUDA
        return False


class autocast:
    """Run the ops of a region in mixed precision: matrix products and convolutions in a
    lower precision dtype, ops that need range (losses, reductions of products, linear
    algebra) in float32 (NOTE [ Autocast op lists ]). A context manager and a decorator.

    Args:
        device_type (str): ``"cpu"`` or ``"cuda"`` (``"cuda:0"`` is read as ``"cuda"``).
        dtype (ember.dtype, optional): the lower precision; default
            ``get_autocast_dtype(device_type)`` (bfloat16 on the CPU, float16 on CUDA). The
            CPU supports bfloat16 and float16; another dtype warns and disables autocast.
        enabled (bool): False runs the region without autocast (also inside another one).
        cache_enabled (bool, optional): cache the low-precision copies of parameters for
            the region; default ``is_autocast_cache_enabled()``.

    Returns:
        The context manager; as a decorator, the wrapped function.

    Example::

        >>> lin = ember.nn.Linear(4, 2)
        >>> with ember.autocast("cpu", dtype=ember.bfloat16):
        ...     y = lin(ember.ones(3, 4))
        >>> y.dtype
        ember.bfloat16
        >>> y.float().sum().backward()
        >>> lin.weight.grad.dtype
        ember.float32
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        dev = _device_type(device_type)
        self.fast_dtype = get_autocast_dtype(dev) if dtype is None else dtype
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None \
            else cache_enabled
        if dev == "cuda" and enabled and not _cuda_available():
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                          UserWarning, stacklevel=2)
            enabled = False
        if dev == "cpu" and self.fast_dtype not in _CPU_DTYPES:
            if enabled:
                warnings.warn(
                    "In CPU autocast, but the target dtype is not supported. Disabling "
                    "autocast.\nCPU Autocast only supports dtypes of torch.bfloat16, "
                    "torch.float16 currently.", UserWarning, stacklevel=2)
            enabled = False
        self._enabled = enabled
        self._dev = dev
        self._saved = []

    def __enter__(self):
        st = _state
        self._saved.append((st.cache_enabled, st.enabled.get(self._dev, False),
                            st.dtype.get(self._dev)))
        st.dtype[self._dev] = self.fast_dtype
        autocast_increment_nesting()
        st.cache_enabled = bool(self._cache_enabled)
        st.enabled[self._dev] = bool(self._enabled)
        _sync_mode()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        st = _state
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        cache, enabled, dtype = self._saved.pop()
        st.enabled[self._dev] = enabled
        if dtype is None:
            st.dtype.pop(self._dev, None)
        else:
            st.dtype[self._dev] = dtype
        st.cache_enabled = cache
        _sync_mode()
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        decorate_autocast.__script_unsupported = (
            "@autocast() decorator is not supported in script mode")
        return decorate_autocast


def _enter_autocast(*vals):
    """Enter an autocast region made from ``autocast(*vals)``; returns it (for
    ``_exit_autocast``)."""
    mode = autocast(*vals)
    mode.__enter__()
    return mode


def _exit_autocast(mode):
    """Exit a region entered with ``_enter_autocast``."""
    mode.__exit__(None, None, None)


# ------------------------------------------------------------------------------------------
# custom autograd Functions under autocast


def _cast(value, device_type: str, dtype):
    """``value`` with its eligible floating-point tensors (on ``device_type``, not float64)
    cast to ``dtype``; containers are rebuilt, anything else is returned as it is."""
    if isinstance(value, Tensor):
        ok = value._data.dtype in _ELIGIBLE and _tensor_device(value) == device_type
        return value.to(dtype) if ok else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        it = (_cast(v, device_type, dtype) for v in value)
        return type(value)(*it) if hasattr(value, "_fields") else type(value)(it)
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs: Any = None):
    """Decorator for the ``forward`` of a custom ``autograd.Function`` used under autocast.

    Without ``cast_inputs`` the forward runs in the surrounding autocast state and
    ``custom_bwd`` makes the backward run in the same state. With ``cast_inputs`` the
    forward runs with autocast disabled, its floating-point inputs cast to that dtype (only
    when autocast is enabled where it is called).

    Args:
        fwd: the forward staticmethod (omit to get a decorator).
        device_type (str): the device type, ``"cpu"`` or ``"cuda"``.
        cast_inputs (ember.dtype, optional): the dtype to run the forward in.

    Returns:
        The wrapped forward.

    Example::

        >>> class Double(ember.autograd.Function):
        ...     @staticmethod
        ...     @ember.amp.custom_fwd(device_type="cpu", cast_inputs=ember.float32)
        ...     def forward(ctx, x):
        ...         return x * 2
        ...     @staticmethod
        ...     @ember.amp.custom_bwd(device_type="cpu")
        ...     def backward(ctx, g):
        ...         return g * 2
        >>> with ember.autocast("cpu"):
        ...     Double.apply(ember.ones(2, dtype=ember.bfloat16)).dtype
        ember.float32
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        on = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if not on:
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs),
                       **_cast(kwargs, device_type, cast_inputs))

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for the ``backward`` of a custom ``autograd.Function``: runs it in the
    autocast state its ``custom_fwd`` forward ran in.

    Args:
        bwd: the backward staticmethod (omit to get a decorator).
        device_type (str): the device type, ``"cpu"`` or ``"cuda"``.

    Returns:
        The wrapped backward.

    Example::

        >>> class Square(ember.autograd.Function):
        ...     @staticmethod
        ...     @ember.amp.custom_fwd(device_type="cpu")
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     @ember.amp.custom_bwd(device_type="cpu")
        ...     def backward(ctx, g):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * g
        >>> x = ember.ones(2, requires_grad=True)
        >>> Square.apply(x).sum().backward()
        >>> x.grad
        tensor([2., 2.])
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast,
                      dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
