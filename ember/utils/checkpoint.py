"""``ember.utils.checkpoint``: trade compute for memory by recomputing a block in backward.

NOTE [ Checkpointing ]
A checkpointed block keeps none of its intermediate tensors for backward; backward runs the
block again to get them. Two ways, as in PyTorch:

- reentrant (``use_reentrant=True``, the default when not given, with a warning): the block
  is one ``autograd.Function``. Its forward runs the block under ``no_grad``; its backward
  reruns it under ``enable_grad`` on detached inputs and calls ``autograd.backward`` on the
  rerun's outputs -- a backward inside the backward. Tensor outputs only; keyword arguments
  are refused.
- non-reentrant (``use_reentrant=False``): the block runs normally, but under saved-tensor
  hooks (``autograd.graph.saved_tensors_hooks``) whose pack hook keeps only an index. The
  first unpack in backward reruns the block under hooks that collect what it saves, in the
  same order, and hands each saved tensor out once. Any outputs, keyword arguments, and
  ``autograd.grad`` work.

Both reruns see the forward's random state (``preserve_rng_state``: dropout draws the same
mask) and its autocast state.
"""

from __future__ import annotations

import contextlib
import enum
import threading
import warnings
from typing import Any

from .._core.tensor import Tensor
from ..autograd._nodes import SavedTensor  # noqa: F401  (names torch's module re-exports)
from ._logging_tensor import LoggingTensorMode, capture_logs  # noqa: F401  (as torch's)
from ._python_dispatch import TorchDispatchMode  # noqa: F401
from ._pytree import tree_map  # noqa: F401

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "get_device_states",
           "set_device_states", "noop_context_fn", "set_checkpoint_early_stop",
           "DefaultDeviceType", "set_checkpoint_debug_enabled", "CheckpointPolicy",
           "SelectiveCheckpointContext", "create_selective_checkpoint_contexts",
           "SAC_IGNORED_OPS", "GraphExecGroup"]


def _ember():
    import ember  # deferred: ember imports ember.utils

    return ember


class CheckpointError(RuntimeError):
    """The recomputation of a checkpointed block did not match its forward.

    Example::

        >>> issubclass(ember.utils.checkpoint.CheckpointError, RuntimeError)
        True
    """


