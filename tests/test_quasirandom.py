"""ember.quasirandom.SobolEngine, compared with torch's (the same numbers, bit for bit)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import ember
import ember.quasirandom

torch = pytest.importorskip("torch")


def _pair(*args, **kwargs):
    return (torch.quasirandom.SobolEngine(*args, **kwargs),
            ember.quasirandom.SobolEngine(*args, **kwargs))


def _same(t, e):
    t, e = t.numpy(), e.numpy()
    assert t.dtype == e.dtype and t.shape == e.shape
    np.testing.assert_array_equal(e, t)


def test_sobol_direction_numbers_match_torch_all_dimensions():
    t, e = _pair(21201)
    _same(t.sobolstate, e.sobolstate)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sobol_draw_unscrambled_matches_torch(dtype):
    t, e = _pair(7)
    _same(t.draw(33, dtype=getattr(torch, dtype)), e.draw(33, dtype=getattr(ember, dtype)))
    _same(t.draw(5), e.draw(5))
    assert e.num_generated == t.num_generated == 38
    _same(t.quasi, e.quasi)


@pytest.mark.parametrize("seed", [0, 5, 2**40 + 7, -3])
def test_sobol_scrambled_with_seed_matches_torch(seed):
    t, e = _pair(6, scramble=True, seed=seed)
    _same(t.sobolstate, e.sobolstate)
    _same(t.shift, e.shift)
    _same(t.draw(9), e.draw(9))
    _same(t.draw(4, dtype=torch.float64), e.draw(4, dtype=ember.float64))


def test_sobol_scrambled_first_point_uses_default_dtype_at_construction():
    t, e = _pair(3, scramble=True, seed=1)
    _same(t.draw(1, dtype=torch.float64), e.draw(1, dtype=ember.float64))


def test_sobol_scrambled_without_seed_differs_between_engines():
    a = ember.quasirandom.SobolEngine(4, scramble=True).draw(8)
    b = ember.quasirandom.SobolEngine(4, scramble=True).draw(8)
    assert not bool((a == b).all())
    assert bool(((a >= 0) & (a < 1)).all())


@pytest.mark.parametrize("first", [0, 1, 3])
@pytest.mark.parametrize("skip", [0, 1, 2, 17])
def test_sobol_fast_forward_matches_torch(first, skip):
    t, e = _pair(3)
    if first:
        t.draw(first), e.draw(first)
    assert e.fast_forward(skip) is e
    t.fast_forward(skip)
    assert e.num_generated == t.num_generated
    _same(t.draw(4), e.draw(4))


def test_sobol_reset_restarts_the_sequence():
    t, e = _pair(2, scramble=True, seed=3)
    t.draw(5), e.draw(5)
    assert e.reset() is e
    t.reset()
    _same(t.draw(3), e.draw(3))
    assert e.num_generated == 3


def test_sobol_draw_base2_matches_torch():
    t, e = _pair(4)
    _same(t.draw_base2(3), e.draw_base2(3))
    _same(t.draw_base2(3), e.draw_base2(3))


def test_sobol_draw_base2_refuses_unbalanced_total():
    e = ember.quasirandom.SobolEngine(2)
    e.draw(3)
    with pytest.raises(ValueError, match=r"n=3\+2\*\*1=5"):
        e.draw_base2(1)
    assert e.num_generated == 3


def test_sobol_draw_out_is_resized_and_filled():
    out = ember.empty(0)
    e = ember.quasirandom.SobolEngine(2)
    assert e.draw(3, out=out) is out
    _same(torch.quasirandom.SobolEngine(2).draw(3), out)


@pytest.mark.parametrize("dimension", [0, 21202])
def test_sobol_dimension_out_of_range_raises_value_error(dimension):
    with pytest.raises(ValueError, match=r"\[1, 21201\]"):
        ember.quasirandom.SobolEngine(dimension)


def test_sobol_half_dtype_raises_not_implemented():
    with pytest.raises(NotImplementedError, match="Half"):
        ember.quasirandom.SobolEngine(2).draw(3, dtype=ember.float16)
    with pytest.raises(NotImplementedError):
        torch.quasirandom.SobolEngine(2).draw(3, dtype=torch.float16)


def test_sobol_draw_zero_first_raises_like_torch():
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        ember.quasirandom.SobolEngine(2).draw(0)
    e = ember.quasirandom.SobolEngine(2)
    e.draw(2)
    assert tuple(e.draw(0).shape) == (0, 2)


@pytest.mark.parametrize("kwargs", [{}, {"scramble": True, "seed": 4}, {"seed": 4}])
def test_sobol_repr_matches_torch(kwargs):
    t, e = _pair(3, **kwargs)
    assert repr(e) == repr(t)


def test_sobol_docstring_examples_pass():
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(
        optionflags=doctest.NORMALIZE_WHITESPACE)
    for test in finder.find(ember.quasirandom):
        test.globs["ember"] = ember
        assert not runner.run(test, out=lambda s: None).failed, test.name
