"""Custom operators through ``ember.library`` -- ``custom_op``, ``Library``, the registration
functions and ``opcheck`` -- written the way PyTorch's custom-op tutorials write them.

Where the same program runs under both libraries it is written once, as a function of the
module ``T`` and a fresh namespace, and run with ``T = ember`` and ``T = torch``; the results
are compared. Custom op names are global, so every program gets a namespace of its own.
"""

# annotations are spelled the ways users write them, typing's spellings included
# ruff: noqa: UP006, UP007, UP035, UP045

import itertools
import typing
import warnings
from typing import Optional, Sequence

import numpy as np
import pytest

import ember
import ember.utils._python_dispatch  # noqa: F401  (T.utils._python_dispatch below)
from ember import library
from ember._library.opcheck import OpCheckError

try:
    import torch
    import torch.utils._python_dispatch  # noqa: F401
except ImportError:  # pragma: no cover - PyTorch is a test extra
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

_ids = itertools.count()


def fresh(prefix="t"):
    """A namespace no other test uses."""
    return f"{prefix}_custom_ops_{next(_ids)}"


def both(program):
    """``program(T, ns)`` with ember and with torch, each in a fresh namespace."""
    return program(ember, fresh("e")), program(torch, fresh("t"))


def to_numpy(x):
    if isinstance(x, (ember.Tensor,) + ((torch.Tensor,) if torch else ())):
        return np.array(x.detach().numpy(), copy=True)
    if isinstance(x, (list, tuple)):
        return type(x)(to_numpy(e) for e in x)
    if isinstance(x, dict):
        return {k: to_numpy(v) for k, v in x.items()}
    return x


def assert_same(a, b, rtol=1e-5, atol=1e-6):
    a, b = to_numpy(a), to_numpy(b)
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), (a, b)
        assert a.shape == b.shape and a.dtype == b.dtype, (a, b)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            assert_same(x, y, rtol, atol)
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), (a, b)
        for k in a:
            assert_same(a[k], b[k], rtol, atol)
    else:
        assert a == b, (a, b)


