"""ember.library: a new device type runs xp-generic kernels, takes overrides, and names
missing kernels."""

import numpy as np
import pytest

import ember
from ember import _dispatch, library


class FakeArray(np.ndarray):
    """Arrays of an out-of-tree 'device' (NumPy underneath, a distinct type on top)."""


class FakeXP:
    """An array namespace producing FakeArray results."""

    def __getattr__(self, name):
        fn = getattr(np, name)
        if not callable(fn) or isinstance(fn, np.ufunc):
            return fn  # ufuncs keep the FakeArray subclass by themselves

        def wrapped(*args, **kwargs):
            r = fn(*[np.asarray(a) if isinstance(a, FakeArray) else a for a in args],
                   **kwargs)
            return r.view(FakeArray) if isinstance(r, np.ndarray) else r

        return wrapped


@pytest.fixture(scope="module")
def fakedev():
    if "fakedev" not in _dispatch.backends_by_name:
        library.register_backend("fakedev", FakeXP(), FakeArray,
                                 lambda a: np.array(a if isinstance(a, np.ndarray) else a.get(),
                                                    copy=True).view(FakeArray))
    return "fakedev"


def test_new_device_runs_generic_kernels_and_autograd(fakedev):
    x = ember.tensor([1.0, 2.0, 3.0]).to(fakedev)
    assert x.device == ember.device(fakedev)
    y = x.to(fakedev).requires_grad_()
    z = ember.nn.functional.softmax(y, 0)
    assert z.device.type == fakedev
    z[0].backward()
    assert y.grad.device.type == fakedev
    assert np.allclose(np.asarray(z.detach().to("cpu")._data),
                       np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum())


def test_impl_overrides_a_kernel(fakedev):
    calls = []

    @library.impl("softmax", fakedev)
    def softmax_kernel(a, *, dim):
        calls.append(dim)
        e = np.exp(np.asarray(a) - np.asarray(a).max(axis=dim, keepdims=True))
        return (e / e.sum(axis=dim, keepdims=True)).view(FakeArray)

    out = ember.tensor([[0.0, 1.0]]).to(fakedev).softmax(1)
    assert calls == [1] and out.device.type == fakedev


def test_missing_kernel_is_a_clear_error():
    from ember._ops._registry import Op

    op = Op("_library_test_only_cpu", overrides={"cpu": lambda a: a})

    class Other(np.ndarray):
        pass

    if "otherdev" not in _dispatch.backends_by_name:
        library.register_backend("otherdev", np, Other, lambda a: np.asarray(a).view(Other))
    t = ember.tensor([1.0]).to("otherdev")
    with pytest.raises(NotImplementedError, match="_library_test_only_cpu.*otherdev"):
        _dispatch.apply(op, (t,), {})


def test_backends_and_op_listing():
    assert "cpu" in library.backends()
    rows = library.registered_ops()
    names = {r["name"] for r in rows}
    assert {"add", "matmul", "sum", "softmax"} <= names
    add = next(r for r in rows if r["name"] == "add")
    assert "cpu" in add["backends"] and add["differentiable"]
