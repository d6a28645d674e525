"""The inlined operator path (NOTE [ Operators inlined ] in ember/_ops/arithmetic.py), relu's
kernel, and leaves' AccumulateGrad nodes (NOTE [ Accumulators live with their graph ] in
ember/autograd/_nodes.py), each compared with PyTorch."""

import numpy as np
import pytest

import ember
from ember.utils._python_dispatch import TorchDispatchMode

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(15)

_OPS = [lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a * b, lambda a, b: a / b,
        lambda a, b: a ** b]


def _both(shape, dtype):
    if np.dtype(dtype).kind in "iu":
        a = np.asarray(_rng.integers(1, 5, shape), dtype=dtype)
    else:
        a = np.asarray(_rng.random(shape) + 0.5, dtype=dtype)
    return ember.from_numpy(a.copy()), torch.from_numpy(a.copy())


@pytest.mark.parametrize("op", range(len(_OPS)))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "uint8"])
@pytest.mark.parametrize("shapes", [((10,), (10,)), ((), ()), ((3, 1), (4,)), ((2, 3), ())])
def test_operator_same_dtype_matches_torch(op, dtype, shapes):
    (ea, ta), (eb, tb) = _both(shapes[0], dtype), _both(shapes[1], dtype)
    e, t = _OPS[op](ea, eb), _OPS[op](ta, tb)
    assert type(e) is ember.Tensor and str(e.dtype)[6:] == str(t.dtype)[6:]
    assert tuple(e.shape) == tuple(t.shape)
    assert type(e._data) is np.ndarray  # a zero-dim result stays an array
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-3)


def test_operator_broadcast_error_matches_torch():
    msgs = []
    for fw in (ember, torch):
        with pytest.raises(RuntimeError) as info:
            fw.ones(2) + fw.ones(3)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
    a = ember.ones(2)
    with pytest.raises(RuntimeError):
        a + ember.ones(3)
    assert a.tolist() == [1.0, 1.0]  # bad input changes nothing


def test_operator_records_with_requires_grad_like_torch():
    for fw in (ember, torch):
        x = fw.tensor([1.0, 2.0], requires_grad=True)
        y = fw.tensor([3.0, 4.0])
        z = x * y + x
        assert z.requires_grad and type(z.grad_fn).__name__ == "AddBackward0"
        z.sum().backward()
        assert x.grad.tolist() == [4.0, 5.0]
    with ember.no_grad():
        assert (ember.ones(2, requires_grad=True) + ember.ones(2)).grad_fn is None


def test_operator_seen_by_a_dispatch_mode():
    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    a, b = ember.ones(3), ember.ones(3)
    with Log():
        r = a + b
        a * b
    assert r.tolist() == [2.0, 2.0, 2.0]
    assert seen == ["aten.add.Tensor", "aten.mul.Tensor"]
    seen.clear()
    a + b  # the mode is gone: nothing logged
    assert seen == []


def test_operator_subclass_operand_keeps_torch_function():
    calls = []

    class Sub(ember.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs or {})

    s = ember.ones(2).as_subclass(Sub)
    r = ember.ones(2) + s
    assert type(r) is Sub and calls and calls[0] == "__add__"


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int64", "bfloat16"])
def test_relu_matches_torch_with_signed_zeros(dtype):
    if dtype in ("int8", "int64"):
        data = [-3, 0, 5]
    else:
        data = [-1.5, -0.0, 0.0, 2.0, float("nan")]
    e = ember.tensor(data, dtype=getattr(ember, dtype)).relu()
    t = torch.tensor(data, dtype=getattr(torch, dtype)).relu()
    assert str(e.dtype)[6:] == str(t.dtype)[6:]
    ev, tv = e.float().numpy(), t.float().numpy()
    np.testing.assert_array_equal(ev, tv)
    np.testing.assert_array_equal(np.signbit(ev), np.signbit(tv))
    assert ember.tensor(-2.0).relu().dim() == 0


def _accumulator(y):
    return y.grad_fn.next_functions[0][0]


def test_accumulator_shared_while_a_graph_holds_it():
    for fw in (ember, torch):
        x = fw.ones(2, requires_grad=True)
        y1, y2 = x + 1, x * 2
        assert _accumulator(y1) is _accumulator(y2)
        assert x.grad_fn is None and _accumulator(y1).variable is x
        kept = _accumulator(y1)
        del y1, y2
        assert _accumulator(x - 1) is kept  # held by the user: still the leaf's node


def test_accumulator_of_a_freed_graph_takes_its_hooks_with_it():
    fired = {}
    for fw in (ember, torch):
        x = fw.ones(2, requires_grad=True)
        fired[fw.__name__] = []
        _accumulator(x * 2).register_hook(lambda *a, n=fw.__name__: fired[n].append(1))
        (x * 3).sum().backward()  # a new graph: its node carries no hook
        assert x.grad.tolist() == [3.0, 3.0]
    assert fired == {"ember": [], "torch": []}


def test_accumulator_after_swap_tensors_matches_torch():
    grads = []
    for fw in (ember, torch):
        a = fw.ones(2, requires_grad=True)
        b = fw.zeros(2, requires_grad=True)
        fw.utils.swap_tensors(a, b)
        y = a + fw.ones(2)
        assert type(_accumulator(y)).__name__ == "AccumulateGrad"
        ((a * 3).sum() + a.sum() + fw.stack([a, b]).sum()).backward()
        grads.append((a.grad.tolist(), b.grad.tolist()))
    assert grads[0] == grads[1]
