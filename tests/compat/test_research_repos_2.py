"""More research repositories, run unchanged on ember and on PyTorch with equal numbers.

Vendored under ``programs/third_party/`` (see its README; each folder holds the upstream
licence): karpathy/llama2.c's ``model.py`` and ``export.py``, johnma2006/mamba-minimal,
facebookresearch/dino (the ViT, ``DINOHead``, ``MultiCropWrapper``, ``DINOLoss`` and the
unchanged ``train_one_epoch``), jadore801120/attention-is-all-you-need-pytorch (model, the
scheduled optimiser, ``train_epoch``/``eval_epoch`` and beam-search ``Translator``) and
lucidrains/rotary-embedding-torch. The pip-installed libraries x-transformers (with its
non-autoregressive, XL, xVal, continuous, belief-state and DPO wrappers),
vector-quantize-pytorch, denoising-diffusion-pytorch, schedulefree and lion-pytorch run when
installed (x-transformers and vector-quantize-pytorch need einx; the diffusion one
ema_pytorch and accelerate). One driver builds each model at a tiny size from fixed seeds, runs
forward, loss, backward, optimiser steps, sampling and a checkpoint save/load, once on PyTorch
and once under ``python -m ember.compat.run``, and every saved array is compared.

Parameters whose gradient is zero in exact arithmetic (the key part of a qkv bias under
softmax, biases just before a BatchNorm) are compared as gradients, not after Adam-family
steps: Adam turns their rounding-level gradients into full-size, sign-random updates.
facebookresearch/DiT and /mae ran equal too but are CC BY-NC licensed, so are not vendored.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests._ports import free_port
from tests.compat._programs import assert_runs_match, driver_source

ROOT = Path(__file__).resolve().parents[2]
THIRD_PARTY = Path(__file__).parent / "programs" / "third_party"

# torchvision is imported by dino's training script (and by libraries under it) but none of it
# is used; the installed one is built against another PyTorch, so both runs get this stand-in
_TORCHVISION = """
import sys as _sys
import types as _types


def _missing(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)


for _name in ("transforms", "models", "ops", "io", "datasets", "utils"):
    _m = _types.ModuleType(__name__ + "." + _name)
    _m.__getattr__ = _missing
    _sys.modules[__name__ + "." + _name] = _m
    globals()[_name] = _m