def detach_variable(inputs: tuple) -> tuple:
    """Detached copies (sharing data) of the tensors of ``inputs``, keeping their
    ``requires_grad``; other items as they are.

    Args:
        inputs (tuple): the inputs.

    Returns:
        tuple.

    Example::

        >>> x = ember.ones(2, requires_grad=True)
        >>> (y,) = ember.utils.checkpoint.detach_variable((x * 2,))
        >>> y.requires_grad, y.grad_fn is None
        (True, True)
    """
    if not isinstance(inputs, tuple):
        raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: ",
                           type(inputs).__name__)
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    """Warn when no tensor of ``inputs`` requires grad (the checkpoint then has no grads).

    Args:
        inputs: the block's arguments.

    Returns:
        None.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as w:
        ...     warnings.simplefilter("always")
        ...     ember.utils.checkpoint.check_backward_validity((ember.ones(1),))
        >>> len(w)
        1
    """
    if not any(isinstance(i, Tensor) and i.requires_grad for i in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


class DefaultDeviceType:
    """The device type whose random state checkpointing saves beside the CPU's ("cuda").

    Example::

        >>> ember.utils.checkpoint.DefaultDeviceType.get_device_type()
        'cuda'
    """

    _default_device_type = "cuda"

    @staticmethod
    def set_device_type(device: str = "cuda"):
        """Set the default device type."""
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        """The default device type."""
        return DefaultDeviceType._default_device_type


def _infer_device_type(*args):
    types = {a.device.type for a in args if isinstance(a, Tensor) and a.device.type != "cpu"}
    if len(types) > 1:
        warnings.warn("Tensor arguments, excluding CPU tensors, are detected on at least two "
                      "types of devices. Device state will only be saved for devices of a "
                      "single device type, and the remaining devices will be ignored.",
                      stacklevel=3)
    if len(types) == 1:
        return types.pop()
    return DefaultDeviceType.get_device_type()


def get_device_states(*args) -> tuple[list[int], list[Any]]:
    """The devices (other than the CPU) that the tensors of ``args`` are on, and their
    random states.

    Args:
        *args: anything; the tensors among them count.

    Returns:
        (device indices, their RNG states).

    Example::

        >>> ember.utils.checkpoint.get_device_states(ember.ones(1))
        ([], [])
    """
    ids = []
    for a in args:
        if isinstance(a, Tensor) and a.device.type == "cuda":
            i = a.device.index or 0
            if i not in ids:
                ids.append(i)
    states = []
    if ids:
        cuda = _ember().cuda
        for i in ids:
            states.append(cuda.get_rng_state(i))
    return ids, states


def set_device_states(devices, states, *, device_type=None) -> None:
    """Restore the random states saved by ``get_device_states``.

    Args:
        devices (list): device indices.
        states (list): their RNG states.
        device_type (str, optional): the device type, "cuda" by default.

    Returns:
        None.

    Example::

        >>> ember.utils.checkpoint.set_device_states([], [])
    """
    if devices:
        cuda = _ember().cuda
        for d, s in zip(devices, states):
            cuda.set_rng_state(s, d)


def noop_context_fn():
    """The default ``context_fn``: two null contexts (forward, recomputation).

    Returns:
        (contextlib.nullcontext(), contextlib.nullcontext()).

    Example::

        >>> f, r = ember.utils.checkpoint.noop_context_fn()
    """
    return contextlib.nullcontext(), contextlib.nullcontext()


_checkpoint_debug_enabled = None
_enable_checkpoint_early_stop = None


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Context: whether non-reentrant recomputation may stop once it has what backward
    needs (ember always recomputes the whole block; the setting is kept for PyTorch code).

    Args:
        enable (bool): the setting inside the block.

    Returns:
        The context manager.

    Example::

        >>> with ember.utils.checkpoint.set_checkpoint_early_stop(False):
        ...     pass
    """
    global _enable_checkpoint_early_stop
    prev = _enable_checkpoint_early_stop
    _enable_checkpoint_early_stop = enable
    try:
        yield
    finally:
        _enable_checkpoint_early_stop = prev


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Context: override every checkpoint's ``debug`` flag inside the block.

    Args:
        enabled (bool or None): the override (None: each call's own flag).

    Returns:
        The context manager.

    Example::

        >>> with ember.utils.checkpoint.set_checkpoint_debug_enabled(True):
        ...     pass
    """
    global _checkpoint_debug_enabled
    prev = _checkpoint_debug_enabled
    _checkpoint_debug_enabled = enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = prev


# ------------------------------------------------------------------------------------------
# the states a recomputation must see again


def _autocast_state():
    from ..amp import autocast_mode as am

    return {d: (am.is_autocast_enabled(d), am.get_autocast_dtype(d)) for d in ("cpu", "cuda")}, \
        am.is_autocast_cache_enabled()


@contextlib.contextmanager
def _restored(rng_state, device_states, autocast_state):
    """Run a recomputation with the forward's random and autocast states; the random state
    outside is left as it was."""
    e = _ember()
    from ..amp import autocast_mode as am

    with contextlib.ExitStack() as stack:
        if rng_state is not None:
            stack.enter_context(e.random.fork_rng(devices=device_states[0] or []))
            e.set_rng_state(rng_state)
            set_device_states(*device_states)
        per_device, cache = autocast_state
        for d, (on, dt) in per_device.items():
            if on:
                stack.enter_context(am.autocast(d, dtype=dt, cache_enabled=cache))
        yield


class CheckpointFunction:
    """The reentrant checkpoint as an ``autograd.Function`` (NOTE [ Checkpointing ]); made
    on first use, as ``ember.autograd`` is imported after this module.

    Example::

        >>> x = ember.ones(2, requires_grad=True)
        >>> y = ember.utils.checkpoint.CheckpointFunction.apply(lambda t: t.sin() * 2, True, x)
        >>> y.sum().backward()
        >>> x.grad
        tensor([1.0806, 1.0806])
    """

    _impl = None

    @classmethod
    def apply(cls, run_function, preserve_rng_state, *args):
        """Run ``run_function(*args)`` as one checkpointed Function."""
        if cls._impl is None:
            cls._impl = _make_checkpoint_function()
        return cls._impl.apply(run_function, preserve_rng_state, *args)


def _make_checkpoint_function():
    e = _ember()

    class CheckpointFunction(e.autograd.Function):
        @staticmethod
        def forward(ctx, run_function, preserve_rng_state, *args):
            check_backward_validity(args)
            ctx.run_function = run_function
            ctx.preserve_rng_state = preserve_rng_state
            ctx.autocast_state = _autocast_state()
            if preserve_rng_state:
                ctx.fwd_rng_state = e.get_rng_state()
                ctx.fwd_device_states = get_device_states(*args)
            ctx.inputs = []
            ctx.tensor_indices = []
            tensors = []
            for i, a in enumerate(args):
                if isinstance(a, Tensor):
                    tensors.append(a)
                    ctx.tensor_indices.append(i)
                    ctx.inputs.append(None)
                else:
                    ctx.inputs.append(a)
            ctx.save_for_backward(*tensors)
            with e.no_grad():
                return run_function(*args)

        @staticmethod
        def backward(ctx, *grads):
            inputs = list(ctx.inputs)
            for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
                inputs[i] = t
            rng = ctx.fwd_rng_state if ctx.preserve_rng_state else None
            devs = ctx.fwd_device_states if ctx.preserve_rng_state else ([], [])
            detached = detach_variable(tuple(inputs))
            with _restored(rng, devs, ctx.autocast_state), e.enable_grad():
                outputs = ctx.run_function(*detached)
            if isinstance(outputs, Tensor):
                outputs = (outputs,)
            with_grad, grads_for = [], []
            for o, g in zip(outputs, grads):
                if isinstance(o, Tensor) and o.requires_grad:
                    with_grad.append(o)
                    grads_for.append(g)
            if not with_grad:
                raise RuntimeError("none of output has requires_grad=True, this checkpoint() "
                                   "is not necessary")
            e.autograd.backward(with_grad, grads_for)
            return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None
                                        for x in detached)

    return CheckpointFunction


