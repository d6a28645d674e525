"""topk names tied values in PyTorch's order for every k (NOTE [ Tie order of topk ]): the
selection path (k * 64 > n) replays std::nth_element and then std::sort of the first k - 1,
an introsort once k - 1 passes 16."""

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("seed", range(4))
def test_topk_ties_in_torch_order_at_random_k(seed):
    rng = np.random.default_rng(seed)
    for _ in range(150):
        n = int(rng.integers(2, 300))
        k = int(rng.integers(1, n + 1))
        x = rng.integers(0, int(rng.integers(1, 8)), n).astype(np.float32)
        if rng.random() < 0.2:
            x[rng.random(n) < 0.1] = np.nan
        largest = bool(rng.random() < 0.7)
        t = torch.from_numpy(x).topk(k, largest=largest)
        e = ember.from_numpy(x).topk(k, largest=largest)
        assert e.indices.tolist() == t.indices.tolist(), (n, k, largest)
        np.testing.assert_array_equal(e.values.numpy(), t.values.numpy())


def test_topk_ties_along_a_dim_of_a_batch():
    rng = np.random.default_rng(7)
    x = rng.integers(0, 3, (4, 120, 3)).astype(np.float64)
    for k in (1, 17, 18, 40, 119, 120):
        t = torch.from_numpy(x).topk(k, dim=1)
        e = ember.from_numpy(x).topk(k, dim=1)
        assert e.indices.tolist() == t.indices.tolist(), k


def test_unstable_sort_ties_in_torch_order():
    rng = np.random.default_rng(11)
    for _ in range(60):
        n = int(rng.integers(2, 600))
        x = rng.integers(0, int(rng.integers(1, 9)), n).astype(np.float32)
        d = bool(rng.random() < 0.5)
        assert ember.from_numpy(x).sort(descending=d).indices.tolist() == \
            torch.from_numpy(x).sort(descending=d).indices.tolist()


@pytest.mark.parametrize("dtype", ["float32", "int64", "int16", "bool", "bfloat16"])
def test_mode_ties_in_torch_order(dtype):
    rng = np.random.default_rng(21)
    for _ in range(80):
        n = int(rng.integers(1, 200))
        x = rng.integers(0, int(rng.integers(1, 5)), (3, n))
        t = torch.from_numpy(x).to(getattr(torch, dtype))
        if dtype == "float32" and rng.random() < 0.3:
            t[rng.random((3, n)) < 0.1] = float("nan")
        e = ember.from_numpy(t.float().numpy()).to(getattr(ember, dtype))
        a, b = t.mode(1), e.mode(1)
        assert b.indices.tolist() == a.indices.tolist(), (dtype, n)
        np.testing.assert_array_equal(b.values.float().numpy(), a.values.float().numpy())
