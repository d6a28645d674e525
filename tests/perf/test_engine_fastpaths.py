"""The backward engine's and ``save``'s fast paths (issue 22) against the plain paths and
PyTorch: the ready node run without the heap (NOTE [ Engine ]), buffers sized from
``Node._nout``, small matmul gradients straight through NumPy, the fused tanh/sigmoid
backward called without the door, the in-place ``.grad`` version bump, and the CRCs
computed ahead of the writes (NOTE [ CRCs ahead of the writes ])."""

import io
import os
import zipfile

import numpy as np
import pytest

import ember
from ember.serialization import _save
from ember.utils._python_dispatch import TorchDispatchMode

torch = pytest.importorskip("torch")


class _Watch(TorchDispatchMode):
    """A mode that only watches: with it on, every op goes through the door (the slow
    paths the fast ones must agree with)."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


def _mlp(lib, width, layers, batch, act="tanh", seed=0):
    rng = np.random.default_rng(seed)
    ws = [lib.from_numpy((rng.standard_normal((width, width)) / np.sqrt(width))
                         .astype(np.float32)).requires_grad_(True) for _ in range(layers)]
    x = lib.from_numpy(rng.standard_normal((batch, width)).astype(np.float32))
    return ws, x


def _forward(ws, x, act="tanh"):
    h = x
    for w in ws:
        h = getattr(h @ w, act)()
    return h.sum()


@pytest.mark.parametrize("width,batch", [(32, 1), (96, 64)])  # below / above the GEMM limit
@pytest.mark.parametrize("act", ["tanh", "sigmoid"])
def test_mlp_grads_match_torch_and_the_watched_path(width, batch, act):
    ew, ex = _mlp(ember, width, 6, batch)
    tw, tx = _mlp(torch, width, 6, batch)
    _forward(ew, ex, act).backward()
    _forward(tw, tx, act).backward()
    for e, t in zip(ew, tw):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=2e-5)
    # the same graph with a mode watching runs the ops through the door: the same bits
    fast = [w.grad.numpy().copy() for w in ew]
    for w in ew:
        w.grad = None
    with _Watch() as mode:
        _forward(ew, ex, act).backward()
    assert any(f"{act}_backward" in n for n in mode.names)
    for f, w in zip(fast, ew):
        np.testing.assert_array_equal(f, w.grad.numpy())


def test_fused_backward_hooks_and_retain_graph():
    ember.manual_seed(0)
    x = ember.randn(3, 4, requires_grad=True)
    y = x.tanh()
    seen = []
    y.register_hook(lambda g: seen.append("y") or g * 2)
    x.register_post_accumulate_grad_hook(lambda t: seen.append("x"))
    y.retain_grad()
    loss = y.sum()
    loss.backward(retain_graph=True)
    loss.backward()
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    ty = tx.tanh()
    ty.register_hook(lambda g: g * 2)
    ty.retain_grad()
    tl = ty.sum()
    tl.backward(retain_graph=True)
    tl.backward()
    assert seen == ["y", "x", "y", "x"]
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_fused_backward_under_anomaly_mode_reports_nan():
    x = ember.tensor([0.5, 1.0], requires_grad=True)
    y = x.tanh()
    y.register_hook(lambda g: g * float("nan"))
    with ember.autograd.detect_anomaly(check_nan=True), pytest.warns(UserWarning):
        with pytest.raises(RuntimeError, match="returned nan values"):
            y.sum().backward()


def test_create_graph_still_differentiable():
    x = ember.tensor([0.3, -1.2], dtype=ember.float64, requires_grad=True)
    w = ember.tensor([[0.5, 1.0], [2.0, -1.0]], dtype=ember.float64, requires_grad=True)
    (g,) = ember.autograd.grad((x[None] @ w).tanh().sum(), x, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), x)
    tx = torch.tensor([0.3, -1.2], dtype=torch.float64, requires_grad=True)
    tw = torch.tensor([[0.5, 1.0], [2.0, -1.0]], dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad((tx[None] @ tw).tanh().sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-12)


def _leaf_order(lib):
    """Post-accumulate-grad hook order over a graph of chains, a diamond and shared
    leaves: the engine's ready order, which the held-out ready node must keep."""
    rng = np.random.default_rng(3)
    leaves = {n: lib.tensor(rng.standard_normal(4), requires_grad=True)
              for n in ("a", "b", "c", "d", "e")}
    order = []
    for n, t in leaves.items():
        t.register_post_accumulate_grad_hook(lambda t, n=n: order.append(n))
    a, b, c, d, e = leaves.values()
    left = (a * b).tanh() * c
    right = (a + d).sigmoid() * (c * e)
    chain = left
    for _ in range(5):
        chain = chain.tanh() * b
    (chain.sum() + right.sum() + (d * e).sum()).backward()
    return order, [leaves[n].grad.numpy() for n in "abcde"]


