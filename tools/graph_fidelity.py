"""How closely ember's autograd graphs read as PyTorch's, node by node.

Tools that draw or print a graph (torchviz's ``make_dot``, debugging helpers walking
``grad_fn`` chains) read each node's class name, its ``next_functions`` and every attribute
``dir(node)`` lists that starts with ``_saved_``. This script builds the same calls in ember
and in PyTorch, walks both graphs from the result in step, and compares at each pair of
nodes:

- the class name (``type(fn).__name__``);
- the edges: their number and, in order, their kind (None, AccumulateGrad of the same
  input, or an op node, whose walk continues);
- the set of ``_saved_*`` names ``dir()`` lists, and for the names both have, the values
  (tensors by shape and value -- and, where torch's value *is* one of the call's inputs,
  ember's must be the same input; numbers, tuples, None by equality).

The calls: every differentiable OpInfo entry (ember/testing/opinfos/) with its float64
samples, plus the hand-written everyday cases of ``COMMON`` (layers, losses, views).

    python tools/graph_fidelity.py               # summary, then the first mismatches
    python tools/graph_fidelity.py --common      # only the COMMON cases
    python tools/graph_fidelity.py --all         # every mismatch, grouped by node name
    python tools/graph_fidelity.py --op softmax  # the cases whose name contains 'softmax'

Needs PyTorch (the oracle); ember never imports it itself.
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import sys
import zlib

import numpy as np

try:
    import ember
except ImportError:  # run from a checkout without PYTHONPATH
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import ember


# ------------------------------------------------------------------------------------------------
# values


def to_torch(x, torch):
    """ember values (tensors inside lists, tuples, dicts) as torch's, fresh leaves keeping
    ``requires_grad``."""
    if isinstance(x, ember.Tensor):
        t = torch.from_numpy(np.array(x.detach().numpy(), copy=True))
        return t.requires_grad_(x.requires_grad) if t.is_floating_point() or \
            t.is_complex() else t
    if isinstance(x, ember.dtype):
        return getattr(torch, x.name)
    if isinstance(x, list):
        return [to_torch(y, torch) for y in x]
    if isinstance(x, tuple):
        return tuple(to_torch(y, torch) for y in x)
    if isinstance(x, dict):
        return {k: to_torch(v, torch) for k, v in x.items()}
    return x


def _leaves(x, out):
    if isinstance(x, (ember.Tensor,)) or type(x).__module__.startswith("torch"):
        if hasattr(x, "requires_grad"):
            out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _leaves(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _leaves(y, out)
    return out


def _first_with_grad_fn(r):
    if isinstance(r, (list, tuple)):
        for x in r:
            got = _first_with_grad_fn(x)
            if got is not None:
                return got
        return None
    return r if getattr(r, "grad_fn", None) is not None else None


def _same_value(a, b, ins_e, ins_t):
    """Whether ember's saved value ``a`` stands for torch's ``b``; a reason string if not."""
    import torch

    if isinstance(b, torch.Tensor):
        if not isinstance(a, ember.Tensor):
            return f"ember {type(a).__name__}, torch tensor"
        for k, t in enumerate(ins_t):
            if b is t:
                if k < len(ins_e) and a is not ins_e[k]:
                    return "torch keeps the input itself, ember another tensor"
                break
        if tuple(a.shape) != tuple(b.shape):
            return f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
        x = np.asarray(a.detach().numpy(), dtype=np.float64) if a.dtype.is_floating_point \
            else np.asarray(a.detach().numpy())
        y = b.detach().double().numpy() if b.is_floating_point() else b.detach().numpy()
        if x.shape != y.shape or not np.allclose(x, y, rtol=1e-5, atol=1e-6, equal_nan=True):
            return "values differ"
        return None
    if isinstance(b, (list, tuple)):
        if not isinstance(a, (list, tuple)) or len(a) != len(b):
            return f"{a!r} vs {b!r}"
        for x, y in zip(a, b):
            why = _same_value(x, y, ins_e, ins_t)
            if why:
                return why
        return None
    if isinstance(b, torch.dtype):
        return None if str(a).replace("ember.", "torch.") == str(b) else f"{a} vs {b}"
    if isinstance(a, ember.Tensor) and a.ndim == 0:
        a = a.item()
    if type(b) is int and b >= 2 ** 63:
        b -= 2 ** 64  # torch shows a negative int64 (dim=-1, an absent index) as unsigned
    if isinstance(b, (int, float)) and isinstance(a, (int, float)) and \
            not isinstance(a, bool) and not isinstance(b, bool):
        # a Scalar keeps the Python type the caller passed (``scale=1`` vs ``1.0``); the
        # number is what counts
        return None if (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-6,
                                                                            abs_tol=1e-9) \
            else f"{a!r} vs {b!r}"
    if type(a) is not type(b) and not (isinstance(a, int) and isinstance(b, int)):
        return f"{a!r} ({type(a).__name__}) vs {b!r} ({type(b).__name__})"
    return None if a == b else f"{a!r} vs {b!r}"


def _negative_dim(a, b):
    """Whether torch's dim value ``b`` holds a dim written negative (shown as unsigned)
    where ember's ``a`` holds the same dims counted from the front."""
    a = a if isinstance(a, (tuple, list)) else (a,)
    b = b if isinstance(b, (tuple, list)) else (b,)
    if len(a) != len(b) or not all(type(x) is int for x in a + b):
        return False
    return any(y >= 2 ** 63 for y in b) and all(
        x == y or (y >= 2 ** 63 and x >= 0) for x, y in zip(a, b))


