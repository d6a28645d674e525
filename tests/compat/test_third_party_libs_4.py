"""Audio and graph libraries built on torch run unchanged on ember under the alias:
torchaudio and torch_geometric (kornia's test is in ``test_third_party_libs_3.py``).

As in ``test_third_party_libs.py`` (whose helpers these tests use), each test writes a driver
program, runs it once on PyTorch and once under ``python -m ember.compat.run``, each run
saving its numbers to its own ``.npz`` file, and compares the two. A test skips when its
library, or PyTorch, is not found.

torchaudio's wheel carries a native library built for one torch release, which neither a
later torch nor ember loads; installed beside such a torch it breaks the libraries that
import it. So, as ``test_torchvision.py`` does for torchvision, a wheel on disk
(``EMBER_TORCHAUDIO_WHEEL``, else one in the machine's local index) is unpacked for the two
runs alone, without its native files: both runs take torchaudio's pure-Python paths (its
``_IS_TORCHAUDIO_EXT_AVAILABLE`` is False), the same code on both sides.

The tests at the end check, in process, what these libraries and kornia needed from ember:
``torch._C._are_functorch_transforms_active`` reporting the ``ember.func`` transforms as
PyTorch's reports its own (NOTE [ Transform layers ] in ember/_C_functorch.py), a custom
Function's vmap rule applying the Function again under nested vmaps, ``torch.complex32``,
``torch._assert_async``, the ATen handles torch_geometric keys its tensor subclasses by,
``torch._tensor_str`` and ``rpc.api._require_initialized``.
"""

import glob
import importlib.util
import os
import sys
import zipfile

import numpy as np
import pytest

import ember
from tests.compat.test_third_party_libs import _assert_same, _both, _needs, needs_torch

# -- torchaudio -----------------------------------------------------------------------------

_TA_WHEELS = ([os.environ["EMBER_TORCHAUDIO_WHEEL"]]
              if os.environ.get("EMBER_TORCHAUDIO_WHEEL")
              else sorted(glob.glob("/opt/pypi-more/files/torchaudio-2.9.*-cp311-*.whl")))
_HAVE_TA_WHEEL = bool(_TA_WHEELS) and os.path.exists(_TA_WHEELS[-1]) and \
    sys.version_info[:2] == (3, 11)
_HAVE_TORCH = importlib.util.find_spec("torch") is not None


def _torchaudio_site(tmp_path):
    """A directory holding torchaudio's Python files, unpacked from the wheel."""
    site = tmp_path / "site"
    with zipfile.ZipFile(_TA_WHEELS[-1]) as whl:
        whl.extractall(site, [n for n in whl.namelist()
                              if not n.endswith((".so", ".pyd", ".dylib"))])
    return site


