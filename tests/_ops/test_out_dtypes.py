"""out= dtype rules (NOTE [ out= dtypes ] in ember/_dispatch.py), compared with PyTorch."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

_X = np.random.default_rng(0).standard_normal((3, 3)).astype(np.float32)

# name -> call(module, x, out)
CASES = {
    "add": lambda m, x, o: m.add(x, x, out=o),
    "sin": lambda m, x, o: m.sin(x, out=o),
    "abs": lambda m, x, o: m.abs(x, out=o),
    "ceil": lambda m, x, o: m.ceil(x, out=o),
    "mm": lambda m, x, o: m.mm(x, x, out=o),
    "index_select": lambda m, x, o: m.index_select(x, 0, m.tensor([0, 2]), out=o),
    "tril": lambda m, x, o: m.tril(x, out=o),
    "cat": lambda m, x, o: m.cat([x, x], out=o),
    "mean": lambda m, x, o: m.mean(x, 0, out=o),
    "cumsum": lambda m, x, o: m.cumsum(x, 0, out=o),
    "sum": lambda m, x, o: m.sum(x, 0, out=o),
    "argmax": lambda m, x, o: m.argmax(x, 0, out=o),
    "all": lambda m, x, o: m.all(x, out=o),
    "max": lambda m, x, o: m.max(x, out=o),
    "linalg.inv": lambda m, x, o: m.linalg.inv(x + 3 * m.eye(3), out=o),
    "cholesky": lambda m, x, o: m.cholesky(x @ x.mT + m.eye(3), out=o),
}
DTYPES = ["float32", "float64", "float16", "int64", "uint8", "bool"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_out_dtype_rule_matches_torch(name, dtype):
    call = CASES[name]
    to = torch.empty(0, dtype=getattr(torch, dtype))
    eo = ember.empty(0, dtype=getattr(ember, dtype))
    try:
        call(torch, torch.from_numpy(_X.copy()), to)
        want = None
    except (RuntimeError, TypeError) as e:
        want = e
    if want is not None:
        with pytest.raises(type(want)):
            call(ember, ember.tensor(_X.copy()), eo)
        assert eo.shape == (0,)  # a refused out= is left as it was
    else:
        call(ember, ember.tensor(_X.copy()), eo)
        np.testing.assert_allclose(eo.to(ember.float64).numpy(), to.double().numpy(),
                                   rtol=1e-2, atol=1e-2)


def test_out_exact_message_names_both_dtypes():
    with pytest.raises(RuntimeError, match="dtype float, but got double"):
        ember.mm(ember.ones(2, 2), ember.ones(2, 2), out=ember.empty(0, dtype=ember.float64))


def test_out_tuple_results_each_exact():
    x = ember.ones(2, 3)
    with pytest.raises(RuntimeError):
        ember.max(x, 0, out=(ember.empty(0, dtype=ember.float64),
                             ember.empty(0, dtype=ember.int64)))
