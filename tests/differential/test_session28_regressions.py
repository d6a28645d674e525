"""Regressions for session 28's differential run against PyTorch 2.13: each case runs with
``T = ember`` and ``T = torch`` from the same values where torch is installed, and compares
values, dtypes, shapes or the exception raised (class and message)."""

import numpy as np
import pytest

from tests.differential._cases import as_numpy as _np
from tests.differential._cases import both as _both
from tests.differential._cases import raised as _raised


def _outcome(f):
    """(dtype name, shape, values) of ``f()``'s tensor, or (class, message) it raised."""
    err = _raised(f)
    if err:
        return err
    r = f()
    return str(r.dtype).split(".")[-1], tuple(r.shape), _np(r).tolist()


# ---- pow: a bool tensor to a Python bool power is a copy or ones; other bool pows refused


_BOOL_POWS = {
    "method_true": lambda T, x: x.pow(True),
    "method_false": lambda T, x: x.pow(False),
    "operator": lambda T, x: x ** True,
    "inplace_false": lambda T, x: x.clone().pow_(False),
    "out_int64": lambda T, x: T.pow(x, True, out=T.empty(x.shape, dtype=T.int64)),
    "expanded": lambda T, x: x[:1].expand(3, 4).pow(False),
    "transposed": lambda T, x: x.t().pow(True),
    "zero_dim": lambda T, x: x[0, 0].pow(True),
    "two_tensors": lambda T, x: x.pow(x),
    "zero_dim_exponent": lambda T, x: x.pow(T.tensor(True)),
    "bool_base": lambda T, x: T.pow(True, x),
    "reflected": lambda T, x: True ** x,
    "int_exponent": lambda T, x: x.pow(2),
    "float_exponent": lambda T, x: x.pow(1.5),
}


@pytest.mark.parametrize("form", sorted(_BOOL_POWS))
def test_bool_tensor_pow_as_torch(form):
    res = []
    for T in _both():
        x = T.tensor([[True, False, True, False]] * 3)
        res.append(_outcome(lambda: _BOOL_POWS[form](T, x)))
    assert res[0] == res[1]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("exponent", [True, False])
def test_complex_tensor_to_bool_power(dtype, exponent):
    # a Python bool exponent of a complex tensor raised AttributeError (read as an array)
    res = []
    for T in _both():
        x = T.tensor([1 + 2j, -0.5 + 0j, 0j], dtype=getattr(T, dtype))
        res.append(_outcome(lambda: x.pow(exponent)))
    assert res[0] == res[1]


# ---- promotion: uint16/32/64 meet only floating dtypes; bool or complex ones are refused


_SHELL = ["uint16", "uint32", "uint64"]
_OTHERS = ["bool", "uint8", "int8", "int64", "float16", "bfloat16", "float64", "complex64",
           "complex128"] + _SHELL


@pytest.mark.parametrize("shell", _SHELL)
@pytest.mark.parametrize("other", _OTHERS)
def test_shell_unsigned_promotion(shell, other):
    res = []
    for T in _both():
        a, b = getattr(T, shell), getattr(T, other)
        res.append([_raised(lambda: T.promote_types(a, b)) or str(T.promote_types(a, b)),
                    _raised(lambda: T.promote_types(b, a)) or str(T.promote_types(b, a)),
                    _raised(lambda: T.result_type(T.ones(2, dtype=a), T.ones(2, dtype=b)))])
    res[0] = [r.replace("ember.", "torch.") if isinstance(r, str) else r for r in res[0]]
    assert res[0] == res[1]


# ---- setitem / index_put: index shapes, an index on an empty dim and the value's shape are
# checked before the dtypes, and those before the index values (torch's order); a lone
# Python bool index is no index tensor


