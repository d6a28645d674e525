"""ember.masked: masked reductions/normalizations and MaskedTensor, compared with torch."""

from __future__ import annotations

import doctest
import math
import warnings

import numpy as np
import pytest

import ember
import ember.masked
import ember.masked._ops
import ember.masked.maskedtensor.core
import ember.masked.maskedtensor.creation

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 5)).astype(np.float32)
M = RNG.random((3, 4, 5)) > 0.4
M[1, 2, :] = False  # one slice with nothing left
M[:, :, 3] = False


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def _both(name, x, *args, mask=M, **kwargs):
    t = getattr(torch.masked, name)(torch.from_numpy(x), *args,
                                    mask=None if mask is None else torch.from_numpy(mask),
                                    **kwargs)
    e = getattr(ember.masked, name)(ember.from_numpy(x), *args,
                                    mask=None if mask is None else ember.from_numpy(mask),
                                    **kwargs)
    return t, e


def _close(t, e, atol=1e-5):
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=atol)


REDUCTION_CASES = [
    ("sum", (1,), {}), ("sum", ((0, 2),), {"keepdim": True}), ("sum", (), {}),
    ("prod", (2,), {}), ("amax", (2,), {}), ("amin", ((1, 2),), {}), ("argmax", (2,), {}),
    ("argmin", (1,), {"keepdim": True}), ("mean", (2,), {}), ("mean", (None,), {}),
    ("var", (2,), {}), ("var", (1,), {"unbiased": False}), ("std", (2,), {"correction": 0}),
    ("std", ((0, 1),), {"keepdim": True}), ("norm", (2.0, 2), {}), ("norm", (1.0, (0, 2)), {}),
    ("norm", (math.inf, 1), {}), ("norm", (-math.inf, 2), {}), ("logsumexp", (2,), {}),
    ("median", (2,), {}), ("cumsum", (2,), {}), ("cumprod", (1,), {}),
    ("softmax", (2,), {}), ("log_softmax", (1,), {}), ("softmin", (2,), {}),
    ("normalize", (2.0, 2), {}), ("normalize", (1.0, 1), {"eps": 0.5}),
]


@pytest.mark.parametrize("name,args,kwargs", REDUCTION_CASES)
def test_masked_op_matches_torch(name, args, kwargs):
    t, e = _both(name, X, *args, **kwargs)
    _close(t, e)


@pytest.mark.parametrize("name,args,kwargs", REDUCTION_CASES)
def test_masked_op_without_mask_matches_torch(name, args, kwargs):
    t, e = _both(name, X, *args, mask=None, **kwargs)
    _close(t, e)


@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "argmax"])
def test_masked_op_integer_input_matches_torch(name):
    xi = (X * 10).astype(np.int32)
    t, e = _both(name, xi, 2)
    _close(t, e)


def test_masked_sum_broadcasts_lower_rank_mask():
    t, e = _both("sum", X, 2, mask=M[0])
    _close(t, e)


def test_masked_sum_mask_of_higher_rank_raises_index_error():
    with pytest.raises(IndexError, match="broadcastable mask"):
        ember.masked.sum(ember.ones(2, 3), 1, mask=ember.ones(2, 2, 3, dtype=ember.bool))


def test_masked_sum_repeated_dim_raises_runtime_error():
    with pytest.raises(RuntimeError, match="appears multiple times"):
        ember.masked.sum(ember.ones(2, 3), (1, 1))


def test_masked_sum_dim_out_of_range_raises_index_error():
    with pytest.raises(IndexError, match=r"range of \[-2, 1\], but got 3"):
        ember.masked.sum(ember.ones(2, 3), 3)


def test_masked_mean_integer_input_raises_value_error():
    with pytest.raises(ValueError, match="Could not infer output dtype"):
        ember.masked.mean(ember.ones(2, 3, dtype=ember.int32), 1)


def test_masked_median_integer_fully_masked_raises_value_error():
    with pytest.raises(ValueError, match="fully masked out rows"):
        ember.masked.median(ember.ones(2, 3, dtype=ember.int64), 1,
                            mask=ember.tensor([[True, True, True], [False, False, False]]))


