"""Popular public programs, run unchanged on ember and on PyTorch with equal numbers.

Vendored under ``programs/third_party/`` (see its README; each folder holds the upstream
licence): vwxyzjn/cleanrl's ``ppo.py``, ``dqn.py`` and ``sac_continuous_action.py`` with its
replay buffer; yunjey/pytorch-tutorial's GAN, VAE and LSTM language-model scripts and its
image-captioning model; fxia22/pointnet.pytorch's model; harvardnlp/annotated-transformer's
transformer, label smoothing, Noam schedule, ``run_epoch`` and ``greedy_decode``;
yenchenlin/nerf-pytorch's ``create_nerf``/``render`` (hierarchical sampling, view directions,
NDC rays); eriklindernoren/PyTorch-GAN's WGAN-GP, WGAN-div (double backward), InfoGAN, ACGAN,
CGAN and AAE scripts, and two of its scripts that stop with an error on PyTorch 2 (ember must
raise the same error at the same line).

Scripts run as ``__main__`` from their own source, with command-line flags or a few whole
hyper-parameter lines replaced (each must match exactly, so an upstream change fails loudly);
their non-PyTorch dependencies come from ``programs/research_3_standins/`` (a seeded synthetic
gymnasium environment, ``tyro``, ``configargparse``, empty modules) and
``programs/torchvision_standin/`` (synthetic MNIST; ``save_image`` writes a checksum). One
driver runs everything once on PyTorch and once under ``python -m ember.compat.run``; printed
lines, checkpoints, losses, gradients, parameters and samples are compared.
milesial/Pytorch-UNet is GPL-3.0 licensed, so is not vendored.
"""

import importlib.util
from pathlib import Path

import pytest

from tests.compat._programs import assert_runs_match, driver_source, run_both

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = Path(__file__).parent / "programs"
THIRD_PARTY = PROGRAMS / "third_party"

