"""Random ``torch._foreach_*`` calls against PyTorch: lists of tensors of random shapes (0-d and
empty included), dtypes, non-contiguous views and special values, with scalar, scalar-list and
tensor-list second operands, out-of-place and in place; results or the exception's type agree."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32"]
UNARY = "abs neg exp sqrt sigmoid tanh floor ceil round trunc sign reciprocal log1p".split()
BINARY = "add sub mul div maximum minimum clamp_min clamp_max".split()
OTHER = ["addcmul", "lerp", "norm", "pow"]


def _tensors(T, arrs, dtype, strided):
    out = []
    for a in arrs:
        t = T.tensor(a).to(getattr(T, dtype))
        if strided and t.dim() >= 1:
            t = T.cat([t, t], -1)[..., ::2]
        out.append(t)
    return out


def _call(T, op, inplace, form, arrs, arrs2, dtype, strided):
    try:
        xs, ys = _tensors(T, arrs, dtype, strided), _tensors(T, arrs2, dtype, strided)
        f = getattr(T, f"_foreach_{op}" + ("_" if inplace else ""))
        if op in UNARY or op == "norm":
            r = f(xs)
        elif op in BINARY:
            other = (1.5, [0.5 * (i + 1) for i in range(len(xs))], ys)[form]
            r = f(xs, other)
        elif op == "addcmul":
            r = f(xs, ys, ys, 0.5)
        elif op == "lerp":
            r = f(xs, ys, 0.25)
        else:
            r = f(xs, 2)
    except Exception as exc:  # noqa: BLE001  (compared by type below)
        return exc
    return xs if inplace else r


def _numpy(t):
    return t.float().numpy() if "16" in str(t.dtype) and "int" not in str(t.dtype) else t.numpy()


@pytest.mark.parametrize("seed", range(4))
def test_random_foreach_calls_match_torch(seed):
    rng = np.random.default_rng(100 + seed)
    for it in range(120):
        shapes = [tuple(int(s) for s in rng.integers(0, 4, rng.integers(0, 3)))
                  for _ in range(rng.integers(1, 4))]
        arrs = [rng.choice([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 3.0, 1e-3], s)
                for s in shapes]
        arrs2 = [rng.choice([0.5, -1.0, 2.0, np.nan, 7.0], s) for s in shapes]
        dtype, strided = str(rng.choice(DTYPES)), bool(rng.integers(2))
        op = str(rng.choice(UNARY + BINARY + OTHER))
        inplace = bool(rng.integers(2)) and op != "norm"
        args = (op, inplace, it % 3, arrs, arrs2, dtype, strided)
        where = f"_foreach_{op}{'_' if inplace else ''} {dtype} strided={strided} {shapes}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs, ours = _call(torch, *args), _call(ember, *args)
        if isinstance(theirs, Exception) or isinstance(ours, Exception):
            assert type(ours).__name__ == type(theirs).__name__, f"{where}: {ours!r} / {theirs!r}"
            continue
        assert len(ours) == len(theirs), where
        for a, b in zip(ours, theirs):
            assert str(a.dtype)[6:] == str(b.dtype)[6:] and tuple(a.shape) == tuple(b.shape), where
            tol = 1e-2 if "float16" in str(a.dtype) else 1e-5
            np.testing.assert_allclose(_numpy(a), _numpy(b), rtol=tol, atol=1e-5,
                                       equal_nan=True, err_msg=where)
