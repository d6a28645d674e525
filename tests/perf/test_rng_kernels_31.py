"""The compiled draws (NOTE [ Draws made where they are used ] in ember/_core/generator.py)
against NumPy's engine words and the plain NumPy path, and against PyTorch's streams."""

import numpy as np
import pytest

import ember
from ember._core import generator as gen

pytest.importorskip("numba")
if ember._kernels.backend() != "numba":  # pragma: no cover - EMBER_KERNELS=numpy
    pytest.skip("the compiled draws run with the numba kernels backend", allow_module_level=True)

from ember._kernels import _numba_random as k  # noqa: E402

# lengths around the engine's 624-word refills and the kernels' 1024-word blocks
LENGTHS = [1, 2, 311, 312, 623, 624, 625, 1023, 1024, 1025, 4096, 5000, 70001]


@pytest.mark.parametrize("skip", [0, 1, 623])
@pytest.mark.parametrize("n", LENGTHS)
def test_words_are_numpys(n, skip):
    ref, mine = np.random.MT19937(n), np.random.MT19937(n)
    ref.random_raw(skip)
    mine.random_raw(skip)
    g = ember.Generator()
    g._set_engine(mine)
    out = np.empty(n, np.uint64)
    g._draw(k.words_into, out)
    np.testing.assert_array_equal(out, ref.random_raw(n))
    assert mine.state["state"]["pos"] == ref.state["state"]["pos"]
    np.testing.assert_array_equal(mine.random_raw(700), ref.random_raw(700))


def _draws(seed, n, offset):
    g = ember.Generator().manual_seed(seed)
    g._words(offset)     # an odd offset splits the 64-bit draws across a refill
    return [g._uniform64(n), g._uniform_bits(n, 24), g._uniform_bits(n, 11),
            g._bernoulli(n, 0.3, np.float32), g._bernoulli(n, 0.7, np.int64),
            g._bernoulli(n, 0.5, np.bool_), g._bernoulli(n, 0.25, np.float16),
            g.get_state().numpy()]


@pytest.mark.parametrize("offset", [0, 1, 623])
@pytest.mark.parametrize("n", [4096, 5000, 70001])
def test_compiled_draws_are_the_plain_paths(n, offset, monkeypatch):
    fast = _draws(n, n, offset)
    monkeypatch.setattr(gen, "COMPILED_MIN_DRAWS", 1 << 62)
    slow = _draws(n, n, offset)
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n", [4096, 9216 * 7 + 3])
def test_large_draws_match_torch(n):
    torch = pytest.importorskip("torch")
    for seed in (0, 7):
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        for make_e, make_t in [
            (lambda: ember.rand(n), lambda: torch.rand(n)),
            (lambda: ember.rand(n, dtype=ember.float64),
             lambda: torch.rand(n, dtype=torch.float64)),
            (lambda: ember.empty(n).bernoulli_(0.3), lambda: torch.empty(n).bernoulli_(0.3)),
            (lambda: ember.empty(n, dtype=ember.bool).bernoulli_(0.6),
             lambda: torch.empty(n, dtype=torch.bool).bernoulli_(0.6)),
            (lambda: ember.nn.functional.dropout(ember.ones(n), 0.25),
             lambda: torch.nn.functional.dropout(torch.ones(n), 0.25)),
            (lambda: ember.randn(n), lambda: torch.randn(n)),
        ]:
            np.testing.assert_array_equal(make_e().numpy(), make_t().numpy())
        np.testing.assert_array_equal(ember.get_rng_state().numpy(),
                                      torch.get_rng_state().numpy())


def test_state_from_torch_continues_in_the_compiled_loops():
    torch = pytest.importorskip("torch")
    t = torch.Generator().manual_seed(3)
    torch.rand(1001, generator=t)
    e = ember.Generator()
    e.set_state(ember.tensor(t.get_state().numpy()))
    np.testing.assert_array_equal(ember.rand(5000, generator=e).numpy(),
                                  torch.rand(5000, generator=t).numpy())
    np.testing.assert_array_equal(e.get_state().numpy(), t.get_state().numpy())


@pytest.mark.parametrize("n", [1, 5000])
def test_a_fresh_generator_reports_its_first_draw(n):
    torch = pytest.importorskip("torch")
    e, t = ember.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    np.testing.assert_array_equal(e.get_state().numpy(), t.get_state().numpy())
    ember.rand(n, generator=e)
    torch.rand(n, generator=t)
    assert not e._fresh
    np.testing.assert_array_equal(e.get_state().numpy(), t.get_state().numpy())
