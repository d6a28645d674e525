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