def raised(fn):
    """The exception type ``fn()`` raises (None if it returns)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e)
    return None


X = np.array([[0.5, -1.25, 2.0], [3.0, 0.0, -0.75]], dtype=np.float32)
W = np.array([0.25, -2.0, 1.5], dtype=np.float32)


def meta_available():
    try:
        ember.empty(2, device="meta")
    except Exception:  # noqa: BLE001 - the meta backend is not there
        return False
    return True


needs_meta = pytest.mark.skipif(not meta_available(), reason="no meta device backend")


# ------------------------------------------------------------------------------------------------
# the tutorial op: numpy_sin with a fake rule and an autograd formula


def numpy_sin_program(T, ns):
    @T.library.custom_op(f"{ns}::numpy_sin", mutates_args=())
    def numpy_sin(x: T.Tensor) -> T.Tensor:
        return T.from_numpy(np.sin(x.detach().cpu().numpy())).to(x.device)

    @numpy_sin.register_fake
    def _(x):
        return T.empty_like(x)

    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()

    numpy_sin.register_autograd(backward, setup_context=setup_context)
    return numpy_sin


@needs_torch
def test_custom_op_forward_and_gradient_match_torch():
    def program(T, ns):
        numpy_sin = numpy_sin_program(T, ns)
        x = T.tensor(X, requires_grad=True)
        y = numpy_sin(x)
        y.sum().backward()
        return y, x.grad, type(y.grad_fn).__name__

    e, t = both(program)
    assert_same(e[:2], t[:2])
    assert e[1] is not None
    assert e[2].startswith("GeneratedBackwardFor_e_custom_ops_") and e[2].endswith(
        "_numpy_sin_defaultBackward")


@needs_torch
def test_custom_op_backward_in_ember_ops_gives_second_derivatives():
    def program(T, ns):
        numpy_sin = numpy_sin_program(T, ns)
        x = T.tensor(X, requires_grad=True)
        (g,) = T.autograd.grad(numpy_sin(x).sum(), x, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), x)
        return g, gg

    e, t = both(program)
    assert_same(e, t)
    assert_same(e[1], -np.sin(X))


def test_custom_op_is_an_op_of_the_registry():
    ns = fresh()
    numpy_sin_program(ember, ns)
    name = f"{ns}::numpy_sin"
    assert name in {row["name"] for row in ember.list_ops()}
    row = next(r for r in library.registered_ops() if r["name"] == name)
    assert row["signature"] == "(Tensor x) -> Tensor"
    assert row["differentiable"] and "cpu" in row["backends"] and "meta" in row["backends"]
    packet = getattr(ember.ops, ns).numpy_sin
    assert isinstance(packet, ember._dispatch.OpOverloadPacket)
    assert isinstance(packet.default, ember._dispatch.OpOverload)
    assert packet.default.name() == name and str(packet.default) == f"{ns}.numpy_sin.default"
    assert packet.overloads() == ["default"]
    assert str(packet.default._schema) == f"{name}(Tensor x) -> Tensor"
    x = ember.tensor(X)
    for call in (packet, packet.default):
        np.testing.assert_allclose(call(x).numpy(), np.sin(X), rtol=1e-6)


def test_custom_op_kernels_are_registered_per_device_type():
    from ember._ops._registry import ops

    ns = fresh()

    @library.custom_op(f"{ns}::cpu_only", mutates_args=(), device_types="cpu")
    def cpu_only(x: ember.Tensor) -> ember.Tensor:
        return x + 1

    op = ops[f"{ns}::cpu_only"]
    assert set(op.overrides) == {"cpu"} and op.kernel is None
    assert op.resolve(np.ndarray).tensor_fn is cpu_only._init_fn
    assert cpu_only(ember.zeros(2)).tolist() == [1.0, 1.0]


class _OtherArray(np.ndarray):
    """Arrays of a stand-in out-of-tree device."""


@pytest.fixture(scope="module")
def otherdev():
    if "customopsdev" not in ember._dispatch.backends_by_name:
        library.register_backend("customopsdev", np, _OtherArray,
                                 lambda a: np.array(np.asarray(a), copy=True).view(_OtherArray))
    return "customopsdev"


def test_device_type_without_kernel_raises_naming_op_and_device(otherdev):
    ns = fresh()

    @library.custom_op(f"{ns}::f", mutates_args=(), device_types="cpu")
    def f(x: ember.Tensor) -> ember.Tensor:
        return x * 2

    x = ember.tensor([1.0, 2.0]).to(otherdev)
    with pytest.raises(NotImplementedError, match=f"{ns}::f.*{otherdev}"):
        f(x)

    @f.register_kernel(otherdev)
    def _(x):
        return x * 3

    y = f(x)
    assert y.device.type == otherdev and y.to("cpu").tolist() == [3.0, 6.0]
    assert f(ember.tensor([1.0])).tolist() == [2.0]


def test_default_kernel_runs_on_every_device_type(otherdev):
    ns = fresh()

    @library.custom_op(f"{ns}::g", mutates_args=())
    def g(x: ember.Tensor) -> ember.Tensor:
        return x + 10

    y = g(ember.tensor([1.0]).to(otherdev))
    assert y.device.type == otherdev and y.to("cpu").tolist() == [11.0]


@needs_torch
def test_register_kernel_and_set_kernel_enabled_match_torch():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::f", mutates_args=())
        def f(x: T.Tensor) -> T.Tensor:
            return x * 0

        x = T.ones(2)
        out = [f(x)]

        @f.register_kernel("cpu")
        def _(x):
            return x + 1

        out.append(f(x))
        with f.set_kernel_enabled("cpu", enabled=False):
            out.append(f(x))
        out.append(f(x))
        T.library.register_kernel(f"{ns}::f", "cpu", lambda x: x + 5)
        out.append(f(x))
        return out

    e, t = both(program)
    assert_same(e, t)
    assert to_numpy(e)[1].tolist() == [2.0, 2.0] and to_numpy(e)[2].tolist() == [0.0, 0.0]


# ------------------------------------------------------------------------------------------------
# the door: dispatch modes see custom ops


def _logging_mode(T):
    class Log(T.utils._python_dispatch.TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            self.calls.append((str(func), len(args), sorted(kwargs)))
            return func(*args, **kwargs)

    return Log


@needs_torch
def test_dispatch_mode_sees_custom_op_as_its_overload():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::scale", mutates_args=())
        def scale(x: T.Tensor, k: float = 2.0, *, shift: int = 0) -> T.Tensor:
            return x * k + shift

        x = T.tensor(X)
        with _logging_mode(T)() as m:
            a = scale(x)
            b = scale(x, 3.0, shift=1)
            c = getattr(T.ops, ns).scale.default(x, shift=4)
            d = scale(x, 2.0, shift=0)
        calls = [(name.split(".", 1)[1], n, kw) for name, n, kw in m.calls]
        return calls, [a, b, c, d]

    e, t = both(program)
    assert e[0] == t[0] == [("scale.default", 1, []), ("scale.default", 2, ["shift"]),
                            ("scale.default", 1, ["shift"]), ("scale.default", 1, [])]
    assert_same(e[1], t[1])


def test_dispatch_mode_func_is_the_custom_op_handle():
    ns = fresh()
    numpy_sin = numpy_sin_program(ember, ns)
    seen = []

    class Mode(ember.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    x = ember.tensor(X, requires_grad=True)
    with Mode():
        y = numpy_sin(x)
    assert seen[-1] is numpy_sin._opoverload
    assert str(seen[-1]) == f"{ns}.numpy_sin.default"
    assert y.grad_fn is not None  # the op run under the mode still records


@needs_torch
def test_composite_implicit_kernel_decomposes_before_the_modes():
    def program(T, ns):
        lib = T.library.Library(ns, "DEF")
        lib.define("axpb(Tensor x) -> Tensor")
        lib.impl("axpb", lambda x: x * 2 + 1, "CompositeImplicitAutograd")
        x = T.tensor(X, requires_grad=True)
        with _logging_mode(T)() as m:
            y = getattr(T.ops, ns).axpb(x)
        y.sum().backward()
        names = [name.split(".")[1] for name, _, _ in m.calls]
        lib._destroy()
        return names, y, x.grad

    e, t = both(program)
    assert e[0] == t[0] == ["mul", "add"]
    assert_same(e[1:], t[1:])


@needs_torch
def test_register_torch_dispatch_rule_runs_under_its_mode():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::foo", mutates_args={})
        def foo(x: T.Tensor) -> T.Tensor:
            return x.clone()

        class MyMode(T.utils._python_dispatch.TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return func(*args, **(kwargs or {}))

        @T.library.register_torch_dispatch(f"{ns}::foo", MyMode)
        def _(mode, func, types, args, kwargs):
            (x,) = args
            return x + 1

        x = T.tensor(W)
        plain = foo(x)
        with MyMode():
            ruled = foo(x)
            other = x * 2  # other ops still reach the mode's __torch_dispatch__
        return plain, ruled, other

    e, t = both(program)
    assert_same(e, t)
    assert_same(e[1], W + 1)


# ------------------------------------------------------------------------------------------------
# mutation


@needs_torch
def test_mutating_custom_op_writes_and_bumps_the_version():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::numpy_sin_", mutates_args={"x"}, device_types="cpu")
        def numpy_sin_(x: T.Tensor) -> None:
            x_np = x.numpy()
            np.sin(x_np, out=x_np)

        x = T.tensor(X)
        v = x._version
        r = numpy_sin_(x)
        view = T.tensor(X)[0]  # a view: the write reaches its base's storage
        numpy_sin_(view)
        return r, x, x._version > v, view

    e, t = both(program)
    assert_same(e, t)
    assert e[2] is True and e[0] is None


@needs_torch
def test_mutating_op_through_the_kernels_in_place_ops_matches_torch():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::acc", mutates_args=["out"])
        def acc(x: T.Tensor, out: T.Tensor) -> None:
            out.add_(x * 2)

        out = T.zeros(3)
        v = out._version
        acc(T.tensor(W), out)
        return out, out._version > v

    e, t = both(program)
    assert_same(e, t)


@needs_torch
def test_library_schema_with_written_out_argument_returns_it():
    def program(T, ns):
        lib = T.library.Library(ns, "DEF")
        lib.define("twice(Tensor x) -> Tensor")
        lib.define("twice.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
        lib.impl("twice", lambda x: x * 2, "CPU")

        def twice_out(x, *, out):
            out.copy_(x * 2)
            return out

        lib.impl("twice.out", twice_out, "CPU")
        ops = getattr(T.ops, ns)
        x = T.tensor(W)
        out = T.empty(3)
        r = ops.twice.out(x, out=out)
        via_packet = ops.twice(x, out=T.empty(3))
        plain = ops.twice(x)
        res = r is out, out, via_packet, plain, sorted(ops.twice.overloads())
        lib._destroy()
        return res

    e, t = both(program)
    assert_same(e, t)
    assert e[0] is True


# ------------------------------------------------------------------------------------------------
# Library, define, impl


@needs_torch
def test_library_define_and_impl_flow_matches_torch():
    def program(T, ns):
        lib = T.library.Library(ns, "DEF")
        name = lib.define("mysin(Tensor x) -> Tensor")
        lib.define("myadd(Tensor a, Tensor b, *, float alpha=1.0) -> Tensor")
        lib.impl("mysin", lambda x: T.from_numpy(np.sin(x.numpy())), "CPU")
        lib.impl("myadd", lambda a, b, *, alpha=1.0: a + alpha * b,
                 "CompositeExplicitAutograd")
        ops = getattr(T.ops, ns)
        a, b = T.tensor(X), T.tensor(X[::-1].copy())
        out = (name, ops.mysin(a), ops.mysin.default(a), ops.myadd(a, b),
               ops.myadd(a, b, alpha=0.5), ops.myadd.default(a, b=b, alpha=2))
        lib._destroy()
        return out

    e, t = both(program)
    assert_same(e, t)


@needs_torch
def test_module_level_define_and_impl_match_torch():
    def program(T, ns):
        T.library.define(f"{ns}::mysin", "(Tensor x) -> Tensor")

        @T.library.impl(f"{ns}::mysin", "cpu")
        def f(x):
            return T.from_numpy(np.sin(x.numpy()))

        x = T.tensor(X)
        first = getattr(T.ops, ns).mysin(x)
        T.library.impl(f"{ns}::mysin", ["cpu"], lambda x: x * 0 + 7)
        second = getattr(T.ops, ns).mysin(x)
        T.library.impl(f"{ns}::mysin", "CPU", lambda x: x * 0 + 8)  # a dispatch key works too
        return first, second, getattr(T.ops, ns).mysin(x)

    e, t = both(program)
    assert_same(e, t)


@needs_torch
def test_library_schema_types_bind_like_torch():
    def program(T, ns):
        lib = T.library.Library(ns, "DEF")
        lib.define("f(Tensor x, int[] dims, Scalar s, float? f=None, bool flag=False, "
                   "Tensor? t=None, Tensor[]? ts=None, int n=3) -> Tensor")

        def f(x, dims, s, f=None, flag=False, t=None, ts=None, n=3):
            y = x.sum(dim=list(dims)) * s + n
            if f is not None:
                y = y + f
            if flag:
                y = -y
            if t is not None:
                y = y + t.sum()
            for e in ts or ():
                y = y + e.sum()
            return y

        lib.impl("f", f, "CPU")
        op = getattr(T.ops, ns).f
        x = T.tensor(X)
        res = [op(x, [0], 2), op(x, (1,), 1.5, 0.5, True), op(x, [0], 2, t=x, ts=[x, x], n=1),
               raised(lambda: op(x, 1, True))]
        lib._destroy()
        return res

    e, t = both(program)
    assert_same(e, t)


@needs_torch
def test_call_argument_errors_match_torch():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::f", mutates_args=())
        def f(x: T.Tensor, y: float = 2.0, *, z: int = 3) -> T.Tensor:
            return x * y + z

        x = T.ones(1)
        return [raised(lambda: f(x, 3.0, 1)), raised(lambda: f(x, w=1)),
                raised(lambda: f()), raised(lambda: f(3)), raised(lambda: f(x, z=1.5)),
                raised(lambda: f(x, 2.0, y=2.0)), f(x, 3), f(x, z=True), f(x, np.float64(0.5))]

    e, t = both(program)
    assert e[:6] == t[:6] == [RuntimeError] * 6
    assert_same(e[6:], t[6:])


@needs_torch
def test_library_errors_match_torch():
    def program(T, ns):
        L = T.library.Library
        lib = L(ns, "DEF")
        lib.define("f(Tensor x) -> Tensor")
        impl_lib = L(ns, "IMPL")
        res = [raised(lambda: L(ns, "FOO")), raised(lambda: L(ns, "DEF")),
               raised(lambda: lib.define("f(Tensor x) -> Tensor")),
               raised(lambda: lib.define("g(Tensr x) -> Tensor")),
               raised(lambda: lib.define("(Tensor x) -> Tensor")),
               raised(lambda: impl_lib.define("h(Tensor x) -> Tensor")),
               raised(lambda: lib.impl("f", lambda x: x, "NoSuchKey")),
               raised(lambda: T.library.impl(f"{ns}::f", "nosuchdevice", lambda x: x)),
               raised(lambda: T.library.impl("no_namespace_here", "cpu", lambda x: x)),
               raised(lambda: T.library.register_fake(f"{ns}::missing", lambda x: x))]
        impl_lib._destroy()
        lib._destroy()
        return res

    e, t = both(program)
    assert e == t
    assert e == [ValueError, RuntimeError, RuntimeError, RuntimeError, RuntimeError,
                 RuntimeError, RuntimeError, RuntimeError, ValueError, RuntimeError]


@needs_torch
def test_destroying_a_library_removes_its_ops_and_kernels():
    def program(T, ns):
        frag = T.library.Library(ns, "FRAGMENT")
        frag.define("f(Tensor x) -> Tensor")
        frag.impl("f", lambda x: x + 1, "CPU")
        x = T.zeros(1)
        ops = getattr(T.ops, ns)
        before = ops.f(x)
        with T.library._scoped_library(ns, "IMPL") as impl_lib:
            impl_lib.impl("f", lambda x: x + 2, "CPU")
            inside = ops.f(x)
        after = ops.f(x)
        frag._destroy()
        return before, inside, after, raised(lambda: getattr(T.ops, ns).f)

    e, t = both(program)
    assert_same(e, t)
    assert e[3] is AttributeError


def test_library_define_names_and_overloads():
    ns = fresh()
    lib = library.Library(ns, "DEF")
    assert lib.define("g.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)") == "g"
    assert lib.define("g(Tensor x) -> Tensor") == "g"
    packet = getattr(ember.ops, ns).g
    assert sorted(packet.overloads()) == ["default", "out"]
    assert str(packet.out._schema) == f"{ns}::g.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)"
    assert packet.out.name() == f"{ns}::g.out"
    with pytest.raises(AttributeError, match="no overload name 'nope'"):
        _ = packet.nope
    lib._destroy()


def test_library_impl_refuses_override_when_asked():
    ns = fresh()
    with library._scoped_library(ns, "DEF") as lib:
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", lambda x: x + 1, "CPU")
        with pytest.raises(RuntimeError, match="already a kernel registered"):
            lib.impl("f", lambda x: x + 2, "CPU", allow_override=False)
        with pytest.raises(NotImplementedError, match="with_keyset"):
            lib.impl("f", lambda x: x, "CPU", with_keyset=True)


def test_library_ops_run_on_meta_through_their_meta_kernel():
    if not meta_available():
        pytest.skip("no meta device backend")
    ns = fresh()
    with library._scoped_library(ns, "DEF") as lib:
        lib.define("f(Tensor x, Tensor w) -> Tensor")
        lib.impl("f", lambda x, w: x @ w, "CPU")
        lib.impl("f", lambda x, w: x.new_empty(x.shape[0], w.shape[1]), "Meta")
        y = getattr(ember.ops, ns).f(ember.empty(4, 3, device="meta"),
                                     ember.empty(3, 5, device="meta"))
        assert y.device.type == "meta" and y.shape == (4, 5)


# ------------------------------------------------------------------------------------------------
# autograd


@needs_torch
def test_op_without_autograd_formula_raises_on_backward_like_torch():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::nograd", mutates_args=())
        def nograd(x: T.Tensor) -> T.Tensor:
            return x.sin()

        x = T.tensor(W, requires_grad=True)
        y = nograd(x)
        z = nograd(T.tensor(W))
        err = None
        try:
            y.sum().backward()
        except RuntimeError as e:
            err = str(e)
        return y.requires_grad, z.requires_grad, err

    e, t = both(program)
    assert e[:2] == t[:2] == (True, False)
    for err in (e[2], t[2]):
        assert "no autograd formula was registered" in err and "register_autograd" in err


@needs_torch
def test_register_autograd_list_inputs_and_list_outputs_match_torch():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::weighted", mutates_args=())
        def weighted(tensors: list[T.Tensor], weights: Sequence[float]) -> list[T.Tensor]:
            return [t * w for t, w in zip(tensors, weights)]

        def setup_context(ctx, inputs, output):
            ctx.weights = inputs[1]
            ctx.flags = ctx.needs_input_grad[:3]

        def backward(ctx, grads):
            assert isinstance(grads, list)
            return [g * w for g, w in zip(grads, ctx.weights)], None

        weighted.register_autograd(backward, setup_context=setup_context)
        a = T.tensor(W, requires_grad=True)
        b = T.tensor(X, requires_grad=True)
        outs = weighted([a, b], [2.0, -3.0])
        (outs[0].sum() + (outs[1] * outs[1]).sum()).backward()
        return type(outs).__name__, outs, a.grad, b.grad, outs[0].grad_fn.next_functions[0][
            0] is not None

    e, t = both(program)
    assert_same(e, t)
    assert e[0] == "list"


@needs_torch
def test_register_autograd_multiple_outputs_and_needs_input_grad():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::two", mutates_args=())
        def two(x: T.Tensor, y: T.Tensor, n: int) -> tuple[T.Tensor, T.Tensor]:
            return x * n, x * y

        seen = {}

        def setup_context(ctx, inputs, output):
            x, y, n = inputs
            seen["needs"] = ctx.needs_input_grad[:3]
            seen["out"] = type(output).__name__
            ctx.n = n
            ctx.save_for_backward(x, y)

        def backward(ctx, g1, g2):
            x, y = ctx.saved_tensors
            seen["g2_zero"] = bool((g2 == 0).all())
            return g1 * ctx.n + g2 * y, g2 * x if ctx.needs_input_grad[1] else None, None

        two.register_autograd(backward, setup_context=setup_context)
        x = T.tensor(W, requires_grad=True)
        y = T.tensor(W[::-1].copy())
        p, q = two(x, y, 3)
        p.sum().backward()  # q gets no gradient: it arrives as zeros
        return p, q, x.grad, seen

    e, t = both(program)
    assert_same(e, t)
    assert e[3] == {"needs": (True, False, False), "out": "tuple", "g2_zero": True}


@needs_torch
def test_register_autograd_with_keyword_only_inputs():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::numpy_mul", mutates_args=())
        def numpy_mul(x: T.Tensor, *, val: float) -> T.Tensor:
            return T.from_numpy(x.detach().numpy() * val)

        def setup_context(ctx, inputs, keyword_only_inputs, output):
            ctx.val = keyword_only_inputs["val"]

        def backward(ctx, grad):
            return grad * ctx.val

        T.library.register_autograd(f"{ns}::numpy_mul", backward, setup_context=setup_context)
        x = T.tensor(X, requires_grad=True)
        (g,) = T.autograd.grad(numpy_mul(x, val=3.5), x, T.ones_like(x))
        return g

    e, t = both(program)
    assert_same(e, t)


@needs_torch
def test_backward_errors_match_torch():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::f", mutates_args=())
        def f(x: T.Tensor, n: int) -> T.Tensor:
            return x * n

        x = T.tensor(W, requires_grad=True)
        res = []
        for bw in (lambda ctx, g: (g,) * 3 + (g,),  # too many gradients
                   lambda ctx, g: (g, g)):  # a gradient for the int input
            f.register_autograd(bw)
            res.append(raised(lambda: f(x, 2).sum().backward()))
        f.register_autograd(lambda ctx, g: (g * 2, None, None))  # extra Nones are fine
        f(x, 2).sum().backward()
        return res, x.grad

    e, t = both(program)
    assert e[0] == t[0] == [RuntimeError, RuntimeError]
    assert_same(e[1], t[1])


@needs_torch
def test_register_autograd_on_a_mutating_op_raises():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::m", mutates_args={"x"})
        def m(x: T.Tensor) -> None:
            x.add_(1)

        return raised(lambda: m.register_autograd(lambda ctx, g: g))

    assert both(program) == (RuntimeError, RuntimeError)


@needs_torch
def test_autograd_key_kernel_and_fallthrough_match_torch():
    def program(T, ns):
        lib = T.library.Library(ns, "DEF")
        lib.define("mysin(Tensor x) -> Tensor")
        lib.define("twice(Tensor x) -> Tensor")

        def mysin_cpu(x):
            return T.from_numpy(np.sin(x.detach().numpy()))

        class MySin(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return mysin_cpu(x)

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * x.cos()

        lib.impl("mysin", mysin_cpu, "CPU")
        lib.impl("mysin", MySin.apply, "Autograd")
        lib.impl("twice", lambda x: x * 2, "CPU")
        lib.impl("twice", T.library.fallthrough_kernel, "Autograd")
        ops = getattr(T.ops, ns)
        x = T.tensor(W, requires_grad=True)
        y = ops.mysin(x) + ops.twice(x)
        y.sum().backward()
        res = y, x.grad
        lib._destroy()
        return res

    e, t = both(program)
    assert_same(e, t)
    assert_same(e[1], np.cos(W) + 2)


def test_library_op_without_autograd_kernel_refuses_to_differentiate():
    ns = fresh()
    with library._scoped_library(ns, "DEF") as lib:
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", lambda x: ember.from_numpy(np.sin(x.numpy())), "CPU")
        x = ember.tensor(W, requires_grad=True)
        y = getattr(ember.ops, ns).f(x)
        assert y.requires_grad
        with pytest.raises(RuntimeError, match="no autograd formula"):
            y.sum().backward()


def test_saved_tensor_modified_in_place_raises_version_error():
    ns = fresh()
    numpy_sin = numpy_sin_program(ember, ns)
    x = ember.tensor(W, requires_grad=True)
    h = x * 1
    y = numpy_sin(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_custom_op_graph_is_freed_after_backward():
    ns = fresh()
    numpy_sin = numpy_sin_program(ember, ns)
    x = ember.tensor(W, requires_grad=True)
    y = numpy_sin(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


# ------------------------------------------------------------------------------------------------
# schemas: inference from annotations, and torch's errors


def _annotated(T):
    Tensor = T.Tensor

    def f1(x: Tensor, n: int, a: float, b: bool, s: str) -> Tensor: ...

    def f2(x: Optional[Tensor], n: Optional[int] = None, a: float = 1.0, b: bool = True,
           s: str = "hi") -> Tensor: ...

    def f3(xs: list[Tensor], ns: Sequence[int], fs: typing.List[float],
           bs: list[bool]) -> list[Tensor]: ...

    def f4(x: Tensor, *, alpha: float = 1.0, d: T.dtype = T.float32,
           dev: T.device = None) -> tuple[Tensor, Tensor]: ...

    def f5(x: Tensor, out: list[Tensor]) -> None: ...

    def f6(x: Tensor, q: int | None = None, y: float = 1e-5, z: int = -3,
           s: typing.Union[int, float, bool] = 2) -> typing.Tuple[Tensor, int, float]: ...

    def f7(x: Tensor, d: Optional[T.device] = "cpu", e: Optional[T.dtype] = None,
           ys: Sequence[Optional[Tensor]] = None) -> bool: ...

    return [(f1, ()), (f2, ()), (f3, ()), (f4, ()), (f5, ("out",)), (f5, "unknown"),
            (f6, ()), (f7, ())]


@needs_torch
def test_infer_schema_matches_torch():
    e = [ember.library.infer_schema(f, mutates_args=m) for f, m in _annotated(ember)]
    t = [torch.library.infer_schema(f, mutates_args=m) for f, m in _annotated(torch)]
    assert e == t
    assert e[0] == "(Tensor x, SymInt n, float a, bool b, str s) -> Tensor"
    assert e[4] == "(Tensor x, Tensor(a1!)[] out) -> ()"
    assert ember.library.infer_schema(_annotated(ember)[0][0], mutates_args=(),
                                      op_name="f1").startswith("f1(Tensor x")


def _bad_functions(T):
    Tensor = T.Tensor

    def unsupported(x: Tensor, y: dict) -> Tensor: ...

    def unannotated(x) -> Tensor: ...

    def no_return(x: Tensor): ...

    def varargs(x: Tensor, *args) -> Tensor: ...

    def positional_only(x: Tensor, /, y: Tensor) -> Tensor: ...

    def list_default(x: Tensor, n: list[int] = [1]) -> Tensor: ...  # noqa: B006

    def bad_return(x: Tensor) -> Optional[Tensor]: ...

    def optional_tensor_list(x: Tensor, m: Optional[list[Tensor]] = None) -> Tensor: ...

    def plain(x: Tensor, n: int) -> Tensor: ...

    return [(unsupported, ()), (unannotated, ()), (no_return, ()), (varargs, ()),
            (positional_only, ()), (list_default, ()), (bad_return, ()),
            (optional_tensor_list, ()), (plain, ("z",)), (plain, ("n",)), (plain, "x")]


@needs_torch
def test_infer_schema_errors_match_torch():
    def errors(T):
        return [raised(lambda f=f, m=m: T.library.infer_schema(f, mutates_args=m))
                for f, m in _bad_functions(T)]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e, t = errors(ember), errors(torch)
    assert e == t == [ValueError] * len(e)


@needs_torch
def test_custom_op_definition_errors_match_torch():
    def program(T, ns):
        def f(x: T.Tensor) -> T.Tensor:
            return x.clone()

        return [raised(lambda: T.library.custom_op(f"{ns}::a")(f)),  # no mutates_args
                raised(lambda: T.library.custom_op(f"{ns}::b", mutates_args="x")(f)),
                raised(lambda: T.library.custom_op(
                    f"{ns}::c", mutates_args=("x",), schema="(Tensor x) -> Tensor")(f)),
                raised(lambda: T.library.custom_op(
                    f"{ns}::d", mutates_args=(), schema="(Tensor(a!) x) -> ()")(f)),
                raised(lambda: T.library.custom_op(
                    f"{ns}::e", mutates_args=(), schema="(Tensr x) -> Tensor")(f))]

    e, t = both(program)
    assert e == t == [TypeError, ValueError, ValueError, ValueError, RuntimeError]


@needs_torch
def test_custom_op_with_explicit_schema_and_redefinition():
    def program(T, ns):
        f = T.library.custom_op(f"{ns}::f", mutates_args=(),
                                schema="(Tensor x, int n) -> Tensor")(lambda x, n: x * n)
        first = f(T.ones(2), 3)

        @T.library.custom_op(f"{ns}::f", mutates_args=())  # a re-run cell replaces the op
        def g(x: T.Tensor, n: int) -> T.Tensor:
            return x + n

        return first, getattr(T.ops, ns).f(T.ones(2), 3), repr(g).replace(ns, "NS")

    e, t = both(program)
    assert_same(e, t)


@needs_torch
def test_returning_an_input_or_its_view_raises_like_torch():
    def program(T, ns):
        res = []
        for i, body in enumerate((lambda x: x, lambda x: x.view(-1), lambda x: x[0])):
            def f(x: T.Tensor) -> T.Tensor:
                return body(x)

            op = T.library.custom_op(f"{ns}::f{i}", mutates_args=())(f)
            res.append(raised(lambda: op(T.ones(2, 2))))
        return res

    e, t = both(program)
    assert e == t == [RuntimeError] * 3


@needs_torch
def test_kernel_results_are_checked_against_the_schema():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::not_tensor", mutates_args=())
        def not_tensor(x: T.Tensor) -> T.Tensor:
            return 3

        @T.library.custom_op(f"{ns}::count", mutates_args=())
        def count(x: T.Tensor) -> int:
            return x.numel()

        return raised(lambda: not_tensor(T.ones(1))), count(T.ones(2, 3))

    e, t = both(program)
    assert e == t == (RuntimeError, 6)


def test_schema_parser_round_trips_torch_schemas():
    from ember._library.schema import parse_schema

    for text in ["mylib::f(Tensor a, Tensor b, *, float alpha=1.) -> Tensor",
                 "f(Tensor x, float[] fs=[1., 0.002], float e=1.0000000000000001e-05) -> Tensor",
                 "f(Tensor(a!) x, Tensor(b!)[] ys) -> ()",
                 "f(Tensor?[] ts, int[]? sz=None, SymInt[] s=[], float[] fs=[1.5]) -> Tensor",
                 "f(Tensor x) -> (Tensor values, Tensor indices)",
                 "f.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)",
                 "f(Tensor x, Scalar s=2, str mode=\"mean\", bool? b=None) -> Tensor[]"]:
        s = parse_schema(text)
        assert str(s) == text
        assert str(parse_schema(str(s))) == text
    s = parse_schema("f(Tensor x, int[2] p=1, ScalarType dtype=float) -> Tensor")
    assert s.arguments[1].default_value == [1, 1]
    assert s.arguments[2].default_value is ember.float32
    with pytest.raises(RuntimeError, match="unknown type specifier"):
        parse_schema("f(Tensr x) -> Tensor")


def test_unknown_dispatch_key_or_device_type_is_rejected():
    ns = fresh()
    with library._scoped_library(ns, "DEF") as lib:
        lib.define("f(Tensor x) -> Tensor")
        with pytest.raises(NotImplementedError, match="no dispatch key 'Functionalize'"):
            lib.impl("f", lambda x: x, "Functionalize")
    with pytest.raises(ValueError, match="namespace 'aten'"):
        library.custom_op("aten::mine", lambda x: x, mutates_args=())


# ------------------------------------------------------------------------------------------------
# factories and argument types


@needs_torch
def test_factory_op_with_device_argument_matches_torch():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::bar", mutates_args={}, device_types="cpu")
        def bar(device: T.device, n: int = 3) -> T.Tensor:
            return T.ones(n)

        return bar("cpu"), bar(T.device("cpu"), 2)

    e, t = both(program)
    assert_same(e, t)


@needs_torch
def test_dtype_optional_and_scalar_arguments_match_torch():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::cast_add", mutates_args=())
        def cast_add(x: T.Tensor, other: Optional[T.Tensor] = None,
                     dtype: Optional[T.dtype] = None,
                     s: typing.Union[int, float, bool] = 1) -> T.Tensor:
            y = x if other is None else x + other
            y = y + s
            return y if dtype is None else y.to(dtype)

        x = T.tensor(W)
        return (cast_add(x), cast_add(x, x, T.float64), cast_add(x, s=2.5),
                cast_add(x, dtype=T.int64, s=True))

    e, t = both(program)
    assert_same(e, t)


# ------------------------------------------------------------------------------------------------
# opcheck


def _opcheck_summary(results):
    return {k: "SUCCESS" if v == "SUCCESS" else type(v).__name__ for k, v in results.items()}


@needs_torch
def test_opcheck_passes_a_correct_op_like_torch():
    def program(T, ns):
        numpy_sin = numpy_sin_program(T, ns)
        samples = [(T.tensor(X),), (T.tensor(W, requires_grad=True),)]
        return [_opcheck_summary(T.library.opcheck(numpy_sin, s)) for s in samples]

    e, t = both(program)
    assert e == t
    assert all(v == "SUCCESS" for r in e for v in r.values())


@needs_torch
def test_opcheck_finds_what_torch_finds():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::sneaky", mutates_args=())
        def sneaky(x: T.Tensor) -> T.Tensor:
            x.add_(1)  # writes an argument the schema says is read only
            return x.clone()

        sneaky.register_fake(lambda x: T.empty_like(x))

        @T.library.custom_op(f"{ns}::badfake", mutates_args=())
        def badfake(x: T.Tensor) -> T.Tensor:
            return x * 2

        badfake.register_fake(lambda x: x.new_empty(x.shape[0] + 1))

        @T.library.custom_op(f"{ns}::nofake", mutates_args=())
        def nofake(x: T.Tensor) -> T.Tensor:
            return x * 2

        lib = T.library.Library(ns, "FRAGMENT")
        lib.define("noag(Tensor x) -> Tensor")
        lib.impl("noag", lambda x: x * 2, "CPU")
        lib.impl("noag", lambda x: T.empty_like(x), "Meta")
        x = T.tensor(W)
        res = [_opcheck_summary(T.library.opcheck(op, (x,), raise_exception=False,
                                                  test_utils=utils))
               for op, utils in ((sneaky, "test_schema"), (badfake, "test_faketensor"),
                                 (nofake, "test_faketensor"),
                                 (getattr(T.ops, ns).noag.default,
                                  ("test_schema", "test_autograd_registration")))]
        rg = T.tensor(W, requires_grad=True)
        res.append(_opcheck_summary(T.library.opcheck(
            getattr(T.ops, ns).noag, (rg,), raise_exception=False,
            test_utils="test_autograd_registration")))
        res.append(raised(lambda: T.library.opcheck(badfake, (x,))).__name__)
        res.append(raised(lambda: T.library.opcheck(badfake, (x,), test_utils="test_nope")))
        lib._destroy()
        return res

    e, t = both(program)
    assert e == t
    assert e[0] == {"test_schema": "RuntimeError"}
    assert e[1] == {"test_faketensor": "MetadataMismatchError"}
    assert e[2] == {"test_faketensor": "RuntimeError"}
    assert e[4] == {"test_autograd_registration": "AssertionError"}
    assert e[5] == "OpCheckError" and e[6] is ValueError


def test_opcheck_holds_the_formula_against_finite_differences():
    ns = fresh()

    @library.custom_op(f"{ns}::cube", mutates_args=())
    def cube(x: ember.Tensor) -> ember.Tensor:
        return x ** 3

    cube.register_fake(lambda x: ember.empty_like(x))
    cube.register_autograd(lambda ctx, g: g * 2)  # wrong: d(x^3)/dx is 3x^2
    sample = (ember.tensor(W, requires_grad=True),)
    res = library.opcheck(cube, sample, raise_exception=False)
    assert isinstance(res["test_autograd_registration"], RuntimeError)
    assert "differ from finite differences" in str(res["test_autograd_registration"])
    cube.register_autograd(lambda ctx, g: g * 3 * ctx.x ** 2,
                           setup_context=lambda ctx, inputs, output: setattr(ctx, "x",
                                                                             inputs[0]))
    assert all(v == "SUCCESS" for v in library.opcheck(cube, sample).values())
    with pytest.raises(OpCheckError, match="test_faketensor failed"):
        cube.register_fake(lambda x: ember.empty(1))
        library.opcheck(cube, sample)


def test_opcheck_checks_mutation_declared_but_aliasing_undeclared():
    ns = fresh()
    with library._scoped_library(ns, "DEF") as lib:
        lib.define("alias(Tensor x) -> Tensor")
        lib.impl("alias", lambda x: x, "CPU")
        lib.impl("alias", lambda x: ember.empty_like(x), "Meta")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # returning an input is deprecated: a warning
            res = library.opcheck(getattr(ember.ops, ns).alias, (ember.ones(2),),
                                  test_utils="test_schema", raise_exception=False)
        assert "not defined to alias output" in str(res["test_schema"])


def test_opcheck_accepts_the_op_in_every_form():
    ns = fresh()
    numpy_sin = numpy_sin_program(ember, ns)
    packet = getattr(ember.ops, ns).numpy_sin
    for op in (numpy_sin, packet, packet.default):
        assert library.opcheck(op, (ember.tensor(W),))["test_faketensor"] == "SUCCESS"
    with pytest.raises(TypeError, match="CustomOpDef"):
        library.opcheck(lambda x: x, (ember.ones(1),))


# ------------------------------------------------------------------------------------------------
# the meta device: the fake rule is the op's meta kernel


@needs_meta
def test_fake_rule_runs_on_meta_tensors():
    ns = fresh()
    numpy_sin = numpy_sin_program(ember, ns)
    y = numpy_sin(ember.empty(4, 5, device="meta"))
    assert y.device.type == "meta" and y.shape == (4, 5) and y.dtype == ember.float32
    x = ember.empty(3, device="meta", requires_grad=True)
    numpy_sin(x).sum().backward()
    assert x.grad.device.type == "meta" and x.grad.shape == (3,)


@needs_meta
def test_meta_without_fake_rule_raises_like_torch():
    ns = fresh()

    @library.custom_op(f"{ns}::f", mutates_args=())
    def f(x: ember.Tensor) -> ember.Tensor:
        return x * 2

    with pytest.raises(RuntimeError, match="no fake impl registered.*register_fake"):
        f(ember.empty(2, device="meta"))


@needs_meta
def test_fake_rule_that_reads_data_fails_opcheck_on_meta():
    ns = fresh()

    @library.custom_op(f"{ns}::f", mutates_args=())
    def f(x: ember.Tensor) -> ember.Tensor:
        return x * 2

    f.register_fake(lambda x: ember.from_numpy(x.numpy() * 2))
    res = library.opcheck(f, (ember.tensor(W),), test_utils="test_faketensor",
                          raise_exception=False)
    assert res["test_faketensor"] != "SUCCESS"


# ------------------------------------------------------------------------------------------------
# ember's older form of impl: an array kernel for one of ember's own ops


def test_impl_of_a_builtin_op_still_takes_an_array_kernel():
    from ember._ops._registry import ops

    op = ops["exp"]
    saved = dict(op.overrides), op.builtin_cpu
    hits = []
    base = op.resolve(np.ndarray)

    def mine(a, **params):
        hits.append(a.shape)
        return base(a, **params)

    try:
        assert library.impl("exp", "cpu", mine) is mine
        ember.ones(2, 3).exp()
    finally:
        op.overrides.clear()
        op.overrides.update(saved[0])
        op.builtin_cpu = saved[1]
        op.impl.clear()
    assert hits == [(2, 3)]
    with pytest.raises(ValueError, match="no op named"):
        library.impl("no_such_op_anywhere", "cpu")


# ------------------------------------------------------------------------------------------------
# register_autocast


def test_register_autocast_casts_floating_inputs_under_autocast():
    @ember.library.custom_op("t_autocast::sin2", mutates_args=())
    def sin2(x: ember.Tensor, n: ember.Tensor) -> ember.Tensor:
        return (x.sin() * 2).to(x.dtype)

    ember.library.register_autocast("t_autocast::sin2", "cpu", ember.float16)
    x, n = ember.randn(3), ember.arange(3)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert sin2(x, n).dtype == ember.float16
    assert sin2(x, n).dtype == ember.float32  # outside autocast: as called


def test_register_autocast_runs_the_op_with_autocast_off():
    @ember.library.custom_op("t_autocast::gram", mutates_args=())
    def gram(x: ember.Tensor) -> ember.Tensor:
        return x @ x.T  # would run in bfloat16 if autocast stayed on inside

    gram.register_autocast("cpu", ember.float32)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert gram(ember.randn(2, 2, dtype=ember.bfloat16)).dtype == ember.float32


def test_register_autocast_bad_arguments():
    @ember.library.custom_op("t_autocast::ident", mutates_args=())
    def ident(x: ember.Tensor) -> ember.Tensor:
        return x.clone()

    with pytest.raises(RuntimeError):
        ember.library.register_autocast("t_autocast::ident", "tpu", ember.float16)
    with pytest.raises(TypeError):
        ember.library.register_autocast("t_autocast::ident", "cpu", "float16")
    with pytest.raises(RuntimeError, match="does not exist"):
        ember.library.register_autocast("t_autocast::nothere", "cpu", ember.float16)
