"""What a Python dispatch mode sees, against torch: overload names (``aten.sum.dim_IntList``,
``aten.std.correction``, ``aten.add_.Tensor``...), indexing as torch's steps (``select.int``,
``slice.Tensor``, ``unsqueeze``, ``index.Tensor``, ``alias``), ``func.__name__``,
``func._schema`` and ``func.overloadpacket``; and ``ember.ops.aten.<op>.<overload>`` called
with torch's arguments (NOTE [ Overload names ] in ember/_ops/_overloads.py).

Every program is written once as a function of the module ``T`` and run with both.
"""

import warnings

import numpy as np
import pytest

import ember
import ember.utils._python_dispatch  # noqa: F401  (T.utils._python_dispatch below)

pytest.importorskip("torch.utils._python_dispatch")  # T.utils._python_dispatch below
torch = pytest.importorskip("torch")


def _log_mode(T):
    class Log(T.utils._python_dispatch.TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.funcs = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.funcs.append(func)
            return func(*args, **(kwargs or {}))

    return Log()


def _inputs(T):
    g = np.random.default_rng(0)
    x = T.tensor(g.standard_normal((4, 5)), dtype=T.float32)
    return {"x": x, "y": T.tensor(g.standard_normal((4, 5)), dtype=T.float32),
            "i": T.tensor([0, 2]), "m": x > 0, "ints": T.tensor([[1, 2], [3, 4]])}


# calls whose logged ops are torch's exactly
CALLS = {
    "add": "x + y", "add_number": "x + 1", "radd": "1 + x", "sub": "x - y", "rsub": "1 - x",
    "mul_number": "x * 2", "div": "x / y", "floordiv": "x // 2", "mod": "x % 2",
    "pow": "x ** 2", "rpow": "2 ** x", "pow_tensors": "x ** y", "gt_number": "x > 0",
    "eq": "x == y", "maximum": "T.maximum(x, y)", "atan2": "T.atan2(x, y)",
    "clamp_numbers": "x.clamp(-1, 1)", "clamp_tensors": "x.clamp(y, y + 1)",
    "where": "T.where(m, x, y)", "sum": "x.sum()", "sum_dim": "x.sum(0)",
    "sum_dim_keepdim": "x.sum(dim=1, keepdim=True)", "sum_dtype": "x.sum(dtype=T.float64)",
    "mean_dim": "x.mean(1)", "prod_dim": "x.prod(1)", "max": "x.max()", "max_dim": "x.max(1)",
    "min": "x.min()", "min_dim": "x.min(0)", "amin": "x.amin(1)", "std": "x.std()",
    "std_dim": "x.std(1)", "var_dim": "x.var(0, unbiased=False)", "all": "m.all()",
    "all_dim": "m.all(1)", "any_dim": "m.any(1)", "any_dims": "m.any((0, 1))",
    "chunk": "x.chunk(2)", "split_sizes": "x.split([1, 3])", "transpose": "x.transpose(0, 1)",
    "select": "x.select(0, 1)", "masked_fill": "x.masked_fill(m, 0.0)",
    "masked_fill_": "x.clone().masked_fill_(m, 0.0)", "add_": "x.clone().add_(y)",
    "mul_number_": "x.clone().mul_(2)", "gt_number_": "x.clone().gt_(0)",
    "pow_number_": "x.clone().pow_(2)", "fill_": "x.clone().fill_(1)",
    "clamp_": "x.clone().clamp_(0, 1)", "floor_divide_": "x.clone().floor_divide_(y)",
    "bitwise_and_number": "ints & 1", "lshift_number": "T.bitwise_left_shift(ints, 1)",
    "empty": "T.empty(2, 3)",
    "getitem_int": "x[0]", "getitem_negative": "x[-1]", "getitem_slice": "x[1:3]",
    "getitem_two_ints": "x[0, 1]", "getitem_ellipsis": "x[..., 0]", "getitem_none": "x[None]",
    "getitem_tensor": "x[i]", "getitem_mask": "x[m]", "getitem_slice_tensor": "x[1:, i]",
    "getitem_step": "x[::2]", "getitem_whole": "x[:]", "getitem_whole_in_tuple": "x[:, 0:5]",
    "getitem_dots": "x[...]", "getitem_tensor_second": "x[:, i]",
    "getitem_none_int": "x[None, 0]", "getitem_tensors": "x[i, i]",
    "narrow": "x.narrow(1, 1, 2)", "narrow_negative": "x.narrow(0, -2, 2)",
    "linear": "T.nn.functional.linear(x, y[:3], y[0, :3])",
    "linear_no_bias": "T.nn.functional.linear(x, y[:3])",
    "linear_batch": "T.nn.functional.linear(x.view(2, 2, 5), y[:3], y[0, :3])",
    "softmax": "T.nn.functional.softmax(x, 1)", "log_softmax": "x.log_softmax(0)",
}


def _logged(T, expr):
    env = dict(_inputs(T), T=T)
    mode = _log_mode(T)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with mode:
            eval(expr, env)
    return [str(f) for f in mode.funcs]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_mode_logs_torch_overloads_for(name):
    assert _logged(ember, CALLS[name]) == _logged(torch, CALLS[name])


def test_mode_func_is_the_packets_overload():
    def program(T):
        seen = []
        mode = _log_mode(T)
        x = T.ones(2, 3)
        with mode:
            x.sum(1)
            x.std()
            x[0]
        A = T.ops.aten
        for f, want in zip(mode.funcs, (A.sum.dim_IntList, A.std.correction, A.select.int)):
            seen.append((f is want, f.__name__, f.overloadpacket.__name__,
                         f.overloadpacket is getattr(A, f.overloadpacket.__name__)))
        return seen

    assert program(ember) == program(torch)


SCHEMA_OVERLOADS = ["sum.default", "sum.dim_IntList", "mean.dim", "max.dim", "min.default",
                    "std.correction", "add.Tensor", "add_.Tensor", "mul_.Tensor",
                    "index.Tensor", "select.int", "slice.Tensor", "where.self",
                    "split.Tensor", "fill_.Scalar", "view.default", "transpose.int",
                    "maximum.default", "clamp.default", "alias.default"]


@pytest.mark.parametrize("name", SCHEMA_OVERLOADS)
def test_overload_schema_matches_torch_for(name):
    def schema(T):
        packet, overload = name.split(".")
        s = getattr(getattr(T.ops.aten, packet), overload)._schema
        return str(s), s.is_mutable, [a.name for a in s.arguments], len(s.returns)

    assert schema(ember) == schema(torch)


def test_made_up_schema_marks_inplace_and_view():
    s = ember.ops.aten.setitem_.default._schema
    assert s.is_mutable and str(s).startswith("aten::setitem_(Tensor(a!) self")


INDEXES = ["1", "-1", "slice(1, 3)", "(slice(None), 1)", "(Ellipsis, 2)", "None",
           "(None, 0, None)", "i", "(i, i)", "(slice(None), i)", "(Ellipsis, i)", "m",
           "(slice(1, None), i)", "(0, i)", "(i, None)", "(j, i)",
           "(slice(None, None, 2), slice(-3, None))", "(1, 2)", "Ellipsis",
           "(slice(None), slice(0, 100))", "slice(None)", "(slice(2, 1),)",
           "(None, Ellipsis, None)", "(i, Ellipsis, None)", "(slice(None), None, i)"]


@pytest.mark.parametrize("key", INDEXES)
def test_indexing_under_mode_matches_torch_values_grads_and_log(key):
    def program(T):
        x0 = T.arange(20.).reshape(4, 5)
        env = {"i": T.tensor([0, 2]), "j": T.tensor([[1], [3]]),
               "m": (T.arange(20).reshape(4, 5) % 3) == 0}
        idx = eval(key, env)
        x = x0.clone().requires_grad_(True)
        mode = _log_mode(T)
        with mode:
            r = x[idx]
        (g,) = T.autograd.grad(r.sum(), x, allow_unused=True)
        return (r.detach().numpy().tolist(), g.numpy().tolist(),
                type(r.grad_fn).__name__, [str(f) for f in mode.funcs])

    assert program(ember) == program(torch)


def test_indexing_under_mode_keeps_views():
    x = ember.zeros(3, 4)
    with _log_mode(ember):
        v = x[1:, 0]
    v.fill_(5.0)
    assert x[1:, 0].tolist() == [5.0, 5.0] and v._base is x


def test_mode_rebuilding_arguments_runs_the_same_ops():
    def program(T):
        class Rebuild(T.utils._python_dispatch.TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                args = [list(a) if isinstance(a, list) else a for a in args]
                return func(*args, **dict(kwargs or {}))

        x = T.arange(20.).reshape(4, 5)
        with Rebuild():
            r = (x[:, T.tensor([0, 2])].sum(1), x.std(1), x.max(0).values)
        return [t.numpy().round(5).tolist() for t in r]

    assert program(ember) == program(torch)


DIRECT = ["A.sum.default(x)", "A.sum.dim_IntList(x, [0])", "A.sum.dim_IntList(x, [1], True)",
          "A.mean.dim(x, [1])", "A.prod.dim_int(x, 1)", "A.max.dim(x, 1)", "A.min.dim(x, 0)",
          "A.max.default(x)", "A.std.correction(x, [1])",
          "A.var.correction(x, [0], correction=0)", "A.any.dim(m, 1)",
          "A.view.default(x, [12])", "A.transpose.int(x, 0, 1)", "A.unsqueeze.default(x, 0)",
          "A.select.int(x, 0, 1)", "A.slice.Tensor(x, 1, 1, 3)",
          "A.slice.Tensor(x, 0, 0, 9223372036854775807, 2)", "A.index.Tensor(x, [None, i])",
          "A.add.Tensor(x, x, alpha=2)", "A.rsub.Scalar(x, 1)", "A.maximum.default(x, x * 0)",
          "A.clamp.default(x, 1, 5)", "A.where.self(m, x, x * 0)",
          "A.masked_fill.Scalar(x, m, 0.0)", "A.split_with_sizes.default(x, [1, 2])",
          "A.fill_.Scalar(x.clone(), 3)", "A.cat.default([x, x], 1)", "A.softmax.int(x, 1)",
          "A._softmax.default(x, 1, False)", "A._log_softmax.default(x, 0, False)"]


@pytest.mark.parametrize("call", DIRECT)
def test_aten_overload_called_with_torchs_arguments(call):
    def program(T):
        x = T.arange(12.).reshape(3, 4)
        r = eval(call, {"A": T.ops.aten, "x": x, "i": T.tensor([0, 2]), "m": x > 5})
        rs = r if isinstance(r, (tuple, list)) else (r,)
        return [(np.round(t.numpy(), 4) if t.is_floating_point() else t.numpy()).tolist()
                for t in rs]

    assert program(ember) == program(torch)


def test_mode_can_keep_embers_own_names():
    class Plain(ember.utils._python_dispatch.TorchDispatchMode):
        _torch_overload_names = False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(str(func))
            return func(*args, **(kwargs or {}))

    mode = Plain()
    mode.names = []
    with mode:
        ember.ones(2, 3).sum(1)
    assert mode.names[-1] == "aten.sum.default"
