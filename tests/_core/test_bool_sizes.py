"""A bool as a tensor's first size is refused with PyTorch's TypeError (``zeros(True)`` is not
a one-element tensor); later bools count as 1 and 0, as PyTorch's argument parser counts them."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

CASES = [(True,), (np.bool_(True),), ([True],), ((True,),), ([True, 2],), (2, True),
         ((2, True),), ([2, False],)]


@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "randn", "rand"])
@pytest.mark.parametrize("args", CASES, ids=repr)
def test_bool_sizes_as_torch(name, args):
    try:
        want = tuple(getattr(torch, name)(*args).shape)
    except TypeError:
        with pytest.raises(TypeError, match="must be tuple of ints"):
            getattr(ember, name)(*args)
        return
    assert tuple(getattr(ember, name)(*args).shape) == want


@pytest.mark.parametrize("method", ["view", "reshape"])
def test_bool_shape_of_a_view(method):
    x = ember.zeros(1)
    with pytest.raises(TypeError):
        getattr(x, method)(True)
    with pytest.raises(TypeError):
        getattr(torch.zeros(1), method)(True)