# ------------------------------------------------------------------------------------------
# non-reentrant


def _meta(t):
    return (tuple(t.shape), t.dtype, t.device)


class _Frame:
    """One non-reentrant checkpoint call: how to recompute, and what the forward saved."""

    def __init__(self, recompute, check):
        self.recompute = recompute
        self.check = check
        self.forward_meta = []  # the forward's saved tensors' metadata, by index
        self.recomputed = None  # index -> tensor, filled by a recomputation


class _Slot:
    """What the pack hook keeps for one saved tensor: its index in the block's saves."""

    __slots__ = ("frame", "index")

    def __init__(self, frame, index):
        self.frame = frame
        self.index = index


def _checkpoint_without_reentrant(function, preserve_rng_state, context_fn,
                                  determinism_check, debug, args, kwargs):
    e = _ember()
    forward_context, recompute_context = context_fn()
    rng = e.get_rng_state() if preserve_rng_state else None
    devs = get_device_states(*args) if preserve_rng_state else ([], [])
    autocast_state = _autocast_state()

    def recompute():
        saved = {}
        counter = [0]

        def pack(t):
            i = counter[0]
            counter[0] += 1
            if frame.check and i < len(frame.forward_meta) and _meta(t) != frame.forward_meta[i]:
                raise CheckpointError(
                    "torch.utils.checkpoint: Recomputed values for the following tensors have "
                    "different metadata than during the forward pass.\n"
                    f"tensor at position {i}:\nsaved metadata: {frame.forward_meta[i]}\n"
                    f"recomputed metadata: {_meta(t)}\n")
            saved[i] = t.detach()
            return None

        with _restored(rng, devs, autocast_state), e.enable_grad(), recompute_context, \
                e.autograd.graph.saved_tensors_hooks(pack, lambda _: None):
            function(*args, **kwargs)
        if frame.check and counter[0] != len(frame.forward_meta):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(frame.forward_meta)}\n"
                f"Number of tensors saved during recomputation: {counter[0]}\n")
        return saved

    frame = _Frame(recompute, determinism_check != "none")

    def pack_forward(t):
        frame.forward_meta.append(_meta(t))
        return _Slot(frame, len(frame.forward_meta) - 1)

    def unpack(slot):
        f = slot.frame
        group = GraphExecGroup._get_current_group()
        if group is not None:
            if f not in group._recomputed:
                group._recomputed[f] = f.recompute()
            return group._recomputed[f][slot.index]
        if f.recomputed is None or slot.index not in f.recomputed:
            f.recomputed = f.recompute()
        return f.recomputed.pop(slot.index)

    with e.autograd.graph.saved_tensors_hooks(pack_forward, unpack), forward_context:
        return function(*args, **kwargs)


