"""Regressions for the order of PyTorch's checks in the reduction and sorting families (issue
16): an empty reduction dim is refused before the dtype; an empty result skips the kernel
(and its dtype refusal) in amax/amin/cummax/mode/searchsorted; sort and topk refuse complex
input with RuntimeError; median of nothing is NaN in any dtype. Also the dtypes histc and
histogram take, histogram's checks of ``bins``/``weight`` and its binary-search bins, and
complex logcumsumexp. Each expression runs with ``T = ember`` and ``T = torch``."""

import numpy as np
import pytest

from tests.conftest import HAS_TORCH
from tests.differential.test_linalg_regressions import _same

pytestmark = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")

C = "T.empty({}, dtype=T.complex64)"
B = "T.empty({}, dtype=T.bool)"


@pytest.mark.parametrize("expr", [
    # an empty reduction dim first, then the dtype
    "T.amax({c03}, 0)", "T.amin({c03}, (0, 1))", "T.max({c03}, 0)", "T.min({c03}, 0)",
    "T.median({c03}, 0)", "T.nanmedian({c03}, 0)", "T.mode({c30}, 1)",
    "T.aminmax({c03}, dim=0)", "T.aminmax(T.empty(0, 3), dim=0)", "T.median({b03}, 0)",
    "T.amax({c03})", "T.aminmax({c03})",
    # an empty result: no kernel, no refusal (or a refusal that comes first anyway)
    "T.amax({c03}, 1)", "T.amin({c30}, 0)", "T.cummax({c03}, 0)", "T.cummin({c30}, 1)",
    "T.mode({c03}, 1)", "T.max({c03}, 1)", "T.aminmax({c30}, dim=0)",
    "T.median({c03}, 1)", "T.kthvalue({c03}, 1, 1)",
    "T.searchsorted({b0}, {b0})", "T.bucketize({b0}, T.ones(3, dtype=T.bool))",
    "T.searchsorted(T.ones(1, 3, dtype=T.bool), T.empty(1, 0, dtype=T.bool))",
    # the median of nothing
    "T.median({c03})", "T.nanmedian({b03})", "T.median(T.empty(0, dtype=T.int16))",
    # non-empty: the refusal's type
    "T.amax(T.ones(2, 3, dtype=T.complex64), 0)", "T.max(T.ones(2, dtype=T.complex64))",
    "T.max(T.ones(2, 3, dtype=T.complex64), 0)", "T.argmax(T.ones(2, dtype=T.complex64))",
    "T.sort(T.ones(2, dtype=T.complex64))", "T.msort({c0})", "T.argsort({c0})",
    "T.topk(T.ones(3, dtype=T.complex64), 1)", "T.topk(T.ones(3, dtype=T.bool), 2)",
    "T.topk({b0}, 0)", "T.median(T.ones(3, dtype=T.complex64), 0)",
    "T.cummax(T.ones(3, dtype=T.complex64), 0)", "T.mode(T.ones(3, dtype=T.complex64))",
])
def test_refusal_order_as_torch(expr):
    _same(expr.format(c03=C.format("0, 3"), c30=C.format("3, 0"), c0=C.format("0"),
                      b03=B.format("0, 3"), b0=B.format("0")))


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("expr", [
    "T.histc(T.tensor([1., 2, 3, 2.5], dtype=T.{dt}), bins=4)",
    "T.histc(T.empty(0, dtype=T.{dt}))",
    "T.histogram(T.tensor([1., 2, 3], dtype=T.{dt}), 3)",
    "T.histogram(T.empty(0, dtype=T.{dt}), 4, range=(-2.0, 2.0))",
    "T.histogram(T.tensor([1., 2, 3], dtype=T.{dt}), T.tensor([0., 2, 4], dtype=T.{dt}))",
])
def test_histogram_half_dtypes_as_torch(expr, dt):
    _same(expr.format(dt=dt))


@pytest.mark.parametrize("bins", [
    "T.tensor([1.])", "T.tensor([])", "T.tensor([1., 2], dtype=T.float64)",
    "T.tensor([[1., 2]])", "0", "-1",
])
def test_histogram_bins_checks_as_torch(bins):
    _same(f"T.histogram(T.tensor([1., 2, 3]), {bins})")


