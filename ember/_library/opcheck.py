"""``opcheck``: do a custom operator's registrations agree with what its kernels do?

torch's ``opcheck`` runs four tests; ember runs the same four under the same names, each
reading what it means for ember:

- ``test_schema``: run the op on copies of the sample; an argument the schema does not mark
  as written (``Tensor(a!)``) must come back unchanged, and a result the schema does not
  declare as an alias must share no memory with an input.
- ``test_autograd_registration``: when a sample input requires grad and a result does too,
  the op must have an autograd formula (``register_autograd``, an Autograd kernel or a
  CompositeImplicitAutograd body); a registered formula is then held against finite
  differences -- ``gradcheck`` on float64 copies of the inputs, where the op runs in float64.
- ``test_faketensor``: the fake rule (the op's meta kernel) must give results of the real
  kernel's shapes and dtypes: on the meta device when that backend is registered, else by
  calling the rule on the real sample (it must not need the data either way).
- ``test_aot_dispatch_dynamic`` (and ``_static``): torch compares eager mode with
  compilation; ember has no compiler, and its tracers are dispatch modes, so this compares
  results and gradients of the op run plainly and run under a tracing mode that sees every
  call (forward and backward).
"""

from __future__ import annotations

import numpy as np

from .. import _dispatch
from .._core.storage import _root
from .._core.tensor import Tensor, wrap
from .custom_ops import AUTOGRAD, COMPOSITE, LibraryOp, fallthrough_kernel

DEFAULT_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
                 "test_aot_dispatch_dynamic")
ALL_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
             "test_aot_dispatch_static", "test_aot_dispatch_dynamic")

#: (rtol, atol) by dtype name when the caller gives none (those of assert_close)
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5),
               "complex128": (1e-7, 1e-7)}


class OpCheckError(Exception):
    """Raised by ``opcheck`` (with ``raise_exception=True``) when one of its tests fails."""


class MetadataMismatchError(RuntimeError):
    """The fake rule's results differ in shape, dtype or device from the real kernel's."""


def opcheck(op, args, kwargs=None, *, test_utils=DEFAULT_UTILS, raise_exception=True,
            atol=None, rtol=None) -> dict:
    """Test that a custom operator is registered correctly, on one sample of its inputs.

    Runs the tests named in ``test_utils`` (see the module docstring of
    ``ember._library.opcheck``): ``"test_schema"`` (mutation and aliasing agree with the
    schema), ``"test_autograd_registration"`` (an autograd formula is registered where
    gradients are wanted, and agrees with finite differences), ``"test_faketensor"`` (the
    fake rule agrees with the kernel) and ``"test_aot_dispatch_dynamic"`` (the op gives the
    same results and gradients under a tracing mode). Call it with several representative
    samples, some with ``requires_grad=True`` inputs.

    Args:
        op: a CustomOpDef, an OpOverload or an OpOverloadPacket (``ember.ops.mylib.foo``).
        args: the positional arguments of the sample.
        kwargs: its keyword arguments.
        test_utils: the tests to run, a name or a sequence of names.
        raise_exception: raise ``OpCheckError`` on the first failure; else report it.
        atol: absolute tolerance of the comparisons (give ``rtol`` too); default: by dtype.
        rtol: relative tolerance of the comparisons.

    Returns:
        A dict from test name to ``"SUCCESS"`` or the exception it raised.

    Example::

        >>> @ember.library.custom_op("doc_opcheck::mul", mutates_args=())
        ... def mul(x: ember.Tensor, y: float) -> ember.Tensor:
        ...     return x * y
        >>> _ = mul.register_fake(lambda x, y: ember.empty_like(x))
        >>> ember.library.opcheck(mul, (ember.randn(3), 2.0))["test_schema"]
        'SUCCESS'
    """
    handle = _handle(op)
    if (atol is None) != (rtol is None):
        raise ValueError("opcheck(op, ...): if you specify one of atol/rtol, you must specify "
                         "both")
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    test_utils = tuple(test_utils)
    if not set(test_utils) <= set(ALL_UTILS):
        raise ValueError(f"opcheck(op, ..., test_utils={test_utils}), expected test_utils to "
                         f"be subset of {ALL_UTILS} but it was not")
    kwargs = {} if kwargs is None else dict(kwargs)
    tol = None if atol is None else (rtol, atol)
    results = {}
    for name in test_utils:
        try:
            _TESTS[name](handle, tuple(args), kwargs, tol)
        except Exception as e:
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {e} (scroll up for "
                                   "stack trace)") from e
            results[name] = e
        else:
            results[name] = "SUCCESS"
    return results