class _GroupState(threading.local):
    def __init__(self):
        self.group = None


_group_state = _GroupState()


class GraphExecGroup:
    """Within the block, each non-reentrant checkpointed region recomputes at most once,
    however many backward calls reach it.

    The recomputed tensors are kept until the block ends, so several ``backward`` /
    ``autograd.grad`` calls over disjoint parts of one graph share one recomputation. The
    calls must not use the same saved tensor twice. Reentrant checkpoints are unaffected.
    Groups do not nest.

    Example:
        >>> import ember
        >>> from ember.utils.checkpoint import checkpoint, GraphExecGroup
        >>> x = ember.ones(2, requires_grad=True)
        >>> a, b = checkpoint(lambda t: (t.sin(), t.cos()), x, use_reentrant=False)
        >>> with GraphExecGroup():
        ...     ga, = ember.autograd.grad(a.sum(), x, retain_graph=True)
        ...     gb, = ember.autograd.grad(b.sum(), x)
        >>> ember.allclose(ga, x.cos()) and ember.allclose(gb, -x.sin())
        True
    """

    def __init__(self):
        self._recomputed = {}

    def __enter__(self):
        current = _group_state.group
        if current is not None:
            raise RuntimeError(
                f"GraphExecGroup contexts cannot be nested. Already inside group {current}")
        _group_state.group = self
        return self

    def __exit__(self, *exc):
        _group_state.group = None
        self._recomputed.clear()

    @classmethod
    def _get_current_group(cls):
        """The group whose block is running on this thread, or None."""
        return _group_state.group


# ------------------------------------------------------------------------------------------
# the public functions


_DETERMINISM_CHECKS = ("default", "none")


