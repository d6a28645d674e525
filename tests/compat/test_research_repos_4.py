"""Graph networks, vision backbones, detection, RL, a mixture of experts, BERT and RWKV from
public repositories, run unchanged on ember and on PyTorch with equal numbers.

Vendored under ``programs/third_party/`` (see its README; each folder holds the upstream
licence):

- tkipf/pygcn's ``train.py`` (sparse adjacency, ``torch.spmm``) and Diego999/pyGAT's
  ``train.py`` in its dense and sparse forms (a custom autograd Function over a COO tensor;
  checkpoints written, globbed, pruned and reloaded), run as ``__main__`` with command-line
  flags on a seeded synthetic citation graph in Cora's file format;
- facebookresearch/ConvNeXt's model; microsoft/Swin-Transformer's models (shifted windows,
  relative position bias, activation checkpointing; v2's cosine attention and continuous
  position bias; Swin-MLP); 36 more of lucidrains/vit-pytorch's variants (float64);
- lucidrains/denoising-diffusion-pytorch (Gaussian diffusion with each objective, DDPM and DDIM
  sampling, 1-D, learned-variance, continuous-time, v-parameterised, elucidated, classifier-free
  guidance, simple-diffusion's UViT, Karras U-Nets; its weighted-objective sampler stops with a
  TypeError on PyTorch, and on ember), with empty stand-ins for the Trainer's imports;
- lucidrains/mixture-of-experts (top-2 gating, flat and hierarchical; its "threshold" policy
  stops with an error on PyTorch, and ember must raise the same one);
- codertimo/BERT-pytorch (vocabulary, masked-LM dataset, model and ``BERTTrainer``, through the
  package's own ``train()`` entry point);
- BlinkDL/RWKV-LM's RWKV-v4 ``run.py`` (the CPU RNN sampling from a random checkpoint in its
  character mode);
- aladdinpersson's YOLOv1 (the model at a tiny darknet configuration, the loss with its in-place
  square roots, non-maximum suppression, mean average precision);
- ikostrikov/pytorch-a2c-ppo-acktr-gail (policies with GRU and CNN bases and PyTorch-distribution
  subclasses, rollout storage with GAE and both minibatch generators, PPO and A2C updates; its
  Bernoulli policy and its ACKTR optimiser stop with an error on PyTorch, after KFAC's
  forward-pre and legacy backward hooks ran: ember must stop the same way, with the same
  statistics gathered).

ConvNeXt and Swin import four helpers from timm: ``programs/research_4_standins/timm`` has our
own versions of them. Printed lines are compared as text with numbers masked (timings dropped)
and as numbers with a tolerance. One driver runs everything once on PyTorch and once under
``python -m ember.compat.run``, and every saved array is compared.
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


    def printed(prefix, text):
        # printed lines: the text with numbers masked, and the numbers (compared with a
        # tolerance: a last printed digit may round the other way); timings dropped
        # (pygcn's, pyGAT's "time: 0.0123s", RWKV's "---------- 0.12s " after each trial)
        lines = [re.sub(r"time(?: elapsed)?: \\S+s|^-{10} \\S+s ", "time", ln)
                 for ln in text.splitlines()]
        out[prefix + "_text"] = np.array([re.sub(NUM, "#", ln) for ln in lines] or [""])
        out[prefix + "_numbers"] = np.array(
            [float(x) for ln in lines for x in re.findall(NUM, ln)])


    def source(path, subs):
        # the file's own text with a few whole lines replaced, each found exactly once
        lines = open(path).read().split("\\n")
        for old, new in subs:
            assert lines.count(old) == 1, (path, old)
            lines[lines.index(old)] = new
        return "\\n".join(lines)


    def run_script(prefix, path, argv=(), paths=(), subs=(), setup=None):
        # the script's own text (a few whole lines replaced), run as __main__ in a fresh
        # folder with its flags; ``setup(folder)`` writes its input files first
        src = source(path, subs)
        sys.argv[1:] = list(argv)
        work = os.path.join(base, prefix, "run")
        os.makedirs(work, exist_ok=True)
        if setup is not None:
            setup(work)
        os.chdir(work)
        sys.path[:0] = [os.path.dirname(path), *paths]
        buf = io.StringIO()
        g = {"__name__": "__main__", "__file__": path}
        try:
            with contextlib.redirect_stdout(buf):
                exec(compile(src, path, "exec"), g)
        finally:
            del sys.path[:1 + len(paths)]
            os.chdir(base)
        printed(prefix, buf.getvalue())
        return g, work


    def raising_line(e, filename):
        # the line of the file named ``filename`` that raised ``e``
        tb, line = e.__traceback__, None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename.endswith(filename):
                line = tb.tb_lineno
            tb = tb.tb_next
        return line


    def citation_graph(folder, nodes=1500, feats=24, classes=4, edges=3000):
        # a seeded graph in Cora's files: "<id> <0/1 features> <label>" and "<id> <id>"
        rng = np.random.default_rng(0)
        os.makedirs(folder, exist_ok=True)
        ids = rng.choice(10 ** 6, nodes, replace=False)
        labels = rng.integers(0, classes, nodes)
        x = (rng.random((nodes, feats)) < 0.2).astype(int)
        x[np.arange(nodes), labels] = 1  # features that say something about the class
        with open(os.path.join(folder, "cora.content"), "w") as f:
            for i in range(nodes):
                f.write(f"{ids[i]}\\t" + "\\t".join(map(str, x[i])) + f"\\tclass_{labels[i]}\\n")
        src = rng.integers(0, nodes, edges)
        same = rng.random(edges) < 0.7  # mostly edges within a class
        dst = np.where(same, [rng.choice(np.flatnonzero(labels == labels[s])) for s in src],
                       rng.integers(0, nodes, edges))
        keep = src != dst
        with open(os.path.join(folder, "cora.cites"), "w") as f:
            for s, d in zip(src[keep], dst[keep]):
                f.write(f"{ids[s]}\\t{ids[d]}\\n")


    if "pygcn" in which:
        # load_data reads ../data/cora/ from the working folder
        citation_graph(os.path.join(base, "pygcn", "data", "cora"))
        g, work = run_script("pygcn", TP + "/pygcn/pygcn/train.py", argv=["--epochs", "6"],
                             paths=[TP + "/pygcn"])
        params("pygcn", g["model"])
        grads("pygcn", g["model"])
        adj = g["adj"]
        out["pygcn_adj_indices"] = adj._indices().numpy()
        out["pygcn_adj_values"] = adj._values().numpy()
        out["pygcn_adj_layout"] = np.array([str(adj.layout), str(adj.dtype), str(adj.shape)])
        for mod in ("pygcn", "pygcn.layers", "pygcn.models", "pygcn.utils"):
            sys.modules.pop(mod)

    for name, argv in (("gat", ["--epochs", "4", "--hidden", "4", "--nb_heads", "2"]),
                       ("spgat", ["--sparse", "--epochs", "4", "--hidden", "4",
                                  "--nb_heads", "2"])):
        if name in which:
            citation_graph(os.path.join(base, name, "run", "data", "cora"))
            g, work = run_script(name, TP + "/pygat/train.py", argv=argv)
            params(name, g["model"])
            grads(name, g["model"])
            out[name + "_kept"] = np.array(sorted(f for f in os.listdir(work) if
                                                  f.endswith(".pkl")))
            for mod in ("layers", "models", "utils"):
                sys.modules.pop(mod)

    if "convnext" in which:
        sys.path.insert(0, TP + "/convnext")
        from convnext import ConvNeXt, LayerNorm, convnext_tiny
        torch.manual_seed(0)
        model = ConvNeXt(in_chans=3, num_classes=5, depths=[1, 1, 2, 1], dims=[8, 16, 24, 32],
                         drop_path_rate=0.2, layer_scale_init_value=0.5, head_init_scale=0.5)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
        x = torch.randn(4, 3, 64, 64)
        y = torch.tensor([0, 3, 1, 4])
        for step in range(3):
            loss = torch.nn.functional.cross_entropy(model(x), y, label_smoothing=0.1)
            opt.zero_grad()
            loss.backward()
            if step == 0:
                grads("convnext", model)
            opt.step()
            out[f"convnext_loss{step}"] = loss.detach().numpy()
        params("convnext", model)
        model.eval()
        with torch.no_grad():
            out["convnext_eval"] = model(x).numpy()
        ln = LayerNorm(6, eps=1e-6, data_format="channels_first")
        out["convnext_ln_cf"] = ln(torch.randn(2, 6, 3, 3)).detach().numpy()
        out["convnext_tiny_params"] = np.array(
            sum(p.numel() for p in convnext_tiny(num_classes=7).parameters()))
        sys.path.pop(0)

    if "swin" in which:
        sys.path.insert(0, TP + "/swin")
        with contextlib.redirect_stdout(io.StringIO()):  # (no fused window kernels: a warning)
            from swin_transformer import SwinTransformer, window_partition, window_reverse
        torch.manual_seed(0)
        model = SwinTransformer(img_size=32, patch_size=2, in_chans=3, num_classes=5,
                                embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=4,
                                mlp_ratio=2.0, drop_path_rate=0.1, ape=True,
                                use_checkpoint=True)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
        x = torch.randn(3, 3, 32, 32)
        y = torch.tensor([1, 4, 2])
        for step in range(3):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            if step == 0:
                grads("swin", model)
            opt.step()
            out[f"swin_loss{step}"] = loss.detach().numpy()
        # (the key projection's bias has zero gradient under softmax: after AdamW steps its
        # rounding is full-size, so the qkv biases are compared as gradients only)
        params("swin", model, skip=("qkv.bias",))
        model.eval()
        with torch.no_grad():
            out["swin_eval"] = model(x).numpy()
        out["swin_no_decay"] = np.array(sorted(model.no_weight_decay()) +
                                        sorted(model.no_weight_decay_keywords()))
        out["swin_flops"] = np.array(model.flops())
        out["swin_mask"] = model.layers[0].blocks[1].attn_mask.numpy()
        w = torch.arange(2 * 8 * 8 * 3.0).reshape(2, 8, 8, 3)
        out["swin_windows"] = window_reverse(window_partition(w, 4), 4, 8, 8).numpy()
        out["swin_repr"] = np.array(repr(model).splitlines())
        # v2 (cosine attention, log-spaced continuous position bias) and the MLP variant
        from swin_mlp import SwinMLP
        from swin_transformer_v2 import SwinTransformerV2
        for name, make in (
                ("v2", lambda: SwinTransformerV2(
                    img_size=32, patch_size=2, num_classes=5, embed_dim=16, depths=[2, 2],
                    num_heads=[2, 4], window_size=4, mlp_ratio=2.0, drop_path_rate=0.1,
                    pretrained_window_sizes=[0, 2])),
                ("mlp", lambda: SwinMLP(img_size=32, patch_size=2, num_classes=5, embed_dim=16,
                                        depths=[2, 2], num_heads=[2, 4], window_size=4,
                                        mlp_ratio=2.0, drop_path_rate=0.1))):
            torch.manual_seed(0)
            model = make()
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
            for step in range(3):
                loss = torch.nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                if step == 0:
                    grads(f"swin_{name}", model)
                opt.step()
                out[f"swin_{name}_loss{step}"] = loss.detach().numpy()
            model.eval()
            with torch.no_grad():
                out[f"swin_{name}_eval"] = model(x).numpy()
        sys.path.pop(0)

    if "moe" in which:
        sys.path.insert(0, TP + "/mixture_of_experts")
        from mixture_of_experts import HeirarchicalMoE, MoE
        for name, make in (
                ("flat", lambda: MoE(dim=16, num_experts=4, hidden_dim=32,
                                     second_policy_train="random", second_policy_eval="all",
                                     capacity_factor_train=1.25, loss_coef=1e-2)),
                ("eval_none", lambda: MoE(dim=16, num_experts=4, activation=torch.nn.LeakyReLU,
                                          second_policy_train="all",
                                          second_policy_eval="none")),
                ("heir", lambda: HeirarchicalMoE(dim=16, num_experts=(2, 3), hidden_dim=24))):
            torch.manual_seed(0)
            moe = make()
            opt = torch.optim.Adam(moe.parameters(), lr=1e-2)
            x = torch.randn(3, 20, 16)
            for step in range(3):
                y, aux = moe(x)
                loss = y.square().mean() + aux
                opt.zero_grad()
                loss.backward()
                if step == 0:
                    grads("moe_" + name, moe)
                    out[f"moe_{name}_y"] = y.detach().numpy()
                opt.step()
                out[f"moe_{name}_loss{step}"] = loss.detach().numpy()
                out[f"moe_{name}_aux{step}"] = aux.detach().numpy()
            moe.eval()
            with torch.no_grad():
                out[f"moe_{name}_eval"] = moe(x)[0].numpy()
        # the "threshold" policy stops with an error on PyTorch (a (b, n) threshold compared
        # with (b, n, experts) gates): ember must raise the same one at the same line
        moe = MoE(dim=16, num_experts=4, second_policy_train="threshold")
        try:
            moe(torch.randn(3, 20, 16))
            out["moe_threshold_error"] = np.array("none")
        except RuntimeError as e:
            out["moe_threshold_error"] = np.array(
                [type(e).__name__, str(e), str(raising_line(e, "mixture_of_experts.py"))])
        sys.path.pop(0)

    if "bert" in which:
        sys.path.insert(0, TP + "/bert_pytorch")
        from bert_pytorch.__main__ import train
        from bert_pytorch.dataset.vocab import build
        rng = np.random.default_rng(0)
        words = [f"w{i}" for i in range(30)]
        os.makedirs("bert", exist_ok=True)
        with open("bert/corpus.txt", "w") as f:  # "<sentence>\\t<next sentence>" per line
            for _ in range(40):
                f.write(" ".join(rng.choice(words, rng.integers(3, 8))) + "\\t" +
                        " ".join(rng.choice(words, rng.integers(3, 8))) + "\\n")
        buf = io.StringIO()
        random.seed(0)
        torch.manual_seed(0)
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            sys.argv[1:] = ["-c", "bert/corpus.txt", "-o", "bert/vocab.small"]
            build()
            sys.argv[1:] = ["-c", "bert/corpus.txt", "-t", "bert/corpus.txt",
                            "-v", "bert/vocab.small", "-o", "bert/bert.model", "-hs", "32",
                            "-l", "2", "-a", "4", "-s", "16", "-b", "8", "-e", "2", "-w", "0",
                            "--log_freq", "2", "--lr", "1e-3"]
            train()
        printed("bert", buf.getvalue())
        model = torch.load("bert/bert.model.ep1", weights_only=False)
        params("bert", model)
        grads("bert", model)
        sys.path.pop(0)

    if "rwkv" in which:
        C, L = 16, 2  # width and depth

        def rwkv_files(work):
            # the character vocabulary train.py would have written, and a random checkpoint
            text = open(TP + "/rwkv_v4/run.py").read()
            context = re.search(r"^context = '(.*)'$", text, re.M).group(1)
            chars = sorted(set(context.replace("\\\\n", "\\n")) | {"\\n", " "})
            V = len(chars)
            with open(os.path.join(work, "vocab.json"), "w", encoding="utf-16") as f:
                json.dump({i: c for i, c in enumerate(chars)}, f)
            torch.manual_seed(0)
            w = {"emb.weight": torch.randn(V, C), "ln_out.weight": 1 + 0.1 * torch.randn(C),
                 "ln_out.bias": 0.1 * torch.randn(C), "head.weight": torch.randn(V, C)}
            for i in range(L):
                b = f"blocks.{i}."
                for ln in ("ln0", "ln1", "ln2") if i == 0 else ("ln1", "ln2"):
                    w[b + ln + ".weight"] = 1 + 0.1 * torch.randn(C)
                    w[b + ln + ".bias"] = 0.1 * torch.randn(C)
                w[b + "att.time_decay"] = torch.randn(C)
                w[b + "att.time_first"] = torch.randn(C)
                for m in ("k", "v", "r"):
                    w[b + "att.time_mix_" + m] = torch.rand(1, 1, C)
                for m in ("key", "value", "receptance", "output"):
                    w[b + f"att.{m}.weight"] = torch.randn(C, C) / C ** 0.5
                w[b + "ffn.time_mix_k"] = torch.rand(1, 1, C)
                w[b + "ffn.time_mix_r"] = torch.rand(1, 1, C)
                w[b + "ffn.key.weight"] = torch.randn(4 * C, C) / C ** 0.5
                w[b + "ffn.receptance.weight"] = torch.randn(C, C) / C ** 0.5
                w[b + "ffn.value.weight"] = torch.randn(C, 4 * C) / (4 * C) ** 0.5
            torch.save(w, os.path.join(work, "trained-500.pth"))
            torch.manual_seed(1)  # what multinomial sampling draws from

        g, work = run_script("rwkv", TP + "/rwkv_v4/run.py", setup=rwkv_files, subs=[
            ("n_layer = 6", f"n_layer = {L}"), ("n_embd = 512", f"n_embd = {C}"),
            ("NUM_TRIALS = 999", "NUM_TRIALS = 2"),
            ("LENGTH_PER_TRIAL = 333", "LENGTH_PER_TRIAL = 40")])
        out["rwkv_out"] = np.array(g["out"])
        out["rwkv_ctx"] = np.array(g["ctx"])
        for name in ("aa", "bb", "pp", "xx"):
            for k, v in getattr(g["model"], name).items():
                out[f"rwkv_{name}_{k}"] = v.numpy()
        for mod in ("src", "src.utils", "src.model_run"):
            sys.modules.pop(mod)

    if "yolo" in which:
        sys.path.insert(0, TP + "/yolov1")
        import model as yolo_model
        from loss import YoloLoss
        from utils import (cellboxes_to_boxes, get_bboxes, intersection_over_union,
                           mean_average_precision, non_max_suppression)
        # a tiny darknet with the model's own layer kinds; 112x112 images still end on the
        # 7x7x1024 grid its head expects
        yolo_model.architecture_config = [(7, 8, 2, 3), "M", (3, 16, 1, 1), "M",
                                          [(1, 8, 1, 0), (3, 16, 1, 1), 2], (3, 32, 2, 1),
                                          (1, 1024, 1, 0)]
        torch.manual_seed(123)
        model = yolo_model.Yolov1(split_size=7, num_boxes=2, num_classes=20)
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, weight_decay=0)
        loss_fn = YoloLoss()
        x = torch.rand(4, 3, 112, 112)
        # labels as VOC's loader writes them: per object, its cell's class one-hot, an
        # objectness 1 and (x, y) within the cell, (w, h) in cells
        y = torch.zeros(4, 7, 7, 30)
        rng = np.random.default_rng(1)
        for b in range(4):
            for _ in range(3):
                i, j, c = rng.integers(0, 7), rng.integers(0, 7), rng.integers(0, 20)
                y[b, i, j, c] = 1
                y[b, i, j, 20] = 1
                y[b, i, j, 21:25] = torch.tensor(
                    [rng.random(), rng.random(), 1 + 3 * rng.random(), 1 + 3 * rng.random()])
        head_weight = "fcs.1.weight"  # (49 * 1024, 496): compared through the outputs only
        for step in range(3):
            pred = model(x)
            loss = loss_fn(pred, y)
            opt.zero_grad()
            loss.backward()
            if step == 0:
                grads("yolo", model, skip=(head_weight,))
                out["yolo_pred"] = pred.detach().numpy()
            opt.step()
            out[f"yolo_loss{step}"] = loss.detach().numpy()
        params("yolo", model, skip=(head_weight,))
        out["yolo_bn_mean"] = model.darknet[0].batchnorm.running_mean.numpy()
        pred_boxes, true_boxes = get_bboxes([(x, y)], model, iou_threshold=0.5, threshold=0.0,
                                            device="cpu")
        out["yolo_pred_boxes"] = np.array(pred_boxes).reshape(-1, 7)
        out["yolo_true_boxes"] = np.array(true_boxes).reshape(-1, 7)
        out["yolo_map_pred"] = np.array(float(mean_average_precision(
            pred_boxes, true_boxes, iou_threshold=0.5, box_format="midpoint")))
        # boxes near the truth, with scores: a non-trivial mean average precision
        near = [[b[0], b[1], 1.0 - 0.1 * k] + [v + 0.01 * k for v in b[3:]]
                for k, b in enumerate(true_boxes)]
        out["yolo_map_near"] = np.array(float(mean_average_precision(near, true_boxes)))
        boxes = cellboxes_to_boxes(y + 0.05 * torch.rand(4, 7, 7, 30))[0]
        kept = non_max_suppression(boxes, iou_threshold=0.5, threshold=0.3,
                                   box_format="midpoint")
        out["yolo_nms"] = np.array(kept)
        out["yolo_iou_corners"] = intersection_over_union(
            torch.rand(5, 4), torch.rand(5, 4), box_format="corners").numpy()
        sys.path.pop(0)
        for mod in ("model", "loss", "utils"):
            sys.modules.pop(mod)

    if "a2c" in which:
        sys.path.insert(0, TP + "/a2c_ppo_acktr")
        # envs.py wraps gym and stable-baselines3 environments: utils takes only the
        # VecNormalize class from it, which nothing here uses
        envs = types.ModuleType("a2c_ppo_acktr.envs")
        envs.VecNormalize = type("VecNormalize", (), {})
        sys.modules["a2c_ppo_acktr.envs"] = envs
        from a2c_ppo_acktr import algo, utils
        from a2c_ppo_acktr.model import Policy
        from a2c_ppo_acktr.storage import RolloutStorage

        # gym's spaces, as far as the model and the storage read them (the class name, n, shape)
        Discrete = type("Discrete", (), {"__init__": lambda s, n: setattr(s, "n", n)})
        Box = type("Box", (), {"__init__": lambda s, shape: setattr(s, "shape", shape)})
        MultiBinary = type("MultiBinary", (), {"__init__": lambda s, n: setattr(s, "shape", (n,))})

        class VecEnv:
            # a seeded synthetic vector environment: the state drifts with the action, the
            # reward is minus its size, and one process ends an episode every 7 steps
            def __init__(self, obs_shape, n):
                self.rng, self.obs_shape, self.n, self.t = np.random.default_rng(0), obs_shape, n, 0

            def reset(self):
                self.s = self.rng.standard_normal((self.n, *self.obs_shape)).astype(np.float32)
                return torch.from_numpy(self.s.copy())

            def step(self, action):
                a = action.float().reshape(self.n, -1).numpy().mean(1)
                self.t += 1
                noise = self.rng.standard_normal(self.s.shape).astype(np.float32)
                shape = (self.n,) + (1,) * len(self.obs_shape)
                self.s = 0.9 * self.s + 0.1 * a.reshape(shape) + 0.05 * noise
                r = -np.abs(self.s.reshape(self.n, -1)).mean(1, keepdims=True)
                done = [self.t % 7 == 0 and i == self.t % self.n for i in range(self.n)]
                return torch.from_numpy(self.s.copy()), torch.from_numpy(r), done

        agents = {}

        def a2c_train(name, obs_shape, space, kind, recurrent, steps=5, procs=2, updates=3):
            # main.py's loop, without its gym environments and logging
            torch.manual_seed(0)
            ac = Policy(obs_shape, space, base_kwargs={"recurrent": recurrent, "hidden_size": 16})
            if kind == "ppo":
                agent = algo.PPO(ac, 0.2, 2, 1 if recurrent else 2, 0.5, 0.01, lr=1e-3,
                                 eps=1e-5, max_grad_norm=0.5)
            else:
                agent = algo.A2C_ACKTR(ac, 0.5, 0.01, lr=7e-4, eps=1e-5, alpha=0.99,
                                       max_grad_norm=0.5, acktr=kind == "acktr")
            agents[name] = agent
            rollouts = RolloutStorage(steps, procs, obs_shape, space,
                                      ac.recurrent_hidden_state_size)
            env = VecEnv(obs_shape, procs)
            rollouts.obs[0].copy_(env.reset())
            for u in range(updates):
                utils.update_linear_schedule(agent.optimizer, u, updates, 1e-3)
                for step in range(steps):
                    with torch.no_grad():
                        value, action, logp, hxs = ac.act(
                            rollouts.obs[step], rollouts.recurrent_hidden_states[step],
                            rollouts.masks[step])
                    obs, reward, done = env.step(action)
                    masks = torch.FloatTensor([[0.0] if d else [1.0] for d in done])
                    bad_masks = torch.FloatTensor([[1.0] for d in done])
                    rollouts.insert(obs, hxs, action, logp, value, reward, masks, bad_masks)
                with torch.no_grad():
                    next_value = ac.get_value(rollouts.obs[-1],
                                              rollouts.recurrent_hidden_states[-1],
                                              rollouts.masks[-1]).detach()
                rollouts.compute_returns(next_value, True, 0.99, 0.95, True)
                out[f"{name}_losses{u}"] = np.array(agent.update(rollouts))
                rollouts.after_update()
            out[name + "_returns"] = rollouts.returns.numpy()
            out[name + "_actions"] = rollouts.actions.numpy()
            params(name, ac)

        for spec in (("ppo_disc", (4,), Discrete(3), "ppo", False),
                     ("ppo_box_gru", (4,), Box((2,)), "ppo", True),
                     ("ppo_cnn_gru", (4, 84, 84), Discrete(2), "ppo", True),
                     ("a2c_disc", (4,), Discrete(3), "a2c", False),
                     # these two stop with an error on PyTorch: FixedBernoulli calls
                     # ``super.log_prob`` and KFAC calls the removed torch.symeig
                     ("a2c_bern", (4,), MultiBinary(3), "a2c", False),
                     ("acktr", (4,), Discrete(3), "acktr", False)):
            try:
                a2c_train(*spec)
                out[spec[0] + "_error"] = np.array("none")
            except (AttributeError, RuntimeError) as e:
                out[spec[0] + "_error"] = np.array([type(e).__name__, str(e)])
        # what KFAC's forward-pre and legacy backward hooks gathered before the error
        kfac = agents["acktr"].optimizer
        for i, m in enumerate(kfac.modules):
            out[f"acktr_kfac_aa{i}"] = kfac.m_aa[m].numpy()
            out[f"acktr_kfac_gg{i}"] = kfac.m_gg[m].numpy()
        sys.path.pop(0)

    if "vit2" in which:
        sys.path.insert(0, TP)  # (the modules import each other as ``vit_pytorch.<name>``)
        from vit_pytorch import (ats_vit, cct_3d, crossformer, distill, extractor,
                                 learnable_memory_vit, look_vit, mp3, na_vit, nest,
                                 normalized_vit, parallel_vit, recorder, regionvit, rvt,
                                 scalable_vit, sep_vit, simple_uvit, simple_vit_1d, simple_vit_3d,
                                 simple_vit_with_fft, simple_vit_with_hyper_connections,
                                 simple_vit_with_patch_dropout, simple_vit_with_qk_norm,
                                 simple_vit_with_register_tokens, simple_vit_with_value_residual,
                                 t2t, twins_svt, vit, vit_3d, vit_for_small_dataset,
                                 vit_nd, vit_with_patch_dropout, vit_with_patch_merger, vivit,
                                 xcit)

        def image(size=32, batch=2):
            return lambda: torch.randn(batch, 3, size, size, dtype=torch.float64)

        def video():
            return torch.randn(2, 3, 4, 32, 32, dtype=torch.float64)

        small = dict(image_size=32, patch_size=8, num_classes=5, dim=32, depth=2, heads=2,
                     mlp_dim=64)

        def plain_vit():
            return vit.ViT(**small)

        def with_memories():
            return learnable_memory_vit.Adapter(vit=learnable_memory_vit.ViT(**small),
                                                num_classes=2, num_memories_per_layer=3)

        def distiller():
            teacher = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 32 * 32, 5))
            return distill.DistillWrapper(student=distill.DistillableViT(**small),
                                          teacher=teacher, temperature=3, alpha=0.5, hard=False)

        def with_attention(r):  # Recorder / Extractor: the logits, plus what they recorded
            return r[0] + r[1].sum()

        def native_resolution():
            return [[torch.randn(3, 32, 32, dtype=torch.float64),
                     torch.randn(3, 16, 16, dtype=torch.float64)],
                    [torch.randn(3, 16, 32, dtype=torch.float64)]]

        VARIANTS = {  # name: (model, input, call; None: model(input))
            "t2t": (lambda: t2t.T2TViT(dim=32, image_size=32, depth=2, heads=2, mlp_dim=64,
                                       num_classes=5, t2t_layers=((7, 4), (3, 2))), image(), None),
            "twins": (lambda: twins_svt.TwinsSVT(
                num_classes=5, s1_emb_dim=8, s1_patch_size=4, s1_local_patch_size=4,
                s1_global_k=4, s1_depth=1, s2_emb_dim=16, s2_patch_size=2, s2_local_patch_size=2,
                s2_global_k=2, s2_depth=1, s3_emb_dim=16, s3_patch_size=2, s3_local_patch_size=2,
                s3_global_k=1, s3_depth=1, s4_emb_dim=16, s4_patch_size=1, s4_local_patch_size=2,
                s4_global_k=1, s4_depth=1, peg_kernel_size=3, dropout=0.), image(), None),
            "regionvit": (lambda: regionvit.RegionViT(
                dim=(8, 16, 16, 16), depth=(1, 1, 1, 1), window_size=7, num_classes=5,
                tokenize_local_3_conv=True, use_peg=True), image(224, 1), None),
            "scalable": (lambda: scalable_vit.ScalableViT(
                num_classes=5, dim=8, heads=(1, 2, 2, 2), depth=(1, 1, 1, 1),
                ssa_dim_key=(8, 8, 8, 8), reduction_factor=(2, 2, 1, 1),
                window_size=(4, 2, None, None), dropout=0.), image(64), None),
            "sepvit": (lambda: sep_vit.SepViT(num_classes=5, dim=8, dim_head=8,
                                              heads=(1, 2, 2, 2), depth=(1, 1, 1, 1),
                                              window_size=7, dropout=0.), image(224, 1), None),
            "nest": (lambda: nest.NesT(image_size=32, patch_size=4, dim=8, heads=2,
                                       num_hierarchies=3, block_repeats=(1, 1, 1),
                                       num_classes=5), image(), None),
            "xcit": (lambda: xcit.XCiT(image_size=32, patch_size=8, num_classes=5, dim=32,
                                       depth=2, cls_depth=1, heads=2, mlp_dim=64, dropout=0.,
                                       emb_dropout=0., local_patch_kernel_size=3,
                                       layer_dropout=0.), image(), None),
            "ats": (lambda: ats_vit.ViT(**dict(small, patch_size=4, depth=3),
                                        max_tokens_per_depth=(32, 16, 8)), image(), None),
            "patch_merger": (lambda: vit_with_patch_merger.ViT(
                **dict(small, patch_size=4, depth=3), patch_merge_layer=1,
                patch_merge_num_tokens=4), image(), None),
            "small_dataset": (lambda: vit_for_small_dataset.ViT(**small), image(), None),
            "vit3d": (lambda: vit_3d.ViT(image_size=32, frames=4, image_patch_size=8,
                                         frame_patch_size=2, num_classes=5, dim=32, depth=2,
                                         heads=2, mlp_dim=64), video, None),
            "simple_vit3d": (lambda: simple_vit_3d.SimpleViT(
                image_size=32, frames=4, image_patch_size=8, frame_patch_size=2, num_classes=5,
                dim=32, depth=2, heads=2, mlp_dim=64), video, None),
            "cct3d": (lambda: cct_3d.CCT(
                img_size=32, num_frames=4, embedding_dim=32, n_conv_layers=1,
                frame_kernel_size=3, kernel_size=3, stride=1, padding=1, pooling_kernel_size=3,
                pooling_stride=2, pooling_padding=1, num_layers=1, num_heads=2, mlp_ratio=2.,
                num_classes=5, positional_embedding="sine"), video, None),
            "vivit_fe": (lambda: vivit.ViViT(
                image_size=32, frames=4, image_patch_size=8, frame_patch_size=2, num_classes=5,
                dim=32, spatial_depth=1, temporal_depth=1, heads=2, mlp_dim=64,
                variant="factorized_encoder"), video, None),
            "vivit_fsa": (lambda: vivit.ViViT(
                image_size=32, frames=4, image_patch_size=8, frame_patch_size=2, num_classes=5,
                dim=32, spatial_depth=1, temporal_depth=1, heads=2, mlp_dim=64,
                variant="factorized_self_attention"), video, None),
            "parallel": (lambda: parallel_vit.ViT(**small, num_parallel_branches=2), image(),
                         None),
            "learnable_memory": (with_memories, image(), None),
            "rvt": (lambda: rvt.RvT(**small, use_rotary=True, use_ds_conv=True, use_glu=True),
                    image(), None),
            "mp3": (lambda: mp3.MP3(vit=mp3.ViT(**small), masking_ratio=0.75), image(), None),
            "recorder": (lambda: recorder.Recorder(plain_vit()), image(),
                         lambda m, x: with_attention(m(x))),
            "extractor": (lambda: extractor.Extractor(plain_vit()), image(),
                          lambda m, x: with_attention(m(x))),
            "distill": (distiller, image(), lambda m, x: m(x, torch.tensor([1, 3]))),
            "navit": (lambda: na_vit.NaViT(**small, token_dropout_prob=0.1), native_resolution,
                      None),
            "look_vit": (lambda: look_vit.LookViT(image_size=32, patch_size=8, num_classes=5,
                                                  dim=32, depth=2, heads=2, dim_head=16,
                                                  highres_patch_size=4, cross_attn_heads=2,
                                                  cross_attn_dim_head=16, dropout=0.),
                         image(), None),
            "nvit": (lambda: normalized_vit.nViT(**small), image(), None),
            "registers": (lambda: simple_vit_with_register_tokens.SimpleViT(
                **small, num_register_tokens=2), image(), None),
            "qknorm": (lambda: simple_vit_with_qk_norm.SimpleViT(**small), image(), None),
            "fft": (lambda: simple_vit_with_fft.SimpleViT(**small, freq_patch_size=8), image(),
                    None),
            "vit1d": (lambda: simple_vit_1d.SimpleViT(
                seq_len=64, patch_size=8, num_classes=5, dim=32, depth=2, heads=2, mlp_dim=64,
                channels=3), lambda: torch.randn(2, 3, 64, dtype=torch.float64), None),
            "patch_dropout": (lambda: simple_vit_with_patch_dropout.SimpleViT(
                **small, patch_dropout=0.5), image(), None),
            "value_residual": (lambda: simple_vit_with_value_residual.SimpleViT(**small),
                               image(), None),
            "hyper": (lambda: simple_vit_with_hyper_connections.SimpleViT(
                **small, num_residual_streams=2), image(), None),
            "uvit": (lambda: simple_uvit.SimpleUViT(**dict(small, depth=3)), image(), None),
            "vit_patch_dropout": (lambda: vit_with_patch_dropout.ViT(**small, patch_dropout=0.25),
                                  image(), None),
            "vit_nd": (lambda: vit_nd.ViTND(ndim=3, input_shape=(4, 16, 16), patch_size=(2, 8, 8),
                                            num_classes=5, dim=32, depth=2, heads=2, mlp_dim=64,
                                            channels=3),
                       lambda: torch.randn(2, 3, 4, 16, 16, dtype=torch.float64), None),
        }
        for name, (make, data, call) in VARIANTS.items():
            call = call or (lambda m, x: m(x))
            torch.manual_seed(0)
            model = make().double()
            torch.manual_seed(1)
            x = data()
            y = call(model, x)
            y = y[0] if isinstance(y, tuple) else y
            (y.square().mean() if y.dim() else y).backward()
            out["vit2_" + name] = y.detach().numpy()
            grads("vit2_" + name, model)
            model.eval()
            torch.manual_seed(2)
            with torch.no_grad():
                e = call(model, x)
                out[f"vit2_{name}_eval"] = (e[0] if isinstance(e, tuple) else e).numpy()
        # CrossFormer builds float32 masks in its forward: it runs in float32
        torch.manual_seed(0)
        model = crossformer.CrossFormer(num_classes=5, dim=(32, 32, 32, 32), depth=(1, 1, 1, 1),
                                        global_window_size=(2, 2, 2, 1), local_window_size=2)
        torch.manual_seed(1)
        y = model(torch.randn(2, 3, 64, 64))
        y.square().mean().backward()
        out["vit2_crossformer"] = y.detach().numpy()
        grads("vit2_crossformer", model)
        sys.path.pop(0)

    if "ddpm" in which:
        # the package imports torchvision, accelerate and ema_pytorch for its Trainer, which
        # is not run here: empty stand-ins (a real torchvision is built against PyTorch)
        for mod in ("torchvision", "accelerate", "ema_pytorch"):
            sys.modules[mod] = types.ModuleType(mod)
        sys.modules["torchvision"].transforms = sys.modules["torchvision"].utils = None
        sys.modules["accelerate"].Accelerator = type("Accelerator", (), {})
        sys.modules["ema_pytorch"].EMA = type("EMA", (), {})
        sys.path.insert(0, TP + "/denoising_diffusion_pytorch")
        from denoising_diffusion_pytorch import (
            ContinuousTimeGaussianDiffusion, ElucidatedDiffusion, GaussianDiffusion,
            GaussianDiffusion1D, InvSqrtDecayLRSched, KarrasUnet, KarrasUnet1D,
            LearnedGaussianDiffusion, Unet, Unet1D, VParamContinuousTimeGaussianDiffusion,
            WeightedObjectiveGaussianDiffusion)
        from denoising_diffusion_pytorch import classifier_free_guidance as cfg
        from denoising_diffusion_pytorch import simple_diffusion

        def unet(**kw):
            return Unet(dim=8, dim_mults=(1, 2), **kw)

        def images():
            return torch.rand(2, 3, 16, 16)

        def trained(name, d, x, **kw):
            # a loss, its gradients, then one more Adam step's loss
            opt = torch.optim.Adam(d.parameters(), lr=1e-3)
            for step in range(2):
                loss = d(x, **kw)
                opt.zero_grad()
                loss.backward()
                if step == 0:
                    grads("ddpm_" + name, d)
                opt.step()
                out[f"ddpm_{name}_loss{step}"] = loss.detach().numpy()

        def sampled(name, d, **kw):
            torch.manual_seed(5)
            out[f"ddpm_{name}_sample"] = d.sample(**kw).numpy()

        CASES = {
            "v_ddim": lambda: GaussianDiffusion(unet(full_attn=(False, True)), image_size=16,
                                                timesteps=10, sampling_timesteps=5,
                                                objective="pred_v"),
            "noise_ddpm": lambda: GaussianDiffusion(unet(full_attn=(False, True)), image_size=16,
                                                    timesteps=10, objective="pred_noise"),
            "x0_flash": lambda: GaussianDiffusion(unet(flash_attn=True), image_size=16,
                                                  timesteps=10, sampling_timesteps=5,
                                                  objective="pred_x0"),
            "learned": lambda: LearnedGaussianDiffusion(unet(learned_variance=True),
                                                        image_size=16, timesteps=10),
            "continuous": lambda: ContinuousTimeGaussianDiffusion(
                unet(random_fourier_features=True), image_size=16, num_sample_steps=4),
            "vparam": lambda: VParamContinuousTimeGaussianDiffusion(
                unet(random_fourier_features=True), image_size=16, num_sample_steps=4),
            "elucidated": lambda: ElucidatedDiffusion(
                unet(learned_sinusoidal_cond=True), image_size=16, channels=3,
                num_sample_steps=4),
            "simple": lambda: simple_diffusion.GaussianDiffusion(
                simple_diffusion.UViT(dim=16, channels=3, dim_mults=(1, 2),
                                      downsample_factor=2, vit_depth=1, vit_dropout=0.,
                                      attn_dim_head=8, attn_heads=2),
                image_size=16, channels=3, pred_objective="v", num_sample_steps=4),
        }
        with contextlib.redirect_stderr(io.StringIO()):  # (tqdm's progress bars)
            for name, make in CASES.items():
                # DDPM's last steps divide by sqrt(alphas_cumprod) ~ 1/159 here, which makes
                # float32 rounding differences visible: that sampler runs in float64 (its
                # schedule stays float32, as the model registers it)
                torch.set_default_dtype(torch.float64 if name == "noise_ddpm" else torch.float32)
                torch.manual_seed(0)
                d = make()
                x = images()
                trained(name, d, x)
                sampled(name, d, batch_size=2)
                torch.set_default_dtype(torch.float32)
                if name == "v_ddim":
                    torch.manual_seed(6)
                    out["ddpm_interpolate"] = d.interpolate(x[:1], x[1:], t=3).numpy()
                if name == "elucidated":
                    torch.manual_seed(6)
                    out["ddpm_elucidated_dpmpp"] = d.sample_using_dpmpp(batch_size=2).numpy()
            torch.manual_seed(0)
            d = GaussianDiffusion1D(Unet1D(dim=8, dim_mults=(1, 2), channels=4), seq_length=16,
                                    timesteps=10, sampling_timesteps=5, objective="pred_v")
            trained("1d", d, torch.rand(2, 4, 16))
            sampled("1d", d, batch_size=2)
            torch.manual_seed(0)
            d = cfg.GaussianDiffusion(cfg.Unet(dim=8, dim_mults=(1, 2), num_classes=4,
                                               cond_drop_prob=0.5),
                                      image_size=16, timesteps=10, sampling_timesteps=5)
            trained("cfg", d, images(), classes=torch.tensor([1, 2]))
            sampled("cfg", d, classes=torch.tensor([0, 3]), cond_scale=3., rescaled_phi=0.7)
            # the weighted-objective model's sampler passes an argument its own
            # p_mean_variance lacks: a TypeError on PyTorch, and on ember
            torch.manual_seed(0)
            d = WeightedObjectiveGaussianDiffusion(unet(out_dim=8), image_size=16, timesteps=10)
            trained("weighted", d, images())
            try:
                sampled("weighted", d, batch_size=2)
            except TypeError as e:
                out["ddpm_weighted_error"] = np.array(str(e))
        for name, net, x in (
                ("karras", KarrasUnet(image_size=16, dim=8, dim_max=16, num_classes=5,
                                      channels=3, num_downsamples=2, num_blocks_per_stage=1,
                                      attn_res=(8,), dropout=0.), torch.randn(2, 3, 16, 16)),
                ("karras1d", KarrasUnet1D(seq_len=16, dim=8, dim_max=16, num_classes=5,
                                          channels=3, num_downsamples=2, num_blocks_per_stage=1,
                                          attn_res=(8,), dropout=0.), torch.randn(2, 3, 16))):
            y = net(x, time=torch.ones(2), class_labels=torch.tensor([1, 3]))
            y.square().mean().backward()
            out["ddpm_" + name] = y.detach().numpy()
            grads("ddpm_" + name, net)
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        sched = InvSqrtDecayLRSched(opt, t_ref=3)
        lrs = []
        for _ in range(5):
            opt.step()
            sched.step()
            lrs.append(opt.param_groups[0]["lr"])
        out["ddpm_karras_lrs"] = np.array(lrs)
        sys.path.pop(0)

    np.savez(result, **out)
"""


def _both(tmp_path, which):
    driver = tmp_path / "driver.py"
    driver.write_text(driver_source(DRIVER))
    # (pygcn numbers its classes in a set's order)
    return run_both(tmp_path, driver, [THIRD_PARTY, which],
                    [ROOT, PROGRAMS / "research_4_standins"], PYTHONHASHSEED="0")


@pytest.mark.parametrize("which, needs, expected", [
    ("pygcn", ("scipy",), 10),
    ("gat,spgat", ("scipy",), 20),
    ("convnext", (), 60),
    ("swin", (), 80),
    ("moe", (), 30),
    ("bert", ("tqdm",), 30),
    ("rwkv", (), 12),
    ("yolo", ("matplotlib",), 60),
    ("a2c", (), 60),
    ("vit2", ("einops",), 1500),
    ("ddpm", ("einops", "scipy", "tqdm", "PIL", "packaging"), 900)])
def test_programs_match_torch(which, needs, expected, tmp_path):
    if any(importlib.util.find_spec(n) is None for n in ("torch",) + needs):
        pytest.skip(f"needs torch {' '.join(needs)}")
    assert_runs_match(*_both(tmp_path, which), expected)