TORCHAUDIO_DRIVER = """
    import sys
    import numpy as np
    import torch
    from torch import nn
    import torchaudio
    import torchaudio.compliance.kaldi as kaldi
    import torchaudio.functional as AF
    import torchaudio.transforms as T

    out = {}
    torch.manual_seed(0)
    sr = 8000
    t = torch.arange(0, 4000, dtype=torch.float32) / sr
    wave = (torch.sin(2 * torch.pi * 440 * t) + 0.1 * torch.randn(4000)).unsqueeze(0)
    wave = torch.cat([wave, 0.5 * wave.flip(-1)]).requires_grad_()
    w = wave.detach()
    spec = T.Spectrogram(n_fft=256, hop_length=64)(wave)
    out["spec"] = spec.detach().numpy()
    out["spec_pow1"] = T.Spectrogram(n_fft=200, win_length=160, power=1.0, normalized=True)(
        w).numpy()
    mel = T.MelSpectrogram(sr, n_fft=256, hop_length=64, n_mels=32)(wave)
    out["mel"] = mel.detach().numpy()
    out["mel_slaney"] = T.MelSpectrogram(sr, n_fft=256, n_mels=20, norm="slaney",
                                         mel_scale="slaney")(w).numpy()
    out["db"] = T.AmplitudeToDB(top_db=80.0)(mel).detach().numpy()
    mfcc = T.MFCC(sr, n_mfcc=13, melkwargs={"n_fft": 256, "hop_length": 64, "n_mels": 32})(
        wave)
    out["mfcc"] = mfcc.detach().numpy()
    out["lfcc"] = T.LFCC(sr, n_lfcc=10, speckwargs={"n_fft": 256})(w).numpy()
    out["resample_up"] = AF.resample(w, sr, 16000).numpy()
    out["resample_kaiser"] = T.Resample(sr, 6000, resampling_method="sinc_interp_kaiser")(
        w).numpy()
    out["fbanks"] = AF.melscale_fbanks(129, 0.0, 4000.0, 32, sr).numpy()
    out["dct"] = AF.create_dct(13, 32, "ortho").numpy()
    out["mu"] = AF.mu_law_encoding(w.clamp(-1, 1), 256).numpy()
    out["mu_dec"] = AF.mu_law_decoding(torch.tensor(out["mu"]), 256).numpy()
    out["delta"] = AF.compute_deltas(mfcc).detach().numpy()
    b = torch.tensor([0.4, 0.2, 0.1])
    a = torch.tensor([1.0, -0.3, 0.1])
    out["lfilter"] = AF.lfilter(w, a, b).numpy()
    out["filtfilt"] = AF.filtfilt(w, a, b).numpy()
    out["lowpass"] = AF.lowpass_biquad(w, sr, 1000.0).numpy()
    out["bandpass"] = AF.bandpass_biquad(w, sr, 1000.0, 0.5).numpy()
    out["fftconvolve"] = AF.fftconvolve(w, w[:, :50]).numpy()
    out["convolve"] = AF.convolve(w, w[:, :50]).numpy()
    out["add_noise"] = AF.add_noise(w, 0.1 * torch.ones_like(w),
                                    torch.tensor([10.0, 20.0])).numpy()
    out["fade"] = T.Fade(fade_in_len=100, fade_out_len=200, fade_shape="half_sine")(w).numpy()
    out["speed"] = AF.speed(w, sr, 1.1)[0].numpy()
    out["griffin"] = T.GriffinLim(n_fft=256, hop_length=64, n_iter=4, rand_init=False)(
        spec.detach()).numpy()
    # the DC bin is in no mel filter: its least-squares value is undetermined (PyTorch's
    # gelsy returns rounding noise there, ember the minimum-norm 0), so it is left out
    out["inv_mel"] = T.InverseMelScale(129, n_mels=32, sample_rate=sr)(
        mel.detach()[:, :, :6])[:, 1:].numpy()
    cspec = T.Spectrogram(n_fft=256, hop_length=64, power=None)(w)
    out["cspec"] = torch.view_as_real(cspec).numpy()
    out["istft"] = T.InverseSpectrogram(n_fft=256, hop_length=64)(cspec, 4000).numpy()
    # the phase vocoder accumulates phases to thousands of radians, where float32 rounding
    # alone moves the result by 1e-3: compared in float64
    c64 = T.Spectrogram(n_fft=256, hop_length=64, power=None)(w.double())
    out["stretch"] = torch.view_as_real(
        T.TimeStretch(hop_length=64, n_freq=129, fixed_rate=1.3)(c64)).numpy()
    out["pitch"] = AF.detect_pitch_frequency(
        torch.sin(2 * torch.pi * 300 * torch.arange(8000) / sr).unsqueeze(0), sr).numpy()
    out["kaldi_fbank"] = kaldi.fbank(w[:1], num_mel_bins=23, sample_frequency=sr,
                                     dither=0.0).numpy()
    out["kaldi_mfcc"] = kaldi.mfcc(w[:1], num_ceps=13, sample_frequency=sr, dither=0.0).numpy()
    torch.manual_seed(3)
    out["specaug"] = T.SpecAugment(n_time_masks=2, time_mask_param=5, n_freq_masks=1,
                                   freq_mask_param=4, iid_masks=True)(
        T.Spectrogram(n_fft=128)(w)).numpy()
    loss = (mfcc.pow(2).mean() + T.AmplitudeToDB()(mel).mean() * 1e-2
            + AF.resample(wave, sr, 16000).pow(2).mean() + AF.preemphasis(wave).pow(2).mean()
            + AF.fftconvolve(wave, wave[:, :20]).pow(2).mean()
            + kaldi.fbank(wave[:1], num_mel_bins=23, sample_frequency=sr, dither=0.0).mean())
    loss.backward()
    out["loss"] = loss.detach().numpy()
    out["gwave"] = wave.grad.numpy()


    class Wav2Letter(nn.Module):
        def __init__(self, n_mels=32, n_classes=10):
            super().__init__()
            self.feat = nn.Sequential(
                T.MelSpectrogram(sr, n_fft=256, hop_length=64, n_mels=n_mels), T.AmplitudeToDB())
            self.net = nn.Sequential(
                nn.Conv1d(n_mels, 24, 11, stride=2, padding=5), nn.ReLU(),
                nn.Conv1d(24, 24, 7, padding=3), nn.ReLU(),
                nn.Conv1d(24, 32, 1), nn.ReLU(), nn.Conv1d(32, n_classes, 1))

        def forward(self, x):
            return self.net(self.feat(x)).log_softmax(1)


    torch.manual_seed(1)
    model = Wav2Letter()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(3, 4000)
    targets = torch.randint(1, 10, (3, 6))
    ctc = nn.CTCLoss()
    losses = []
    for _ in range(3):
        opt.zero_grad()
        lp = model(x).permute(2, 0, 1)
        loss = ctc(lp, targets, torch.full((3,), lp.shape[0]), torch.full((3,), 6))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    out["w2l_losses"] = np.array(losses)
    out["w2l_grad0"] = model.net[0].weight.grad.numpy()
    out["w2l_w"] = model.net[-1].weight.detach().numpy()
    ref = torchaudio.models.Wav2Letter(num_classes=5, input_type="mfcc", num_features=13)
    out["w2l_ref"] = ref(mfcc[:, :, :40].detach()).detach().numpy()
    torch.manual_seed(5)
    tasnet = torchaudio.models.ConvTasNet(
        num_sources=2, enc_kernel_size=16, enc_num_feats=32, msk_kernel_size=3,
        msk_num_feats=16, msk_num_hidden_feats=32, msk_num_layers=2, msk_num_stacks=1)
    y = tasnet(w[:1].unsqueeze(0))
    y.pow(2).mean().backward()
    out["tasnet"] = y.detach().numpy()
    out["tasnet_g"] = tasnet.encoder.weight.grad.numpy()
    torch.manual_seed(6)
    conf = torchaudio.models.Conformer(input_dim=16, num_heads=2, ffn_dim=32, num_layers=2,
                                       depthwise_conv_kernel_size=3).eval()
    o, lens = conf(torch.randn(2, 20, 16), torch.tensor([20, 15]))
    out["conformer"] = o.detach().numpy()
    out["conformer_lens"] = lens.numpy()
    np.savez(sys.argv[1], **out)
"""


