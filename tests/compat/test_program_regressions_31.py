"""What the session-31 sweep of public-style programs (``test_research_repos_10.py``) found
different from PyTorch, pinned in process.

Each test states the value PyTorch 2.13 gives (so it runs without PyTorch) and, where
PyTorch is installed, compares with it too.
"""

import pytest

import ember


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


# ---------------------------------------------------------------------------------------------
# quantile: the rank q * (n - 1) is rounded in the input's dtype


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("interpolation", ["nearest", "lower", "higher", "linear", "midpoint"])
def test_quantile_rank_is_formed_in_the_input_dtype(dtype, interpolation):
    qs = [0.1, 0.3, 0.5, 0.6, 0.7, 0.9, 1 / 3, 0.15]
    x = ember.arange(6, dtype=getattr(ember, dtype)).flip(0)
    got_tensor_q = ember.quantile(x, ember.tensor(qs, dtype=x.dtype),
                                  interpolation=interpolation).tolist()
    got_number_q = [ember.quantile(x, q, interpolation=interpolation).item() for q in qs]
    assert got_tensor_q == got_number_q
    torch = _torch()
    if torch is not None:
        t = torch.arange(6, dtype=getattr(torch, dtype)).flip(0)
        assert got_tensor_q == torch.quantile(t, torch.tensor(qs, dtype=t.dtype),
                                              interpolation=interpolation).tolist()


def test_quantile_nearest_float32_rounds_the_float32_rank():
    # 0.1f * 5 is 0.5 in float32 (rounds to 0, half to even); 0.7f * 5 is 3.5 (rounds to 4)
    x = ember.arange(6, dtype=ember.float32)
    got = ember.quantile(x, ember.tensor([0.1, 0.3, 0.5, 0.7, 0.9]), interpolation="nearest")
    assert got.tolist() == [0.0, 2.0, 2.0, 4.0, 4.0]
    # a number q is made a float32 tensor first, as torch does
    assert ember.quantile(x, 0.7, interpolation="nearest").item() == 4.0
    assert ember.quantile(x, 0.1, interpolation="nearest").item() == 0.0
    assert ember.nanquantile(ember.tensor([0., 1, 2, 3, 4, 5, float("nan")]), 0.1,
                             interpolation="nearest").item() == 0.0
