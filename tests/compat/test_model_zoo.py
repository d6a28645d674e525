"""timm's model zoo, optimizers, schedulers, losses and data helpers, on ember and on PyTorch.

Each test writes a driver program, runs it once on PyTorch and once on ember (``python -m
ember.compat.run``); both save their numbers to ``.npz`` files that are then compared. The
models are timm's own architectures at tiny sizes (its ``test_*`` models, or a family's
smallest member with shrunken depths and image sizes), built from the same seed, so forward
outputs, every parameter's gradient norm, eval-mode outputs and parameter counts must agree.
Models whose batch norms see one or two values per channel at their end are ill-conditioned in
float32 (both libraries drift from float64 by as much as they drift from each other), so those
run in float64. Skipped without timm or PyTorch.
"""

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ember

ROOT = Path(__file__).resolve().parents[2]

needs_timm = pytest.mark.skipif(
    any(importlib.util.find_spec(n) is None for n in ("torch", "timm")),
    reason="needs torch and timm")


def _standin(tmp_path):
    """The torchvision stand-in timm imports (see test_third_party_libs)."""
    from tests.compat.test_third_party_libs import _TIMM_TORCHVISION

    standin = tmp_path / "standin"
    for rel, text in _TIMM_TORCHVISION.items():
        path = standin / "torchvision" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return standin