def saved_names(fn):
    return {n for n in dir(fn) if n.startswith("_saved_")}


def _read(fn, name):
    try:
        return getattr(fn, name), None
    except Exception as e:  # noqa: BLE001 -- what reading it raised is the finding
        return None, f"{type(e).__name__}: {e}"


# ------------------------------------------------------------------------------------------------
# walking two graphs in step


class Tally:
    """Counts and findings over many compared graphs."""

    def __init__(self):
        self.nodes = 0
        self.names = 0
        self.edges = 0
        self.saved_sets = 0
        self.saved_values = 0
        self.values_compared = 0
        self.negative_dims = 0
        self.cases = 0
        self.failed_cases = []
        self.findings = collections.defaultdict(list)  # torch node name -> [(case, what)]

    def add(self, tname, case, what):
        self.findings[tname].append((case, what))


def compare_graphs(case, out_e, out_t, ins_e, ins_t, tally, max_nodes=40):
    """Walk the graphs of ``out_e`` (ember) and ``out_t`` (torch) in step."""
    import torch

    ag_leaf = {id(t): k for k, t in enumerate(ins_t)}
    todo = [(out_e.grad_fn, out_t.grad_fn)]
    seen = set()
    while todo and len(seen) < max_nodes:
        fe, ft = todo.pop(0)
        if id(ft) in seen:
            continue
        seen.add(id(ft))
        tally.nodes += 1
        tn, en = type(ft).__name__, type(fe).__name__
        if tn == en:
            tally.names += 1
        else:
            tally.add(tn, case, f"named {en}")
            continue  # a different node: its edges and saved values need not agree
        ne, nt = fe.next_functions, ft.next_functions
        edges_ok = len(ne) == len(nt)
        pairs = []
        if edges_ok:
            for (a, _), (b, _) in zip(ne, nt):
                if (a is None) != (b is None):
                    edges_ok = False
                elif b is None:
                    continue
                elif type(b).__name__ == "AccumulateGrad":
                    k = ag_leaf.get(id(b.variable))
                    if type(a).__name__ != "AccumulateGrad" or k is None or \
                            k >= len(ins_e) or a.variable is not ins_e[k]:
                        edges_ok = False
                elif type(a).__name__ == "AccumulateGrad":
                    edges_ok = False
                else:
                    pairs.append((a, b))
        if edges_ok:
            tally.edges += 1
            todo.extend(pairs)
        else:
            tally.add(tn, case, "edges " + _edges_str(ne) + " vs " + _edges_str(nt))
        se, st = saved_names(fe), saved_names(ft)
        if se == st:
            tally.saved_sets += 1
        else:
            tally.add(tn, case, f"saved: ember lacks {sorted(st - se)}, has extra "
                                f"{sorted(se - st)}")
        bad, dims = [], []
        for name in sorted(se & st):
            vt, errt = _read(ft, name)
            ve, erre = _read(fe, name)
            if errt is not None:
                if erre is None:
                    bad.append(f"{name}: torch raises {errt}")
                continue
            if erre is not None:
                bad.append(f"{name}: ember raises {erre}")
                continue
            why = _same_value(ve, vt, ins_e, ins_t)
            if why and "dim" in name and _negative_dim(ve, vt):
                dims.append(name)
            elif why:
                bad.append(f"{name}: {why}")
        tally.values_compared += 1
        if not bad and not dims:
            tally.saved_values += 1
        elif not bad:
            tally.negative_dims += 1
            tally.add(tn, case, "negative dim: ember shows " + ", ".join(
                f"{n}={_read(fe, n)[0]}" for n in dims) + " counted from the front")
        else:
            tally.add(tn, case, "values: " + "; ".join(bad))
    del torch