_PUTS = {
    "dtype_and_value_shape": (lambda T: T.tensor([0, 1]), (3, 3), "float64", (2, 3)),
    "mask_dtype_and_value_shape": (lambda T: T.tensor([True, False]), (3, 3), "float64",
                                   (2, 3)),
    "out_of_bounds_and_value_shape": (lambda T: T.tensor([0, 5]), (3, 3), "float32", (2, 3)),
    "row_out_of_bounds_and_value_shape": (lambda T: (0, T.tensor([0, 5])), (3, 3),
                                          "float32", (2, 3)),
    "slice_then_list": (lambda T: (slice(None), [0, 1]), (3, 3), "float64", (2, 3)),
    "index_shapes_and_dtype": (lambda T: ([0, 1], [0, 1, 2]), (3,), "float64", (2, 3)),
    "empty_mask_value_of_two_dims": (lambda T: T.tensor([], dtype=T.bool), (3, 3), "float32",
                                     (0,)),
    "index_on_empty_dim_and_dtype": (lambda T: ([0, 0],), (3,), "float64", (0, 3)),
    "index_on_empty_dim_and_value_shape": (lambda T: ([0, 0],), (5, 5), "float32", (0, 3)),
    "empty_broadcast_on_empty_dim": (lambda T: ([0], T.tensor([], dtype=T.long)), (2, 2),
                                     "float32", (0, 3, 2)),
    "lone_false_any_value": (lambda T: False, (3, 3), "float64", (2, 3)),
    "lone_true_casts": (lambda T: True, (3,), "int32", (2, 3)),
    "lone_true_value_shape": (lambda T: True, (4,), "float32", (2, 3)),
    "true_in_a_tuple_stays_advanced": (lambda T: ([0], True), (), "float64", (2, 3)),
}


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("case", sorted(_PUTS))
def test_setitem_check_order(case, grad):
    index, vshape, vdtype, shape = _PUTS[case]
    res = []
    for T in _both():
        def put():
            x = T.zeros(shape, requires_grad=grad)
            x = x * 1 if grad else x
            x[index(T)] = T.ones(vshape, dtype=getattr(T, vdtype))
            return x
        res.append(_outcome(put))
    if case == "lone_true_value_shape":  # (torch words it as copy_'s expand: class only)
        assert res[0][0] == res[1][0] == "RuntimeError"
        return
    assert res[0] == res[1]


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("case", ["dtype_and_value_shape", "mask_dtype_and_value_shape",
                                  "out_of_bounds_and_value_shape", "index_shapes_and_dtype"])
def test_index_put_check_order(case, accumulate):
    index, vshape, vdtype, shape = _PUTS[case]
    res = []
    for T in _both():
        idx = index(T)
        idx = tuple(T.tensor(i) if isinstance(i, list) else i for i in
                    (idx if isinstance(idx, tuple) else (idx,)))
        res.append(_outcome(lambda: T.zeros(shape).index_put_(
            idx, T.ones(vshape, dtype=getattr(T, vdtype)), accumulate)))
    assert res[0] == res[1]


@pytest.mark.parametrize("value", [1 + 2j, "a"])
def test_lone_false_index_still_converts_the_value(value):
    res = []
    for T in _both():
        def put():
            x = T.zeros(2, 3)
            x[False] = value
            return x
        res.append(_outcome(put))
    assert res[0][0] == res[1][0]
    assert res[0][1].replace("ember", "torch") == res[1][1]


# ---- hinge_embedding_loss of integers: torch's ``margin - input`` fills the margin into the
# input's dtype and subtracts with wrap-around


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
@pytest.mark.parametrize("margin", [1.0, 2.5, -2.5])
def test_hinge_embedding_loss_integer_margin(dtype, margin):
    res = []
    for T in _both():
        info = T.iinfo(getattr(T, dtype))
        x = T.tensor([info.min, info.min, info.max, 0, info.max, 1, 3, -7 if info.min else 7]
                     ).to(getattr(T, dtype)).reshape(8, 1)
        t = T.tensor([1, -1, -1, 0, -1, 0, 1, -1]).reshape(8, 1)
        res.append([_outcome(lambda: T.hinge_embedding_loss(x, t, margin, 0)),
                    _outcome(lambda: T.nn.functional.hinge_embedding_loss(
                        x, t, margin, reduction="sum"))])
    assert res[0] == res[1]


def test_vdot_of_bools_reports_dot():
    res = []
    for T in _both():
        a = T.tensor([True, False])
        res.append(_raised(lambda: T.vdot(a, a)))
    assert res[0] == res[1]


