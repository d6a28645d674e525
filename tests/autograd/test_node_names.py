"""Backward nodes carry PyTorch's class names for the call that made them (NOTE [ Node names ]
in ember/_ops/_node_names.py): one ember op standing for several torch overloads is named
after the overload the call used."""

import pytest

import ember

torch = pytest.importorskip("torch")


def _cases(T):
    F = T.nn.functional
    g = T.Generator().manual_seed(0)
    v = T.randn(4, 5, generator=g).requires_grad_()
    x1 = T.randn(2, 3, 8, generator=g).requires_grad_()
    x = T.randn(2, 3, 8, 8, generator=g).requires_grad_()
    x3 = T.randn(1, 2, 4, 4, 4, generator=g).requires_grad_()
    w = T.randn(2, 5, generator=g)
    idx = T.tensor([[0], [1], [0], [1]])
    lp = T.randn(6, 2, 4, generator=g).log_softmax(2).detach().requires_grad_()
    tg, il, tl = T.tensor([[1, 2, 2], [3, 1, 0]]), T.tensor([6, 6]), T.tensor([3, 2])
    bag_in, bag_off = T.tensor([0, 1, 2, 3, 1]), T.tensor([0, 2])

    def ctc(reduction, zero_infinity=False, lengths=il):
        return F.ctc_loss(lp, tg, lengths, tl, reduction=reduction, zero_infinity=zero_infinity)

    return {
        # reductions: the dim overload is torch's Backward1
        "sum": lambda: v.sum(), "sum_dim": lambda: v.sum(1), "sum_dims": lambda: v.sum((0, 1)),
        "mean": lambda: v.mean(), "mean_dim": lambda: v.mean(1), "prod": lambda: v.prod(),
        "prod_dim": lambda: v.prod(1), "std": lambda: v.std(), "var_dim": lambda: v.var(1),
        "max": lambda: v.max(), "max_dim": lambda: v.max(1)[0], "min": lambda: v.min(),
        "min_dim": lambda: v.min(0)[0], "amax": lambda: v.amax(), "amin": lambda: v.amin(),
        "amin_dim": lambda: v.amin(1), "dist": lambda: T.dist(v, v * 2),
        # indexing: the node of the last step
        "select": lambda: v[0], "slice": lambda: v[1:], "full": lambda: v[:],
        "none": lambda: v[None], "ellipsis": lambda: v[..., 0], "slice_int": lambda: v[1:, 0],
        "int_slice": lambda: v[0, 1:], "col": lambda: v[:, 1], "neg": lambda: v[-1],
        "alias": lambda: v[()], "none_slice": lambda: v[None, 1:],
        "slice_none": lambda: v[1:, None],
        "list": lambda: v[[0, 1]],
        # products
        "mm": lambda: v.mm(v.t()), "mm_op": lambda: v @ v.t(), "mv": lambda: v @ v[0],
        "vm": lambda: v[0] @ v.t(), "dot": lambda: v[0] @ v[1],
        "bmm": lambda: T.bmm(v[None], v.t()[None]), "batched": lambda: v.expand(2, 4, 5) @ v.t(),
        "linear": lambda: F.linear(v, w, T.zeros(2)), "linear_nobias": lambda: F.linear(v, w),
        "linear_3d": lambda: F.linear(v[None], w, T.zeros(2)),
        "linear_3d_nobias": lambda: F.linear(v[None], w), "linear_1d": lambda: F.linear(v[0], w),
        # pools: 1-d pools end in a squeeze in torch
        "max_pool1d": lambda: F.max_pool1d(x1, 2), "max_pool2d": lambda: F.max_pool2d(x, 2),
        "max_pool3d": lambda: F.max_pool3d(x3, 2), "avg_pool2d": lambda: F.avg_pool2d(x, 2),
        "avg_pool3d": lambda: F.avg_pool3d(x3, 2),
        "adaptive_avg_1": lambda: F.adaptive_avg_pool2d(x, 1),
        "adaptive_avg_2": lambda: F.adaptive_avg_pool2d(x, 2),
        "adaptive_max_2": lambda: F.adaptive_max_pool2d(x, 2),
        # number and tensor overloads
        "pow": lambda: v ** 2, "rpow": lambda: 2 ** v, "pow_t": lambda: v ** v,
        "rsub": lambda: 1 - v, "rsub_t": lambda: T.rsub(v, v), "rdiv": lambda: 1 / v,
        "clamp": lambda: v.clamp(-1, 1), "clamp_t": lambda: v.clamp(T.zeros(5)),
        "clamp_min_kw": lambda: v.clamp(min=0), "clamp_min": lambda: v.clamp_min(0),
        "clamp_max_t": lambda: v.clamp_max(T.zeros(5)),
        "scatter_value": lambda: v.scatter(1, idx, 0.),
        "scatter_src": lambda: T.zeros(4, 5).scatter(1, idx, v[:, :1]),
        # shapes
        "t": lambda: v.t(), "transpose": lambda: v.transpose(0, 1),
        "squeeze": lambda: v[None].squeeze(),
        "squeeze_dim": lambda: v[None].squeeze(0), "squeeze_dims": lambda: v[None].squeeze((0,)),
        "split": lambda: v.split(2)[0], "split_sizes": lambda: v.split([1, 3])[0],
        # (values, indices) ops
        "sort": lambda: v.sort()[0], "msort": lambda: v.msort(), "topk": lambda: v.topk(2)[0],
        "kthvalue": lambda: v.kthvalue(2)[0], "median": lambda: v.median(),
        "median_dim": lambda: v.median(1)[0], "mode": lambda: v.mode()[0],
        "cummax": lambda: v.cummax(0)[0],
        # fixed renames and the digit rule
        "log1p": lambda: v.abs().log1p(), "deg2rad": lambda: v.deg2rad(),
        "unfold": lambda: F.unfold(x, 2),
        "lerp": lambda: T.lerp(v, v * 2, 0.5), "lerp_t": lambda: T.lerp(v, v * 2, T.full((5,), .5)),
        "inv": lambda: T.linalg.inv(v[:4, :4]),
        "conv_transpose": lambda: F.conv_transpose2d(x, T.randn(3, 2, 3, 3)),
        "square": lambda: v.square(), "outer": lambda: T.outer(v[0], v[1]),
        "sdpa": lambda: F.scaled_dot_product_attention(v[None, None], v[None, None], v[None, None]),
        "special_i1e": lambda: T.special.i1e(v), "leaky_relu": lambda: F.leaky_relu(v, 0.2),
        "hardtanh": lambda: F.hardtanh(v), "relu6": lambda: F.relu6(v), "elu": lambda: F.elu(v),
        "selu": lambda: F.selu(v), "hardsigmoid": lambda: F.hardsigmoid(v),
        "hardswish": lambda: F.hardswish(v), "softplus": lambda: F.softplus(v, 2.0, 5.0),
        "logsigmoid": lambda: F.logsigmoid(v), "mish": lambda: F.mish(v),
        "celu": lambda: F.celu(v, 2.0), "celu_1": lambda: F.celu(v),
        "round": lambda: v.round(), "round_decimals": lambda: v.round(decimals=2),
        "round_decimals_fn": lambda: T.round(v, decimals=-1),
        # ctc_loss: torch reduces (and zeroes infinities) after its ctc node
        "ctc_none": lambda: ctc("none"), "ctc_mean": lambda: ctc("mean"),
        "ctc_sum": lambda: ctc("sum"), "ctc_none_zero_inf": lambda: ctc("none", True),
        "ctc_mean_zero_inf": lambda: ctc("mean", True, T.tensor([2, 6])),
        # embedding_bag: one node whatever the mode or input form
        "bag_sum": lambda: F.embedding_bag(bag_in, v, bag_off, mode="sum"),
        "bag_mean_2d": lambda: F.embedding_bag(bag_in[:4].reshape(2, 2), v),
        "bag_max": lambda: F.embedding_bag(bag_in, v, bag_off, mode="max"),
        "bag_weights": lambda: F.embedding_bag(bag_in, v, bag_off, mode="sum",
                                               per_sample_weights=T.ones(5)),
    }


_NAMES = sorted(_cases(torch))


@pytest.mark.parametrize("case", _NAMES)
def test_node_name_as_torch(case):
    got = type(_cases(ember)[case]().grad_fn).__name__
    want = type(_cases(torch)[case]().grad_fn).__name__
    assert got == want


def test_renamed_nodes_still_differentiate():
    v = ember.randn(4, 5, requires_grad=True)
    loss = (v.clamp(0, 1).sum() + v.t().sum() + v.max() + v.cummax(0)[0].sum()
            + v.sort()[0].sum() + ember.bmm(v[None], v.t()[None]).sum() + v[0].sum())
    loss.backward()
    assert v.grad.shape == (4, 5)