def test_masked_logaddexp_matches_torch():
    y = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    t = torch.masked.logaddexp(torch.from_numpy(X), torch.from_numpy(y),
                               input_mask=torch.from_numpy(M), other_mask=torch.from_numpy(~M))
    e = ember.masked.logaddexp(ember.from_numpy(X), ember.from_numpy(y),
                               input_mask=ember.from_numpy(M), other_mask=ember.from_numpy(~M))
    _close(t, e)


@pytest.mark.parametrize("name,args", [("sum", (2,)), ("mean", (1,)), ("amax", (2,)),
                                       ("softmax", (2,)), ("var", (2,)), ("norm", (2.0, 1))])
def test_masked_op_gradient_matches_torch(name, args):
    xt = torch.from_numpy(X.astype(np.float64)).requires_grad_()
    xe = ember.from_numpy(X.astype(np.float64)).requires_grad_()
    mt, me = torch.from_numpy(M), ember.from_numpy(M)
    rt = getattr(torch.masked, name)(xt, *args, mask=mt)
    re = getattr(ember.masked, name)(xe, *args, mask=me)
    torch.nan_to_num(rt * 1.0, 0.0, 0.0, 0.0).sum().backward()
    ember.nan_to_num(re * 1.0, 0.0, 0.0, 0.0).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), atol=1e-10)


# -- MaskedTensor ------------------------------------------------------------------------------

D = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
MASK = [[True, False, True], [False, False, True]]
MASK_EMPTY_ROW = [[True, False, True], [False, False, False]]


def _mt(lib, data=D, mask=MASK, **kwargs):
    return lib.masked.masked_tensor(lib.tensor(data), lib.tensor(mask), **kwargs)


def _same_repr(t, e):
    assert repr(e) == repr(t)


@pytest.mark.parametrize("make", [
    lambda lib: _mt(lib),
    lambda lib: _mt(lib, [1.0, -2.5, 300.125], [True, False, True]),
    lambda lib: _mt(lib, [[1, 2, 3], [4, 5, 6]]),
    lambda lib: _mt(lib, [[[True, False]], [[False, True]]], [[[True, True]], [[False, True]]]),
    lambda lib: _mt(lib, 3.0, True),
    lambda lib: _mt(lib, 3.0, False),
    lambda lib: _mt(lib, 7, True),
])
def test_maskedtensor_repr_matches_torch(make):
    _same_repr(make(torch), make(ember))


@pytest.mark.parametrize("op", [
    lambda mt: mt.sum(), lambda mt: mt.sum(1), lambda mt: mt.sum(0, keepdim=True),
    lambda mt: mt.mean(1), lambda mt: mt.amax(1), lambda mt: mt.amin(), lambda mt: mt.prod(1),
    lambda mt: mt.argmax(1), lambda mt: mt.argmin(1), lambda mt: mt.var(), lambda mt: mt.std(1),
    lambda mt: mt.all(1), lambda mt: mt.softmax(1),
])
@pytest.mark.parametrize("mask", [MASK, MASK_EMPTY_ROW])
def test_maskedtensor_reduction_matches_torch(op, mask):
    _same_repr(op(_mt(torch, mask=mask)), op(_mt(ember, mask=mask)))


@pytest.mark.parametrize("op", [
    lambda lib, mt: mt + mt, lambda lib, mt: mt * 2 - 1, lambda lib, mt: 1 / mt,
    lambda lib, mt: lib.exp(mt), lambda lib, mt: mt.abs().sqrt(), lambda lib, mt: mt > 2,
    lambda lib, mt: mt + lib.tensor(D), lambda lib, mt: mt[1], lambda lib, mt: mt.view(3, 2),
    lambda lib, mt: mt.reshape(-1), lambda lib, mt: mt.unsqueeze(0), lambda lib, mt: mt.double(),
    lambda lib, mt: lib.cat([mt, mt]), lambda lib, mt: mt.clone(), lambda lib, mt: mt.detach(),
    lambda lib, mt: lib.nn.functional.softmax(mt, 1),
])
def test_maskedtensor_op_matches_torch(op):
    _same_repr(op(torch, _mt(torch)), op(ember, _mt(ember)))


def test_maskedtensor_result_types():
    mt = _mt(ember)
    assert isinstance(mt, ember.Tensor) and ember.masked.is_masked_tensor(mt + 1)
    assert type(mt.get_data()) is ember.Tensor
    assert mt.shape == (2, 3) and mt.dtype == ember.float32


