"""``torch.library`` forms that PyTorch's documentation uses, run with ember and torch: the
older ``impl(lib, name, dispatch_key)`` decorator, ``Library("aten", "IMPL")`` replacing a
built-in kernel, the automatic fake rule of an op that only writes into its arguments, the
missing-Meta-kernel error of a ``Library`` op, and float defaults as schemas print them.

Every program is written once as a function of the module ``T`` and a fresh namespace.
"""

import itertools

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_ids = itertools.count()


def both(program):
    """``program(T, ns)`` with ember and with torch, each in a namespace of its own."""
    return (program(ember, f"e_torch_forms_{next(_ids)}"),
            program(torch, f"t_torch_forms_{next(_ids)}"))


def test_impl_with_library_first_registers_kernel():
    def program(T, ns):
        lib = T.library.Library(ns, "DEF")
        lib.define("scale(Tensor x, float alpha=1.0) -> Tensor")

        @T.library.impl(lib, "scale", "CPU")
        def _(x, alpha=1.0):
            return x * alpha

        out = getattr(T.ops, ns).scale(T.ones(2), 3.0).tolist()
        lib._destroy()
        return out

    e, t = both(program)
    assert e == t == [3.0, 3.0]


def test_impl_with_library_first_composite_is_differentiable():
    def program(T, ns):
        lib = T.library.Library(ns, "DEF")
        lib.define("sin2(Tensor x) -> Tensor")

        @T.library.impl(lib, "sin2", "CompositeImplicitAutograd")
        def _(x):
            return x.sin() * 2

        x = T.tensor([0.5, -1.0], requires_grad=True)
        (g,) = T.autograd.grad(getattr(T.ops, ns).sin2(x).sum(), x)
        lib._destroy()
        return g.numpy()

    e, t = both(program)
    np.testing.assert_allclose(e, t, rtol=1e-5)


def test_impl_with_library_first_meta_kernel_runs_on_meta():
    def program(T, ns):
        lib = T.library.Library(ns, "DEF")
        lib.define("twice(Tensor x) -> Tensor")
        T.library.impl(lib, "twice", "Meta")(lambda x: T.empty_like(x))
        r = getattr(T.ops, ns).twice(T.empty(3, 2, device="meta"))
        lib._destroy()
        return tuple(r.shape), r.device.type

    e, t = both(program)
    assert e == t == ((3, 2), "meta")


def test_aten_impl_library_replaces_builtin_cpu_kernel():
    def program(T, ns):
        calls = []

        def my_mul(a, b):
            calls.append(1)
            return T.from_numpy(a.numpy() * b.numpy() + 100)

        lib = T.library.Library("aten", "IMPL")
        lib.impl("mul.Tensor", my_mul, "CPU")
        during = (T.ones(2) * T.full((2,), 3.0)).tolist()
        lib._destroy()
        after = (T.ones(2) * T.full((2,), 3.0)).tolist()
        return during, after, len(calls)

    e, t = both(program)
    assert e == t == ([103.0, 103.0], [3.0, 3.0], 1)


def test_aten_impl_library_keeps_derivative_formula():
    def program(T, ns):
        lib = T.library.Library("aten", "IMPL")
        lib.impl("mul.Tensor", lambda a, b: T.from_numpy(a.detach().numpy() *
                                                         b.detach().numpy()), "CPU")
        x = T.tensor([1.0, 2.0], requires_grad=True)
        (g,) = T.autograd.grad((x * T.tensor([3.0, 4.0])).sum(), x)
        lib._destroy()
        return g.tolist()

    e, t = both(program)
    assert e == t == [3.0, 4.0]


def test_aten_impl_library_refuses_unknown_op():
    lib = ember.library.Library("aten", "IMPL")
    with pytest.raises(NotImplementedError, match="no_such_op"):
        lib.impl("no_such_op.Tensor", lambda x: x, "CPU")
    lib._destroy()


def test_mutating_custom_op_without_fake_runs_on_meta():
    def program(T, ns):
        @T.library.custom_op(f"{ns}::bump", mutates_args={"out"})
        def bump(x: T.Tensor, out: T.Tensor) -> None:
            out.copy_(x + 1)

        o = T.zeros(3)
        bump(T.ones(3), o)
        meta = bump(T.empty(3, device="meta"), T.empty(3, device="meta"))
        report = T.library.opcheck(bump, (T.ones(3), T.zeros(3)))
        return o.tolist(), meta, report

    e, t = both(program)
    assert e == t
    assert e[2]["test_faketensor"] == "SUCCESS"


def test_library_op_without_meta_kernel_raises_not_implemented():
    def program(T, ns):
        lib = T.library.Library(ns, "DEF")
        lib.define("foo(Tensor x) -> Tensor")
        lib.impl("foo", lambda x: x * 2, "CPU")
        try:
            getattr(T.ops, ns).foo(T.empty(2, device="meta"))
        except Exception as exc:  # noqa: BLE001 - the type is what is compared
            kind = type(exc)
        finally:
            lib._destroy()
        return kind

    e, t = both(program)
    assert e is t is NotImplementedError


def test_schema_prints_float_defaults_as_torch():
    def program(T, ns):
        T.library.define(f"{ns}::f", "(Tensor x, float a=1.0, float b=0.5, float c=1e-05, "
                                     "float d=100.0, float e=0.1) -> Tensor")
        return str(getattr(T.ops, ns).f.default._schema).split("(", 1)[1]

    e, t = both(program)
    assert e == t


def test_infer_schema_keeps_python_float_text():
    def f(x: ember.Tensor, a: float = 1.0, b: float = 1e-05) -> ember.Tensor: ...

    def g(x: torch.Tensor, a: float = 1.0, b: float = 1e-05) -> torch.Tensor: ...

    assert ember.library.infer_schema(f, mutates_args=()) == \
        torch.library.infer_schema(g, mutates_args=())
