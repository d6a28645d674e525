"""Tests for random sampling (ember/_ops/random_ops.py), ember.Generator and ember.random.

Streams are not PyTorch's bit for bit (NOTE [ Random number generation ]); what is checked is
reproducibility under seeds, independence of generators, state save/restore, the
distributions (moments of large samples within generous tolerances, with a fixed seed so
the tests are deterministic), and PyTorch's argument checking.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.conftest import HAS_TORCH

N = 200_000


@pytest.fixture
def gen():
    return ember.Generator().manual_seed(1234)


# ------------------------------------------------------------------------------------------------
# seeding, generators, state


def test_manual_seed_reproduces_stream():
    ember.manual_seed(7)
    a = ember.rand(5)
    b = ember.randn(3, dtype=ember.float64)
    ember.manual_seed(7)
    assert ember.rand(5).tolist() == a.tolist()
    assert ember.randn(3, dtype=ember.float64).tolist() == b.tolist()


def test_different_seeds_give_different_streams():
    assert ember.manual_seed(1) is ember.default_generator
    a = ember.rand(8)
    ember.manual_seed(2)
    assert a.tolist() != ember.rand(8).tolist()


def test_generator_is_isolated_from_default():
    ember.manual_seed(3)
    expected = ember.rand(4).tolist()
    ember.manual_seed(3)
    g = ember.Generator().manual_seed(3)
    ember.rand(100, generator=g)  # draws from g must not advance the default stream
    assert ember.rand(4).tolist() == expected


def test_generators_are_independent(gen):
    other = ember.Generator().manual_seed(1234)
    first = ember.rand(4, generator=gen).tolist()
    ember.randn(10, generator=other)
    assert ember.rand(4, generator=other).tolist() != first  # other advanced on its own
    assert ember.rand(4, generator=ember.Generator().manual_seed(1234)).tolist() == first


def test_fresh_generator_has_fixed_seed():
    g1, g2 = ember.Generator(), ember.Generator()
    assert g1.initial_seed() == g2.initial_seed() == 67280421310721
    assert ember.rand(3, generator=g1).tolist() == ember.rand(3, generator=g2).tolist()
    assert g1.device == ember.device("cpu")


def test_generator_seed_and_initial_seed():
    g = ember.Generator()
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s
    assert g.manual_seed(-1).initial_seed() == 2**64 - 1
    assert g.manual_seed(2**64 - 1).initial_seed() == 2**64 - 1
    with pytest.raises(ValueError, match="Overflow"):
        g.manual_seed(2**64)
    with pytest.raises(RuntimeError, match="expected a long"):
        g.manual_seed(1.5)
    assert ember.manual_seed("5").initial_seed() == 5
    assert ember.initial_seed() == 5
    assert isinstance(ember.seed(), int)


def test_get_state_round_trips(gen):
    state = gen.get_state()
    assert state.dtype == ember.uint8 and state.dim() == 1
    a = ember.randn(6, generator=gen).tolist()
    gen.manual_seed(99)
    gen.set_state(state)
    assert ember.randn(6, generator=gen).tolist() == a
    assert gen.initial_seed() == 1234


def test_state_mid_stream_includes_buffered_bits(gen):
    ember.randint(0, 5, (3,), generator=gen, dtype=ember.int32)
    state = gen.get_state()
    a = ember.rand(5, generator=gen).tolist()
    gen.set_state(state)
    assert ember.rand(5, generator=gen).tolist() == a


def test_set_state_rejects_bad_input(gen):
    with pytest.raises(TypeError):
        gen.set_state([1, 2])
    with pytest.raises(TypeError):
        gen.set_state(ember.zeros(49))
    with pytest.raises(RuntimeError, match="size"):
        gen.set_state(ember.zeros(10, dtype=ember.uint8))


def test_clone_state(gen):
    c = gen.clone_state()
    assert ember.rand(3, generator=c).tolist() == ember.rand(3, generator=gen).tolist()


def test_get_set_rng_state():
    state = ember.get_rng_state()
    a = ember.rand(4).tolist()
    ember.set_rng_state(state)
    assert ember.rand(4).tolist() == a
    assert ember.random.get_rng_state().tolist() == ember.get_rng_state().tolist()


def test_fork_rng_restores_state():
    ember.manual_seed(11)
    with ember.random.fork_rng():
        inside = ember.rand(3).tolist()
    assert ember.rand(3).tolist() == inside


def test_fork_rng_restores_after_exception():
    ember.manual_seed(12)
    expected = ember.random.get_rng_state().tolist()
    with pytest.raises(ValueError):
        with ember.random.fork_rng(devices=[]):
            ember.rand(10)
            raise ValueError("boom")
    assert ember.get_rng_state().tolist() == expected


def test_fork_rng_disabled_does_not_restore():
    ember.manual_seed(13)
    before = ember.get_rng_state().tolist()
    with ember.random.fork_rng(enabled=False):
        ember.rand(3)
    assert ember.get_rng_state().tolist() != before


def test_generator_argument_type_checked():
    with pytest.raises(TypeError, match="Generator"):
        ember.rand(2, generator=5)


# ------------------------------------------------------------------------------------------------
# distributions


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.float32, ember.float64])
def test_rand_uniform_in_unit_interval(gen, dtype):
    t = ember.rand(N, generator=gen, dtype=dtype)
    a = t.float().numpy() if dtype in (ember.float16, ember.bfloat16) else t.numpy()
    assert t.dtype == dtype
    assert a.min() >= 0 and a.max() < 1
    assert abs(a.mean() - 0.5) < 0.01
    assert abs(a.std() - (1 / 12) ** 0.5) < 0.01


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16, ember.float32, ember.float64])
def test_randn_moments(gen, dtype):
    t = ember.randn(N, generator=gen, dtype=dtype)
    a = t.float().numpy().astype(np.float64)
    assert t.dtype == dtype
    assert abs(a.mean()) < 0.01 and abs(a.std() - 1) < 0.01


def test_randn_complex_has_unit_variance(gen):
    a = ember.randn(N, generator=gen, dtype=ember.complex64).numpy()
    assert abs(np.var(a.real) - 0.5) < 0.01 and abs(np.var(a.imag) - 0.5) < 0.01
    u = ember.rand(N, generator=gen, dtype=ember.complex128).numpy()
    assert 0 <= u.real.min() and u.real.max() < 1 and abs(u.imag.mean() - 0.5) < 0.01


def test_randint_range_and_frequencies(gen):
    t = ember.randint(3, 10, (N,), generator=gen)
    a = t.numpy()
    assert t.dtype == ember.int64 and a.min() == 3 and a.max() == 9
    counts = np.bincount(a - 3) / N
    assert np.allclose(counts, 1 / 7, atol=0.01)
    assert ember.randint(5, (4,)).max().item() < 5
    assert ember.randint(high=5, size=(4,)).dtype == ember.int64
    assert ember.randint(0, 10, (4,), dtype=ember.float32).dtype == ember.float32
    assert set(ember.randint(0, 2, (100,), dtype=ember.bool).tolist()) == {True, False}
    big = ember.randint(0, 2**63 - 1, (1000,), generator=gen).numpy()
    assert big.min() >= 0 and big.max() > 2**62


def test_randperm_is_permutation(gen):
    for n in (0, 1, 17, 1000):
        p = ember.randperm(n, generator=gen)
        assert p.dtype == ember.int64 and sorted(p.tolist()) == list(range(n))
    assert ember.randperm(5, dtype=ember.float32).dtype == ember.float32
    assert sorted(ember.randperm(256, dtype=ember.uint8).tolist()) == list(range(256))


def test_normal_overloads(gen):
    a = ember.normal(2.0, 3.0, (N,), generator=gen).numpy()
    assert abs(a.mean() - 2) < 0.03 and abs(a.std() - 3) < 0.03
    mean = ember.full((N,), -1.0)
    b = ember.normal(mean, 0.5, generator=gen).numpy()
    assert abs(b.mean() + 1) < 0.01 and abs(b.std() - 0.5) < 0.01
    c = ember.normal(4.0, ember.full((N,), 2.0, dtype=ember.float64), generator=gen)
    assert c.dtype == ember.float64 and abs(c.numpy().std() - 2) < 0.02
    d = ember.normal(ember.zeros(2, 1), ember.ones(3), generator=gen)
    assert tuple(d.shape) == (2, 3)
    e = ember.normal(ember.zeros(2, dtype=ember.float64), ember.ones(2))
    assert e.dtype == ember.float64
    assert ember.normal(0.0, 1.0, (2,), dtype=ember.float64).dtype == ember.float64
    zero_std = ember.normal(ember.arange(4.0), 0.0)
    assert zero_std.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_normal_errors():
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        ember.normal(0.0, -1.0, (2,))
    with pytest.raises(RuntimeError, match="all elements of std >= 0.0"):
        ember.normal(ember.zeros(2), -ember.ones(2))
    with pytest.raises(RuntimeError, match="must match"):
        ember.normal(ember.zeros(2), ember.ones(3))
    with pytest.raises(TypeError):
        ember.normal(2.0, 3.0)
    with pytest.raises(NotImplementedError, match="normal_kernel_cpu"):
        ember.normal(ember.zeros(2, dtype=ember.int64), 1.0)


def test_normal_is_differentiable_in_mean_and_std():
    mean = ember.zeros(5, requires_grad=True)
    std = ember.full((5,), 2.0, requires_grad=True)
    out = ember.normal(mean, std)
    assert out.requires_grad
    out.sum().backward()
    assert mean.grad.tolist() == [1.0] * 5
    eps = (out.detach() - mean.detach()) / std.detach()
    assert np.allclose(std.grad.numpy(), eps.numpy())


def test_bernoulli(gen):
    p = ember.full((N,), 0.3)
    s = ember.bernoulli(p, generator=gen)
    assert s.dtype == ember.float32 and set(np.unique(s.numpy()).tolist()) <= {0.0, 1.0}
    assert abs(s.numpy().mean() - 0.3) < 0.01
    probs = ember.tensor([0.0, 1.0] * 10)
    assert ember.bernoulli(probs).tolist() == probs.tolist()
    q = ember.bernoulli(ember.zeros(N, dtype=ember.float64), 0.8, generator=gen)
    assert q.dtype == ember.float64 and abs(q.numpy().mean() - 0.8) < 0.01
    assert ember.full((3,), 0.5).bernoulli().shape == (3,)


def test_bernoulli_does_not_require_grad():
    p = ember.full((4,), 0.5, requires_grad=True)
    assert not ember.bernoulli(p).requires_grad
    assert not ember.rand_like(p).requires_grad
    assert not ember.randn_like(p).requires_grad


def test_multinomial_with_replacement_frequencies(gen):
    w = ember.tensor([1.0, 0.0, 3.0, 6.0])
    s = ember.multinomial(w, N, replacement=True, generator=gen)
    assert s.dtype == ember.int64 and tuple(s.shape) == (N,)
    freq = np.bincount(s.numpy(), minlength=4) / N
    assert freq[1] == 0
    assert np.allclose(freq, [0.1, 0.0, 0.3, 0.6], atol=0.01)


def test_multinomial_rows_are_independent_distributions(gen):
    w = ember.tensor([[0.0, 1.0], [1.0, 0.0]])
    s = ember.multinomial(w, 50, True, generator=gen)
    assert tuple(s.shape) == (2, 50)
    assert set(s[0].tolist()) == {1} and set(s[1].tolist()) == {0}


def test_multinomial_without_replacement(gen):
    w = ember.tensor([1.0, 2.0, 3.0, 4.0, 0.0])
    for _ in range(20):
        s = ember.multinomial(w, 4, generator=gen).tolist()
        assert sorted(s) == [0, 1, 2, 3]
    firsts = np.array([ember.multinomial(w[:4], 1, generator=gen).item() for _ in range(4000)])
    assert np.allclose(np.bincount(firsts, minlength=4) / 4000, [0.1, 0.2, 0.3, 0.4],
                       atol=0.03)
    assert sorted(ember.multinomial(ember.tensor([0.0, 1, 0]), 2).tolist())[1] == 1
    assert tuple(ember.multinomial(ember.ones(0, 3), 2).shape) == (0, 2)


@pytest.mark.parametrize("args,error,match", [
    ((ember.ones(2, 2, 2), 1), RuntimeError, "prob_dist must be 1 or 2 dim"),
    ((ember.ones(3), 4), RuntimeError, "without replacement"),
    ((ember.ones(3), 0), RuntimeError, "n_sample <= 0"),
    ((ember.tensor([1.0, -1.0]), 1), RuntimeError, "element < 0"),
    ((ember.tensor([float("nan"), 1.0]), 1), RuntimeError, "`inf`, `nan`"),
    ((ember.zeros(2), 1), RuntimeError, "sum of probabilities <= 0"),
    ((ember.tensor([1, 1]), 1), RuntimeError, "floating-point dtypes"),
])
def test_multinomial_errors(args, error, match):
    with pytest.raises(error, match=match):
        ember.multinomial(*args)


def test_poisson(gen):
    rates = ember.full((N,), 3.0)
    s = ember.poisson(rates, gen)
    a = s.numpy()
    assert s.dtype == ember.float32 and (a == np.round(a)).all()
    assert abs(a.mean() - 3) < 0.03 and abs(a.var() - 3) < 0.06
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.poisson(ember.tensor([-1.0]))
    with pytest.raises(NotImplementedError):
        ember.poisson(ember.tensor([1]))


def test_like_functions(gen):
    src = ember.ones(2, 3, dtype=ember.float64)
    for r in (ember.rand_like(src, generator=gen), ember.randn_like(src)):
        assert r.dtype == ember.float64 and tuple(r.shape) == (2, 3)
    assert ember.rand_like(src, dtype=ember.float16).dtype == ember.float16
    r = ember.randint_like(ember.ones(1000), 10)
    assert r.dtype == ember.float32 and r.min().item() >= 0 and r.max().item() <= 9
    r = ember.randint_like(ember.ones(1000, dtype=ember.int32), 3, 10)
    assert r.dtype == ember.int32 and r.min().item() == 3 and r.max().item() == 9
    r = ember.randint_like(ember.ones(100), low=1, high=3)
    assert set(r.tolist()) == {1.0, 2.0}
    with pytest.raises(NotImplementedError, match="check_uniform_bounds"):
        ember.rand_like(ember.ones(2, dtype=ember.int64))


@pytest.mark.parametrize("call,error,match", [
    (lambda: ember.rand(2, dtype=ember.int64), NotImplementedError, "check_uniform_bounds"),
    (lambda: ember.rand(2, dtype=ember.bool), NotImplementedError, "'Bool'"),
    (lambda: ember.randn(2, dtype=ember.int64), NotImplementedError, "normal_kernel_cpu"),
    (lambda: ember.rand(), TypeError, ""),
    (lambda: ember.randint(5), TypeError, ""),
    (lambda: ember.randint(2.5, (3,)), TypeError, "must be int"),
    (lambda: ember.randint(3, 3, (2,)), RuntimeError, "from=3 >= to=3"),
    (lambda: ember.randint(0, 300, (2,), dtype=ember.uint8), RuntimeError,
     "to - 1 is out of bounds for unsigned char"),
    (lambda: ember.randint(-1, 3, (2,), dtype=ember.uint8), RuntimeError,
     "from is out of bounds"),
    (lambda: ember.randperm(-1), RuntimeError, "negative dimension"),
    (lambda: ember.randperm(300, dtype=ember.uint8), RuntimeError, "overflow"),
    (lambda: ember.bernoulli(ember.full((2,), 1.5)), RuntimeError, "p_in >= 0"),
    (lambda: ember.bernoulli(ember.ones(2, dtype=ember.int64)), NotImplementedError,
     "bernoulli"),
])
def test_random_argument_errors(call, error, match):
    with pytest.raises(error, match=match or None):
        call()


def test_factories_with_out_use_out_dtype():
    out = ember.empty(0, dtype=ember.float64)
    assert ember.rand(3, out=out) is out and out.dtype == ember.float64
    iout = ember.empty(0, dtype=ember.int32)
    ember.randint(0, 5, (4,), out=iout)
    assert iout.dtype == ember.int32 and tuple(iout.shape) == (4,)
    ember.randperm(3, out=iout)
    assert sorted(iout.tolist()) == [0, 1, 2]


# ------------------------------------------------------------------------------------------------
# in-place random fills

INPLACE = [
    ("uniform_", (), {}),
    ("uniform_", (-2.0, 5.0), {}),
    ("normal_", (1.0, 2.0), {}),
    ("bernoulli_", (0.3,), {}),
    ("random_", (), {}),
    ("random_", (10,), {}),
    ("random_", (2, 5), {}),
    ("exponential_", (2.0,), {}),
    ("geometric_", (0.25,), {}),
    ("log_normal_", (0.0, 0.5), {}),
    ("cauchy_", (1.0, 2.0), {}),
]


@pytest.mark.parametrize("name,args,kwargs", INPLACE,
                         ids=[f"{n}{a}" for n, a, _ in INPLACE])
def test_inplace_fill_changes_only_self_and_bumps_version(name, args, kwargs, gen):
    base = ember.zeros(4, 1000, dtype=ember.float64)
    view = base[1]
    other = ember.zeros(1000, dtype=ember.float64)
    before = base._version
    r = getattr(view, name)(*args, generator=gen, **kwargs)
    assert r is view
    assert base._version == before + 1 and view._version == before + 1
    assert other._version == 0 and (other.numpy() == 0).all()
    a = base.numpy()
    assert (a[[0, 2, 3]] == 0).all()
    assert np.isfinite(a[1]).all() and (a[1] != 0).any()


def test_inplace_distributions(gen):
    t = ember.empty(N, dtype=ember.float64)
    a = t.uniform_(-2, 5, generator=gen).numpy()
    assert a.min() >= -2 and a.max() < 5 and abs(a.mean() - 1.5) < 0.03
    a = t.normal_(1, 2, generator=gen).numpy()
    assert abs(a.mean() - 1) < 0.03 and abs(a.std() - 2) < 0.03
    a = t.exponential_(2.0, generator=gen).numpy()
    assert a.min() >= 0 and abs(a.mean() - 0.5) < 0.01
    a = t.geometric_(0.25, generator=gen).numpy()
    assert a.min() >= 1 and abs(a.mean() - 4) < 0.05
    a = t.log_normal_(0.0, 0.5, generator=gen).numpy()
    assert a.min() > 0 and abs(np.median(a) - 1) < 0.02
    a = t.cauchy_(1.0, 2.0, generator=gen).numpy()
    assert abs(np.median(a) - 1) < 0.05
    a = t.bernoulli_(0.3, generator=gen).numpy()
    assert set(np.unique(a).tolist()) == {0.0, 1.0} and abs(a.mean() - 0.3) < 0.01
    a = t.bernoulli_(ember.full((N,), 0.9, dtype=ember.float64), generator=gen).numpy()
    assert abs(a.mean() - 0.9) < 0.01


def test_random_ranges(gen):
    f = ember.zeros(10000).random_(generator=gen).numpy()
    assert f.min() >= 0 and f.max() <= 2**24 and f.max() > 2**23
    assert set(ember.zeros(1000).random_(10, generator=gen).tolist()) == set(
        float(i) for i in range(10))
    i = ember.zeros(1000, dtype=ember.int64).random_(2, 5, generator=gen).numpy()
    assert i.min() == 2 and i.max() == 4
    u = ember.zeros(10000, dtype=ember.uint8).random_(generator=gen).numpy()
    assert u.min() == 0 and u.max() == 255
    b = ember.zeros(100, dtype=ember.bool).random_(generator=gen).tolist()
    assert set(b) == {True, False}
    big = ember.zeros(100, dtype=ember.int64).random_(0, None, generator=gen).numpy()
    assert big.min() >= 0 and big.max() > 2**60
    h = ember.zeros(1000, dtype=ember.float16).random_(generator=gen).float().numpy()
    assert h.max() <= 2**11


def test_inplace_integer_dtypes():
    assert ember.zeros(100, dtype=ember.int64).bernoulli_(0.5).max().item() == 1
    assert ember.zeros(100, dtype=ember.int64).geometric_(0.5).min().item() >= 1


@pytest.mark.parametrize("call,error,match", [
    (lambda t: t.uniform_(1, 0), RuntimeError, "from=1 > to=0"),
    (lambda t: t.long().uniform_(), NotImplementedError, "check_uniform_bounds"),
    (lambda t: t.normal_(0, -1), RuntimeError, "found std -1"),
    (lambda t: t.long().normal_(), NotImplementedError, "normal_kernel_cpu"),
    (lambda t: t.exponential_(0), RuntimeError, "lambda > 0.0"),
    (lambda t: t.long().exponential_(), RuntimeError, "continuous probability"),
    (lambda t: t.geometric_(0), RuntimeError, r"p to be in \(0, 1\)"),
    (lambda t: t.geometric_(1), RuntimeError, r"p to be in \(0, 1\)"),
    (lambda t: t.log_normal_(1, 0), RuntimeError, "std > 0.0"),
    (lambda t: t.long().log_normal_(), NotImplementedError, "log_normal_cpu"),
    (lambda t: t.cauchy_(0, 0), RuntimeError, "sigma > 0.0"),
    (lambda t: t.long().cauchy_(), RuntimeError, "continuous probability"),
    (lambda t: t.bernoulli_(1.5), RuntimeError, "p to be in \\[0, 1\\]"),
    (lambda t: t.bernoulli_(ember.ones(4)), RuntimeError, "expanded size"),
    (lambda t: t.long().random_(5, 2), RuntimeError, "from=5 >= to=2"),
    (lambda t: t.byte().random_(300), RuntimeError, "to - 1 is out of bounds"),
])
def test_inplace_argument_errors(call, error, match):
    t = ember.zeros(3)
    with pytest.raises(error, match=match):
        call(t)
    assert t._version == 0


@pytest.mark.parametrize("name,args", [(n, a) for n, a, _ in INPLACE],
                         ids=[f"{n}{a}" for n, a, _ in INPLACE])
def test_inplace_refuses_leaf_requiring_grad(name, args):
    x = ember.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        getattr(x, name)(*args)
    with ember.no_grad():
        getattr(x, name)(*args)
    assert x._version == 1


def test_inplace_refill_of_non_leaf_cuts_gradient():
    a = ember.ones(3, requires_grad=True)
    x = a * 2
    x.uniform_()
    assert x.requires_grad and x.grad_fn is not None
    (x * 3).sum().backward()
    assert a.grad is None or a.grad.tolist() == [0.0, 0.0, 0.0]


def test_inplace_refuses_expanded_tensor():
    t = ember.zeros(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element"):
        t.uniform_()


# ------------------------------------------------------------------------------------------------
# conformance of argument errors with PyTorch


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("name,args", [
    ("uniform_", (1, 0)), ("normal_", (0, -1)), ("exponential_", (0,)), ("geometric_", (0,)),
    ("log_normal_", (1, 0)), ("cauchy_", (0, 0)), ("bernoulli_", (1.5,)),
])
def test_inplace_error_types_match_torch(name, args):
    import torch

    with pytest.raises(Exception) as want:
        getattr(torch.zeros(3), name)(*args)
    with pytest.raises(type(want.value)):
        getattr(ember.zeros(3), name)(*args)


def test_normal_zero_dim_tensors_keep_zero_dims():
    assert ember.normal(ember.zeros(()), ember.ones(())).shape == ()
    assert ember.normal(ember.zeros(()), 2.0).shape == ()
    assert ember.distributions.Normal(0.0, 1.0).sample().shape == ()