def _edges_str(nf):
    return "(" + ", ".join("None" if f is None else type(f).__name__ for f, _ in nf) + ")"


def run_case(case, fn_e, fn_t, args_e, kwargs_e, tally, torch):
    """Call ``fn_e(*args_e, **kwargs_e)`` and ``fn_t`` on torch copies; compare the graphs."""
    args_t, kwargs_t = to_torch(args_e, torch), to_torch(kwargs_e, torch)
    try:
        torch.manual_seed(0)
        rt = fn_t(*args_t, **kwargs_t)
    except Exception:  # noqa: BLE001 -- a call torch refuses is no comparison point
        return False
    try:
        ember.manual_seed(0)
        re_ = fn_e(*args_e, **kwargs_e)
    except Exception as e:  # noqa: BLE001
        tally.failed_cases.append((case, f"{type(e).__name__}: {e}"[:200]))
        return False
    ot, oe = _first_with_grad_fn(rt), _first_with_grad_fn(re_)
    if ot is None:
        return False
    tally.cases += 1
    if oe is None:
        tally.nodes += 1
        tally.add(type(ot.grad_fn).__name__, case, "ember records no node")
        return True
    ins_e = _leaves((args_e, kwargs_e), [])
    ins_t = _leaves((args_t, kwargs_t), [])
    compare_graphs(case, oe, ot, ins_e, ins_t, tally)
    return True


# ------------------------------------------------------------------------------------------------
# the cases


def opinfo_cases():
    """(case name, ember fn, torch fn getter, args, kwargs) for each differentiable OpInfo
    entry's float64 samples, floating tensors made leaves that require grad."""
    from ember.testing._opinfo import load_op_db

    for info in load_op_db():
        if not info.differentiable or ember.float64 not in info.dtypes:
            continue
        rng = np.random.default_rng(zlib.crc32(f"{info.id}/float64".encode()))
        try:
            samples = list(info.sample_inputs(ember.float64, rng))
        except Exception:  # noqa: BLE001
            continue
        for k, s in enumerate(samples):
            args = list(s.all_args())
            for i, a in enumerate(args):
                args[i] = _grad_leaves(a)
            kwargs = {key: _grad_leaves(v) for key, v in s.kwargs.items()}
            yield (f"{info.id}[{s.name or k}]", info.get_op(), info.get_torch_op, args,
                   kwargs)


def _grad_leaves(x):
    if isinstance(x, ember.Tensor):
        if x.dtype.is_floating_point and x.numel():
            return x.detach().requires_grad_()
        return x
    if isinstance(x, list):
        return [_grad_leaves(y) for y in x]
    if isinstance(x, tuple):
        return tuple(_grad_leaves(y) for y in x)
    return x


