"""Python numbers an op turns into zero-dim tensors ("wrapped numbers") are saved without
saved-tensor hooks, as PyTorch's nodes save them; fmod/remainder keep their operands only
for the divisor's gradient. Compared with torch when it is installed."""

import pytest

import ember

torch = pytest.importorskip("torch")

CASES = {
    "mul": lambda T, x: x * 2,
    "div": lambda T, x: x / 2.5,
    "pow": lambda T, x: x.pow(2),
    "rpow": lambda T, x: 2 ** x,
    "add_alpha": lambda T, x: T.add(x, 2, alpha=3),
    "rsub": lambda T, x: 3 - x,
    "clamp": lambda T, x: x.clamp(0, 1),
    "fmod": lambda T, x: x.fmod(2),
    "remainder": lambda T, x: x.remainder(1.5),
    "where": lambda T, x: T.where(x > 0, x, 0.0),
    "tensor_mul": lambda T, x: x * T.tensor(2.0),
}


def _packed(T, f):
    x = T.ones(2, requires_grad=True)
    shapes = []

    def pack(t):
        shapes.append(tuple(t.shape))
        return t

    with T.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        f(T, x)
    return shapes


@pytest.mark.parametrize("name", sorted(CASES))
def test_saved_tensor_hooks_skip_wrapped_numbers(name):
    assert _packed(ember, CASES[name]) == _packed(torch, CASES[name])


@pytest.mark.parametrize("fn", ["fmod", "remainder"])
def test_fmod_keeps_operands_only_for_the_divisor(fn):
    def run(T):
        a = T.tensor([5.5, -3.2, 7.1], dtype=T.float64, requires_grad=True)
        b = T.tensor([2.0, 1.5, -2.5], dtype=T.float64, requires_grad=True)
        y = getattr(T, fn)(a, 2.0)
        with T.no_grad():
            a.mul_(3)  # nothing saved reads ``a``: backward stays valid
        y.sum().backward()
        z = getattr(T, fn)(a.detach(), b)
        (gb,) = T.autograd.grad(z.sum(), b)
        return a.grad.tolist(), gb.tolist()

    assert run(ember) == run(torch)


def test_version_error_names_the_legacy_type_as_tensor_type():
    x = ember.ones(3, requires_grad=True)
    s = x.sigmoid()
    s.mul_(2)
    with pytest.raises(RuntimeError, match=r"\[torch\.FloatTensor \[3\]\], which is output 0 "
                                           r"of Sigmoid"):
        s.sum().backward()
    assert s.type() == "torch.FloatTensor"