def checkpoint(function, *args, use_reentrant: bool | None = None,
               context_fn=noop_context_fn, determinism_check: str = "default",
               debug: bool = False, early_stop: bool = True, preserve_rng_state: bool = True,
               **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its intermediate tensors; backward
    recomputes them (NOTE [ Checkpointing ]).

    Args:
        function: the block to run.
        *args: its arguments.
        use_reentrant (bool): True for the ``autograd.Function`` form, False for the
            saved-tensor-hooks form (recommended). Not given: True, with a warning.
        context_fn: returns two context managers, entered around the forward and around
            the recomputation (non-reentrant only).
        determinism_check (str): "default" checks that the recomputation saves tensors of
            the same shapes, dtypes and devices as the forward; "none" skips it.
        debug (bool): accepted for PyTorch code (non-reentrant only).
        early_stop (bool): accepted for PyTorch code.
        preserve_rng_state (bool): rerun with the forward's random state (the same dropout
            masks).
        **kwargs: keyword arguments of ``function`` (non-reentrant only).

    Returns:
        What ``function`` returns.

    Example::

        >>> lin = ember.nn.Linear(3, 3)
        >>> x = ember.ones(2, 3, requires_grad=True)
        >>> y = ember.utils.checkpoint.checkpoint(lin, x, use_reentrant=False)
        >>> y.sum().backward()
        >>> x.grad.shape
        ember.Size([2, 3])
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError("determinism_check should be one of "
                         f"{list(_DETERMINISM_CHECKS)}, but got {determinism_check}")
    return _checkpoint_without_reentrant(function, preserve_rng_state, context_fn,
                                         determinism_check, debug, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Checkpoint a sequence of layers in ``segments`` pieces: each piece but the last is
    checkpointed (the last runs normally: its activations are needed at once).

    Args:
        functions: an ``nn.Sequential`` or a list of callables applied in order.
        segments (int): how many pieces.
        input: the input of the first layer.
        use_reentrant (bool): as ``checkpoint`` (not given: True, with a warning).
        preserve_rng_state (bool): as ``checkpoint``.

    Returns:
        The output of the last layer.

    Example::

        >>> net = ember.nn.Sequential(ember.nn.Linear(3, 3), ember.nn.ReLU(), ember.nn.Linear(3, 1))
        >>> x = ember.ones(2, 3, requires_grad=True)
        >>> y = ember.utils.checkpoint.checkpoint_sequential(net, 2, x, use_reentrant=False)
        >>> y.shape
        ember.Size([2, 1])
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should "
            "be passed explicitly. In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is recommended, but if you need to preserve "
            "the current default behavior, you can pass use_reentrant=True. Refer to docs for "
            "more details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    nn = _ember().nn
    if isinstance(functions, nn.Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)


# ------------------------------------------------------------------------------------------
# selective checkpointing: which ops' outputs to keep instead of recomputing


class CheckpointPolicy(enum.Enum):
    """What selective checkpointing does with one op's output: keep it (``MUST_SAVE``,
    ``PREFER_SAVE``) or recompute it (``MUST_RECOMPUTE``, ``PREFER_RECOMPUTE``).

    Example::

        >>> ember.utils.checkpoint.CheckpointPolicy.MUST_SAVE.name
        'MUST_SAVE'
    """

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3


class SelectiveCheckpointContext:
    """What a selective-checkpoint policy function is told: whether the call is the
    recomputation.

    Args:
        is_recompute (bool): True during the recomputation.

    Returns:
        The context.

    Example::

        >>> ember.utils.checkpoint.SelectiveCheckpointContext(is_recompute=False).is_recompute
        False
    """

    def __init__(self, *, is_recompute: bool):
        self.is_recompute = is_recompute


#: ops whose outputs selective checkpointing never stores (they cost nothing to redo)
SAC_IGNORED_OPS: set = set()


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The ``context_fn`` pair for selective checkpointing. The policy is consulted for
    every op of the forward as in PyTorch, but ember's recomputation still reruns every op
    (reusing the saved outputs would also need their saved-for-backward tensors, which the
    recomputation's count of saves depends on): gradients are right, nothing is saved yet.

    Args:
        policy_fn_or_list: a function ``(ctx, op, *args, **kwargs) -> CheckpointPolicy``, or
            a list of ops (``ember.ops.aten.mm.default`` ...) to save.
        allow_cache_entry_mutation (bool): accepted for PyTorch code.

    Returns:
        (forward context, recomputation context).

    Example::

        >>> from functools import partial
        >>> ops = [ember.ops.aten.exp.default]
        >>> ctx_fn = partial(ember.utils.checkpoint.create_selective_checkpoint_contexts, ops)
        >>> a = ember.ones(2, requires_grad=True)
        >>> y = ember.utils.checkpoint.checkpoint(lambda t: t.exp().sin(), a,
        ...                                       use_reentrant=False, context_fn=ctx_fn)
        >>> y.sum().backward()
    """
    from .._dispatch import OpOverload, OpOverloadPacket

    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not isinstance(op, (OpOverload, OpOverloadPacket)):
                raise ValueError(
                    "Expected op in `op_list` to be an OpOverload but got "
                    f"{op} of type {type(op)}. If you are using an OpOverloadPacket, please "
                    "specify an overload, e.g. `torch.ops.aten.mm.default`.")
        names = {str(op) for op in policy_fn_or_list}

        def policy_fn(ctx, op, *args, **kwargs):
            if str(op) in names or str(op.overloadpacket) in names:
                return CheckpointPolicy.MUST_SAVE
            return CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")

    def _save(policy):
        if isinstance(policy, bool):
            return policy
        return policy in (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE)

    class _Caching(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if func not in SAC_IGNORED_OPS:
                _save(policy_fn(SelectiveCheckpointContext(is_recompute=False), func, *args,
                                **kwargs))
            return out

    class _Cached(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func not in SAC_IGNORED_OPS:
                policy_fn(SelectiveCheckpointContext(is_recompute=True), func, *args, **kwargs)
            return func(*args, **kwargs)

    return _Caching(), _Cached()
