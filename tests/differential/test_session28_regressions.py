"""Regressions for session 28's differential run against PyTorch 2.13: each case runs with
``T = ember`` and ``T = torch`` from the same values where torch is installed, and compares
values, dtypes, shapes or the exception raised (class and message)."""

import pytest

import ember


def _torch():
    return pytest.importorskip("torch")


def _both():
    return ember, _torch()


def _raised(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 - the class and message are what is compared
        return type(e).__name__, str(e)
    return None


def _np(x):
    x = x.detach().cpu()
    return (x.float() if str(x.dtype).endswith("bfloat16") else x).numpy()


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