# ---- multi_margin_loss / multilabel_margin_loss: shapes, then an empty batch returns, then
# the input's dtype, the target's range and dtype (NOTE [ The margin losses' order of checks ])


_MARGIN = {
    "int_input_of_three_dims": ("mm", (2, 2, 2), "int8", (2,), "int64", "mean"),
    "int_input_target_size": ("mm", (2, 2), "int8", (3,), "int64", "mean"),
    "int32_target_size": ("mm", (2, 2), "float32", (3,), "int32", "mean"),
    "empty_int8_none": ("mm", (0, 4), "int8", (0,), "int64", "none"),
    "empty_int32_target": ("mm", (0, 4), "float32", (0,), "int32", "none"),
    "empty_complex": ("mm", (0, 4), "complex64", (0,), "float16", "none"),
    "ml_int_input_half_target": ("ml", (4,), "uint8", (4,), "float16", "mean"),
    "ml_int_input_int8_target": ("ml", (2, 4), "int16", (2, 4), "int8", "none"),
    "ml_complex_target": ("ml", (2, 4), "float32", (2, 4), "complex64", "none"),
    "ml_int32_target_out_of_range": ("ml", (2, 4), "float32", (2, 4), "int32+5", "none"),
    "ml_target_size": ("ml", (2, 4), "float32", (1, 4), "int32", "none"),
    "ml_empty_int8": ("ml", (0, 4), "int8", (0, 4), "int64", "none"),
    "ml_empty_byte_target": ("ml", (0, 1), "float64", (0, 1), "uint8", "none"),
}


@pytest.mark.parametrize("case", sorted(_MARGIN))
def test_margin_loss_check_order(case):
    which, shape, dtype, tshape, tdtype, reduction = _MARGIN[case]
    res = []
    for T in _both():
        F = T.nn.functional
        x = (T.arange(max(1, int(np.prod(shape)))) % 3).reshape(-1)[:int(np.prod(shape))] \
            .reshape(shape).to(getattr(T, dtype))
        shift = 5 if tdtype.endswith("+5") else 0
        t = ((T.arange(int(np.prod(tshape))) % 2) + shift).reshape(tshape).to(
            getattr(T, tdtype.split("+")[0]))
        f = F.multi_margin_loss if which == "mm" else F.multilabel_margin_loss
        res.append(_outcome(lambda: f(x, t, reduction=reduction)))
    assert res[0] == res[1]


# ---- fill values: a float never wraps into an unsigned dtype (uint8.fill_(-0.5) is an
# overflow), uint16/32/64 are checked too, ints past 64 bits fail in the argument parser;
# full(-0.0) keeps the sign


_FILL_VALUES = [-1, -256, -1.0, -0.5, -0.0, 255.5, 256.0, -255.5, 70000, -2 ** 32, 2 ** 63,
                2 ** 64 - 1, 2 ** 64, -2 ** 63 - 1, 1e20, float("inf"), float("nan")]


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "uint32", "uint64", "int64",
                                   "float32", "bool"])
@pytest.mark.parametrize("value", _FILL_VALUES, ids=repr)
def test_fill_value_range(dtype, value):
    res = []
    for T in _both():
        d = getattr(T, dtype)
        res.append([_outcome(lambda: T.empty(1, dtype=d).fill_(value)),
                    _outcome(lambda: T.full((1,), value, dtype=d)),
                    _outcome(lambda: T.full_like(T.ones(1, dtype=d), value))])
    assert str(res[0]).replace("ember", "torch") == str(res[1])


@pytest.mark.parametrize("make", ["full", "full_half", "full_like", "new_full", "fill_",
                                  "full_complex"])
def test_full_of_negative_zero_keeps_the_sign(make):
    res = []
    for T in _both():
        f = {"full": lambda: T.full((2,), -0.0),
             "full_half": lambda: T.full((2,), -0.0, dtype=T.float16),
             "full_like": lambda: T.full_like(T.ones(2), -0.0),
             "new_full": lambda: T.ones(2).new_full((2,), -0.0),
             "fill_": lambda: T.ones(2).fill_(-0.0),
             "full_complex": lambda: T.full((2,), complex(-0.0, -0.0))}[make]
        res.append([str(v) for v in f().tolist()])
    assert res[0] == res[1]