def test_maskedtensor_mismatched_masks_raise_value_error():
    other = _mt(ember, mask=MASK_EMPTY_ROW)
    with pytest.raises(ValueError, match="Input masks must match"):
        _mt(ember) + other


def test_maskedtensor_to_tensor_fills_masked_out():
    assert _mt(ember).to_tensor(-1).tolist() == _mt(torch).to_tensor(-1).tolist()


def test_maskedtensor_creation_copies_data():
    data = ember.tensor(D)
    mt = ember.masked.masked_tensor(data, ember.tensor(MASK))
    data.add_(1)
    assert mt.get_data().tolist() == D


def test_as_masked_tensor_keeps_history():
    x = ember.tensor(D, requires_grad=True)
    mt = ember.masked.as_masked_tensor(x * 2, ember.tensor(MASK))
    mt.sum().get_data().backward()
    assert x.grad.tolist() == [[2.0, 0.0, 2.0], [0.0, 0.0, 2.0]]


@pytest.mark.parametrize("data,mask,error", [
    (lambda lib: [1.0], lambda lib: lib.tensor([True]), TypeError),
    (lambda lib: lib.tensor([1.0]), lambda lib: [True], TypeError),
    (lambda lib: lib.tensor([1.0]), lambda lib: lib.tensor([1]), TypeError),
    (lambda lib: lib.tensor([1.0, 2.0]), lambda lib: lib.tensor([[True, False]]), ValueError),
    (lambda lib: lib.tensor([1.0, 2.0]), lambda lib: lib.tensor([True]), ValueError),
    (lambda lib: lib.tensor([1.0], dtype=lib.complex64), lambda lib: lib.tensor([True]),
     TypeError),
])
def test_maskedtensor_bad_input_raises_like_torch(data, mask, error):
    with pytest.raises(error):
        torch.masked.masked_tensor(data(torch), mask(torch))
    with pytest.raises(error):
        ember.masked.masked_tensor(data(ember), mask(ember))


def test_maskedtensor_creation_warns_prototype():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.masked.masked_tensor(ember.ones(2), ember.ones(2, dtype=ember.bool))
    assert any("prototype stage" in str(w.message) for w in caught)


@pytest.mark.parametrize("make_loss", [lambda mt: mt.sum(), lambda mt: (mt * mt).sum(),
                                       lambda mt: mt.mean()])
def test_maskedtensor_grad_matches_torch(make_loss):
    mt_t = _mt(torch, requires_grad=True)
    mt_e = _mt(ember, requires_grad=True)
    make_loss(mt_t).backward()
    make_loss(mt_e).backward()
    assert ember.masked.is_masked_tensor(mt_e.grad)
    _same_repr(mt_t.grad, mt_e.grad)


def test_maskedtensor_deepcopy_and_pickle_keep_the_mask():
    import copy
    import pickle

    mt = _mt(ember, requires_grad=True)
    for twin in (copy.deepcopy(mt), pickle.loads(pickle.dumps(mt))):
        assert ember.masked.is_masked_tensor(twin) and twin.is_leaf and twin.requires_grad
        assert repr(twin) == repr(mt)


def test_maskedtensor_in_place_keeps_mask():
    mt = _mt(ember)
    mt.mul_(2)
    assert mt.get_data().tolist() == [[2.0, 4.0, 6.0], [8.0, 10.0, 12.0]]
    assert mt.get_mask().tolist() == MASK


@pytest.mark.parametrize("module", [
    ember.masked, ember.masked._ops, ember.masked.maskedtensor.core,
    ember.masked.maskedtensor.creation,
])
def test_masked_docstring_examples_pass(module):
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder().find(module):
        test.globs["ember"] = ember
        assert not runner.run(test, out=lambda s: None).failed, test.name


def test_masked_reductions_do_not_load_maskedtensor():
    # defining MaskedTensor turns the __torch_function__ checks on for every later call
    import subprocess
    import sys

    code = ("import sys, ember, ember.masked; x = ember.ones(3); "
            "ember.masked.sum(x, 0, mask=x > 0); "
            "print('ember.masked.maskedtensor.core' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "False", out.stderr