def _r(*shape, grad=True, seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    t = ember.tensor(rng.standard_normal(shape).astype(np.float32))
    return t.requires_grad_(grad)


def common_cases():
    """The everyday calls: (name, fn(T, *args), args) with T the framework module."""
    x, y = _r(4, 5), _r(4, 5, seed=1)
    w, b = _r(3, 5, seed=2), _r(3, seed=3)
    img, k, kb = _r(2, 3, 8, 8), _r(4, 3, 3, 3, seed=4), _r(4, seed=5)
    lab = ember.tensor([0, 2, 1, 4])
    idx = ember.tensor([3, 0, 1])
    emb = _r(10, 5, seed=6)
    g, bb = _r(5, seed=7), _r(5, seed=8)
    bg, bbias = _r(3, seed=9), _r(3, seed=10)
    pos = ember.tensor(np.abs(np.random.default_rng(3).standard_normal((4, 5))).astype(
        np.float32) + 0.5).requires_grad_()
    F = "nn.functional."
    cases = [
        ("linear", lambda T, a, b_, c: _f(T, F + "linear")(a, b_, c), (x, w, b)),
        ("linear_3d", lambda T, a, b_, c: _f(T, F + "linear")(a.reshape(2, 2, 5), b_, c),
         (x, w, b)),
        ("linear_nobias", lambda T, a, b_: _f(T, F + "linear")(a, b_), (x, w)),
        ("addmm", lambda T, c, a, b_: T.addmm(c, a, b_.t()), (b, x, w)),
        ("mm", lambda T, a, b_: T.mm(a, b_.t()), (x, w)),
        ("matmul_3d", lambda T, a, b_: T.matmul(a.reshape(2, 2, 5), b_.t()), (x, w)),
        ("bmm", lambda T, a, b_: T.bmm(a.reshape(2, 2, 5), b_.reshape(2, 5, 2)), (x, y)),
        ("conv2d", lambda T, a, b_, c: _f(T, F + "conv2d")(a, b_, c, padding=1), (img, k, kb)),
        ("conv2d_nobias", lambda T, a, b_: _f(T, F + "conv2d")(a, b_, stride=2), (img, k)),
        ("conv1d", lambda T, a, b_: _f(T, F + "conv1d")(a[:, :, 0], b_[:, :, 0]), (img, k)),
        ("relu", lambda T, a: _f(T, F + "relu")(a), (x,)),
        ("relu_method", lambda T, a: a.relu(), (x,)),
        ("gelu", lambda T, a: _f(T, F + "gelu")(a), (x,)),
        ("gelu_tanh", lambda T, a: _f(T, F + "gelu")(a, approximate="tanh"), (x,)),
        ("silu", lambda T, a: _f(T, F + "silu")(a), (x,)),
        ("leaky_relu", lambda T, a: _f(T, F + "leaky_relu")(a, 0.1), (x,)),
        ("elu", lambda T, a: _f(T, F + "elu")(a), (x,)),
        ("softmax", lambda T, a: _f(T, F + "softmax")(a, dim=-1), (x,)),
        ("log_softmax", lambda T, a: _f(T, F + "log_softmax")(a, dim=1), (x,)),
        ("layer_norm", lambda T, a, g_, b_: _f(T, F + "layer_norm")(a, (5,), g_, b_),
         (x, g, bb)),
        ("layer_norm_noaffine", lambda T, a: _f(T, F + "layer_norm")(a, (5,)), (x,)),
        ("batch_norm_train", lambda T, a, g_, b_: _f(T, F + "batch_norm")(
            a, T.zeros(3), T.ones(3), g_, b_, training=True), (img, bg, bbias)),
        ("batch_norm_eval", lambda T, a, g_, b_: _f(T, F + "batch_norm")(
            a, T.zeros(3), T.ones(3), g_, b_, training=False), (img, bg, bbias)),
        ("embedding", lambda T, i, e: _f(T, F + "embedding")(i, e), (idx, emb)),
        ("dropout", lambda T, a: _f(T, F + "dropout")(a, 0.5), (x,)),
        ("dropout_eval", lambda T, a: _f(T, F + "dropout")(a, 0.5, training=False), (x,)),
        ("view", lambda T, a: a.view(20), (x,)),
        ("view_2", lambda T, a: a.view(2, 10), (x,)),
        ("reshape", lambda T, a: a.reshape(5, 4), (x,)),
        ("reshape_copy", lambda T, a: a.t().reshape(20), (x,)),
        ("flatten", lambda T, a: a.flatten(), (img,)),
        ("permute", lambda T, a: a.permute(1, 0), (x,)),
        ("permute_4d", lambda T, a: a.permute(0, 2, 3, 1), (img,)),
        ("transpose", lambda T, a: a.transpose(0, 1), (x,)),
        ("t", lambda T, a: a.t(), (x,)),
        ("T", lambda T, a: a.T, (x,)),
        ("mT", lambda T, a: a.mT, (x,)),
        ("expand", lambda T, a: a[:1].expand(3, 5), (x,)),
        ("unsqueeze", lambda T, a: a.unsqueeze(1), (x,)),
        ("squeeze", lambda T, a: a[:1].squeeze(0), (x,)),
        ("squeeze_all", lambda T, a: a[:1].squeeze(), (x,)),
        ("contiguous", lambda T, a: a.t().contiguous(), (x,)),
        ("index_int", lambda T, a: a[1], (x,)),
        ("index_slice", lambda T, a: a[1:3], (x,)),
        ("index_slice_col", lambda T, a: a[:, 1:3], (x,)),
        ("index_both", lambda T, a: a[1, 2:4], (x,)),
        ("index_tensor", lambda T, a, i: a[i], (x, idx)),
        ("index_bool", lambda T, a: a[a > 0], (x,)),
        ("index_none", lambda T, a: a[None], (x,)),
        ("select", lambda T, a: a.select(1, 2), (x,)),
        ("narrow", lambda T, a: a.narrow(1, 1, 2), (x,)),
        ("index_select", lambda T, a, i: a.index_select(0, i), (x, idx)),
        ("gather", lambda T, a: a.gather(1, T.tensor([[0], [1], [2], [3]])), (x,)),
        ("cat", lambda T, a, b_: T.cat([a, b_]), (x, y)),
        ("cat_dim1", lambda T, a, b_: T.cat([a, b_], 1), (x, y)),
        ("stack", lambda T, a, b_: T.stack([a, b_]), (x, y)),
        ("split", lambda T, a: a.split(2)[1], (x,)),
        ("chunk", lambda T, a: a.chunk(2, 1)[0], (x,)),
        ("unbind", lambda T, a: a.unbind(0)[2], (x,)),
        ("sum", lambda T, a: a.sum(), (x,)),
        ("sum_dim", lambda T, a: a.sum(1), (x,)),
        ("sum_keepdim", lambda T, a: a.sum(-1, keepdim=True), (x,)),
        ("mean", lambda T, a: a.mean(), (x,)),
        ("mean_dim", lambda T, a: a.mean(0), (x,)),
        ("var", lambda T, a: a.var(1), (x,)),
        ("std", lambda T, a: a.std(), (x,)),
        ("max", lambda T, a: a.max(), (x,)),
        ("max_dim", lambda T, a: a.max(1)[0], (x,)),
        ("amax", lambda T, a: a.amax(1), (x,)),
        ("norm", lambda T, a: a.norm(), (x,)),
        ("logsumexp", lambda T, a: a.logsumexp(1), (x,)),
        ("mul", lambda T, a, b_: a * b_, (x, y)),
        ("mul_scalar", lambda T, a: a * 2.5, (x,)),
        ("add", lambda T, a, b_: a + b_, (x, y)),
        ("add_scalar", lambda T, a: a + 1, (x,)),
        ("add_alpha", lambda T, a, b_: T.add(a, b_, alpha=2), (x, y)),
        ("radd", lambda T, a: 1 + a, (x,)),
        ("sub", lambda T, a, b_: a - b_, (x, y)),
        ("sub_scalar", lambda T, a: a - 1, (x,)),
        ("rsub", lambda T, a: 1 - a, (x,)),
        ("div", lambda T, a, b_: a / b_, (x, pos)),
        ("div_scalar", lambda T, a: a / 2, (x,)),
        ("rdiv", lambda T, a: 2 / a, (pos,)),
        ("neg", lambda T, a: -a, (x,)),
        ("pow_scalar", lambda T, a: a ** 2, (x,)),
        ("pow_float", lambda T, a: a ** 0.5, (pos,)),
        ("pow_tensor", lambda T, a, b_: a ** b_, (pos, y)),
        ("rpow", lambda T, a: 2 ** a, (x,)),
        ("sqrt", lambda T, a: a.sqrt(), (pos,)),
        ("rsqrt", lambda T, a: a.rsqrt(), (pos,)),
        ("exp", lambda T, a: a.exp(), (x,)),
        ("log", lambda T, a: a.log(), (pos,)),
        ("tanh", lambda T, a: a.tanh(), (x,)),
        ("sigmoid", lambda T, a: a.sigmoid(), (x,)),
        ("F.sigmoid", lambda T, a: T.sigmoid(a), (x,)),
        ("abs", lambda T, a: a.abs(), (x,)),
        ("clamp", lambda T, a: a.clamp(-0.5, 0.5), (x,)),
        ("clamp_min", lambda T, a: a.clamp(min=0), (x,)),
        ("where", lambda T, a, b_: T.where(a > 0, a, b_), (x, y)),
        ("masked_fill", lambda T, a: a.masked_fill(a > 0, 0.0), (x,)),
        ("cross_entropy", lambda T, a, t: _f(T, F + "cross_entropy")(a, t), (x, lab)),
        ("cross_entropy_sum", lambda T, a, t: _f(T, F + "cross_entropy")(
            a, t, reduction="sum"), (x, lab)),
        ("cross_entropy_smooth", lambda T, a, t: _f(T, F + "cross_entropy")(
            a, t, label_smoothing=0.1), (x, lab)),
        ("nll_loss", lambda T, a, t: _f(T, F + "nll_loss")(a, t), (x, lab)),
        ("mse_loss", lambda T, a, b_: _f(T, F + "mse_loss")(a, b_), (x, y)),
        ("l1_loss", lambda T, a, b_: _f(T, F + "l1_loss")(a, b_), (x, y)),
        ("bce_logits", lambda T, a: _f(T, F + "binary_cross_entropy_with_logits")(
            a, (a.detach() > 0).float()), (x,)),
        ("max_pool2d", lambda T, a: _f(T, F + "max_pool2d")(a, 2), (img,)),
        ("avg_pool2d", lambda T, a: _f(T, F + "avg_pool2d")(a, 2), (img,)),
        ("adaptive_avg_pool2d", lambda T, a: _f(T, F + "adaptive_avg_pool2d")(a, 1), (img,)),
        ("sdpa", lambda T, a: _f(T, F + "scaled_dot_product_attention")(
            a.reshape(1, 2, 2, 5), a.reshape(1, 2, 2, 5), a.reshape(1, 2, 2, 5)), (x,)),
        ("clone", lambda T, a: a.clone(), (x,)),
        ("to_double", lambda T, a: a.double(), (x,)),
        ("float_noop", lambda T, a: (a * 1).float(), (x,)),
        ("repeat", lambda T, a: a.repeat(2, 1), (x,)),
        ("cumsum", lambda T, a: a.cumsum(1), (x,)),
        ("dot", lambda T, a, b_: a[0].dot(b_[0]), (x, y)),
        ("outer", lambda T, a, b_: T.outer(a[0], b_[1]), (x, y)),
        ("einsum", lambda T, a, b_: T.einsum("ij,kj->ik", a, b_), (x, w)),
        ("baddbmm", lambda T, a: T.baddbmm(a.reshape(1, 4, 5)[:, :, :4], a.reshape(1, 4, 5),
                                           a.reshape(1, 5, 4)), (x,)),
    ]
    return cases


def _cnn(T):
    nn = T.nn
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(8, 8, 3), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2),
                         nn.Linear(8, 4))