# ---- cross entropy with label smoothing: class weights are gathered (a uint8 target is
# refused there), no classes make the share inf; NLL dispatches on the input's dtype before
# it reads the weights; gather/scatter index dtype messages in torch 2.13's words


_SMOOTH = {
    "uint8_target_weighted": lambda T, F: F.cross_entropy(
        T.arange(20.).reshape(4, 5) / 7, T.tensor([0, 4, 2, 1], dtype=T.uint8),
        weight=T.ones(5), label_smoothing=0.2, ignore_index=2),
    "spatial_weighted": lambda T, F: F.cross_entropy(
        T.arange(20.).reshape(1, 5, 4) / 7, T.tensor([[0, 4, 2, 1]]), weight=T.arange(5.),
        label_smoothing=0.2, ignore_index=2),
    "no_classes_sum": lambda T, F: F.cross_entropy(
        T.empty((0, 0), dtype=T.float64), T.empty((0,), dtype=T.int64), label_smoothing=0.2,
        reduction="sum"),
    "no_classes_weighted_sum": lambda T, F: F.cross_entropy(
        T.empty((0, 0), dtype=T.float64), T.empty((0,), dtype=T.int64),
        weight=T.empty((0,), dtype=T.float64), label_smoothing=0.2, reduction="sum"),
    "no_rows_sum": lambda T, F: F.cross_entropy(
        T.empty((0, 3), dtype=T.float64), T.empty((0,), dtype=T.int64), label_smoothing=0.2,
        reduction="sum"),
    "nll_complex_int8_weight": lambda T, F: F.nll_loss(
        T.ones(4, 5, dtype=T.complex64), T.tensor([0, 1, 2, 3]),
        weight=T.ones(5, dtype=T.int8)),
    "nll2d_int_half_weight": lambda T, F: F.nll_loss(
        T.ones(1, 5, 2, 2, dtype=T.int32), T.tensor([[[0, 1], [2, 3]]]),
        weight=T.ones(5, dtype=T.float16)),
    "gather_int8": lambda T, F: T.ones(5).gather(0, T.tensor([0, 1], dtype=T.int8)),
    "gather_float": lambda T, F: T.ones(5).gather(0, T.tensor([0., 1.])),
    "scatter_add_int16": lambda T, F: T.ones(5).scatter_add(
        0, T.tensor([0, 1], dtype=T.int16), T.ones(2)),
    "scatter_reduce_uint8": lambda T, F: T.ones(5).scatter_reduce(
        0, T.tensor([0, 1], dtype=T.uint8), T.ones(2), "sum"),
    "scatter_inplace_int8": lambda T, F: T.ones(5).scatter_(
        0, T.tensor([0, 1], dtype=T.int8), 1.0),
}


@pytest.mark.parametrize("case", sorted(_SMOOTH))
def test_class_losses_and_index_dtype_words(case):
    res = []
    for T in _both():
        res.append(_outcome(lambda: _SMOOTH[case](T, T.nn.functional)))
    if isinstance(res[1][2] if len(res[1]) > 2 else None, float):
        np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-6)
        res = [r[:2] for r in res]
    assert res[0] == res[1]


# ---- cumulative_trapezoid over an empty dim runs torch's general steps: x joins the graph
# (its gradient is an empty tensor, not None), promotes, and is checked


@pytest.mark.parametrize("case", ["x_2d", "x_1d", "x_1d_wrong_length", "x_wrong_shape",
                                  "dx", "no_rows_no_classes"])
