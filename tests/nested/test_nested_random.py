"""Random jagged nested tensors through common ops, values and gradients against PyTorch.

Each case draws a batch of ragged sequences (lengths, feature size, dtype) and one op; ember and
torch run the same code and must agree on the result's shape and values and on the gradient of a
weighted sum of the result (ops torch refuses may run in ember, which supports more)."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

OPS = {
    "exp": lambda T, x: x.exp(),
    "relu": lambda T, x: (x * 2 - 1).relu(),
    "softmax": lambda T, x: x.softmax(-1),
    "sum_last": lambda T, x: x.sum(-1),
    "amax_last": lambda T, x: x.amax(-1),
    "mean_ragged": lambda T, x: x.mean(1),
    "layer_norm": lambda T, x: T.nn.functional.layer_norm(x, (x.size(-1),)),
    "add_dense": lambda T, x: x + T.ones(x.size(-1)),
    "transpose_twice": lambda T, x: x.transpose(1, 2).transpose(1, 2) * 3,
    "gelu": lambda T, x: T.nn.functional.gelu(x),
    "unsqueeze_squeeze": lambda T, x: x.unsqueeze(-1).squeeze(-1).abs(),
    "where": lambda T, x: T.where(x > 0, x, 0.0),
    "sum_ragged": lambda T, x: x.sum(1),
}


def _run(T, op, arrs, dtype):
    nt = T.nested.nested_tensor([T.tensor(a, dtype=getattr(T, dtype)) for a in arrs],
                                layout=T.jagged, requires_grad=True)
    try:
        y = OPS[op](T, nt)
    except Exception as exc:  # noqa: BLE001  (compared by kind below)
        return exc
    v = y.values() if y.is_nested else y
    try:
        (v.float() * T.arange(1.0, v.numel() + 1).reshape(v.shape)).sum().backward()
        g = nt.grad
    except RuntimeError:
        g = None
    return v.detach().float().numpy(), None if g is None else g.values().float().numpy()


@pytest.mark.parametrize("seed", range(4))
def test_random_jagged_ops_match_torch(seed):
    rng = np.random.default_rng(seed)
    names = sorted(OPS)
    for _ in range(40):
        d, b = int(rng.integers(1, 5)), int(rng.integers(1, 4))
        arrs = [rng.choice([0.0, -1.5, 2.0, 0.25, -0.0, 3.5], (int(rng.integers(1, 5)), d))
                for _ in range(b)]
        dtype = str(rng.choice(["float32", "float64", "bfloat16"]))
        op = names[int(rng.integers(len(names)))]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = _run(torch, op, arrs, dtype)
            ours = _run(ember, op, arrs, dtype)
        if isinstance(theirs, Exception):
            continue
        where = f"{op} {dtype} lengths={[len(a) for a in arrs]} d={d}"
        assert not isinstance(ours, Exception), f"{where}: {ours!r}"
        tol = 2e-2 if dtype == "bfloat16" else 1e-5
        assert ours[0].shape == theirs[0].shape, where
        np.testing.assert_allclose(ours[0], theirs[0], rtol=tol, atol=tol, err_msg=where)
        if theirs[1] is not None:
            assert ours[1] is not None, where
            scale = max(1.0, float(np.abs(theirs[1]).max()))  # cancellation in float32 sums
            np.testing.assert_allclose(ours[1], theirs[1], rtol=tol, atol=tol * scale,
                                       err_msg=where)