@pytest.mark.parametrize("weight", ["T.ones(2)", "T.ones(3, dtype=T.float64)"])
def test_histogram_weight_checks_as_torch(weight):
    _same(f"T.histogram(T.tensor([1., 2, 3]), 3, weight={weight})")


@pytest.mark.parametrize("edges", ["[1., 3, 2, 4]", "[3., 2, 1]", "[0., 1.5, 2, 3]"])
@pytest.mark.parametrize("density", [False, True])
def test_histogram_given_edges_bin_as_torch(edges, density):
    _same(f"T.histogram(T.tensor([1., 2, 3, 2.5, 0.2, 7]), T.tensor({edges}), "
          f"weight=T.tensor([1., 2, 3, 4, 5, 6]), density={density})")


def test_logcumsumexp_complex_values_and_grad_as_torch():
    import torch

    import ember

    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))) * 3
    w = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    got = []
    for T in (ember, torch):
        a = T.tensor(x, requires_grad=True)
        r = T.logcumsumexp(a, 1)
        (r * T.tensor(w)).sum().abs().backward()
        got.append((r.detach().numpy(), a.grad.resolve_conj().numpy()))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("vals", [
    "[complex(-float('inf'), 0.5), 1+1j, complex(float('inf'), 0), complex(float('inf'), 2)]",
    "[complex(-float('inf'), float('nan')), 1+1j]", "[-0.94j, 2.93j, 1+0j]",
    "[complex(-float('inf'), 0), complex(-float('inf'), 1), 1]",
])
def test_logcumsumexp_complex_special_values_as_torch(vals):
    _same(f"T.logcumsumexp(T.tensor({vals}, dtype=T.complex128), 0)")


# gathers and scatters of nothing: torch checks neither the index's dtype nor its bounds
@pytest.mark.parametrize("idt", ["float32", "complex64", "bool", "int16", "bfloat16"])
@pytest.mark.parametrize("expr", [
    "T.gather(T.ones(2, 3), 1, {e})", "T.scatter_add(T.ones(2, 3), 0, {e}, T.empty(0, 3))",
    "T.scatter(T.ones(2, 3), 0, {e}, 1.0)",
    "T.scatter_reduce(T.ones(2, 3), 0, {e}, T.empty(0, 3), 'prod')",
    "T.ones(2, 3).scatter_(0, {e}, T.empty(0, 3), reduce='add')",
    "T.gather(T.ones(2, 3), 0, T.ones(1, 3, dtype=T.{idt}))",
])
def test_empty_index_of_any_dtype_as_torch(expr, idt):
    _same(expr.format(e=f"T.empty(0, 3, dtype=T.{idt})", idt=idt))


@pytest.mark.parametrize("shape", ["0, 2", "2, 0", "3, 0, 2", "2, 2"])
@pytest.mark.parametrize("key", [
    "[:, T.tensor([0, 1, 2, 2])]", "[T.tensor([0, 5])]", "[..., T.tensor([3])]",
    "[T.tensor([[0], [4]]), T.tensor([1, 2])]", "[T.tensor([0])]",
])
def test_advanced_index_reading_nothing_as_torch(shape, key):
    _same(f"T.zeros({shape}){key}")
    if ":" not in key and "..." not in key:
        _same(f"T.index_put(T.zeros({shape}), ({key[1:-1]},), T.tensor(1.))")


@pytest.mark.parametrize("shape", ["6, 0", "0, 2", "2, 0, 3"])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("idx", ["[1, 2, 0]", "[7]", "[]"])
def test_index_select_of_empty_as_torch(shape, dim, idx):
    _same(f"T.index_select(T.zeros({shape}), {dim}, T.tensor({idx}, dtype=T.long))")


@pytest.mark.parametrize("shape", ["0, 2", "2, 0", "0, 1"])
@pytest.mark.parametrize("idx", ["[0, 1]", "[1, 1, 1, 3]", "[]"])
def test_index_copy_and_fill_of_empty_as_torch(shape, idx):
    a, b = shape.split(", ")
    n = len(eval(idx))
    i = f"T.tensor({idx}, dtype=T.long)"
    _same(f"T.index_copy(T.zeros({shape}), 1, {i}, T.ones({a}, {n}))")
    _same(f"T.index_copy(T.zeros({shape}), 0, {i}, T.ones({n}, {b}))")
    _same(f"T.index_fill(T.zeros({shape}), 1, {i}, 1.0)")