def test_cumulative_trapezoid_over_an_empty_dim(case):
    res = []
    for T in _both():
        y = T.zeros((0, 0) if case == "no_rows_no_classes" else (2, 0), requires_grad=True)
        x = {"x_2d": T.zeros(2, 0, dtype=T.float64, requires_grad=True),
             "x_1d": T.zeros(0, dtype=T.float64, requires_grad=True),
             "x_1d_wrong_length": T.zeros(3, dtype=T.float64, requires_grad=True),
             "x_wrong_shape": T.zeros(3, 0, dtype=T.float64, requires_grad=True),
             "dx": None,
             "no_rows_no_classes": T.zeros(0, 0, requires_grad=True)}[case]

        def run():
            out = T.cumulative_trapezoid(y, x) if x is not None else \
                T.cumulative_trapezoid(y, dx=2)
            grads = T.autograd.grad(out.sum(), [y] + ([x] if x is not None else []),
                                    allow_unused=True)
            return (str(out.dtype).split(".")[-1], tuple(out.shape),
                    [None if g is None else tuple(g.shape) for g in grads])
        res.append(_raised(run) or run())
    assert res[0] == res[1]


# ---- found by the random programs (tests/differential/programs.py): an integer divided by
# a Python False, float_power's out= dtype, a huge int into bfloat16, 0-dim index words


_PROGRAM_FINDS = {
    "remainder_by_false": "out = T.tensor([3, 0, 1], dtype=T.uint8).remainder(False)",
    "fmod_by_false": "out = T.tensor([3, 0, 1], dtype=T.int32).fmod(False)",
    "floor_divide_by_false": "out = T.tensor([3, 0, 1], dtype=T.int64) // False",
    "trunc_div_by_false": "out = T.tensor([3, 1]).div(False, rounding_mode='trunc')",
    "float_remainder_by_false": "out = T.tensor([3., 1.]) % False",
    "float_power_complex_out": "out = T.float_power(T.tensor([2, 4]), T.tensor([1, 2]), "
                               "out=T.empty(0, dtype=T.complex128))",
    "float_power_float32_out": "out = T.float_power(T.tensor([2, 4]), 2, "
                               "out=T.empty(0, dtype=T.float32))",
    "float_power_complex_number_out": "out = T.float_power(T.tensor([2, 4]), 1j, "
                                      "out=T.empty(0, dtype=T.float64))",
    "bfloat16_fill_of_2_63": "out = T.zeros(2, dtype=T.bfloat16).fill_(2 ** 63)",
    "bfloat16_full_like_2_64": "out = T.full_like(T.zeros(2, dtype=T.bfloat16), 2 ** 64 - 1)",
    "zero_dim_index_tuple": "x = T.tensor(1.)\nout = x[(0,)]",
    "zero_dim_slice": "x = T.tensor(1.)\nout = x[0:1]",
    "zero_dim_minus_one": "x = T.tensor(1.)\nout = x[-1]",
    "zero_dim_setitem_list": "x = T.tensor(1.)\nx[[0]] = 2.\nout = x",
    "zero_dim_setitem_slice_grad": "x = T.tensor(1., requires_grad=True) * 1\n"
                                   "x[0:1] = 2.\nout = x",
    "zero_dim_setitem_int_grad": "x = T.tensor(1., requires_grad=True) * 1\nx[3] = 2.\nout = x",
    "ldexp_int_inplace_number": "out = T.tensor([1, 2], dtype=T.int16).ldexp_(-1)",
    "heaviside_complex": "out = T.heaviside(T.ones(2, dtype=T.int32), "
                         "T.ones(2, dtype=T.complex128))",
    "heaviside_dtypes": "out = T.ones(2).heaviside_(T.ones(2, dtype=T.float64))",
    "floor_divide_complex": "out = T.ones(2, dtype=T.complex64) // T.ones(2)",
    "inplace_shape_before_promotion": "out = T.tensor([1, -3, 0], dtype=T.int32).eq_("
                                      "T.ones(2, 3, dtype=T.uint64))",
    "inplace_shape_before_cast": "out = T.ones(3, dtype=T.uint32).add_(T.ones(2, 3))",
    "mask_value_leading_ones": "x = T.zeros(2, 0, dtype=T.float16)\n"
                               "x[T.tensor([False, True])] = T.ones(1, 3, dtype=T.float16)\n"
                               "out = x",
}


@pytest.mark.parametrize("case", sorted(_PROGRAM_FINDS))
def test_program_finds(case):
    res = []
    for T in _both():
        env = {"T": T}

        def run():
            exec(_PROGRAM_FINDS[case], env)
            return env["out"]
        res.append(_outcome(run))
    assert str(res[0]).replace("ember", "torch") == str(res[1])


