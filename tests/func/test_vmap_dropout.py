"""Dropout under ``vmap``'s three ``randomness`` flags, and the ``Tensor.new_*`` factories
whose batched results the masks are made from (``_new_factory`` in
ember/func/_batch_rules.py), each against ``torch.func.vmap``."""

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

B = 6

# name -> (call of the functional form on one example, the example's shape, for a mask per
# channel the number of leading dims that pick it (it is constant over the rest), else 0)
_FORMS = {
    "dropout": (lambda F, t: F.dropout(t, 0.5), (3, 4, 4), 0),
    "dropout1d": (lambda F, t: F.dropout1d(t, 0.5), (3, 8), 1),
    "dropout2d": (lambda F, t: F.dropout2d(t, 0.5), (2, 3, 4, 4), 2),
    "dropout3d": (lambda F, t: F.dropout3d(t, 0.5), (3, 2, 3, 3), 1),  # unbatched (C, D, H, W)
    "alpha_dropout": (lambda F, t: F.alpha_dropout(t, 0.5, True), (3, 4, 4), 0),
    "feature_alpha_dropout": (lambda F, t: F.feature_alpha_dropout(t, 0.5, True),
                              (2, 3, 4, 4), 2),
}


def _run(fw, form, randomness):
    call, shape, _ = _FORMS[form]
    x = fw.ones((B,) + shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fw.func.vmap(lambda t: call(fw.nn.functional, t), randomness=randomness)(x)


def _examples_equal(y):
    a = np.asarray(y.detach().numpy() if hasattr(y, "detach") else y)
    return [bool(np.array_equal(a[0], a[i])) for i in range(1, B)]


@pytest.mark.parametrize("form", sorted(_FORMS))
def test_dropout_randomness_error_raises_as_torch(form):
    with pytest.raises(RuntimeError, match="randomness error mode") as theirs:
        _run(torch, form, "error")
    with pytest.raises(RuntimeError, match="randomness error mode") as ours:
        _run(ember, form, "error")
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("form", sorted(_FORMS))
def test_dropout_randomness_different_draws_per_example(form):
    ours, theirs = _run(ember, form, "different"), _run(torch, form, "different")
    assert tuple(ours.shape) == tuple(theirs.shape)
    # six examples of 18+ independent draws at p=0.5: equal by chance with p < 2**-18
    assert not all(_examples_equal(ours)) and not all(_examples_equal(theirs))


@pytest.mark.parametrize("form", sorted(_FORMS))
def test_dropout_randomness_same_shares_the_mask(form):
    ours, theirs = _run(ember, form, "same"), _run(torch, form, "same")
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert all(_examples_equal(ours)) and all(_examples_equal(theirs))


@pytest.mark.parametrize("form", [f for f in sorted(_FORMS) if _FORMS[f][2]])
def test_feature_dropout_different_keeps_whole_channels(form):
    y = _run(ember, form, "different").numpy()
    lead = _FORMS[form][2]
    flat = y.reshape(y.shape[:1 + lead] + (-1,))
    assert (flat == flat[..., :1]).all()


def test_dropout2d_module_under_vmap_different_as_torch():
    def run(fw):
        m = fw.nn.Dropout2d(0.5)
        return fw.func.vmap(m, randomness="different")(fw.ones(B, 2, 5, 3, 3))

    ours, theirs = run(ember), run(torch)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert not all(_examples_equal(ours))
    kept = ours.numpy().reshape(B, 2, 5, -1)
    assert set(np.unique(kept)) <= {0.0, 2.0} and (kept == kept[..., :1]).all()


@pytest.mark.parametrize("name", ["new_zeros", "new_ones", "new_empty", "new_full"])
def test_new_factory_result_is_batched_like_self(name):
    # an in-place write of a batched value into the new tensor needs it batched (PyTorch's
    # rule); unbatched it would be refused
    def f(fw):
        def per(t):
            args = ((2,), 1.5) if name == "new_full" else (2,)
            return getattr(t, name)(*args).mul_(0).add_(t.sum())

        return fw.func.vmap(per)(fw.arange(12.0).reshape(4, 3))

    np.testing.assert_array_equal(f(ember).numpy(), f(torch).numpy())


def test_new_factory_keeps_dtype_and_size_forms():
    def f(fw):
        return fw.func.vmap(lambda t: t.new_zeros(size=(2, 1), dtype=fw.float64) + t[0])(
            fw.ones(3, 2))

    ours, theirs = f(ember), f(torch)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1] == "float64"


