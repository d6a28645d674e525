"""A convolution's operands of different dtypes are refused in PyTorch's words: the bias is
compared with the input first, then the weight."""

import pytest

import ember

torch = pytest.importorskip("torch")

_DTYPES = [("float64", "float32", "float32"), ("float64", "float64", "float32"),
           ("float32", "float64", None), ("float16", "float32", "float32"),
           ("bfloat16", "float32", "float32"), ("complex64", "float32", "float32"),
           ("complex64", "complex64", "float32"), ("int64", "float32", "float32"),
           ("float32", "bfloat16", "bfloat16")]


def _error(fw, fn, dtypes, shapes):
    x, w, b = (None if d is None else fw.ones(s, dtype=getattr(fw, d))
               for d, s in zip(dtypes, shapes))
    try:
        y = getattr(fw.nn.functional, fn)(x, w, b)
    except Exception as e:  # noqa: BLE001 - the type is compared with torch's
        return type(e).__name__, str(e)
    return "ok", str(y.dtype).split(".")[-1]  # (a transposed kernel casts a real bias)


@pytest.mark.parametrize("dtypes", _DTYPES)
@pytest.mark.parametrize("fn,shapes", [
    ("conv1d", ((1, 2, 4), (3, 2, 3), (3,))),
    ("conv2d", ((1, 2, 4, 4), (3, 2, 3, 3), (3,))),
    ("conv_transpose2d", ((1, 2, 4, 4), (2, 3, 3, 3), (3,)))])
def test_mixed_dtypes_refused_as_torch(fn, shapes, dtypes):
    assert _error(ember, fn, dtypes, shapes) == _error(torch, fn, dtypes, shapes)