# ---- multi_margin_loss: class weights scale the positive hinges only; pow of many bases to
# a one-element 0.5 exponent tensor is C's pow (NumPy's sqrt fast path gave NaN for -inf)


@pytest.mark.parametrize("weights", ["inf_first", "mixed_inf", "finite"])
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("reduction", ["sum", "none", "mean"])
def test_multi_margin_loss_infinite_class_weights(weights, p, reduction):
    res = []
    for T in _both():
        inf, big = float("inf"), 3.4028234663852886e38
        x = T.tensor([[1.73, -1.04, 1.17e-38, 1.46], [-inf, -0.87, 0.9, 1.97],
                      [-1.04, -inf, -0.0, 1.1e-38]])
        w = {"inf_first": T.tensor([inf, 1.11, 1.34, big]),
             "mixed_inf": T.tensor([0.43, inf, -big, -inf]),
             "finite": T.tensor([1., 2, 3, 4])}[weights]
        res.append(_outcome(lambda: T.nn.functional.multi_margin_loss(
            x, T.tensor([1, 0, 3]), p=p, margin=0.5, weight=w, reduction=reduction)))
    assert str(res[0]).replace("ember", "torch") == str(res[1])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("shape", [(1,), (), (1, 1)])
def test_pow_by_one_element_half_exponent(dtype, shape):
    res = []
    for T in _both():
        a = T.tensor([[float("nan"), 1.55, -1.0], [-0.0, float("-inf"), 4.0]],
                     dtype=getattr(T, dtype))
        e = T.full(shape, 0.5, dtype=getattr(T, dtype))
        res.append([str(v) for v in T.pow(a, e).reshape(-1).tolist()])
    assert res[0] == res[1]


# ---- linear interpolation reads a dim whose size is kept cell by cell (whatever the scale):
# a NaN stays in its cell, an inf becomes inf + inf * 0


_INTERP = {
    "linear_scale_keeps_size": lambda T, F: F.interpolate(
        T.tensor([[[1.0, 2.0, 3.0]]]), scale_factor=1.2, mode="linear"),
    "linear_nan_same_size": lambda T, F: F.interpolate(
        T.tensor([[[1.0, float("nan"), 3.0]]]), size=(3,), mode="linear", align_corners=True),
    "bilinear_nan_kept_width": lambda T, F: F.interpolate(
        T.tensor([[[[1.0, float("nan")], [2.0, 3.0]]]]), size=(4, 2), mode="bilinear"),
    "bilinear_half_kept_width": lambda T, F: F.interpolate(
        T.tensor([[[[1.0, float("nan")], [2.0, 3.0]]]]).half(), size=(4, 2),
        mode="bilinear"),
    "bicubic_nan_reads_neighbours": lambda T, F: F.interpolate(
        T.tensor([[[[1.0, float("nan"), 3.0]]]]), size=(1, 3), mode="bicubic"),
    "inf_in_kept_dim": lambda T, F: F.interpolate(
        T.tensor([[[float("inf")], [float("inf")], [0.35], [-float("inf")]]],
                 dtype=T.float16), scale_factor=1.6, mode="linear", align_corners=True),
    "trilinear_inf_kept_width": lambda T, F: F.interpolate(
        T.tensor([[[[[1.0, -0.5], [0.9795, float("nan")]],
                    [[float("inf"), -0.1257], [-0.0, 1e-38]]]]]),
        size=(3, 4, 2), mode="trilinear"),
    "trilinear_nan_kept_width": lambda T, F: F.interpolate(
        T.tensor([[[[[1.0, -0.5], [0.9795, float("nan")]], [[2.0, -0.1257], [-0.0, 1e-38]]]]]),
        size=(3, 4, 2), mode="trilinear"),
}


@pytest.mark.parametrize("case", sorted(_INTERP))
def test_interpolate_kept_dims(case):
    res = []
    for T in _both():
        res.append([str(v) for v in _INTERP[case](T, T.nn.functional).reshape(-1).tolist()])
    assert res[0] == res[1]