def test_new_factory_on_unbatched_self_stays_unbatched():
    def f(fw):
        x = fw.ones(3)

        def per(t):
            buf = x.new_zeros(2)
            return buf.add_(t.sum())  # a batched value into an unbatched tensor

        return fw.func.vmap(per)(fw.ones(4, 3))

    with pytest.raises(RuntimeError):
        f(torch)
    with pytest.raises(RuntimeError):
        f(ember)


# -- an unbatched input, and nested levels (NOTE [ Uninitialised tensors under different
# randomness ] in ember/func/_batch_rules.py)


@pytest.mark.parametrize("form", sorted(_FORMS))
@pytest.mark.parametrize("randomness", ["different", "same"])
def test_dropout_of_unbatched_input_follows_randomness(form, randomness):
    call, shape, _ = _FORMS[form]

    def run(fw):
        x = fw.ones(shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fw.func.vmap(lambda _, t: call(fw.nn.functional, t), in_dims=(0, None),
                                randomness=randomness)(fw.ones(B), x)

    ours, theirs = run(ember), run(torch)
    assert tuple(ours.shape) == tuple(theirs.shape)
    want_same = randomness == "same"
    assert all(_examples_equal(ours)) == want_same == all(_examples_equal(theirs))


def _distinct(y, outer, inner):
    a = np.asarray(y.numpy()).reshape(outer, inner, -1)
    return len({a[i, j].tobytes() for i in range(outer) for j in range(inner)})


# (inner randomness, outer randomness) -> distinct masks among the 4 x 2 examples
@pytest.mark.parametrize("inner,outer,distinct", [
    ("different", "different", 8), ("same", "different", 4), ("different", "same", 2),
    ("same", "same", 1)])
@pytest.mark.parametrize("form", ["dropout", "dropout1d"])
def test_nested_vmap_dropout_draws_per_different_level(form, inner, outer, distinct):
    def run(fw):
        F = fw.nn.functional

        def f(_, b):  # b batched over the outer level only
            x = b.repeat(40).reshape(40, 3)
            return F.dropout(x, 0.5) if form == "dropout" else F.dropout1d(x, 0.5)

        return fw.func.vmap(fw.func.vmap(f, in_dims=(0, None), randomness=inner),
                            in_dims=(None, 0), randomness=outer)(fw.ones(2), fw.ones(4, 3))

    ours, theirs = run(ember), run(torch)
    assert tuple(ours.shape) == tuple(theirs.shape) == (4, 2, 40, 3)
    # 120 (or 40) draws per mask: two masks collide with p = 2**-40
    assert _distinct(ours, 4, 2) == _distinct(theirs, 4, 2) == distinct


@pytest.mark.parametrize("inner,outer,distinct", [
    ("different", "different", 8), ("same", "different", 4), ("different", "same", 2)])
def test_nested_vmap_random_factories_as_torch(inner, outer, distinct):
    def run(fw):
        def f(_, b):
            return fw.randn(8) + fw.rand_like(b)[0]

        return fw.func.vmap(fw.func.vmap(f, in_dims=(0, None), randomness=inner),
                            in_dims=(None, 0), randomness=outer)(fw.ones(2), fw.ones(4, 3))

    ours, theirs = run(ember), run(torch)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert _distinct(ours, 4, 2) == _distinct(theirs, 4, 2) == distinct


def test_inplace_random_on_tensor_missing_a_different_level_raises_as_torch():
    def run(fw):
        return fw.func.vmap(fw.func.vmap(lambda _, b: (b * 1).uniform_(), in_dims=(0, None),
                                         randomness="different"),
                            in_dims=(None, 0), randomness="different")(fw.ones(2),
                                                                       fw.ones(4, 3))

    with pytest.raises(RuntimeError, match="different inplace randomness") as theirs:
        run(torch)
    with pytest.raises(RuntimeError, match="different inplace randomness") as ours:
        run(ember)
    assert str(ours.value) == str(theirs.value)