def test_leaf_order_and_grads_match_torch():
    eo, eg = _leaf_order(ember)
    to, tg = _leaf_order(torch)
    assert eo == to
    for e, t in zip(eg, tg):
        np.testing.assert_allclose(e, t, rtol=1e-5)


def test_linear_edge_order_kept():
    order = {}
    for lib in (ember, torch):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
        seen = order[lib.__name__] = []
        for name, p in net.named_parameters():
            p.register_post_accumulate_grad_hook(lambda p, name=name: seen.append(name))
        net(lib.ones(2, 3)).sum().backward()
    assert order["ember"] == order["torch"]


def test_custom_function_with_two_outputs():
    class Split(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * 2 + gb * 3

    x = ember.ones(3, requires_grad=True)
    a, b = Split.apply(x)
    assert a.grad_fn._nout == a.grad_fn._n_outputs() == 2
    (a.sum() * 5 + b.sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 13.0, np.float32))
    x.grad = None
    a, b = Split.apply(x)
    b.sum().backward()  # one output's gradient only: the other slot stays None (zeros)
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 3.0, np.float32))


def test_grad_version_bumps_as_torch():
    versions = {}
    for lib in (ember, torch):
        w = lib.ones(3, requires_grad=True)
        seen = versions[lib.__name__] = []
        for _ in range(3):
            (w * 2).sum().backward()
            seen.append(w.grad._version)
    assert versions["ember"] == versions["torch"]


def test_profiler_still_sees_backward_nodes():
    ws, x = _mlp(ember, 8, 2, 1)
    with ember.profiler.profile() as prof:
        _forward(ws, x).backward()
    names = {e.name for e in prof.events()}
    assert "aten::tanh_backward" in names
    assert any("MmBackward0" in n for n in names)


# ------------------------------------------------------------------------------------------------
# save: CRCs ahead of the writes


def _state():
    rng = np.random.default_rng(0)
    sd = {f"w{i}": ember.from_numpy(rng.standard_normal((64, 96)).astype(np.float32))
          for i in range(5)}
    sd["t"] = ember.from_numpy(rng.standard_normal((40, 30)).astype(np.float64)).t()
    sd["strided"] = ember.arange(1000.0)[::3]
    sd["empty"] = ember.zeros(0)
    sd["int"] = ember.arange(7)
    return sd


def _bytes(sd, monkeypatch, preset, ahead_min):
    monkeypatch.setattr(_save, "_PRESET_CRC", preset)
    monkeypatch.setattr(_save, "_CRC_AHEAD_MIN", ahead_min)
    monkeypatch.setattr(os, "urandom", lambda n: b"\x07" * n)  # the serialization id
    buf = io.BytesIO()
    ember.save(sd, buf)
    return buf.getvalue()


def test_save_crc_ahead_writes_the_same_archive(monkeypatch):
    sd = _state()
    plain = _bytes(sd, monkeypatch, False, 0)
    ahead = _bytes(sd, monkeypatch, True, 0)
    assert ahead == plain
    assert zipfile.ZipFile(io.BytesIO(ahead)).testzip() is None  # every CRC checked
    back = torch.load(io.BytesIO(ahead))
    for k, v in sd.items():
        np.testing.assert_array_equal(back[k].numpy(), v.numpy())
    mine = ember.load(io.BytesIO(ahead))
    for k, v in sd.items():
        assert ember.equal(mine[k], v)


def test_save_crc_ahead_to_a_path_and_one_thread(monkeypatch, tmp_path):
    sd = _state()
    monkeypatch.setattr(_save, "_CRC_AHEAD_MIN", 0)
    path = tmp_path / "ck.pt"
    ember.save(sd, path)
    assert zipfile.ZipFile(path).testzip() is None
    old = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        ember.save(sd, tmp_path / "one.pt")
    finally:
        ember.set_num_threads(old)
    a = ember.load(path)
    b = ember.load(tmp_path / "one.pt")
    for k in sd:
        assert ember.equal(a[k], b[k])


def test_zipfile_entry_writer_fields_present():
    # the fast path depends on these two fields of zipfile's entry writer; a Python whose
    # writer lacks them takes the plain path (this test says which one runs here)
    assert _save._PRESET_CRC == ({"_crc", "_file_size"} <= set(
        zipfile._ZipWriteFile.__init__.__code__.co_names))
