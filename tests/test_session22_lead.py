"""Session 22: PyTorch's deprecated positional orders (``add(x, alpha, other)``,
``addcmul(x, value, t1, t2)``) that older libraries still use, and ``torch.torch``."""

import warnings

import pytest

import ember

torch = pytest.importorskip("torch")

CASES = [
    "T.add(x, 2, y)", "x.add(2, y)", "T.sub(x, 3, y)", "x.sub(3, y)",
    "x.clone().add_(2, y)", "x.clone().sub_(0.5, y)",
    "T.addcmul(x, 0.5, y, z)", "x.addcmul(0.5, y, z)", "x.clone().addcmul_(0.5, y, z)",
    "T.addcdiv(x, 2, y, z)", "x.clone().addcdiv_(2, y, z)",
]


@pytest.mark.parametrize("expr", CASES)
def test_deprecated_positional_orders_as_torch(expr):
    got = []
    for T in (torch, ember):
        T.manual_seed(0)
        x, y, z = (T.linspace(-1, 1, 6).reshape(2, 3) + k for k in (0.1, 0.2, 1.5))  # noqa: F841
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got.append(eval(expr).flatten().tolist())
    assert got[0] == pytest.approx(got[1])


def test_torch_torch_is_the_package():
    assert ember.torch is ember and torch.torch is torch
