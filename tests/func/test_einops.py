"""``ember.func.rearrange`` against ``torch.func.rearrange``."""

import numpy as np
import pytest

import ember
import ember.func as EF
from tests.conftest import HAS_TORCH

if HAS_TORCH:
    import torch
    import torch.func as TF

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

X = np.arange(2 * 6 * 4, dtype=np.float64).reshape(2, 6, 4)


@needs_torch
@pytest.mark.parametrize("pattern,lengths", [
    ("a b c -> c (a b)", {}),
    ("a b c -> (c b a)", {}),
    ("a (b1 b2) c -> b1 a b2 c", {"b1": 3}),
    ("a (b1 b2) c -> (a b2) b1 c", {"b2": 2}),
    ("a ... -> ... a", {}),
    ("a b c -> a 1 (b c)", {}),
    ("a b c -> a b c", {}),
    ("... c -> (...) c", {}),
])
def test_rearrange_matches_torch(pattern, lengths):
    ours = EF.rearrange(ember.tensor(X), pattern, **lengths)
    theirs = TF.rearrange(torch.tensor(X), pattern, **lengths)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@needs_torch
def test_rearrange_sequence_is_stacked():
    ours = EF.rearrange([ember.tensor(X[0]), ember.tensor(X[1])], "b h w -> h (b w)")
    theirs = TF.rearrange([torch.tensor(X[0]), torch.tensor(X[1])], "b h w -> h (b w)")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_rearrange_wrong_rank():
    with pytest.raises(ValueError, match="Number of dimensions in pattern \\(2\\) must be equal "
                                         "to the number of dimensions in the tensor \\(3\\)"):
        EF.rearrange(ember.tensor(X), "a b -> b a")


def test_rearrange_axes_differ():
    with pytest.raises(ValueError, match="must name the same axes"):
        EF.rearrange(ember.tensor(X), "a b c -> a b d")


def test_rearrange_cannot_infer():
    with pytest.raises(ValueError, match="cannot infer"):
        EF.rearrange(ember.tensor(X), "a (b1 b2) c -> a b1 b2 c")