@pytest.mark.skipif(not (_HAVE_TORCH and _HAVE_TA_WHEEL),
                    reason="needs torch and a torchaudio 2.9 wheel (EMBER_TORCHAUDIO_WHEEL)")
def test_torchaudio_features_filters_and_models(tmp_path):
    t, e = _both(tmp_path, TORCHAUDIO_DRIVER, extra_path=[_torchaudio_site(tmp_path)])
    # float32 spectra reach 4e3: absolute error scales with them
    _assert_same(t, e, rtol=1e-4, atol=2e-4)


# -- torch_geometric ------------------------------------------------------------------------

PYG_DRIVER = """
    import sys
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch_geometric.data import Data
    from torch_geometric.loader import DataLoader
    from torch_geometric.nn import (GATConv, GCNConv, GINConv, SAGEConv, global_add_pool,
                                    global_max_pool, global_mean_pool)
    from torch_geometric.utils import add_self_loops, degree, scatter, softmax, to_dense_adj

    out = {}
    torch.manual_seed(0)
    edge_index = torch.tensor([[0, 1, 1, 2, 2, 3, 3, 4, 4, 0, 1, 3],
                               [1, 0, 2, 1, 3, 2, 4, 3, 0, 4, 3, 1]])
    x = torch.randn(5, 4, requires_grad=True)
    src = torch.randn(12, 3)
    idx = edge_index[1]
    for reduce in ("sum", "mean", "max", "min", "mul"):
        out[f"scatter_{reduce}"] = scatter(src, idx, 0, dim_size=5, reduce=reduce).numpy()
    out["softmax"] = softmax(src, idx, num_nodes=5).numpy()
    out["degree"] = degree(idx, 5).numpy()
    out["self_loops"] = add_self_loops(edge_index, num_nodes=5)[0].numpy()
    out["dense_adj"] = to_dense_adj(edge_index).numpy()
    convs = {"gcn": GCNConv(4, 6), "gat": GATConv(4, 3, heads=2), "sage": SAGEConv(4, 6),
             "sage_max": SAGEConv(4, 6, aggr="max"),
             "gin": GINConv(torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU()))}
    for name, conv in convs.items():
        y = conv(x, edge_index)
        out[name] = y.detach().numpy()
        (g,) = torch.autograd.grad(y.pow(2).sum(), x)
        out[name + "_gx"] = g.numpy()
        for pname, p in conv.named_parameters():
            out[f"{name}_{pname}"] = p.detach().numpy()
    y, (ei, alpha) = convs["gat"](x, edge_index, return_attention_weights=True)
    out["gat_alpha"] = alpha.detach().numpy()
    out["gat_ei"] = ei.numpy()


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = GCNConv(3, 16)
            self.c2 = SAGEConv(16, 16)
            self.c3 = GATConv(16, 8, heads=2, concat=False)
            self.lin = torch.nn.Linear(24, 2)

        def forward(self, data):
            h = F.relu(self.c1(data.x, data.edge_index))
            h = F.relu(self.c2(h, data.edge_index))
            h = self.c3(h, data.edge_index)
            g = torch.cat([global_mean_pool(h, data.batch), global_max_pool(h, data.batch),
                           global_add_pool(h, data.batch)[:, :8] * 0.1], dim=1)
            return self.lin(g)


    torch.manual_seed(1)
    graphs = []
    for i in range(12):
        n = 4 + i % 5
        ring = torch.arange(n)
        ei = torch.stack([torch.cat([ring, (ring + 1) % n]), torch.cat([(ring + 1) % n, ring])])
        graphs.append(Data(x=torch.randn(n, 3), edge_index=ei, y=torch.tensor([i % 2])))
    loader = DataLoader(graphs, batch_size=4, shuffle=True)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses, batches = [], []
    for epoch in range(3):
        for data in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(data), data.y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            batches.append(data.batch.numpy().copy())
    out["losses"] = np.array(losses)
    out["batch_vectors"] = np.concatenate(batches)
    out["ptr"] = data.ptr.numpy()
    out["num_graphs"] = np.array(data.num_graphs)
    for pname, p in model.named_parameters():
        out["net_" + pname] = p.detach().numpy()
    np.savez(sys.argv[1], **out)
"""