def _both(tmp_path, source, *args):
    """Run ``source`` on PyTorch, then on ember; return the two saved dicts of arrays."""
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(source))
    # one thread each: the machine is shared, and PyTorch's thread pool only slows it then
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(_standin(tmp_path))]),
               PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
    results = []
    for name, prefix in (("torch", []), ("ember", ["-m", "ember.compat.run"])):
        out = tmp_path / f"{name}.npz"
        proc = subprocess.run([sys.executable, *prefix, str(driver), str(out), *args],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
        assert proc.returncode == 0, f"{name}:\n{proc.stderr[-4000:]}"
        results.append(dict(np.load(out)))
    return results


def _assert_same(t, e, rtol, atol):
    assert sorted(t) == sorted(e)
    for key in t:
        if t[key].dtype.kind in "fc":
            np.testing.assert_allclose(e[key], t[key], rtol=rtol, atol=atol, err_msg=key)
        else:
            np.testing.assert_array_equal(e[key], t[key], err_msg=key)


# -- architectures --------------------------------------------------------------------------

ZOO_DRIVER = """
    import sys
    import numpy as np
    import torch
    import timm

    # (name, create_model overrides, image size)
    MODELS = {
        "convnets": [
            ("test_byobnet", {}, 32), ("test_convnext", {}, 32), ("test_convnext2", {}, 32),
            ("test_convnext3", {}, 32), ("test_efficientnet", {}, 32),
            ("test_efficientnet_evos", {}, 32), ("test_efficientnet_gn", {}, 32),
            ("test_efficientnet_ln", {}, 32), ("test_mambaout", {}, 32), ("test_nfnet", {}, 32),
            ("test_resnet", {}, 32), ("mobilenetv3_small_050", {}, 32), ("regnetx_002", {}, 32),
            ("convmixer_768_32", {}, 32), ("poolformer_s12", {}, 32),
            ("poolformerv2_s12", {}, 32), ("ghostnet_050", {}, 32),
            ("densenet121", dict(block_config=(1, 1, 1, 1), growth_rate=8), 32),
            ("repvit_m0_9", {}, 64), ("fastvit_t8", {}, 64), ("rexnet_100", {}, 32),
            ("dla34", {}, 32), ("resnest14d", {}, 32), ("inception_next_atto", {}, 32),
            ("ese_vovnet19b_slim_dw", {}, 32), ("dpn48b", {}, 32), ("nf_regnet_b0", {}, 32),
        ],
        "transformers": [
            ("test_coatnet", {}, 160), ("test_maxvit", {}, 160), ("test_vit", {}, 64),
            ("test_vit2", {}, 64), ("test_vit3", {}, 160), ("test_vit4", {}, 64),
            ("test_vit_relpos", {}, 160),
            ("swin_tiny_patch4_window7_224", dict(img_size=56, depths=(1, 1, 1, 1), embed_dim=24,
                                                  num_heads=(1, 2, 2, 4)), 56),
            ("deit_tiny_patch16_224", dict(img_size=32, depth=2), 32),
            ("deit_tiny_distilled_patch16_224", dict(img_size=32, depth=2), 32),
            ("beit_base_patch16_224", dict(img_size=32, depth=2, embed_dim=48, num_heads=2), 32),
            ("eva02_tiny_patch14_224", dict(img_size=28, depth=2), 28),
            ("levit_128s", dict(img_size=64), 64), ("mixer_s32_224", dict(img_size=64), 64),
            ("cait_xxs24_224", dict(img_size=32, depth=2, depth_token_only=1), 32),
            ("xcit_nano_12_p16_224", dict(img_size=32, depth=2), 32), ("pvt_v2_b0", {}, 64),
            ("mobilevit_xxs", {}, 64), ("edgenext_xx_small", {}, 64),
            ("tiny_vit_5m_224", {}, 64),
            ("hiera_tiny_224", dict(img_size=(64, 64), stages=(1, 1, 1, 1), embed_dim=16,
                                    num_heads=1), 64),
            ("gcvit_xxtiny", dict(img_size=64), 64),
            ("davit_tiny", dict(depths=(1, 1, 1, 1), embed_dims=(16, 32, 48, 64),
                                num_heads=(1, 1, 1, 1)), 64),
            ("twins_svt_small", dict(img_size=64, depths=(1, 1, 1, 1)), 64),
            ("convit_tiny", dict(img_size=32, depth=2, local_up_to_layer=1), 32),
            ("visformer_tiny", dict(img_size=32), 32),
            ("nest_tiny", dict(img_size=32, patch_size=2), 32),
            ("sequencer2d_s", dict(layers=(1, 1, 1, 1)), 32), ("crossvit_tiny_240", {}, 240),
        ],
    }
    # batch norms over one or two values per channel: float32 rounding is amplified past any
    # fair tolerance in both libraries alike, so these compare in float64
    FLOAT64 = {"test_efficientnet", "ghostnet_050", "convmixer_768_32", "rexnet_100", "dla34",
               "ese_vovnet19b_slim_dw", "dpn48b", "levit_128s", "visformer_tiny"}

    out = {}
    for name, kw, size in MODELS[sys.argv[2]]:
        dtype = torch.float64 if name in FLOAT64 else torch.float32
        torch.manual_seed(0)
        m = timm.create_model(name, pretrained=False, num_classes=5, **kw).to(dtype)
        torch.manual_seed(1)
        x = torch.randn(2, 3, size, size).to(dtype)
        y = m(x)
        y = y[0] if isinstance(y, (tuple, list)) else y
        y.square().mean().backward()
        out[name] = y.detach().numpy()
        out[name + "_n"] = np.array(sum(p.numel() for p in m.parameters()))
        out[name + "_gnorm"] = np.array(
            [p.grad.double().norm().item() for p in m.parameters() if p.grad is not None])
        m.eval()
        with torch.no_grad():
            out[name + "_eval"] = m(x).numpy()
            feats = m.forward_features(x)
        if torch.is_tensor(feats):
            out[name + "_features"] = np.array(feats.shape)
    np.savez(sys.argv[1], **out)
"""


@needs_timm
@pytest.mark.parametrize("family", ["convnets", "transformers"])
def test_timm_architectures_match_torch(family, tmp_path):
    t, e = _both(tmp_path, ZOO_DRIVER, family)
    assert len(t) >= 5 * 27
    _assert_same(t, e, rtol=1e-3, atol=1e-4)


# -- optimizers, schedulers, losses, data helpers --------------------------------------------

TRAIN_DRIVER = """
    import random, sys
    import numpy as np
    import torch
    import timm
    from timm.data import Mixup
    from timm.data.loader import MultiEpochsDataLoader, PrefetchLoader, fast_collate
    from timm.data.random_erasing import RandomErasing
    from timm.loss import (AsymmetricLossMultiLabel, AsymmetricLossSingleLabel,
                           BinaryCrossEntropy, JsdCrossEntropy, LabelSmoothingCrossEntropy,
                           SoftTargetCrossEntropy)
    from timm.optim import create_optimizer_v2
    from timm.scheduler import create_scheduler_v2
    from timm.utils import ModelEmaV3, accuracy, dispatch_clip_grad

    out = {}
    OPTS = ["sgd", "momentum", "nesterov", "adam", "adamw", "nadam", "nadamw", "radam",
            "adamax", "adamp", "sgdp", "adadelta", "adagrad", "rmsprop", "rmsproptf", "lamb",
            "lambc", "lars", "nlars", "adabelief", "radabelief", "adafactor", "adafactorbv",
            "lion", "madgrad", "novograd", "adan", "adopt", "laprop", "mars", "muon",
            "adamuon", "cadamw", "clion", "adahessian"]


    def build():
        # float64 and no normalisation layer: a parameter whose true gradient is zero (a bias
        # before a norm) gets rounding noise of either sign, which sign-based updates (lion)
        # turn into whole steps, in either library
        torch.manual_seed(0)
        nn = torch.nn
        return nn.Sequential(nn.Conv2d(3, 4, 3, stride=2), nn.GELU(),
                             nn.Conv2d(4, 4, 3, stride=2), nn.Tanh(), nn.Flatten(),
                             nn.Linear(4 * 7 * 7, 4)).double()


    torch.manual_seed(1)
    X = torch.randn(4, 3, 32, 32, dtype=torch.float64)
    Y = torch.tensor([0, 1, 2, 3])
    for opt in OPTS:
        m = build()
        o = create_optimizer_v2(m, opt, lr=1e-2, weight_decay=0.01)
        for _ in range(3):
            o.zero_grad()
            loss = torch.nn.functional.cross_entropy(m(X), Y)
            loss.backward(create_graph=opt == "adahessian")
            dispatch_clip_grad(m.parameters(), 1.0, mode="norm")
            o.step()
        out["opt_" + opt] = torch.cat([p.detach().flatten() for p in m.parameters()]).numpy()
        out["opt_" + opt + "_groups"] = np.array([len(g["params"]) for g in o.param_groups])

    for sched in ["cosine", "tanh", "step", "multistep", "plateau", "poly", "wsd"]:
        o = create_optimizer_v2(build(), "sgd", lr=0.1)
        s, n = create_scheduler_v2(o, sched, num_epochs=6, warmup_epochs=2, decay_epochs=2,
                                   decay_milestones=[2, 4], cooldown_epochs=1,
                                   step_on_epochs=True, updates_per_epoch=2, warmup_lr=1e-3,
                                   min_lr=1e-4)
        lrs = []
        for ep in range(n):
            for u in range(2):
                s.step_update(ep * 2 + u + 1)
                lrs.append(o.param_groups[0]["lr"])
            s.step(ep + 1, metric=1.0)
            lrs.append(o.param_groups[0]["lr"])
        out["sched_" + sched] = np.array(lrs)

    ds = [(np.random.RandomState(i).randint(0, 255, (3, 8, 8)).astype(np.uint8), i % 4)
          for i in range(8)]
    loader = MultiEpochsDataLoader(ds, batch_size=4, collate_fn=fast_collate, num_workers=0)
    prefetch = PrefetchLoader(loader, mean=(0.5, 0.4, 0.3), std=(0.2, 0.3, 0.4),
                              device=torch.device("cpu"))
    for i, (xb, yb) in enumerate(prefetch):
        out[f"prefetch_{i}"] = xb.numpy()
        out[f"prefetch_y_{i}"] = yb.numpy()
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    for mode in ("batch", "pair", "elem"):
        mix = Mixup(mixup_alpha=0.8, cutmix_alpha=1.0, switch_prob=0.5, mode=mode,
                    label_smoothing=0.1, num_classes=4)
        xb = torch.arange(4 * 3 * 8 * 8, dtype=torch.float32).reshape(4, 3, 8, 8)
        xm, ym = mix(xb, torch.tensor([0, 1, 2, 3]))
        out["mix_" + mode] = xm.numpy()
        out["mix_target_" + mode] = ym.numpy()
    torch.manual_seed(0)
    random.seed(0)
    erase = RandomErasing(probability=1.0, mode="pixel", device="cpu", max_count=2)
    out["erase"] = erase(torch.zeros(2, 3, 16, 16)).numpy()

    torch.manual_seed(2)
    logits = torch.randn(6, 4, requires_grad=True)
    target = torch.tensor([0, 1, 2, 3, 0, 1])
    soft = torch.softmax(torch.randn(6, 4), -1)
    losses = {
        "smooth": LabelSmoothingCrossEntropy(0.1)(logits, target),
        "soft": SoftTargetCrossEntropy()(logits, soft),
        "bce": BinaryCrossEntropy(smoothing=0.1)(logits, target),
        "bce_threshold": BinaryCrossEntropy(target_threshold=0.2)(logits, soft),
        "jsd": JsdCrossEntropy(num_splits=2)(logits, target),
        "asl": AsymmetricLossSingleLabel()(logits, target),
        "asl_multi": AsymmetricLossMultiLabel()(logits, (soft > 0.25).float()),
    }
    for k, v in losses.items():
        g, = torch.autograd.grad(v, logits)
        out["loss_" + k] = v.detach().numpy()
        out["loss_grad_" + k] = g.numpy()
    out["accuracy"] = np.array([float(a) for a in accuracy(logits, target, topk=(1, 3))])
    m = build()
    ema = ModelEmaV3(m, decay=0.9)
    with torch.no_grad():
        for p in m.parameters():
            p.add_(1.0)
    ema.update(m, step=10)
    out["ema"] = torch.cat([p.detach().flatten() for p in ema.module.parameters()]).numpy()
    np.savez(sys.argv[1], **out)
"""


@needs_timm
def test_timm_optimizers_schedulers_losses_and_data_match_torch(tmp_path):
    t, e = _both(tmp_path, TRAIN_DRIVER)
    assert len(t) > 90
    _assert_same(t, e, rtol=1e-4, atol=1e-5)


# -- the ember fixes these programs needed ---------------------------------------------------

def test_matmul_augmented_assignment_rebinds_as_torch():
    # timm's Kron optimizer writes ``tmp @= q`` in a loop; PyTorch has no in-place matmul, so
    # the name is rebound to a new tensor of any shape and the old one (and its views) is kept
    torch = pytest.importorskip("torch")
    for lib in (torch, ember):
        a = lib.arange(6.0).reshape(3, 2)
        view = a[0]
        before = a
        for b in (lib.ones(2, 4), lib.ones(4, 4)):  # twice: the second call used to fail
            a @= b
        assert a is not before and tuple(a.shape) == (3, 4)
        assert view.tolist() == [0.0, 1.0]
        x = lib.ones(2, 2, requires_grad=True)
        y = x * 1
        y @= lib.full((2, 2), 3.0)
        y.sum().backward()
        assert x.grad.tolist() == [[6.0, 6.0], [6.0, 6.0]]


def test_inplace_add_through_reshape_of_permuted_view_grads_as_torch():
    # vit-pytorch's CCT: ``rearrange(conv(x), "b c h w -> b (h w) c")`` is a reshape view of a
    # permuted tensor, then ``x += pos_emb``; the in-place write's backward replays the view
    # chain on a gradient of another layout, which the recorded strides used to misread
    torch = pytest.importorskip("torch")
    rs = np.random.RandomState(0)
    x0, pe0, g0 = rs.randn(2, 4, 4, 4), rs.randn(1, 16, 4), rs.randn(2, 16, 4)
    grads = []
    for lib in (torch, ember):
        x = lib.tensor(x0, requires_grad=True)
        pe = lib.tensor(pe0, requires_grad=True)
        t = (x * 2).permute(0, 2, 3, 1).reshape(2, 16, 4)
        t += pe
        (t * lib.tensor(g0)).sum().backward()
        grads.append((x.grad.numpy(), pe.grad.numpy(), t.detach().numpy()))
    for want, got in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
