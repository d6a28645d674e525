"""Attention's batch pieces do not claim the BLAS for the products around them, and its own
stacks stay held at one BLAS thread (NOTE [ Attention pieces do not claim the BLAS ] in
ember/_ops/nn_attention.py): a transformer block's projections keep both BLAS threads after
attention, a convolution's pieces still claim them, and the values are those of the plain
path (the BLAS threads split rows and columns of a product, never its sums) and PyTorch's."""

import numpy as np
import pytest

import ember
from ember import _parallel
from ember._kernels import _blas

pytest.importorskip("threadpoolctl")


@pytest.fixture
def two_threads(monkeypatch):
    """Two threads configured, an idle machine, no workers polling, no pieces wanted."""
    if not _parallel._blas_controllers():
        pytest.skip("no BLAS library that threadpoolctl controls")
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    monkeypatch.setattr(_parallel, "contended", lambda: False)
    monkeypatch.setattr(_parallel, "_polling_until", [0.0])
    monkeypatch.setattr(_parallel, "_pieces_wanted_at", [-1e9])
    yield
    ember.set_num_threads(before)


@pytest.fixture
def holds(monkeypatch):
    """A count of the BLAS holds taken."""
    seen = []
    real = _parallel._hold_blas

    def spy():
        seen.append(1)
        real()

    monkeypatch.setattr(_parallel, "_hold_blas", spy)
    return seen


def test_split_batch_without_claim_leaves_products_on_every_thread(two_threads):
    assert _parallel.split_batch(lambda lo, hi: (lo, hi), 4, 1 << 40, claim=False) == \
        [(0, 2), (2, 4)]
    assert not _parallel.pieces_wanted()
    assert not _blas.one_thread(1024, 256, 256)


def test_split_batch_declined_without_claim_claims_nothing(two_threads, monkeypatch):
    monkeypatch.setattr(_parallel, "BLAS_POLL_S", 0.12)  # (a BLAS whose workers poll long)
    _parallel.blas_split()   # the workers poll: pieces declined
    assert _parallel.split_batch(lambda lo, hi: (lo, hi), 4, 1 << 40, claim=False) is None
    assert not _parallel.pieces_wanted()


def test_split_batch_claims_by_default(two_threads, monkeypatch):
    monkeypatch.setattr(_parallel, "BLAS_POLL_S", 0.12)  # (a BLAS whose workers poll long)
    _parallel.blas_split()
    assert _parallel.split_batch(lambda lo, hi: (lo, hi), 4, 1 << 40) is None
    assert _parallel.pieces_wanted()
    assert _blas.one_thread(1024, 256, 256)


def test_one_thread_for_always_holds_on_an_idle_machine(two_threads, holds):
    work = 128 * 128 * 64
    with _blas.one_thread_for(work):
        pass
    assert holds == []   # idle, nothing wanted: the plain rule keeps every thread
    with _blas.one_thread_for(work, always=True):
        pass
    assert holds == [1]
    with _blas.one_thread_for(1000, always=True):   # below OpenBLAS's own limit
        pass
    with _blas.one_thread_for(1 << 40, always=True):   # large: every thread
        pass
    assert holds == [1]


def test_one_thread_for_always_off_with_one_thread(two_threads, holds):
    ember.set_num_threads(1)
    with _blas.one_thread_for(128 * 128 * 64, always=True):
        pass
    assert holds == []


def _block(fw, x, w_qkv, w_proj, causal):
    """A pre-projection attention block as a GPT's: q, k, v split off one product, heads
    transposed, attention, the heads joined and projected."""
    b, t, d = x.shape
    q, k, v = (x @ w_qkv).split(d, dim=2)
    q, k, v = (z.view(b, t, 4, d // 4).transpose(1, 2) for z in (q, k, v))
    y = fw.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return y.transpose(1, 2).reshape(b, t, d) @ w_proj


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("polling", [True, False])
def test_block_after_attention_claims_nothing_and_matches_plain(two_threads, monkeypatch,
                                                                causal, polling):
    monkeypatch.setattr(_parallel, "SPLIT_MIN_WORK", 0)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((4, 128, 64)).astype(np.float32)
    wq = (rng.standard_normal((64, 192)) / 8).astype(np.float32)
    wp = (rng.standard_normal((64, 64)) / 8).astype(np.float32)
    g = rng.standard_normal((4, 128, 64)).astype(np.float32)

    def run():
        x, a, b = (ember.tensor(z, requires_grad=True) for z in (xs, wq, wp))
        if polling:
            _parallel.blas_split()   # as after the q/k/v product on both BLAS threads
        out = _block(ember, x, a, b, causal)
        out.backward(ember.from_numpy(g))
        return [out.detach().numpy()] + [t.grad.numpy() for t in (x, a, b)]

    got = run()
    assert not _parallel.pieces_wanted()
    # the plain path: one thread configured (no pieces, no BLAS split)
    ember.set_num_threads(1)
    want = run()
    for r, w in zip(got, want):
        np.testing.assert_allclose(r, w, rtol=1e-5, atol=1e-5)
    torch = pytest.importorskip("torch")
    x, a, b = (torch.tensor(z, requires_grad=True) for z in (xs, wq, wp))
    out = _block(torch, x, a, b, causal)
    out.backward(torch.from_numpy(g))
    for r, w in zip(got, [out.detach().numpy()] + [t.grad.numpy() for t in (x, a, b)]):
        np.testing.assert_allclose(r, w, rtol=1e-4, atol=1e-4)


def test_attention_stacks_hold_one_thread_on_an_idle_machine(two_threads, holds):
    rng = np.random.default_rng(1)
    q, k, v = (ember.from_numpy(rng.standard_normal((2, 4, 128, 64)).astype(np.float32))
               for _ in range(3))
    _parallel.blas_split()   # pieces declined: the whole stack runs, held
    ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert holds == [1]


def test_hold_covers_scipys_blas_loaded_later(two_threads, monkeypatch):
    # a lookup made before scipy.linalg was imported is made again after (SciPy's own BLAS)
    from threadpoolctl import threadpool_info

    pytest.importorskip("scipy.linalg")
    # as if looked up before SciPy came in: a stale (here empty) list
    monkeypatch.setattr(_parallel, "_blas", [[]])
    monkeypatch.setattr(_parallel, "_blas_scipy", [False])
    libs = {p["filepath"] for p in threadpool_info() if p["user_api"] == "blas"}
    assert {c.filepath for c in _parallel._blas_controllers()} == libs
    _parallel._hold_blas()
    try:
        inside = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    finally:
        _parallel._release_blas()
    assert set(inside) == {1}