@_needs("torch_geometric")
def test_torch_geometric_convs_pooling_and_training(tmp_path):
    t, e = _both(tmp_path, PYG_DRIVER)
    # a GAT layer's target-side attention vector has zero gradient in exact arithmetic (a
    # softmax over one node's incoming edges ignores a term shared by all of them), so Adam
    # steps it by rounding noise, which differs between any two implementations
    _assert_same(t, e, rtol=1e-5, atol=1e-6, skip=("net_c3.att_dst",))


# -- in process: what these libraries needed from ember --------------------------------------


def _transform_flags(lib, func):
    """Where ``lib._C._are_functorch_transforms_active()`` is True, through ``func``'s
    transforms and a custom Function's forward, backward, jvp and vmap rule."""
    active = lib._C._are_functorch_transforms_active
    seen = []

    class F(lib.autograd.Function):
        @staticmethod
        def forward(x):
            seen.append(("fwd", active()))
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            seen.append(("bwd", active()))
            return g * 2

        @staticmethod
        def jvp(ctx, x_dot):
            seen.append(("jvp", active()))
            return x_dot * 2

        @staticmethod
        def vmap(info, in_dims, x):
            seen.append(("vmap_rule", active()))
            return F.apply(x), in_dims[0]

    def f(x):
        seen.append(("f", active()))
        return F.apply(x).sin().sum()

    def g(x):
        seen.append(("g", active()))
        return F.apply(x)

    x = lib.linspace(0.1, 1.0, 3)
    seen.append(("outside", active()))
    func.grad(f)(x)
    func.grad(func.grad(lambda y: f(y) * y.sum()))(lib.tensor(0.5))
    func.vmap(g)(x)
    func.vmap(func.vmap(g))(x.reshape(1, 3))
    func.jvp(g, (x,), (lib.ones(3),))
    out, vjp_fn = func.vjp(g, x)
    vjp_fn(lib.ones(3))
    func.jacrev(g)(x)
    func.jacfwd(g)(x)
    func.functionalize(lambda y: seen.append(("h", active())) or y * 2)(x)
    func.vmap(func.grad(f))(x.reshape(3, 1))
    try:
        func.grad(lambda y: (_ for _ in ()).throw(ValueError("raised inside")))(x)
    except ValueError:
        pass
    seen.append(("after", active()))
    return seen


_EXPECTED_FLAGS = [
    ("outside", False),
    ("f", True), ("fwd", False), ("bwd", True),                    # grad
    ("f", True), ("fwd", False), ("bwd", True), ("bwd", True),     # grad(grad)
    ("g", True), ("vmap_rule", False), ("fwd", False),             # vmap
    ("g", True), ("vmap_rule", True), ("vmap_rule", False), ("fwd", False),  # vmap(vmap)
    ("g", True), ("fwd", False), ("jvp", True),                    # jvp
    ("g", True), ("fwd", False), ("bwd", False),                   # vjp, vjp_fn after it
    ("g", True), ("fwd", False), ("bwd", True),                    # jacrev
    ("g", True), ("fwd", False), ("jvp", True),                    # jacfwd
    ("h", True),                                                   # functionalize
    ("f", True), ("vmap_rule", False), ("fwd", False), ("bwd", True),  # vmap(grad)
    ("after", False),
]