"""

DRIVER = """
    import importlib.machinery
    import os
    import random
    import sys
    import tempfile
    import types
    import numpy as np
    import torch

    TP = sys.argv[2]
    which = sys.argv[3].split(",")
    tmp = tempfile.mkdtemp()


    if "llama2c" in which:
        sys.path.insert(0, TP + "/llama2c")
        import export
        from model import ModelArgs, Transformer
        torch.manual_seed(0)
        args = ModelArgs(dim=32, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=50,
                         multiple_of=16, max_seq_len=16, dropout=0.0)
        m = Transformer(args)
        for v in (1, 2):  # the run.c formats, byte for byte (v2 quantises to int8)
            export.model_export(m, f"{tmp}/m{v}.bin", v)
            out[f"llama_export{v}"] = np.fromfile(f"{tmp}/m{v}.bin", dtype=np.uint8)
        # the legacy format ends with float32 cos/sin tables: PyTorch's SLEEF sin and cos are
        # within an ulp of the correctly rounded values, so these are compared as floats
        export.model_export(m, f"{tmp}/m0.bin", 0)
        out["llama_export0_header"] = np.fromfile(f"{tmp}/m0.bin", dtype=np.int32)[:7]
        out["llama_export0"] = np.fromfile(f"{tmp}/m0.bin", dtype=np.float32)[7:]
        opt = m.configure_optimizers(0.1, 1e-3, (0.9, 0.95), "cpu")
        x = torch.randint(0, 50, (2, 12))
        y = torch.randint(0, 50, (2, 12))
        y[0, :3] = -1
        for step in range(2):
            logits = m(x, y)
            m.last_loss.backward()
            if step == 0:
                grads("llama", m)
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            out[f"llama_loss{step}"] = m.last_loss.detach().numpy()
        out["llama_logits"] = logits.detach().numpy()
        params("llama", m)
        out["llama_mfu"] = np.array(m.estimate_mfu(4, 0.5))
        m.eval()
        torch.manual_seed(3)
        out["llama_greedy"] = m.generate(x[:, :4], 5, temperature=0.0).numpy()
        out["llama_topk"] = m.generate(x[:, :4], 5, temperature=0.8, top_k=10).numpy()
        for layer in m.layers:  # the explicit-mask attention path
            layer.attention.flash = False
            layer.attention.mask = torch.triu(torch.full((1, 1, 16, 16), float("-inf")), 1)
        with torch.no_grad():
            out["llama_noflash"] = m(x).numpy()
        torch.save({"model": m.state_dict(), "optimizer": opt.state_dict(),
                    "model_args": args.__dict__, "iter_num": 2}, f"{tmp}/ckpt.pt")
        ck = torch.load(f"{tmp}/ckpt.pt", map_location="cpu")
        m2 = Transformer(ModelArgs(**ck["model_args"]))
        m2.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        with torch.no_grad():
            out["llama_reload"] = m2(x[:, :4]).numpy()
        sys.path.pop(0)
        for name in ("model", "export"):
            del sys.modules[name]

    if "mamba" in which:
        sys.path.insert(0, TP + "/mamba_minimal")
        from model import Mamba, ModelArgs
        torch.manual_seed(0)
        args = ModelArgs(d_model=16, n_layer=2, vocab_size=40, d_state=4, expand=2, d_conv=3,
                         pad_vocab_size_multiple=8)
        m = Mamba(args)
        opt = torch.optim.Adam(m.parameters(), lr=1e-2)
        x = torch.randint(0, 40, (2, 7))
        for step in range(2):
            logits = m(x)
            loss = torch.nn.functional.cross_entropy(
                logits[:, :-1].reshape(-1, logits.size(-1)), x[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            if step == 0:
                grads("mamba", m)
            opt.step()
            out[f"mamba_loss{step}"] = loss.detach().numpy()
        out["mamba_logits"] = logits.detach().numpy()
        params("mamba", m)
        torch.save(m.state_dict(), f"{tmp}/mamba.pt")
        m2 = Mamba(args)
        m2.load_state_dict(torch.load(f"{tmp}/mamba.pt", weights_only=True, map_location="cpu",
                                      mmap=True))
        with torch.no_grad():
            out["mamba_reload"] = m2(x).numpy()
        sys.path.pop(0)
        del sys.modules["model"]

    if "dino" in which:
        sys.path.insert(0, TP + "/dino")
        import torch.distributed as dist
        import main_dino
        import utils
        import vision_transformer as vits
        # the test passes a port (NOTE [ Test ports outside the ephemeral range ])
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        dist.init_process_group("gloo", rank=0, world_size=1)
        utils.SmoothedValue.synchronize_between_processes = lambda self: None  # a cuda tensor
        torch.cuda.synchronize = lambda *a, **k: None
        torch.manual_seed(0)
        kw = dict(img_size=[32], patch_size=8, embed_dim=32, depth=2, num_heads=2, mlp_ratio=2,
                  qkv_bias=True)
        head = dict(use_bn=True, nlayers=3, hidden_dim=16, bottleneck_dim=8)
        student = utils.MultiCropWrapper(vits.VisionTransformer(drop_path_rate=0.1, **kw),
                                         vits.DINOHead(32, 24, norm_last_layer=False, **head))
        teacher = utils.MultiCropWrapper(vits.VisionTransformer(**kw),
                                         vits.DINOHead(32, 24, **head))
        teacher.load_state_dict(student.state_dict())
        for p in teacher.parameters():
            p.requires_grad = False
        student = torch.nn.parallel.DistributedDataParallel(student)
        dino_loss = main_dino.DINOLoss(24, 4, 0.04, 0.07, 2, 3)
        opt = torch.optim.AdamW(utils.get_params_groups(student))
        lr = utils.cosine_scheduler(1e-3, 1e-5, 3, 2, warmup_epochs=1)
        wd = utils.cosine_scheduler(0.04, 0.4, 3, 2)
        mom = utils.cosine_scheduler(0.99, 1, 3, 2)
        out["dino_sched"] = np.stack([lr, wd, mom])

        class Args:
            epochs = 3
            clip_grad = 3.0
            freeze_last_layer = 1

        torch.manual_seed(1)
        loader = []
        for _ in range(2):
            views = [torch.randn(3, 3, s, s) for s in (32, 32, 16, 16)]
            for v in views:  # train_one_epoch moves each view with .cuda(non_blocking=True)
                v.cuda = (lambda t: lambda non_blocking=False: t)(v)
            loader.append((views, torch.zeros(3)))
        # qkv (key part) and the biases feeding a BatchNorm have zero gradient in exact arithmetic
        zero = ("qkv.bias", "norm.bias", "mlp.0.bias", "mlp.3.bias")
        for epoch in range(2):
            torch.manual_seed(5 + epoch)
            stats = main_dino.train_one_epoch(student, teacher, teacher, dino_loss, loader, opt,
                                              lr, wd, mom, epoch, None, Args)
            out[f"dino_stats{epoch}"] = np.array([stats["loss"], stats["lr"], stats["wd"]])
            if epoch == 0:
                grads("dino", student, zero)
        params("dino_s", student, zero)
        params("dino_t", teacher, zero)
        out["dino_center"] = dino_loss.center.numpy()
        student.eval()
        with torch.no_grad():
            x = torch.randn(2, 3, 40, 24)  # interpolated position embeddings
            out["dino_att"] = student.module.backbone.get_last_selfattention(x).numpy()
            inter = torch.stack(student.module.backbone.get_intermediate_layers(x, 2))
            out["dino_inter"] = (inter - student.module.backbone.norm.bias).numpy()
        utils.save_on_master({"student": student.state_dict(), "teacher": teacher.state_dict(),
                              "optimizer": opt.state_dict(), "epoch": 2,
                              "dino_loss": dino_loss.state_dict()}, f"{tmp}/checkpoint.pth")
        try:  # the optimizer's lr is a NumPy float, which weights_only refuses
            torch.load(f"{tmp}/checkpoint.pth", map_location="cpu")
            out["dino_load_error"] = np.array("none")
        except Exception as e:
            out["dino_load_error"] = np.array(type(e).__name__)
        restore = {"epoch": 0}
        with torch.serialization.safe_globals([np._core.multiarray.scalar, np.dtype,
                                               np.dtypes.Float64DType]):
            utils.restart_from_checkpoint(f"{tmp}/checkpoint.pth", run_variables=restore,
                                          student=student, teacher=teacher, optimizer=opt,
                                          dino_loss=dino_loss)
        out["dino_epoch"] = np.array(restore["epoch"])
        dist.destroy_process_group()
        sys.path.pop(0)
        del sys.modules["utils"]

    if "aiayn" in which:
        # train.py's data-loading imports, unused by its train/eval loops
        for name in ("dill", "torchtext", "torchtext.data", "torchtext.datasets"):
            mod = types.ModuleType(name)
            mod.__spec__ = importlib.machinery.ModuleSpec(name, None)
            mod.load = mod.dump = mod.Field = mod.Dataset = mod.BucketIterator = None
            mod.TranslationDataset = None
            sys.modules.setdefault(name, mod)
        sys.path.insert(0, TP + "/attention_is_all_you_need")
        import train
        from transformer.Models import Transformer
        from transformer.Optim import ScheduledOptim
        from transformer.Translator import Translator
        torch.manual_seed(0)
        m = Transformer(20, 22, src_pad_idx=1, trg_pad_idx=1, trg_emb_prj_weight_sharing=True,
                        emb_src_trg_weight_sharing=False, d_k=8, d_v=8, d_model=32, d_word_vec=32,
                        d_inner=64, n_layers=2, n_head=4, dropout=0.1, n_position=20)
        opt = ScheduledOptim(torch.optim.Adam(m.parameters(), betas=(0.9, 0.98), eps=1e-09),
                             2.0, 32, 4)

        class Batch:
            def __init__(self, src, trg):
                self.src, self.trg = src, trg

        class Opt:
            src_pad_idx = trg_pad_idx = 1

        torch.manual_seed(1)
        src = torch.randint(2, 20, (9, 3))
        src[7:, 1] = 1
        trg = torch.randint(2, 22, (8, 3))
        trg[6:, 2] = 1
        for step in range(2):  # label smoothing, then plain cross-entropy
            torch.manual_seed(10 + step)
            loss, acc = train.train_epoch(m, [Batch(src, trg)], opt, Opt, "cpu",
                                          smoothing=step == 0)
            out[f"aiayn_loss{step}"] = np.array([loss, acc])
            grads(f"aiayn{step}", m)
        # no parameters after the steps: Adam with eps=1e-9 turns last-bit differences of tiny
        # gradients into 1e-4 steps; the second step's gradients see the first step's update
        loss, acc = train.eval_epoch(m, [Batch(src, trg)], "cpu", Opt)
        out["aiayn_eval"] = np.array([loss, acc])
        tr = Translator(m, beam_size=3, max_seq_len=10, src_pad_idx=1, trg_pad_idx=1,
                        trg_bos_idx=2, trg_eos_idx=3)
        out["aiayn_beam"] = np.array(tr.translate_sentence(src[:, :1].t()))
        torch.save({"model": m.state_dict()}, f"{tmp}/m.chkpt")
        m.load_state_dict(torch.load(f"{tmp}/m.chkpt")["model"])
        sys.path.pop(0)

    if "rotary" in which:
        sys.path.insert(0, TP + "/rotary_embedding_torch")
        from rotary_embedding_torch import RotaryEmbedding, apply_rotary_emb
        for i, kw in enumerate((dict(), dict(use_xpos=True), dict(freqs_for="pixel", max_freq=10),
                                dict(learned_freq=True, interpolate_factor=2.0))):
            torch.manual_seed(0)
            rot = RotaryEmbedding(dim=8, **kw)
            q = torch.randn(2, 2, 6, 16, requires_grad=True)
            k = torch.randn(2, 2, 6, 16, requires_grad=True)
            if i == 2:
                freqs = rot.get_axial_freqs(2, 3)
                qq = apply_rotary_emb(freqs, q.reshape(2, 2, 2, 3, 16))
                kk = apply_rotary_emb(freqs, k.reshape(2, 2, 2, 3, 16))
            elif i == 1:
                qq, kk = rot.rotate_queries_and_keys(q, k)
            else:
                qq = rot.rotate_queries_or_keys(q)
                kk = rot.rotate_queries_or_keys(k, offset=1)
            (qq * kk).sum().backward()
            out[f"rot{i}_q"] = qq.detach().numpy()
            out[f"rot{i}_k"] = kk.detach().numpy()
            out[f"rot{i}_gq"] = q.grad.numpy()
            grads(f"rot{i}", rot)

    if "xtransformers" in which:
        from x_transformers import (AutoregressiveWrapper, ContinuousTransformerWrapper, Decoder,
                                    Encoder, TransformerWrapper, ViTransformerWrapper,
                                    XTransformer)

        def run(name, model, inp, lossf, **kw):
            torch.manual_seed(1)
            y = model(*inp, **kw)
            y = y[0] if isinstance(y, tuple) else y
            loss = lossf(y)
            loss.backward()
            out[name] = y.detach().numpy()
            out[name + "_loss"] = loss.detach().numpy()
            grads(name, model)

        FLAGS = {
            "plain": dict(),
            "rotary_gqa": dict(rotary_pos_emb=True, attn_kv_heads=1, ff_glu=True, ff_swish=True),
            "alibi_qknorm": dict(alibi_pos_bias=True, use_rmsnorm=True, attn_qk_norm=True,
                                 attn_qk_norm_dim_scale=True),
            "relpos_sandwich": dict(rel_pos_bias=True, sandwich_norm=True, residual_attn=True,
                                    ff_relu_squared=True),
            "dynpos_macaron": dict(dynamic_pos_bias=True, attn_gate_values=True, macaron=True),
            "shift_gate": dict(use_simple_rmsnorm=True, shift_tokens=1, attn_one_kv_head=True,
                               gate_residual=True),
            "sdpa_valres": dict(attn_flash=True, add_value_residual=True, rotary_pos_emb=True),
            "hyper_softclamp": dict(num_residual_streams=2, learned_value_residual_mix=True,
                                    softclamp_output=True, attn_softclamp_logits=True),
            "alibi_laser": dict(attn_data_dependent_alibi=True, attn_laser=True, ff_no_bias=True),
            "xpos_topk": dict(use_scalenorm=True, rotary_xpos=True, attn_head_scale=True,
                              ff_post_act_ln=True, attn_sparse_topk=3),
        }
        torch.manual_seed(0)
        x = torch.randint(0, 30, (2, 10))
        for name, kw in FLAGS.items():
            torch.manual_seed(0)
            m = TransformerWrapper(num_tokens=30, max_seq_len=16, attn_layers=Decoder(
                dim=32, depth=2, heads=4, attn_dim_head=8, **kw))
            run("xt_dec_" + name, m, (x,), lambda y: y.log_softmax(-1).mean())
        mask = torch.ones(2, 10, dtype=torch.bool)
        mask[1, 7:] = False
        torch.manual_seed(0)
        m = TransformerWrapper(num_tokens=30, max_seq_len=16, num_memory_tokens=2,
                               attn_layers=Encoder(dim=32, depth=2, heads=4, attn_dim_head=8,
                                                   rel_pos_bias=True))
        run("xt_enc", m, (x,), lambda y: y.square().mean(), mask=mask)
        torch.manual_seed(0)
        m = ContinuousTransformerWrapper(dim_in=5, dim_out=3, max_seq_len=16, attn_layers=Encoder(
            dim=32, depth=2, heads=4, attn_dim_head=8))
        run("xt_cont", m, (torch.randn(2, 10, 5),), lambda y: y.square().mean(), mask=mask)
        torch.manual_seed(0)
        m = ViTransformerWrapper(image_size=16, patch_size=4, num_classes=5, attn_layers=Encoder(
            dim=32, depth=1, heads=2, attn_dim_head=8))
        run("xt_vit", m, (torch.randn(2, 3, 16, 16),), lambda y: y.square().mean())
        torch.manual_seed(0)
        m = XTransformer(dim=32, enc_num_tokens=30, enc_depth=1, enc_heads=2, enc_max_seq_len=12,
                         dec_num_tokens=30, dec_depth=1, dec_heads=2, dec_max_seq_len=12,
                         tie_token_emb=True)
        src = torch.randint(0, 30, (2, 12))
        tgt = torch.randint(0, 30, (2, 12))
        src_mask = torch.ones_like(src).bool()
        run("xt_encdec", m, (src, tgt), lambda y: y, mask=src_mask)
        out["xt_encdec_gen"] = m.generate(src, tgt[:, :1], seq_len=6, mask=src_mask,
                                          temperature=0.0).numpy()
        torch.manual_seed(0)
        m = AutoregressiveWrapper(TransformerWrapper(
            num_tokens=30, max_seq_len=16,
            attn_layers=Decoder(dim=32, depth=2, heads=4, attn_dim_head=8, rotary_pos_emb=True)))
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        x = torch.randint(0, 30, (2, 12))
        for step in range(2):
            loss = m(x)
            opt.zero_grad()
            loss.backward()
            opt.step()
            out[f"xt_ar_loss{step}"] = loss.detach().numpy()
        params("xt_ar", m)
        out["xt_ar_greedy"] = m.generate(x[:, :3], 6, temperature=0.0).numpy()
        out["xt_ar_cached"] = m.generate(x[:, :3], 6, temperature=0.0, cache_kv=True).numpy()
        torch.manual_seed(4)
        out["xt_ar_sample"] = m.generate(x[:, :3], 6).numpy()

        # the other wrappers: non-autoregressive (self-conditioned), Transformer-XL memories,
        # xVal numbers, continuous autoregression, belief state, DPO
        from x_transformers import ContinuousAutoregressiveWrapper
        from x_transformers.belief_state_wrapper import BeliefStateWrapper
        from x_transformers.dpo import DPO
        from x_transformers.nonautoregressive_wrapper import NonAutoregressiveWrapper
        from x_transformers.xl_autoregressive_wrapper import XLAutoregressiveWrapper
        from x_transformers.xval import XValAutoregressiveWrapper, XValTransformerWrapper

        def dec(**kw):
            return Decoder(dim=32, depth=1, heads=2, attn_dim_head=8, **kw)

        def small():
            return TransformerWrapper(num_tokens=30, max_seq_len=16, attn_layers=dec())

        def wrapped(name, make, gen=None):
            torch.manual_seed(0)
            random.seed(0)  # the non-autoregressive wrapper draws Python's random
            wrapper, loss = make()
            loss = getattr(loss, "loss", loss)
            loss.backward()
            out[f"xt_{name}_loss"] = loss.detach().numpy()
            grads("xt_" + name, wrapper)
            if gen is not None:
                torch.manual_seed(1)
                random.seed(1)
                out[f"xt_{name}_gen"] = gen(wrapper).detach().numpy()

        ids = torch.randint(0, 30, (2, 12))

        def nar():
            net = TransformerWrapper(num_tokens=31, max_seq_len=12, logits_dim=30,
                                     attn_layers=Encoder(dim=32, depth=1, heads=2, attn_dim_head=8))
            w = NonAutoregressiveWrapper(net, mask_id=30, steps=3, self_cond=True)
            return w, w(ids)

        wrapped("nar", nar, lambda w: w.generate(batch_size=2))

        def xl():
            w = XLAutoregressiveWrapper(TransformerWrapper(
                num_tokens=30, max_seq_len=8, max_mem_len=8, attn_layers=dec(rel_pos_bias=True)))
            return w, w(torch.cat([ids, ids[:, :8]], 1))

        wrapped("xl", xl, lambda w: w.generate(ids[:, :3], 10, temperature=0.0))

        def xval():
            w = XValAutoregressiveWrapper(XValTransformerWrapper(
                num_tokens=30, numerical_token_id=29, max_seq_len=12, attn_layers=dec()))
            return w, w(ids, torch.randn(2, 12))

        wrapped("xval", xval)

        def cont():
            w = ContinuousAutoregressiveWrapper(ContinuousTransformerWrapper(
                dim_in=4, dim_out=4, max_seq_len=12, attn_layers=dec()))
            return w, w(torch.randn(2, 12, 4))

        wrapped("cont_ar", cont)

        def belief():
            w = BeliefStateWrapper(forward_decoder=small(), backward_decoder=small())
            return w, w(ids[:, :10])

        wrapped("belief", belief,
                lambda w: w.generate_with_suffix_cond(ids[:, :2], 5, temperature=0.0))

        def dpo():
            w = DPO(small(), pad_id=0)
            prompt_mask = torch.ones(2, 10, dtype=torch.bool)
            prompt_mask[:, 6:] = False
            return w.policy_model, w(ids[:, :10] + 0, ids[:, 2:] + 0, prompt_mask=prompt_mask)

        wrapped("dpo", dpo)

    if "optim" in which:  # schedule-free optimisers (train/eval modes), Lion
        import schedulefree as sf
        from lion_pytorch import Lion
        OPTS = {
            "adamw_sf": lambda p: sf.AdamWScheduleFree(p, lr=1e-2, warmup_steps=2,
                                                       weight_decay=0.01),
            "sgd_sf": lambda p: sf.SGDScheduleFree(p, lr=1e-2, warmup_steps=1, momentum=0.9),
            "radam_sf": lambda p: sf.RAdamScheduleFree(p, lr=1e-2),
            "adamw_sf_ref": lambda p: sf.AdamWScheduleFreeReference(p, lr=1e-2, warmup_steps=2),
            "sgd_sf_ref": lambda p: sf.SGDScheduleFreeReference(p, lr=1e-2),
            "adamw_sf_closure": lambda p: sf.AdamWScheduleFreeClosure(p, lr=1e-2),
            "sf_wrap": lambda p: sf.ScheduleFreeWrapper(torch.optim.SGD(p, lr=1e-2),
                                                        momentum=0.9, weight_decay_at_y=0.01),
            "lion": lambda p: Lion(p, lr=1e-3, weight_decay=0.1),
        }
        for name, make in OPTS.items():
            torch.manual_seed(0)
            m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.LayerNorm(8),
                                    torch.nn.ReLU(), torch.nn.Linear(8, 2))
            opt = make(m.parameters())
            x = torch.randn(16, 4)
            y = torch.randn(16, 2)

            def closure():
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(m(x), y)
                loss.backward()
                return loss

            for step in range(4):
                if hasattr(opt, "train"):
                    opt.train()
                if "closure" in name:
                    loss = opt.step(closure)
                else:
                    loss = closure()
                    opt.step()
                out[f"opt_{name}_loss{step}"] = loss.detach().numpy()
            if hasattr(opt, "eval"):
                opt.eval()  # the averaged (x) weights
            params("opt_" + name, m)
            opt2 = make(m.parameters())
            opt2.load_state_dict(opt.state_dict())
            out[f"opt_{name}_state"] = np.array(sorted(
                k for st in opt2.state.values() for k in st))

    if "vq" in which:
        from vector_quantize_pytorch import (FSQ, LFQ, GroupedResidualVQ, ResidualFSQ, ResidualLFQ,
                                             ResidualVQ, SimVQ, VectorQuantize)
        SPECS = {
            "ema_kmeans": lambda: VectorQuantize(dim=8, codebook_size=16, decay=0.8,
                                                 commitment_weight=1.0, kmeans_init=True,
                                                 kmeans_iters=3),
            "cos_heads": lambda: VectorQuantize(dim=8, codebook_size=16, use_cosine_sim=True,
                                                codebook_dim=4, heads=2,
                                                separate_codebook_per_head=True),
            "learned": lambda: VectorQuantize(dim=8, codebook_size=16, learnable_codebook=True,
                                              ema_update=False, rotation_trick=True,
                                              orthogonal_reg_weight=0.1),
            "stochastic": lambda: VectorQuantize(dim=8, codebook_size=16,
                                                 stochastic_sample_codes=True,
                                                 sample_codebook_temp=0.5,
                                                 threshold_ema_dead_code=2),
            "rvq": lambda: ResidualVQ(dim=8, num_quantizers=3, codebook_size=4, decay=0.9,
                                      quantize_dropout=True),
            "grvq": lambda: GroupedResidualVQ(dim=8, num_quantizers=2, groups=2, codebook_size=16),
            "fsq": lambda: FSQ(levels=[8, 5, 5], dim=8),
            "rfsq": lambda: ResidualFSQ(dim=8, levels=[8, 5, 5], num_quantizers=2),
            "lfq": lambda: LFQ(dim=8, codebook_size=16, entropy_loss_weight=0.1,
                               diversity_gamma=1.0),
            "rlfq": lambda: ResidualLFQ(dim=8, codebook_size=16, num_quantizers=2),
            "simvq": lambda: SimVQ(dim=8, codebook_size=16),
        }

        def rec(name, res, model=None):
            for i, r in enumerate(res if isinstance(res, tuple) else (res,)):
                if torch.is_tensor(r):
                    out[f"vq_{name}_{i}"] = r.detach().numpy()
            if model is not None:
                grads("vq_" + name, model)
                for n, b in model.named_buffers():
                    out[f"vq_{name}_b_{n}"] = b.detach().numpy()

        for name, make in SPECS.items():
            torch.manual_seed(0)
            m = make().train()
            x = torch.randn(2, 10, 8, requires_grad=True)
            torch.manual_seed(1)
            res = m(x)
            extra = [r.sum() for r in res[2:] if torch.is_tensor(r) and r.is_floating_point()]
            (res[0].square().mean() + sum(extra)).backward()
            out[f"vq_{name}_xg"] = x.grad.numpy()
            rec(name, res, m)
            torch.manual_seed(2)
            rec(name + "_again", m(x.detach() * 0.5))  # after the EMA / dead-code updates
            m.eval()
            with torch.no_grad():
                rec(name + "_eval", m(x))

    if "ddpm" in which:
        from denoising_diffusion_pytorch import (ElucidatedDiffusion, GaussianDiffusion,
                                                 GaussianDiffusion1D, Unet, Unet1D)
        from ema_pytorch import EMA

        def nonzero(m):  # the zero-initialised output convs would make most gradients zero
            for p in m.parameters():
                if p.abs().sum() == 0:
                    torch.nn.init.normal_(p, std=0.05)

        torch.manual_seed(0)
        imgs = torch.rand(2, 3, 8, 8)
        for obj, sched in (("pred_v", "sigmoid"), ("pred_noise", "cosine"),
                           ("pred_x0", "linear")):
            name = "ddpm_" + obj
            torch.manual_seed(0)
            net = Unet(dim=8, dim_mults=(1, 2), channels=3, flash_attn=False, attn_heads=2,
                       attn_dim_head=8, full_attn=(False, True),
                       self_condition=obj == "pred_noise")
            nonzero(net)
            diff = GaussianDiffusion(net, image_size=8, timesteps=12, sampling_timesteps=4,
                                     objective=obj, beta_schedule=sched,
                                     min_snr_loss_weight=obj == "pred_v")
            ema = EMA(diff, beta=0.9, update_every=1, update_after_step=0)
            opt = torch.optim.Adam(diff.parameters(), lr=1e-3)
            for step in range(2):
                torch.manual_seed(10 + step)
                random.seed(step)  # self-conditioning flips Python's coin
                loss = diff(imgs)
                loss.backward()
                if step == 0:
                    grads(name, diff)
                opt.step()
                opt.zero_grad()
                ema.update()
                out[f"{name}_loss{step}"] = loss.detach().numpy()
            torch.manual_seed(5)
            out[name + "_ddim"] = ema.ema_model.sample(batch_size=2).numpy()
            if obj == "pred_v":  # the full ancestral chain and the interpolation, once
                ema.ema_model.is_ddim_sampling = False
                torch.manual_seed(6)
                out[name + "_ddpm"] = ema.ema_model.sample(batch_size=1).numpy()
                torch.manual_seed(7)
                out[name + "_interp"] = ema.ema_model.interpolate(imgs[:1], imgs[1:], t=5).numpy()
            torch.save({"model": diff.state_dict(), "opt": opt.state_dict(),
                        "ema": ema.state_dict()}, f"{tmp}/ddpm.pt")
            ck = torch.load(f"{tmp}/ddpm.pt", weights_only=True)
            diff.load_state_dict(ck["model"])
            ema.load_state_dict(ck["ema"])
        torch.manual_seed(0)
        net = Unet1D(dim=8, dim_mults=(1, 2), channels=2)
        nonzero(net)
        diff = GaussianDiffusion1D(net, seq_length=16, timesteps=10, objective="pred_v")
        torch.manual_seed(1)
        loss = diff(torch.rand(2, 2, 16))
        loss.backward()
        grads("ddpm_1d", diff)
        out["ddpm_1d_loss"] = loss.detach().numpy()
        torch.manual_seed(2)
        out["ddpm_1d_sample"] = diff.sample(batch_size=1).detach().numpy()
        torch.manual_seed(0)
        net = Unet(dim=8, dim_mults=(1, 2), channels=3, flash_attn=False,
                   random_fourier_features=True)
        nonzero(net)
        edm = ElucidatedDiffusion(net, image_size=8, num_sample_steps=3)
        torch.manual_seed(1)
        loss = edm(imgs)
        loss.backward()
        grads("ddpm_edm", edm)
        out["ddpm_edm_loss"] = loss.detach().numpy()
        torch.manual_seed(2)
        out["ddpm_edm_sample"] = edm.sample(batch_size=1).detach().numpy()

    np.savez(sys.argv[1], **out)
"""


def _both(tmp_path, which):
    driver = tmp_path / "driver.py"
    driver.write_text(driver_source(DRIVER))
    standin = tmp_path / "standin" / "torchvision"
    standin.mkdir(parents=True)
    (standin / "__init__.py").write_text(_TORCHVISION)
    path = [str(ROOT), str(standin.parent), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path),
               PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1", TQDM_DISABLE="1")
    results = []
    for name, prefix in (("torch", []), ("ember", ["-m", "ember.compat.run"])):
        out = tmp_path / f"{name}.npz"
        env["MASTER_PORT"] = str(free_port())  # dino's group of one serves a store on it
        proc = subprocess.run([sys.executable, *prefix, str(driver), str(out), str(THIRD_PARTY),
                               which], capture_output=True, text=True, cwd=tmp_path, env=env,
                              timeout=300)
        assert proc.returncode == 0, f"{name}:\n{proc.stderr[-4000:]}"
        results.append(dict(np.load(out)))
    return results


@pytest.mark.parametrize("which, needs, expected", [
    ("llama2c,mamba,dino,aiayn,rotary", ("einops",), 300),
    ("xtransformers", ("x_transformers",), 300),
    ("vq", ("vector_quantize_pytorch",), 150),
    ("optim", ("schedulefree", "lion_pytorch"), 60),
    ("ddpm", ("denoising_diffusion_pytorch", "ema_pytorch"), 600)])
def test_research_repos_match_torch(which, needs, expected, tmp_path):
    if any(importlib.util.find_spec(n) is None for n in ("torch",) + needs):
        pytest.skip(f"needs torch {' '.join(needs)}")
    assert_runs_match(*_both(tmp_path, which), expected)
