"""What consumes random numbers draws PyTorch's numbers: after the same seed, module
initialisation, nn.init, dropout, rrelu, DataLoader shuffling and worker seeds, samplers,
random_split and distribution samples equal PyTorch's bit for bit, and leave the global
stream where PyTorch leaves it.

With PyTorch installed each case runs in both frameworks after ``manual_seed`` and compares;
without it the cases check determinism and the stream bookkeeping that needs no oracle.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import ember
from ember.utils.data import DataLoader, TensorDataset, get_worker_info


def _torch():
    return pytest.importorskip("torch")


def _np(t):
    return np.ascontiguousarray(t.detach().numpy())


def _bits_equal(a, b):
    x, y = _np(a), _np(b)
    return x.shape == y.shape and x.dtype == y.dtype and x.tobytes() == y.tobytes()


def _run_both(torch, build, seed=0):
    """``build(framework)`` after ``manual_seed(seed)`` in each; returns both results and
    whether the next ``rand(4)`` agrees (the stream left behind)."""
    torch.manual_seed(seed)
    expected = build(torch)
    after_t = torch.rand(4)
    ember.manual_seed(seed)
    got = build(ember)
    after_e = ember.rand(4)
    return expected, got, _bits_equal(after_t, after_e)


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


# ------------------------------------------------------------------------------------------------
# module construction


MODULES = {
    "Linear": lambda m: m.nn.Linear(5, 4),
    "Linear-nobias-f64": lambda m: m.nn.Linear(3, 4, bias=False, dtype=m.float64),
    "Bilinear": lambda m: m.nn.Bilinear(2, 3, 4),
    "Conv1d": lambda m: m.nn.Conv1d(2, 4, 3),
    "Conv2d-groups": lambda m: m.nn.Conv2d(4, 6, 3, groups=2),
    "Conv3d": lambda m: m.nn.Conv3d(2, 3, 2),
    "ConvTranspose2d": lambda m: m.nn.ConvTranspose2d(4, 6, 3, groups=2),
    "Embedding-padding": lambda m: m.nn.Embedding(6, 3, padding_idx=1),
    "EmbeddingBag": lambda m: m.nn.EmbeddingBag(5, 3),
    "RNN-2layer-bi": lambda m: m.nn.RNN(3, 4, num_layers=2, bidirectional=True),
    "LSTM-proj": lambda m: m.nn.LSTM(3, 4, proj_size=2),
    "GRU": lambda m: m.nn.GRU(3, 4, num_layers=2, bias=False),
    "cells": lambda m: m.nn.Sequential(m.nn.RNNCell(3, 4), m.nn.LSTMCell(3, 4),
                                       m.nn.GRUCell(3, 4)),
    "MultiheadAttention-kv": lambda m: m.nn.MultiheadAttention(4, 2, kdim=3, vdim=5,
                                                               add_bias_kv=True),
    "Transformer": lambda m: m.nn.Transformer(8, 2, 1, 1, 16),
    "norms-prelu": lambda m: m.nn.Sequential(m.nn.BatchNorm1d(3), m.nn.LayerNorm(3),
                                             m.nn.GroupNorm(1, 3), m.nn.PReLU(3)),
    "AdaptiveLogSoftmaxWithLoss": lambda m: m.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4]),
}


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
@pytest.mark.parametrize("name", list(MODULES))
def test_module_init_matches_torch_bit_for_bit(name):
    torch = _torch()
    mt, me, stream_ok = _run_both(torch, MODULES[name])
    pt, pe = dict(mt.named_parameters()), dict(me.named_parameters())
    assert list(pt) == list(pe)
    for key in pt:
        assert _bits_equal(pt[key], pe[key]), key
    assert stream_ok


@pytest.mark.filterwarnings("ignore:enable_nested_tensor")
@pytest.mark.parametrize("name", ["Linear", "LSTM-proj", "Transformer"])
def test_module_init_is_deterministic(name):
    ember.manual_seed(3)
    a = MODULES[name](ember)
    ember.manual_seed(3)
    b = MODULES[name](ember)
    for p, q in zip(a.parameters(), b.parameters()):
        assert _bits_equal(p, q)


@pytest.mark.parametrize("cls, nd", [("LazyLinear", 0), ("LazyConv1d", 1), ("LazyConv2d", 2),
                                     ("LazyConvTranspose1d", 1), ("LazyConvTranspose2d", 2)])
def test_lazy_modules_draw_nothing_until_the_first_input(cls, nd):
    ember.manual_seed(0)
    expected = ember.rand(3)
    ember.manual_seed(0)
    m = getattr(ember.nn, cls)(4) if nd == 0 else getattr(ember.nn, cls)(4, 3, groups=2)
    assert _bits_equal(ember.rand(3), expected)
    m(ember.ones((1, 2) + (5,) * nd) if nd else ember.ones(2, 6))
    assert m.weight.shape[1 if nd == 0 or "Transpose" not in cls else 0] in (6, 2, 1)
    assert not isinstance(m.weight, ember.nn.parameter.UninitializedParameter)


def test_lazy_module_init_matches_torch():
    torch = _torch()

    def build(m):
        lazy = m.nn.LazyConvTranspose2d(4, 3, groups=2)
        lazy(m.ones(1, 2, 5, 5))
        return lazy

    mt, me, stream_ok = _run_both(torch, build)
    assert _bits_equal(mt.weight, me.weight) and _bits_equal(mt.bias, me.bias)
    assert stream_ok


# ------------------------------------------------------------------------------------------------
# nn.init


INITS = {
    "uniform_": lambda m: m.nn.init.uniform_(m.empty(3, 4), -2, 3),
    "normal_": lambda m: m.nn.init.normal_(m.empty(3, 4), 1.0, 0.5),
    "xavier_normal_": lambda m: m.nn.init.xavier_normal_(m.empty(3, 4, 5)),
    "xavier_uniform_": lambda m: m.nn.init.xavier_uniform_(m.empty(3, 4), gain=2.0),
    "kaiming_uniform_": lambda m: m.nn.init.kaiming_uniform_(m.empty(3, 4), a=0.1),
    "kaiming_normal_": lambda m: m.nn.init.kaiming_normal_(m.empty(4, 2, 3), mode="fan_out"),
    "sparse_": lambda m: m.nn.init.sparse_(m.empty(6, 3), 0.5),
    # both of trunc_normal_'s samplers (NOTE [ trunc_normal_'s two samplers ])
    "trunc_normal_-wide": lambda m: m.nn.init.trunc_normal_(m.empty(200)),
    "trunc_normal_-std": lambda m: m.nn.init.trunc_normal_(m.empty(64), std=0.02),
    "trunc_normal_-narrow": lambda m: m.nn.init.trunc_normal_(m.empty(200), 0.0, 1.0, 1.0, 1.2),
    "trunc_normal_-narrow-f64": lambda m: m.nn.init.trunc_normal_(
        m.empty(200, dtype=m.float64), 0.0, 1.0, 0.0, 0.5),
    "generator": lambda m: m.nn.init.kaiming_normal_(
        m.empty(3, 2), generator=m.Generator().manual_seed(5)),
}


@pytest.mark.parametrize("name", list(INITS))
def test_init_matches_torch_bit_for_bit(name):
    torch = _torch()
    expected, got, stream_ok = _run_both(torch, INITS[name])
    assert _bits_equal(expected, got)
    assert stream_ok


def test_orthogonal_draws_torch_normals():
    # the Gaussian matrix is the same; the QR of two LAPACK builds may differ in the last bit
    torch = _torch()
    expected, got, stream_ok = _run_both(torch, lambda m: m.nn.init.orthogonal_(m.empty(3, 5)))
    np.testing.assert_allclose(_np(got), _np(expected), rtol=0, atol=1e-6)
    assert stream_ok


def test_trunc_normal_stays_in_bounds_and_is_deterministic():
    for args in [(0.0, 1.0, -2.0, 2.0), (0.0, 1.0, 1.0, 1.2), (0.5, 0.02, 0.45, 0.5)]:
        ember.manual_seed(1)
        a = ember.nn.init.trunc_normal_(ember.empty(500), *args)
        ember.manual_seed(1)
        b = ember.nn.init.trunc_normal_(ember.empty(500), *args)
        assert _bits_equal(a, b)
        assert float(a.min()) >= args[2] and float(a.max()) <= args[3]


# ------------------------------------------------------------------------------------------------
# dropout and rrelu


DROPOUTS = {
    "dropout": lambda m: m.nn.functional.dropout(m.ones(5, 7), 0.3),
    "dropout-f64": lambda m: m.nn.functional.dropout(m.ones(5, 7, dtype=m.float64), 0.3),
    "dropout-noncontiguous": lambda m: m.nn.functional.dropout(
        m.arange(12.0).reshape(3, 4).t(), 0.3),
    "dropout-inplace": lambda m: m.nn.functional.dropout(m.ones(4, 3), 0.5, inplace=True),
    "Dropout1d-unbatched": lambda m: m.nn.Dropout1d(0.5)(m.ones(3, 4)),
    "Dropout2d": lambda m: m.nn.Dropout2d(0.5)(m.ones(2, 3, 2, 2)),
    "Dropout3d-unbatched": lambda m: m.nn.Dropout3d(0.5)(m.ones(3, 2, 2, 2)),
    "alpha_dropout": lambda m: m.nn.functional.alpha_dropout(m.linspace(-2, 2, 10), 0.3, True),
    "alpha_dropout-inplace": lambda m: m.nn.functional.alpha_dropout(
        m.linspace(-2, 2, 10), 0.3, True, inplace=True),
    "feature_alpha_dropout": lambda m: m.nn.functional.feature_alpha_dropout(
        m.linspace(-2, 2, 12).reshape(2, 3, 2), 0.3, True),
    "native_dropout": lambda m: m.native_dropout(m.linspace(-2, 2, 10), 0.3, True),
    "sdpa-dropout": lambda m: m.nn.functional.scaled_dot_product_attention(
        m.ones(1, 2, 3, 4), m.ones(1, 2, 3, 4), m.ones(1, 2, 3, 4), dropout_p=0.3),
    "rrelu-f32": lambda m: m.nn.functional.rrelu(m.linspace(-2, 2, 41), training=True),
    "rrelu-f64": lambda m: m.nn.functional.rrelu(
        m.linspace(-2, 2, 41, dtype=m.float64), 0.1, 0.7, training=True),
    "rrelu-generator": lambda m: m.rrelu(m.linspace(-2, 1, 9), training=True,
                                         generator=m.Generator().manual_seed(2)),
}


@pytest.mark.parametrize("name", list(DROPOUTS))
def test_dropout_matches_torch_bit_for_bit(name):
    torch = _torch()
    expected, got, stream_ok = _run_both(torch, DROPOUTS[name])
    for a, b in zip(_as_tuple(expected), _as_tuple(got)):
        assert _bits_equal(a, b)
    assert stream_ok


PRUNES = {
    "random_unstructured": lambda m: m.nn.utils.prune.random_unstructured(
        m.nn.Linear(4, 5), "weight", 0.4).weight_mask,
    "random_structured": lambda m: m.nn.utils.prune.random_structured(
        m.nn.Conv2d(3, 6, 2), "weight", 0.5, dim=1).weight_mask,
    "random_structured-none": lambda m: m.nn.utils.prune.random_structured(
        m.nn.Linear(4, 6), "weight", 0, dim=0).weight_mask,
}


@pytest.mark.parametrize("name", list(PRUNES))
def test_random_pruning_matches_torch(name):
    torch = _torch()
    import torch.nn.utils.prune  # noqa: F401,F811 - not loaded by ``import torch``

    import ember.nn.utils.prune  # noqa: F401

    expected, got, stream_ok = _run_both(torch, PRUNES[name])
    assert _bits_equal(expected, got)
    assert stream_ok


def test_module_dropout_in_training_matches_torch():
    # the masks PyTorch's MultiheadAttention and TransformerEncoderLayer draw, in order
    torch = _torch()

    def run(m):
        layer = m.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.3)
        return list(layer.parameters()), layer(m.ones(3, 1, 4))

    (pt, out_t), (pe, out_e), stream_ok = _run_both(torch, run)
    assert all(_bits_equal(a, b) for a, b in zip(pt, pe))
    # the same masks; the matmuls between them may round differently in the last bits
    np.testing.assert_allclose(_np(out_e), _np(out_t), rtol=1e-5, atol=1e-6)
    assert stream_ok


def test_alpha_dropout_p1_draws_nothing():
    ember.manual_seed(0)
    expected = ember.rand(2)
    ember.manual_seed(0)
    out = ember.nn.functional.alpha_dropout(ember.ones(3), 1.0, True)
    assert _bits_equal(out, ember.zeros(3))
    assert _bits_equal(ember.rand(2), expected)


def test_rrelu_draws_only_for_non_positive_inputs():
    ember.manual_seed(0)
    expected = ember.rand(2)
    ember.manual_seed(0)
    out = ember.nn.functional.rrelu(ember.tensor([1.0, 2.0, 3.0]), training=True)
    assert _bits_equal(out, ember.tensor([1.0, 2.0, 3.0]))
    assert _bits_equal(ember.rand(2), expected)
    x = ember.tensor([-1.0, 2.0, -3.0], requires_grad=True)
    y = ember.nn.functional.rrelu(x, 0.2, 0.4, training=True)
    y.sum().backward()
    slopes = y.detach() / x.detach()
    assert _bits_equal(x.grad, slopes)
    assert 0.2 <= float(slopes[0]) <= 0.4 and float(slopes[1]) == 1.0


# ------------------------------------------------------------------------------------------------
# DataLoader, samplers, random_split


def _batches(loader):
    return [b[0].reshape(-1).tolist() for b in loader]


def _loader_runs(m):
    from_m = m.utils.data
    ds = from_m.TensorDataset(m.arange(20))
    out = []
    shuffled = from_m.DataLoader(ds, batch_size=6, shuffle=True)
    out += [_batches(shuffled), _batches(shuffled)]
    out.append(_batches(from_m.DataLoader(ds, batch_size=8)))
    out.append(m.rand(1).item())
    g = m.Generator().manual_seed(123)
    out.append(_batches(from_m.DataLoader(ds, batch_size=5, shuffle=True, generator=g)))
    out.append(m.rand(1).item())
    return out


def test_dataloader_shuffle_and_base_seed_match_torch():
    torch = _torch()
    torch.manual_seed(0)
    expected = _loader_runs(torch)
    ember.manual_seed(0)
    assert _loader_runs(ember) == expected


def test_dataloader_draws_a_base_seed_per_iterator():
    ds = TensorDataset(ember.arange(4))
    ember.manual_seed(0)
    ember.empty((), dtype=ember.int64).random_()
    expected = ember.rand(2)
    ember.manual_seed(0)
    list(DataLoader(ds, batch_size=2))  # no shuffling: still one word, as PyTorch draws
    assert _bits_equal(ember.rand(2), expected)


SAMPLERS = {
    "RandomSampler": lambda m: list(m.utils.data.RandomSampler(range(10))),
    "RandomSampler-replacement": lambda m: list(
        m.utils.data.RandomSampler(range(10), replacement=True, num_samples=40)),
    "RandomSampler-num_samples": lambda m: list(
        m.utils.data.RandomSampler(range(7), num_samples=25)),
    "RandomSampler-generator": lambda m: list(m.utils.data.RandomSampler(
        range(9), generator=m.Generator().manual_seed(4))),
    "SubsetRandomSampler": lambda m: list(m.utils.data.SubsetRandomSampler([3, 5, 7, 1, 9])),
    "WeightedRandomSampler": lambda m: list(
        m.utils.data.WeightedRandomSampler([0.1, 0.5, 0.4], 12)),
    "WeightedRandomSampler-no-replacement": lambda m: list(
        m.utils.data.WeightedRandomSampler([0.1, 0.5, 0.4, 0.3], 3, replacement=False)),
    "DistributedSampler": lambda m: (lambda s: (s.set_epoch(3), list(s))[1])(
        m.utils.data.DistributedSampler(range(10), num_replicas=3, rank=1, seed=7)),
    "random_split": lambda m: [list(s) for s in m.utils.data.random_split(range(10), [7, 3])],
    "random_split-fractions": lambda m: [list(s) for s in m.utils.data.random_split(
        range(11), [0.5, 0.3, 0.2], generator=m.Generator().manual_seed(42))],
}


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_sampler_matches_torch(name):
    torch = _torch()
    torch.manual_seed(0)
    expected = SAMPLERS[name](torch)
    after = torch.rand(3).tolist()
    ember.manual_seed(0)
    assert SAMPLERS[name](ember) == expected
    assert ember.rand(3).tolist() == after


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_sampler_is_deterministic(name):
    ember.manual_seed(5)
    a = SAMPLERS[name](ember)
    ember.manual_seed(5)
    assert SAMPLERS[name](ember) == a


def test_datapipe_shuffle_matches_torch():
    torch = _torch()

    def run(m):
        from_m = m.utils.data
        pipe = from_m.datapipes.iter.IterableWrapper(range(12)).shuffle(buffer_size=5)
        loader = from_m.DataLoader(pipe, batch_size=4, shuffle=True)
        return _batches_plain(loader) + [list(pipe)]

    torch.manual_seed(0)
    random.seed(0)
    expected = run(torch)
    ember.manual_seed(0)
    random.seed(0)
    assert run(ember) == expected


def _batches_plain(loader):
    return [b.tolist() for b in loader]


def test_numpy_worker_seed_matches_torch_derivation():
    _torch()
    from torch.utils.data._utils.worker import _generate_state

    from ember.utils.data.dataloader import _numpy_worker_seed

    rng = random.Random(0)
    for _ in range(200):
        base, wid = rng.getrandbits(63), rng.randrange(16)
        assert _numpy_worker_seed(base, wid).tolist() == _generate_state(base, wid)


class _WorkerDraws:
    def __init__(self, m):
        self.m = m

    def __len__(self):
        return 6

    def __getitem__(self, i):
        info = self.m.utils.data.get_worker_info()
        return (i, info.id, info.seed, self.m.initial_seed(), self.m.rand(1).item(),
                float(np.random.rand()), random.random())


def _worker_rows(m):
    loader = m.utils.data.DataLoader(_WorkerDraws(m), batch_size=None, shuffle=True,
                                     num_workers=2, multiprocessing_context="fork")
    rows = [tuple(r) for r in loader]
    return rows, m.rand(1).item()


def test_worker_seeds_match_torch():
    torch = _torch()
    torch.manual_seed(0)
    expected = _worker_rows(torch)
    ember.manual_seed(0)
    assert _worker_rows(ember) == expected


def test_worker_seeds_are_deterministic_and_distinct():
    ember.manual_seed(1)
    first, _ = _worker_rows(ember)
    ember.manual_seed(1)
    second, _ = _worker_rows(ember)
    assert first == second
    seeds = {r[1]: (r[2], r[3]) for r in first}
    assert seeds[1][0] == seeds[0][0] + 1 and all(s == t for s, t in seeds.values())
    assert get_worker_info() is None


# ------------------------------------------------------------------------------------------------
# distributions


def _t(m, *a, **k):
    return m.tensor(*a, **k)


DISTRIBUTIONS = {
    "Normal": lambda m: m.distributions.Normal(_t(m, [0.0, 1.0]), _t(m, [1.0, 2.0])).sample((3,)),
    "Normal.rsample": lambda m: m.distributions.Normal(
        _t(m, [0.0, 1.0]), _t(m, [1.0, 2.0])).rsample((3,)),
    "Uniform": lambda m: m.distributions.Uniform(
        _t(m, [0.0, 1.0]), _t(m, [1.0, 3.0])).rsample((3,)),
    "Bernoulli": lambda m: m.distributions.Bernoulli(probs=_t(m, [0.3, 0.6])).sample((3,)),
    "Categorical": lambda m: m.distributions.Categorical(
        probs=_t(m, [0.2, 0.3, 0.5])).sample((4,)),
    "Categorical-batch": lambda m: m.distributions.Categorical(
        logits=m.zeros(2, 3)).sample((5,)),
    "OneHotCategorical": lambda m: m.distributions.OneHotCategorical(
        probs=_t(m, [0.2, 0.3, 0.5])).sample((4,)),
    "Exponential": lambda m: m.distributions.Exponential(_t(m, [1.0, 2.0])).rsample((3,)),
    "Laplace": lambda m: m.distributions.Laplace(_t(m, [0.0]), _t(m, [1.0])).rsample((3,)),
    "Gumbel": lambda m: m.distributions.Gumbel(_t(m, [0.0]), _t(m, [1.0])).rsample((3,)),
    "MultivariateNormal": lambda m: m.distributions.MultivariateNormal(
        m.zeros(2), _t(m, [[1.0, 0.5], [0.5, 2.0]])).rsample((3,)),
    "LowRankMultivariateNormal": lambda m: m.distributions.LowRankMultivariateNormal(
        m.zeros(3), m.ones(3, 1), m.ones(3)).rsample((2,)),
    "Independent": lambda m: m.distributions.Independent(
        m.distributions.Normal(m.zeros(2, 3), 1.0), 1).sample((2,)),
    "RelaxedBernoulli": lambda m: m.distributions.RelaxedBernoulli(
        _t(m, 0.5), probs=_t(m, [0.3, 0.6])).rsample((2,)),
    "Cauchy": lambda m: m.distributions.Cauchy(_t(m, [0.0]), _t(m, [1.0])).rsample((3,)),
    "HalfNormal": lambda m: m.distributions.HalfNormal(_t(m, [1.0])).rsample((3,)),
    "Geometric": lambda m: m.distributions.Geometric(_t(m, [0.3])).sample((3,)),
    "Multinomial": lambda m: m.distributions.Multinomial(10, _t(m, [0.3, 0.7])).sample((2,)),
    "MixtureSameFamily": lambda m: m.distributions.MixtureSameFamily(
        m.distributions.Categorical(m.ones(2)),
        m.distributions.Normal(m.zeros(2), m.ones(2))).sample((3,)),
}

# samples that pass through exp/log/softmax after the draw: the draws are PyTorch's, the
# transcendental functions (NumPy's vs SLEEF's) may round differently in the last bit
DISTRIBUTIONS_CLOSE = {
    "LogNormal": lambda m: m.distributions.LogNormal(_t(m, [0.0]), _t(m, [1.0])).rsample((3,)),
    "RelaxedOneHotCategorical": lambda m: m.distributions.RelaxedOneHotCategorical(
        _t(m, 0.5), probs=_t(m, [0.3, 0.7])).rsample((2,)),
    "TransformedDistribution": lambda m: m.distributions.TransformedDistribution(
        m.distributions.Normal(_t(m, [0.0]), 1.0),
        [m.distributions.transforms.ExpTransform()]).rsample((3,)),
}


@pytest.mark.parametrize("name", list(DISTRIBUTIONS))
def test_distribution_samples_match_torch_bit_for_bit(name):
    torch = _torch()
    expected, got, stream_ok = _run_both(torch, DISTRIBUTIONS[name])
    assert _bits_equal(expected, got)
    assert stream_ok


@pytest.mark.parametrize("name", list(DISTRIBUTIONS_CLOSE))
def test_transformed_distribution_samples_match_torch(name):
    torch = _torch()
    expected, got, stream_ok = _run_both(torch, DISTRIBUTIONS_CLOSE[name])
    np.testing.assert_allclose(_np(got), _np(expected), rtol=1e-6)
    assert stream_ok


@pytest.mark.parametrize("name", list(DISTRIBUTIONS))
def test_distribution_samples_are_deterministic(name):
    ember.manual_seed(9)
    a = DISTRIBUTIONS[name](ember)
    ember.manual_seed(9)
    assert _bits_equal(a, DISTRIBUTIONS[name](ember))