def _handle(op):
    """The OpOverload to test."""
    inner = getattr(op, "_opoverload", None)  # a CustomOpDef
    if isinstance(inner, _dispatch.OpOverload):
        return inner
    if isinstance(op, _dispatch.OpOverloadPacket):
        o = op._overloads.get("default") or next(iter(op._overloads.values()), None)
        if o is not None:
            return o
    if isinstance(op, _dispatch.OpOverload):
        return op
    raise TypeError(f"opcheck(op, ...): op must be a CustomOpDef, an OpOverload or an "
                    f"OpOverloadPacket (ember.ops.<ns>.<name>), got {type(op).__name__}")


# ------------------------------------------------------------------------------------------------
# helpers


def _clone(x, fn=None):
    """A copy of a sample: tensors cloned (``fn`` may change them), requires_grad kept."""
    if isinstance(x, Tensor):
        c = x.detach().clone() if fn is None else fn(x.detach())
        return c.requires_grad_() if x.requires_grad and _is_inexact(c) else c
    if isinstance(x, (list, tuple)):
        return type(x)(_clone(e, fn) for e in x)
    if isinstance(x, dict):
        return {k: _clone(v, fn) for k, v in x.items()}
    return x


def _tensors(x):
    if isinstance(x, Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for e in x:
            yield from _tensors(e)
    elif isinstance(x, dict):
        for e in x.values():
            yield from _tensors(e)


def _leaves(x):
    if isinstance(x, (list, tuple)):
        out = []
        for e in x:
            out.extend(_leaves(e))
        return out
    return [x]


def _is_inexact(t):
    return t.is_floating_point() or t.is_complex()


def _host(t):
    return np.array(t.detach().cpu().numpy(), copy=True)


def _same_values(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def _close(a, b, tol):
    """``None`` when tensors ``a`` and ``b`` agree, else why not."""
    if a.shape != b.shape:
        return f"shapes {tuple(a.shape)} and {tuple(b.shape)} differ"
    if a.dtype != b.dtype:
        return f"dtypes {a.dtype} and {b.dtype} differ"
    an, bn = _host(a), _host(b)
    if an.dtype.kind not in "fc":
        return None if np.array_equal(an, bn) else "values differ"
    rtol, atol = tol or _TOLERANCES.get(str(a.dtype).rsplit(".", 1)[-1], (1e-5, 1e-8))
    if np.allclose(an.astype(np.complex128 if an.dtype.kind == "c" else np.float64),
                   bn.astype(np.complex128 if bn.dtype.kind == "c" else np.float64),
                   rtol=rtol, atol=atol, equal_nan=True):
        return None
    return f"values differ (largest difference {np.max(np.abs(an - bn))})"


def _no_grad():
    from ..autograd.grad_mode import no_grad

    return no_grad()


def _schema_names(handle, args, kwargs):
    """``[(argument name, tensor)]`` for every tensor of the sample, and the names of the
    arguments the op may write to."""
    op = handle.op
    if isinstance(op, LibraryOp):
        values = op.schema.bind(op.name, args, kwargs)
        named = []
        for a, v in zip(op.schema.arguments, values):
            named.extend((a.name, t) for t in _tensors(v))
        return named, op.schema.mutated_names()
    named = [(f"args[{i}]", t) for i, a in enumerate(args) for t in _tensors(a)]
    named += [(k, t) for k, v in kwargs.items() for t in _tensors(v)]
    writes = {"args[0]"} if handle.is_inplace else set()
    if "out" in kwargs:
        writes.add("out")
    return named, writes


def _declared_alias_results(handle):
    op = handle.op
    if isinstance(op, LibraryOp):
        return [bool(r.type.alias_set) for r in op.schema.returns]
    return None


# ------------------------------------------------------------------------------------------------
# the tests


def _test_schema(handle, args, kwargs, tol):
    a, k = _clone(args), _clone(kwargs)
    named, writes = _schema_names(handle, a, k)
    before = [(name, t, _host(t)) for name, t in named]
    with _no_grad():
        out = handle(*a, **k)
    for name, t, snap in before:
        if name not in writes and not _same_values(_host(t), snap):
            raise RuntimeError(f"Argument {name} is not defined as mutable but was mutated")
    if handle.is_view or handle.is_inplace or "out" in k:
        return  # results of views, in-place and out= forms alias an input by design
    declared = _declared_alias_results(handle)
    results = out if isinstance(out, tuple) and declared is not None and len(declared) > 1 \
        else (out,)
    for i, r in enumerate(results):
        if declared is not None and i < len(declared) and declared[i]:
            continue
        for o in _tensors(r):
            root = _root(o._data)
            for name, t in named:
                if _root(t._data) is root:
                    raise RuntimeError(
                        f"Argument {name} is not defined to alias output but was aliasing")


def _has_autograd(op, handle, args, kwargs):
    ak = op.active(AUTOGRAD, None)
    values = op.schema.bind(op.name, args, kwargs)
    dev = op.device_type(values)
    ak = op.active(AUTOGRAD, dev) or ak
    if ak is not None and ak is not fallthrough_kernel:
        return True
    return op.active(COMPOSITE) is not None and op.kernel_for(dev) is None


def _test_autograd_registration(handle, args, kwargs, tol):
    if not any(t.requires_grad for t in _tensors((args, kwargs))):
        return
    op = handle.op
    if not isinstance(op, LibraryOp):
        return
    a, k = _clone(args), _clone(kwargs)
    out = handle(*a, **k)
    if not any(o.requires_grad for o in _tensors(out)):
        return
    if not _has_autograd(op, handle, args, kwargs):
        if op.from_custom_op:
            return  # its results carry a node that says so when differentiated
        raise AssertionError(
            f"{op.name}: at least one output of this operator has requires_grad=True but the "
            "operator does not have an autograd kernel defined at an autograd key (e.g. "
            "'Autograd'). This could mean that you have incorrectly registered an autograd "
            "kernel to a non-Autograd dispatch key, which may lead to silently incorrect "
            "results. If your operator consists of regular ember operations, consider not "
            "using an operator at all or registering your operator as "
            "CompositeImplicitAutograd. If you have an autograd.Function registered to a "
            "backend (CPU/CUDA) key, the correct location for it is the Autograd key.")
    _gradcheck(handle, args, kwargs)


def _to_double(t):
    from .._core import dtype as _dt

    if t.is_complex():
        return t.to(_dt.complex128)
    if t.is_floating_point():
        return t.to(_dt.float64)
    return t.clone()


def _gradcheck(handle, args, kwargs):
    """The registered formula against finite differences, in float64 where the op runs so.

    The check is torch's fast gradcheck: for random output weights ``u`` and a random input
    direction ``v``, the backward's ``<J^T u, v>`` must match the central difference
    ``<(f(x + eps v) - f(x - eps v)) / 2 eps, u>`` -- two forward calls and one backward
    whatever the size of the sample."""
    from ..autograd import grad

    a, k = _clone(args, _to_double), _clone(kwargs, _to_double)
    diff = [t for t in _tensors((a, k)) if t.requires_grad]
    if not diff or any(t.is_complex() for t in diff):
        return

    def run(ts):
        swap = {id(t): n for t, n in zip(diff, ts)}
        return [o for o in _tensors(handle(*_substitute(a, swap), **_substitute(k, swap)))
                if _is_inexact(o)]

    try:
        outs = run(diff)
    except Exception:
        return  # the op does not run in float64: there is nothing precise to compare
    if not outs or any(str(o.dtype).rsplit(".", 1)[-1] != "float64" for o in outs):
        return
    rng = np.random.default_rng(0)

    def like(t):
        return wrap(_dispatch.backend_of(t._data).xp.asarray(rng.standard_normal(t.shape)))

    u = [like(o) for o in outs]
    v = [like(t) for t in diff]
    live = [(o, w) for o, w in zip(outs, u) if o.requires_grad]
    grads = grad([o for o, _ in live], diff, grad_outputs=[w for _, w in live],
                 allow_unused=True) if live else [None] * len(diff)
    analytical = sum(float((g * d).sum()) for g, d in zip(grads, v) if g is not None)
    eps = 1e-6
    with _no_grad():
        plus = run([t.detach() + eps * d for t, d in zip(diff, v)])
        minus = run([t.detach() - eps * d for t, d in zip(diff, v)])
    numerical = sum(float(((p - m) * w).sum()) for p, m, w in zip(plus, minus, u)) / (2 * eps)
    if abs(analytical - numerical) > 1e-5 + 1e-3 * abs(numerical):
        raise RuntimeError(
            f"{handle}: the gradients of the registered backward differ from finite "
            f"differences (gradcheck in float64, along a random direction: backward gives "
            f"{analytical:.6g}, finite differences {numerical:.6g})")


def _substitute(x, swap):
    if isinstance(x, Tensor):
        return swap.get(id(x), x)
    if isinstance(x, (list, tuple)):
        return type(x)(_substitute(e, swap) for e in x)
    if isinstance(x, dict):
        return {key: _substitute(v, swap) for key, v in x.items()}
    return x


def _test_faketensor(handle, args, kwargs, tol):
    op = handle.op
    fake = None
    if isinstance(op, LibraryOp):
        fake = op.kernel_for("meta")
        if fake is None and op.from_custom_op and not op.schema.returns:
            # a custom op that only writes into its arguments has torch's automatic fake
            # rule, which does nothing
            def fake(*args, **kwargs):
                return None
        if fake is None:
            where = (f"`{op.opname}.register_fake`" if op.from_custom_op else
                     f"ember.library.register_fake('{op.name}')")
            raise RuntimeError(
                f"There was no fake impl registered for {op.describe()}. ember needs one to run "
                f"the op on the meta device and for opcheck. Please use {where} to add one.")
    with _no_grad():
        real = handle(*_clone(args), **_clone(kwargs))
        if "meta" in _dispatch.backends_by_name:
            meta = _clone((args, kwargs), lambda t: t.to("meta"))
            fake_out = handle(*meta[0], **meta[1])
            check_device = False
        elif fake is not None:
            values = op.schema.bind(op.name, _clone(args), _clone(kwargs))
            pos, kw = op.schema.split(values)
            fake_out = fake(*pos, **kw)
            check_device = True
        else:
            return  # one of ember's ops, and no meta device to run it on
    r_leaves, f_leaves = _leaves(real), _leaves(fake_out)
    prefix = (f"When comparing the output of {handle} on FakeTensor and concrete Tensors, "
              "found mismatched tensor metadata: ")
    if len(r_leaves) != len(f_leaves):
        raise MetadataMismatchError(prefix + f"the fake rule returned {len(f_leaves)} results "
                                    f"and the kernel {len(r_leaves)}")
    for r, f in zip(r_leaves, f_leaves):
        if isinstance(r, Tensor) != isinstance(f, Tensor):
            raise MetadataMismatchError(prefix + f"{type(r).__name__} and {type(f).__name__} "
                                        "are not both tensors")
        if not isinstance(r, Tensor):
            continue
        if r.shape != f.shape:
            raise MetadataMismatchError(prefix + f"Shapes {r.shape} and {f.shape} are not "
                                        "equal!")
        if r.dtype != f.dtype:
            raise MetadataMismatchError(prefix + f"Dtypes {r.dtype} and {f.dtype} are not "
                                        "equal!")
        if check_device and r.device != f.device:
            raise MetadataMismatchError(prefix + f"Devices {r.device} and {f.device} are not "
                                        "equal!")


class _Tracer(_dispatch.Mode):
    """A pass-through mode at the tracing level, as tracers and dispatch modes sit."""

    level = 0

    def __init__(self):
        self.seen = []

    def dispatch(self, handle, args, kwargs):
        self.seen.append(handle)
        return handle(*args, **kwargs)


def _run_with_grads(handle, args, kwargs):
    a, k = _clone(args), _clone(kwargs)
    out = handle(*a, **k)
    inputs = [t for t in _tensors((a, k)) if t.requires_grad]
    outs = [o for o in _tensors(out) if o.requires_grad]
    grads = None
    if inputs and outs:
        from ..autograd import grad

        ones = [wrap(_dispatch.backend_of(o._data).xp.ones(o._data.shape, o._data.dtype))
                for o in outs]
        grads = grad(outs, inputs, grad_outputs=ones, allow_unused=True)
    return out, grads


def _test_aot_dispatch(handle, args, kwargs, tol):
    eager_out, eager_grads = _run_with_grads(handle, args, kwargs)
    tracer = _Tracer()
    _dispatch.push_mode(tracer)
    try:
        traced_out, traced_grads = _run_with_grads(handle, args, kwargs)
    finally:
        _dispatch.pop_mode(tracer)
    op = handle.op
    if isinstance(op, LibraryOp) and op.active(COMPOSITE) is None and handle not in tracer.seen:
        raise AssertionError(f"{handle} never reached the tracing mode: the op does not go "
                             "through the dispatcher's door")
    for e, t in zip(_leaves(eager_out), _leaves(traced_out)):
        why = _close(e, t, tol) if isinstance(e, Tensor) and isinstance(t, Tensor) else (
            None if e == t else f"{e!r} != {t!r}")
        if why is not None:
            raise AssertionError(f"Outputs of the operator are different in eager mode and "
                                 f"under a tracing dispatch mode: {why}")
    for e, t in zip(eager_grads or (), traced_grads or ()):
        if e is None and t is None:
            continue
        why = "one is None" if e is None or t is None else _close(e, t, tol)
        if why is not None:
            raise AssertionError(
                "Gradients of the operator are different in eager mode and under a tracing "
                "dispatch mode. This could be because the operator's backward is incorrectly "
                f"registered or not traceable: {why}")


_TESTS = {
    "test_schema": _test_schema,
    "test_autograd_registration": _test_autograd_registration,
    "test_faketensor": _test_faketensor,
    "test_aot_dispatch_static": _test_aot_dispatch,
    "test_aot_dispatch_dynamic": _test_aot_dispatch,
}