def test_transforms_active_flag_follows_each_transform():
    from ember import func

    assert _transform_flags(ember, func) == _EXPECTED_FLAGS


@needs_torch
def test_transforms_active_flag_matches_torch():
    import torch
    from torch import func as torch_func

    from ember import func

    assert _transform_flags(ember, func) == _transform_flags(torch, torch_func)


def test_transforms_active_flag_is_per_thread():
    import threading

    from ember.func import grad

    seen = []

    def f(x):
        t = threading.Thread(target=lambda: seen.append(
            ember._C._are_functorch_transforms_active()))
        t.start()
        t.join()
        seen.append(ember._C._are_functorch_transforms_active())
        return x.sum()

    grad(f)(ember.ones(2))
    assert seen == [False, True]


def test_functorch_layer_depth_and_legacy_batched():
    from ember.func import grad, vmap

    depth = ember._C._functorch.get_dynamic_layer_stack_depth
    seen = []
    vmap(grad(lambda x: seen.append(depth()) or x.sum()))(ember.ones(2, 3))
    assert (depth(), seen) == (0, [2])
    assert ember._C._functorch.is_legacy_batchedtensor(ember.ones(2)) is False


def test_function_vmap_rule_applying_itself_under_nested_vmap():
    # the rule of the inner level runs at the outer level: its own apply goes to the outer
    # level's rule, then to forward (it used to recurse into the inner level's rule forever)
    from ember.func import vmap

    class AddBatch(ember.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def vmap(info, in_dims, x):
            return AddBatch.apply(x) + info.batch_size, in_dims[0]

    x = ember.arange(6.0).reshape(2, 3)
    assert ember.equal(vmap(vmap(AddBatch.apply))(x), x * 2 + 5)


def test_complex32_names_a_complex_dtype():
    assert ember.chalf is ember.complex32
    assert ember.complex32.is_complex and ember.complex32.itemsize == 4
    assert ember.complex32.to_real() is ember.float16
    t = ember.empty(2, dtype=ember.complex32)
    assert t.is_complex() and not t.is_floating_point() and t.dtype is ember.complex32
    assert not ember.zeros(2, dtype=ember.bits8).is_complex()


@needs_torch
def test_assert_async_raises_as_torch():
    import torch

    cases = [(True,), (1.0, "x"), (False, "msg"), (0,), ([1, 1],), ([],)]
    for args in cases:
        results = []
        for lib in (torch, ember):
            try:
                lib._assert_async(lib.tensor(args[0]), *args[1:])
                results.append(None)
            except RuntimeError as e:
                results.append(str(e))
        assert results[0] == results[1], args


def test_empty_tensor_truth_value_error_names_no_values():
    with pytest.raises(RuntimeError, match="with no values is ambiguous"):
        bool(ember.tensor([]))


def test_aten_handles_torch_geometric_keys_its_subclasses_by():
    aten = ember.ops.aten
    assert str(aten._pin_memory.default) == "aten._pin_memory.default"
    a = ember.tensor([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    b = ember.arange(6.0).reshape(3, 2)
    m = ember.ones(2, 2)
    out = aten._sparse_addmm.default(m, a.to_sparse(), b, beta=0.5, alpha=2.0)
    np.testing.assert_allclose(out.numpy(), (0.5 * m + 2 * a @ b).numpy())
    res, arg = aten._sparse_mm_reduce_impl.default(a.to_sparse_csr(), b, "sum")
    np.testing.assert_allclose(res.numpy(), (a @ b).numpy())
    assert arg.shape == (0,) and arg.dtype is ember.int64


def test_tensor_str_module_under_the_alias():
    # ``from torch._tensor_str import ...`` resolves to ember's printing module (an attribute
    # of ember, not a module of that name)
    from ember.compat import _ember_name

    mod = importlib.import_module(_ember_name("torch._tensor_str"))
    assert mod.PRINT_OPTS.threshold == ember._tensor_str.PRINT_OPTS.threshold
    assert mod._tensor_str(ember.tensor([[1, 2], [3, 4]]), 4) == "[[1, 2],\n     [3, 4]]"


def test_rpc_require_initialized_refuses_before_init_rpc():
    from ember.distributed.rpc.api import _require_initialized

    f = _require_initialized(lambda: 1)
    assert f.__name__ == "<lambda>"
    with pytest.raises(RuntimeError, match="RPC has not been initialized"):
        f()