DRIVER = """
    import contextlib
    import io
    import json
    import os
    import random
    import re
    import sys
    import types
    import numpy as np
    import torch

    TP = sys.argv[2]
    which = sys.argv[3].split(",")
    result = sys.argv[1]
    base = os.getcwd()
    NUM = r"-?\\d+\\.\\d+(?:e[-+]\\d+)?"  # a printed float


    def source(path, subs):
        # the file's own text with a few whole lines replaced, each found exactly once
        lines = open(path).read().split("\\n")
        for old, new in subs:
            assert lines.count(old) == 1, (path, old)
            lines[lines.index(old)] = new
        return "\\n".join(lines)


    def run_script(prefix, path, subs=(), drop=(), argv=()):
        # the script's own text, a few lines replaced, run as __main__ in a fresh folder
        src = source(path, subs)
        sys.argv[1:] = list(argv)
        work = os.path.join(base, prefix)
        os.makedirs(work, exist_ok=True)
        os.chdir(work)
        sys.path.insert(0, os.path.dirname(path))
        buf = io.StringIO()
        g = {"__name__": "__main__", "__file__": path}
        try:
            with contextlib.redirect_stdout(buf):
                exec(compile(src, path, "exec"), g)
        finally:
            sys.path.pop(0)
            os.chdir(base)
        lines = [ln for ln in buf.getvalue().splitlines() if not ln.startswith(drop)]
        out[prefix + "_stdout"] = np.array(lines or [""])
        return g, work


    def files(prefix, work):
        # save_image's checksums and the checkpoints the script wrote
        for root, _, names in sorted(os.walk(work)):
            for name in sorted(names):
                full = os.path.join(root, name)
                key = f"{prefix}_{os.path.relpath(full, work)}"
                if name.endswith((".ckpt", ".pt")):
                    for k, v in torch.load(full, weights_only=True).items():
                        out[f"{key}_{k}"] = v.numpy()
                else:  # save_image's checksums and text: numbers with a tolerance
                    lines = open(full).read().splitlines() or [""]
                    out[key] = np.array([re.sub(NUM, "#", ln) for ln in lines])
                    out[key + "_numbers"] = np.array(
                        [float(x) for ln in lines for x in re.findall(NUM, ln)])


    if any(w in ("ppo", "dqn", "sac") for w in which):
        scalars = []

        class SummaryWriter:
            def __init__(self, *a, **k):
                pass

            def add_text(self, *a, **k):
                pass

            def add_scalar(self, tag, value, step):
                if tag != "charts/SPS":  # (TensorBoard's takes tensors that need grad too)
                    value = value.detach() if torch.is_tensor(value) else value
                    scalars.append(float(np.asarray(value).reshape(-1)[0]))

            def close(self):
                pass

        tb = types.ModuleType("torch.utils.tensorboard")
        tb.SummaryWriter = SummaryWriter
        sys.modules["torch.utils.tensorboard"] = tb
        sys.path.insert(0, TP + "/cleanrl")  # for cleanrl_utils

    if "ppo" in which:
        scalars.clear()
        os.environ["TYRO_OVERRIDES"] = json.dumps(dict(
            total_timesteps=192, num_envs=2, num_steps=32, update_epochs=2, num_minibatches=2,
            cuda=False))
        g, _ = run_script("ppo", TP + "/cleanrl/cleanrl/ppo.py", drop=("SPS:",))
        out["ppo_scalars"] = np.array(scalars)
        params("ppo", g["agent"])
        grads("ppo", g["agent"])
        out["ppo_obs"] = g["obs"].numpy()
        out["ppo_actions"] = g["actions"].numpy()
        out["ppo_advantages"] = g["advantages"].numpy()

    if "dqn" in which:
        scalars.clear()
        os.environ["TYRO_OVERRIDES"] = json.dumps(dict(
            total_timesteps=240, learning_starts=60, train_frequency=4, batch_size=16,
            buffer_size=500, target_network_frequency=40, tau=0.5, cuda=False))
        g, _ = run_script("dqn", TP + "/cleanrl/cleanrl/dqn.py", drop=("SPS:",))
        out["dqn_scalars"] = np.array(scalars)
        params("dqn_q", g["q_network"])
        params("dqn_target", g["target_network"])
        grads("dqn", g["q_network"])

    if "sac" in which:
        scalars.clear()
        os.environ["TYRO_OVERRIDES"] = json.dumps(dict(
            env_id="Pendulum-v1", total_timesteps=90, learning_starts=30, batch_size=16,
            buffer_size=500, policy_frequency=2, target_network_frequency=1, cuda=False))
        g, _ = run_script("sac", TP + "/cleanrl/cleanrl/sac_continuous_action.py",
                          drop=("SPS:",))
        # continuous actions carry rounding into the environment: its printed returns differ
        # in the 7th digit, so they are compared as numbers
        printed = [ln.split(", episodic_return=") for ln in out.pop("sac_stdout")]
        out["sac_printed_steps"] = np.array([ln[0] for ln in printed])
        out["sac_printed_returns"] = np.array([float(ln[1].strip("[]")) for ln in printed])
        out["sac_scalars"] = np.array(scalars)
        for name in ("actor", "qf1", "qf2", "qf1_target", "qf2_target"):
            params("sac_" + name, g[name])
        out["sac_log_alpha"] = g["log_alpha"].detach().numpy()
        out["sac_alpha"] = np.array(g["alpha"])

    if "gan" in which:
        torch.manual_seed(0)
        d = TP + "/yunjey_tutorial/generative_adversarial_network/main.py"
        g, work = run_script("gan", d, [("num_epochs = 200", "num_epochs = 3"),
                                        ("batch_size = 100", "batch_size = 64")])
        files("gan", work)
        out["gan_d_loss"] = g["d_loss"].detach().numpy()
        out["gan_g_loss"] = g["g_loss"].detach().numpy()
        grads("gan_G", g["G"])

    if "vae" in which:
        torch.manual_seed(0)
        d = TP + "/yunjey_tutorial/variational_autoencoder/main.py"
        g, work = run_script("vae", d, [("num_epochs = 15", "num_epochs = 2"),
                                        ("h_dim = 400", "h_dim = 64")])
        files("vae", work)
        params("vae", g["model"])
        grads("vae", g["model"])
        out["vae_loss"] = g["loss"].detach().numpy()

    if "lm" in which:
        torch.manual_seed(0)
        rng = np.random.default_rng(0)
        words = [f"w{i}" for i in range(40)]
        os.makedirs("lm/data", exist_ok=True)
        with open("lm/data/train.txt", "w") as f:
            for _ in range(60):
                f.write(" " + " ".join(rng.choice(words, rng.integers(3, 12))) + " \\n")
        d = TP + "/yunjey_tutorial/language_model/main.py"
        g, work = run_script("lm", d, [
            ("hidden_size = 1024", "hidden_size = 48"), ("embed_size = 128", "embed_size = 16"),
            ("num_epochs = 5", "num_epochs = 2"), ("seq_length = 30", "seq_length = 10"),
            ("num_samples = 1000     # number of words to be sampled", "num_samples = 120")])
        files("lm", work)
        grads("lm", g["model"])
        sys.modules.pop("data_utils")

    if "caption" in which:
        sys.path.insert(0, TP + "/yunjey_tutorial/image_captioning")
        import torchvision.models
        from torch.nn.utils.rnn import pack_padded_sequence
        torchvision.models.resnet152 = lambda pretrained=False: torchvision.models.resnet18()
        from model import DecoderRNN, EncoderCNN
        torch.manual_seed(0)
        enc, dec = EncoderCNN(12), DecoderRNN(12, 16, 30, 2, max_seq_length=6)
        params_ = list(dec.parameters()) + list(enc.linear.parameters()) + list(
            enc.bn.parameters())
        opt = torch.optim.Adam(params_, lr=1e-3)
        images = torch.randn(3, 3, 32, 32)
        captions = torch.randint(1, 30, (3, 7))
        lengths = [7, 5, 2]
        for step in range(2):
            targets = pack_padded_sequence(captions, lengths, batch_first=True)[0]
            features = enc(images)
            outputs = dec(features, captions, lengths)
            loss = torch.nn.CrossEntropyLoss()(outputs, targets)
            dec.zero_grad()
            enc.zero_grad()
            loss.backward()
            if step == 0:
                grads("cap_dec", dec)
                grads("cap_enc", enc)
            opt.step()
            out[f"cap_loss{step}"] = loss.detach().numpy()
        enc.eval()
        out["cap_sample"] = dec.sample(enc(images)).numpy()
        out["cap_bn_mean"] = enc.bn.running_mean.numpy()
        sys.path.pop(0)
        del sys.modules["model"]

    if "pointnet" in which:
        sys.path.insert(0, TP + "/pointnet")
        import torch.nn.functional as F
        from pointnet.model import (PointNetCls, PointNetDenseCls,
                                    feature_transform_regularizer)
        torch.manual_seed(0)
        cls = PointNetCls(k=5, feature_transform=True)
        seg = PointNetDenseCls(k=3, feature_transform=True)
        # SGD, not the training script's Adam: the biases before each BatchNorm have zero
        # gradient in exact arithmetic, and Adam would blow their rounding up to full steps.
        # A batch of 8 keeps the batch norms over (8, 512) features well conditioned.
        opt = torch.optim.SGD(list(cls.parameters()) + list(seg.parameters()), lr=1e-2,
                              momentum=0.9)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        points = torch.randn(8, 3, 32)
        target = torch.randint(0, 5, (8,))
        seg_target = torch.randint(0, 3, (8, 32))
        for step in range(2):
            opt.zero_grad()
            pred, trans, trans_feat = cls(points)
            loss = F.nll_loss(pred, target) + 0.001 * feature_transform_regularizer(trans_feat)
            spred, _, strans_feat = seg(points)
            sl = F.nll_loss(spred.view(-1, 3), seg_target.view(-1)) + (
                0.001 * feature_transform_regularizer(strans_feat))
            (loss + sl).backward()
            if step == 0:
                # the gradients of the shared feature nets are ill-conditioned at this size
                # (below): a change of summation order moves them by 1e-4 of their scale, so
                # only the classifier head's are compared
                grads("pn_cls", cls, skip=("feat.",))
                # nor the segmentation net's: the per-cloud feature, repeated over points, is
                # batch-normalised over only 8 distinct values, and PyTorch's own one- and
                # two-threaded runs differ by up to 1% (float64 ember and PyTorch agree to 1e-7)
            opt.step()
            sched.step()
            out[f"pn_loss{step}"] = loss.detach().numpy()
            if step == 0:  # (after a step, the seg net carries its ill-conditioned update)
                out["pn_sloss"] = sl.detach().numpy()
                out["pn_spred"] = spred.detach().numpy()
            out[f"pn_trans{step}"] = trans.detach().numpy()
        cls.eval()
        with torch.no_grad():
            pred, _, _ = cls(points)
            out["pn_eval"] = pred.numpy()
            out["pn_choice"] = pred.data.max(1)[1].numpy()
        sys.path.pop(0)
        del sys.modules["pointnet"], sys.modules["pointnet.model"]

    if "annotated" in which:
        sys.path.insert(0, TP + "/annotated_transformer")
        try:
            import pandas  # noqa: F401  (imported by the module, used only to draw charts)
        except ImportError:
            sys.modules["pandas"] = types.ModuleType("pandas")
        # its import runs one example (60,000 optimiser steps, drawn with altair): left out
        path = TP + "/annotated_transformer/the_annotated_transformer.py"
        at = types.ModuleType("the_annotated_transformer")
        at.__file__ = path
        exec(compile(source(path, [("example_learning_schedule()", "")]), path, "exec"),
             at.__dict__)
        torch.manual_seed(0)
        V = 11
        model = at.make_model(V, V, N=2, d_model=32, d_ff=64, h=4, dropout=0.1)
        criterion = at.LabelSmoothing(size=V, padding_idx=0, smoothing=0.1)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.5, betas=(0.9, 0.98), eps=1e-9)
        lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer=optimizer,
            lr_lambda=lambda step: at.rate(step, model_size=32, factor=1.0, warmup=400))
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            for epoch in range(2):
                model.train()
                loss, state = at.run_epoch(at.data_gen(V, 8, 3), model,
                                           at.SimpleLossCompute(model.generator, criterion),
                                           optimizer, lr_scheduler, mode="train",
                                           accum_iter=2)
                out[f"at_train{epoch}"] = np.array(float(loss))
                model.eval()
                ev = at.run_epoch(at.data_gen(V, 8, 2), model,
                                  at.SimpleLossCompute(model.generator, criterion),
                                  at.DummyOptimizer(), at.DummyScheduler(), mode="eval")[0]
                out[f"at_eval{epoch}"] = np.array(float(ev))
        out["at_log"] = np.array([  # all but the timings
            " | ".join(p for p in ln.split(" | ") if "Sec" not in p)
            for ln in buf.getvalue().splitlines()] or [""])
        src = torch.LongTensor([[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]])
        out["at_greedy"] = at.greedy_decode(model, src, torch.ones(1, 1, 10), max_len=10,
                                            start_symbol=0).numpy()
        # (the key projection's bias has zero gradient under softmax: Adam turns its rounding
        # into full-size steps, so it is left out)
        params("at", model, skip=("attn.linears.1.bias",))
        out["at_lr"] = np.array([at.rate(s, 512, 1.0, 4000) for s in range(1, 50, 7)])
        out["at_mask"] = at.subsequent_mask(5).numpy()
        crit = at.LabelSmoothing(5, 0, 0.4)
        x = torch.log_softmax(torch.randn(3, 5), -1)
        out["at_ls"] = crit(x, torch.LongTensor([2, 1, 0])).numpy()
        out["at_ls_dist"] = crit.true_dist.numpy()
        sys.path.pop(0)

    if "nerf" in which:
        sys.path.insert(0, TP + "/nerf")
        try:
            import matplotlib.pyplot  # noqa: F401  (imported by run_nerf, never used)
        except ImportError:
            sys.modules["matplotlib"] = types.ModuleType("matplotlib")
            sys.modules["matplotlib.pyplot"] = types.ModuleType("matplotlib.pyplot")
        import run_nerf
        from run_nerf_helpers import get_rays, get_rays_np, img2mse, mse2psnr, sample_pdf, to8b
        os.makedirs("nerf_logs/tiny", exist_ok=True)
        torch.manual_seed(0)
        args = run_nerf.config_parser().parse_args([
            "--expname", "tiny", "--basedir", "nerf_logs", "--netdepth", "3", "--netwidth", "16",
            "--netdepth_fine", "2", "--netwidth_fine", "16", "--N_samples", "8",
            "--N_importance", "6", "--use_viewdirs", "--multires", "4", "--multires_views", "2",
            "--raw_noise_std", "1.0", "--chunk", "24", "--netchunk", "100",
            "--dataset_type", "llff", "--lrate", "5e-3"])
        with contextlib.redirect_stdout(io.StringIO()):
            train_kw, test_kw, start, grad_vars, opt = run_nerf.create_nerf(args)
        H, W, focal = 6, 8, 5.0
        K = np.array([[focal, 0, 0.5 * W], [0, focal, 0.5 * H], [0, 0, 1]])
        c2w = torch.tensor([[1.0, 0, 0, 0.1], [0, 0.96, -0.28, 0.2], [0, 0.28, 0.96, 1.5]])
        target = torch.rand(H, W, 3)
        rays_o, rays_d = get_rays(H, W, K, c2w)
        rays_o_np, _ = get_rays_np(H, W, K, c2w.numpy())
        out["nerf_rays_np"] = rays_o_np
        batch = torch.stack([rays_o.reshape(-1, 3)[:30], rays_d.reshape(-1, 3)[:30]], 0)
        for step in range(2):
            torch.manual_seed(1 + step)
            rgb, disp, acc, extras = run_nerf.render(H, W, K, chunk=args.chunk, rays=batch,
                                                     near=0.0, far=1.0, **train_kw)
            loss = img2mse(rgb, target.reshape(-1, 3)[:30]) + img2mse(
                extras["rgb0"], target.reshape(-1, 3)[:30])
            opt.zero_grad()
            loss.backward()
            if step == 0:
                grads("nerf_coarse", train_kw["network_fn"])
                grads("nerf_fine", train_kw["network_fine"])
                for k, v in extras.items():
                    out[f"nerf_extra_{k}"] = v.detach().numpy()
                out["nerf_disp"] = disp.detach().numpy()
                out["nerf_acc"] = acc.detach().numpy()
            opt.step()
            out[f"nerf_loss{step}"] = loss.detach().numpy()
            out[f"nerf_psnr{step}"] = mse2psnr(loss.detach()).numpy()
        with torch.no_grad():  # a whole image, the test-time way (NDC, no noise)
            rgb, disp, acc, _ = run_nerf.render(H, W, K, chunk=args.chunk, c2w=c2w,
                                                near=0.0, far=1.0, **test_kw)
        out["nerf_image"] = to8b(rgb.numpy())
        out["nerf_image_disp"] = disp.numpy()
        torch.manual_seed(3)
        bins = torch.linspace(0, 1, 9).expand(4, 9)
        w = torch.rand(4, 8)
        out["nerf_pdf_det"] = sample_pdf(bins, w, 5, det=True).numpy()
        out["nerf_pdf"] = sample_pdf(bins, w, 5).numpy()
        sys.path.pop(0)

    GANS = ("wgan_gp", "wgan_div", "infogan", "acgan", "cgan", "aae")
    for name in GANS:
        if name in which or "pytorch_gan" in which:
            torch.manual_seed(0)
            np.random.seed(0)
            path = f"{TP}/pytorch_gan/{name}/{name}.py"
            # (InfoGAN's samples after three Adam steps carry Adam's first-step sign-flips of
            # rounding-level gradients, 5e-4 of the image: it samples at step 0 only)
            every = "100" if name == "infogan" else "3"
            g, work = run_script("pg_" + name, path, argv=["--n_epochs", "1",
                                                           "--sample_interval", every])
            files("pg_" + name, work)
            # losses are printed with %f: the text is compared, the numbers with a tolerance
            # (a 6th decimal may round the other way)
            lines = out.pop(f"pg_{name}_stdout")
            out[f"pg_{name}_text"] = np.array([re.sub(NUM, "#", ln) for ln in lines])
            out[f"pg_{name}_numbers"] = np.array(
                [float(x) for ln in lines for x in re.findall(NUM, ln)])
            out[f"pg_{name}_g_loss"] = g["g_loss"].detach().numpy()
    # these two stop with an error on PyTorch 2 (a legacy ``.data[0]`` of a 0-d tensor; an
    # in-place write to a saved tensor): ember must stop at the same line with the same error
    for name in ("began", "softmax_gan"):
        if name in which or "pytorch_gan" in which:
            torch.manual_seed(0)
            try:
                run_script("pg_" + name, f"{TP}/pytorch_gan/{name}/{name}.py",
                           argv=["--n_epochs", "1"])
                out[f"pg_{name}_error"] = np.array("none")
            except (IndexError, RuntimeError) as e:
                tb, line = e.__traceback__, None
                while tb is not None:  # the script's own line that raised
                    if name in tb.tb_frame.f_code.co_filename:
                        line = tb.tb_lineno
                    tb = tb.tb_next
                out[f"pg_{name}_error"] = np.array(
                    [type(e).__name__, str(e).split(":")[0], str(line)])

    np.savez(result, **out)
"""


def _both(tmp_path, which):
    driver = tmp_path / "driver.py"
    driver.write_text(driver_source(DRIVER))
    return run_both(tmp_path, driver, [THIRD_PARTY, which],
                    [ROOT, PROGRAMS / "research_3_standins", PROGRAMS / "torchvision_standin"])


@pytest.mark.parametrize("which, expected", [
    ("ppo,dqn,sac", 60),
    ("gan,vae,lm", 40),
    ("caption,pointnet,annotated", 100),
    ("nerf", 30),
    ("pytorch_gan", 20)])
def test_programs_match_torch(which, expected, tmp_path):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("needs torch")
    # GANs train each network on the other's output, and PointNet's input transform on a
    # few points: rounding differences (OpenBLAS's Haswell kernels round by the row count;
    # without numba ember takes its NumPy kernels) grow over their steps
    grows = ("gan,vae,lm", "caption,pointnet,annotated", "pytorch_gan")
    assert_runs_match(*_both(tmp_path, which), expected,
                      atol=2e-4 if which in grows else 2e-5)