def _block(T):
    nn, F = T.nn, T.nn.functional

    class Block(nn.Module):
        # a pre-norm transformer block: attention by hand and by SDPA, a GELU MLP
        def __init__(self, d=8, heads=2):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
            q, k, v = (t.reshape(b, n, self.heads, d // self.heads).transpose(1, 2)
                       for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
            h = att.softmax(dim=-1) @ v + F.scaled_dot_product_attention(q, k, v)
            x = x + self.proj(h.transpose(1, 2).reshape(b, n, d))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    return Block()


def model_cases(torch):
    """(name, ember output, torch output, ember leaves, torch leaves): a small CNN's loss
    and a transformer block's, the same weights in both."""
    out = []
    for name, make, shape in (("cnn", _cnn, (2, 3, 8, 8)), ("block", _block, (2, 5, 8))):
        torch.manual_seed(0)
        mt = make(torch)
        me = make(ember)
        me.load_state_dict({k: ember.tensor(v.detach().numpy().copy())
                            for k, v in mt.state_dict().items()})
        me.train(), mt.train()
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        xe, xt = ember.tensor(x).requires_grad_(), torch.tensor(x).requires_grad_()
        torch.manual_seed(1), ember.manual_seed(1)  # (the same dropout masks)
        ye, yt = me(xe), mt(xt)
        if name == "cnn":
            lab = np.array([1, 3])
            ye = ember.nn.functional.cross_entropy(ye, ember.tensor(lab))
            yt = torch.nn.functional.cross_entropy(yt, torch.tensor(lab))
        else:
            ye, yt = ye.pow(2).mean(), yt.pow(2).mean()
        out.append((name, ye, yt, list(me.parameters()) + [xe], list(mt.parameters()) + [xt]))
    return out


def _f(T, path):
    obj = T
    for p in path.split("."):
        obj = getattr(obj, p)
    return obj


def collect(torch, use_opinfo=True, use_common=True, only=None):
    tally = Tally()
    if use_common:
        for name, fn, args in common_cases():
            if only and only not in name:
                continue
            args = tuple(a.detach().requires_grad_(a.requires_grad) for a in args)
            run_case("common:" + name, lambda *a, fn=fn: fn(ember, *a),
                     lambda *a, fn=fn: fn(torch, *a), list(args), {}, tally, torch)
        for name, oe, ot, ins_e, ins_t in model_cases(torch):
            if only and only not in "model:" + name:
                continue
            tally.cases += 1
            compare_graphs("model:" + name, oe, ot, ins_e, ins_t, tally, max_nodes=400)
    if use_opinfo:
        for name, fe, get_t, args, kwargs in opinfo_cases():
            if only and only not in name:
                continue
            ft = get_t(torch)
            if ft is None:
                continue
            run_case(name, fe, ft, args, kwargs, tally, torch)
    return tally


def summary(t):
    def pct(a, b):
        return f"{a}/{b} ({100.0 * a / max(b, 1):.0f}%)"
    return "\n".join([
        f"cases compared:      {t.cases}",
        f"nodes compared:      {t.nodes}",
        f"names matching:      {pct(t.names, t.nodes)}",
        f"edges matching:      {pct(t.edges, t.names)} (of the nodes named alike)",
        f"saved-name sets:     {pct(t.saved_sets, t.names)} (of the nodes named alike)",
        f"saved values:        {pct(t.saved_values, t.values_compared)} "
        "(all shared names' values equal)",
        f"  + only a dim written negative: {t.negative_dims} (torch shows the dim as the "
        "caller wrote it, ember counted from the front)",
        f"node kinds with a finding: {len(t.findings)}",
        f"cases ember raised on: {len(t.failed_cases)}",
    ])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--common", action="store_true", help="only the hand-written cases")
    p.add_argument("--opinfo", action="store_true", help="only the OpInfo samples")
    p.add_argument("--all", action="store_true", help="every finding")
    p.add_argument("--op", default=None, help="only cases whose name contains this")
    a = p.parse_args(argv)
    import warnings

    warnings.simplefilter("ignore")  # deprecation notes of the ops compared
    import torch

    t = collect(torch, use_opinfo=not a.common, use_common=not a.opinfo, only=a.op)
    print(summary(t))
    print()
    limit = None if a.all else 3
    order = sorted(t.findings.items(), key=lambda kv: -len(kv[1]))
    for name, items in order if a.all else order[:40]:
        kinds = collections.Counter(w.split(":")[0] if w.startswith(("saved", "values",
                                                                     "negative"))
                                    else w.split(" ")[0] for _, w in items)
        print(f"{name}: {len(items)} ({', '.join(f'{k} {v}' for k, v in kinds.items())})")
        for case, what in items[:limit]:
            print(f"    {case}: {what[:300]}")
    if a.all:
        for case, why in t.failed_cases:
            print(f"ember raised on {case}: {why}")


if __name__ == "__main__":
    main()
