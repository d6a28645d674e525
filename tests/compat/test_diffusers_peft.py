"""diffusers and PEFT, unchanged, on ember under the alias, against PyTorch.

As in ``test_third_party_libs.py`` (whose helpers these tests use), each test writes a driver
program, runs it once on PyTorch and once under ``python -m ember.compat.run``, each run saving
its numbers to its own ``.npz`` file, and compares the two. The models are random-initialised
tiny configurations (no downloads). A test skips when its library, or PyTorch, is missing.

The tests at the end check, in process, the ember fixes these libraries needed: ``Tensor.to``
with a positional ``None`` (a scheduler's ``set_timesteps(device=None)``) and a positional
``copy`` flag, every PyTorch device type parsing (``torch.device("mps")`` in PEFT's loader),
and ``torch.utils.cpp_extension`` (PEFT's BOFT tries to build its CUDA kernel, then falls back).
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from tests.compat.test_third_party_libs import _assert_same, _both, _needs

# -- diffusers ------------------------------------------------------------------------------

DIFFUSERS_DRIVER = """
    import sys, os, tempfile
    import numpy as np
    import torch
    torch.set_num_threads(1)
    from diffusers import (UNet2DModel, UNet2DConditionModel, AutoencoderKL, DDPMScheduler,
                           DDIMScheduler, DDPMPipeline, DDIMPipeline)
    from diffusers.training_utils import EMAModel
    from diffusers.utils import logging
    logging.set_verbosity_error()
    out = {}
    torch.manual_seed(0)
    cu = UNet2DConditionModel(sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
            block_out_channels=(8, 16), norm_num_groups=4, cross_attention_dim=12,
            attention_head_dim=4,
            down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
    x = torch.randn(2, 4, 8, 8)
    ctx = torch.randn(2, 5, 12)
    y = cu(x, torch.tensor([3, 900]), encoder_hidden_states=ctx).sample
    y.square().mean().backward()
    out["cond_fwd"] = y.detach().numpy()
    out["cond_grad"] = np.stack([p.grad.norm().numpy() for p in cu.parameters()])
    vae = AutoencoderKL(in_channels=3, out_channels=3, latent_channels=4,
                        block_out_channels=(8, 16),
                        norm_num_groups=4, layers_per_block=1,
                        down_block_types=("DownEncoderBlock2D",) * 2,
                        up_block_types=("UpDecoderBlock2D",) * 2)
    img = torch.randn(2, 3, 16, 16)
    post = vae.encode(img).latent_dist
    g = torch.Generator().manual_seed(5)
    z = post.sample(generator=g)
    out["vae_mean"] = post.mean.detach().numpy()
    out["vae_z"] = z.detach().numpy()
    out["vae_kl"] = post.kl().detach().numpy()
    rec = vae.decode(z).sample
    out["vae_rec"] = rec.detach().numpy()
    (rec - img).square().mean().backward()
    out["vae_gn"] = torch.nn.utils.clip_grad_norm_(vae.parameters(), 1e9).numpy()
    vae.enable_tiling(); vae.enable_slicing()
    torch.manual_seed(0)
    unet = UNet2DModel(sample_size=8, in_channels=3, out_channels=3, layers_per_block=1,
                       block_out_channels=(8, 16), norm_num_groups=4,
                       down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                       up_block_types=("AttnUpBlock2D", "UpBlock2D"))
    ema = EMAModel(unet.parameters(), decay=0.9, use_ema_warmup=True, model_cls=UNet2DModel,
                   model_config=unet.config)
    for sname, S in (("ddpm", DDPMScheduler), ("ddim", DDIMScheduler)):
        sched = S(num_train_timesteps=100, beta_schedule="squaredcos_cap_v2")
        opt = torch.optim.AdamW(unet.parameters(), lr=1e-3, weight_decay=1e-2)
        for step in range(2):
            noise = torch.randn_like(img[:, :, :8, :8])
            ts = torch.randint(0, 100, (2,))
            noisy = sched.add_noise(img[:, :, :8, :8], noise, ts)
            pred = unet(noisy, ts).sample
            loss = torch.nn.functional.mse_loss(pred.float(), noise.float(), reduction="mean")
            loss.backward()
            torch.nn.utils.clip_grad_norm_(unet.parameters(), 1.0)
            opt.step(); opt.zero_grad()
            ema.step(unet.parameters())
            out[f"{sname}_loss{step}"] = loss.detach().numpy()
        out[sname + "_vel"] = sched.get_velocity(img[:, :, :8, :8], noise, ts).numpy()
    out["ema_decay"] = np.array(ema.cur_decay_value)
    ema.store(unet.parameters()); ema.copy_to(unet.parameters())
    out["ema_p"] = next(unet.parameters()).detach().numpy()
    ema.restore(unet.parameters())
    sd = ema.state_dict()
    out["ema_sd"] = np.array(sorted(sd))
    unet.eval()
    pipe = DDPMPipeline(unet=unet, scheduler=DDPMScheduler(num_train_timesteps=100))
    pipe.set_progress_bar_config(disable=True)
    im = pipe(batch_size=2, generator=torch.Generator().manual_seed(0), num_inference_steps=4,
              output_type="np").images
    out["ddpm_pipe"] = im
    pipe2 = DDIMPipeline(unet=unet, scheduler=DDIMScheduler(num_train_timesteps=100))
    pipe2.set_progress_bar_config(disable=True)
    out["ddim_pipe"] = pipe2(batch_size=1, generator=torch.Generator().manual_seed(1),
                             num_inference_steps=3, eta=0.5, output_type="np").images
    with tempfile.TemporaryDirectory() as d:
        unet.save_pretrained(os.path.join(d, "u"))
        out["files"] = np.array(sorted(os.listdir(os.path.join(d, "u"))))
        u2 = UNet2DModel.from_pretrained(os.path.join(d, "u"))
        out["reload"] = u2(img[:, :, :8, :8], 7).sample.detach().numpy()
        unet.save_pretrained(os.path.join(d, "b"), safe_serialization=False)
        u3 = UNet2DModel.from_pretrained(os.path.join(d, "b"))
        out["reload_bin"] = u3(img[:, :, :8, :8], 7).sample.detach().numpy()
        pipe.save_pretrained(os.path.join(d, "p"))
        p2 = DDPMPipeline.from_pretrained(os.path.join(d, "p"))
        p2.set_progress_bar_config(disable=True)
        out["pipe_reload"] = p2(batch_size=1, generator=torch.Generator().manual_seed(0),
                                num_inference_steps=2, output_type="np").images
        ema.save_pretrained(os.path.join(d, "ema"))
        e2 = EMAModel.from_pretrained(os.path.join(d, "ema"), model_cls=UNet2DModel)
        out["ema_reload"] = next(iter(e2.shadow_params)).numpy()
        vae.save_pretrained(os.path.join(d, "v"))
        v2 = AutoencoderKL.from_pretrained(os.path.join(d, "v"))
        out["vae_reload"] = v2.decode(z).sample.detach().numpy()
        cu.save_pretrained(os.path.join(d, "c"))
        c2 = UNet2DConditionModel.from_pretrained(os.path.join(d, "c"))
        out["cond_reload"] = c2(x, 3, encoder_hidden_states=ctx).sample.detach().numpy()
    np.savez(sys.argv[1], **out)
"""


@_needs("diffusers")
def test_diffusers_models_training_sampling_and_reload_match_torch(tmp_path):
    # UNet2DModel, UNet2DConditionModel and AutoencoderKL forward and backward, DDPM and DDIM
    # training steps with AdamW and EMAModel, DDPM and DDIM pipelines, save/load round trips
    t, e = _both(tmp_path, DIFFUSERS_DRIVER)
    _assert_same(t, e, rtol=1e-4, atol=2e-5)


DIFFUSERS_MORE_DRIVER = """
    import sys, os, tempfile, inspect
    import numpy as np
    import torch
    torch.set_num_threads(1)
    import diffusers
    from diffusers import (UNet2DModel, UNet2DConditionModel, AutoencoderKL, VQModel,
        DDPMScheduler, DDIMScheduler, DPMSolverMultistepScheduler, EulerDiscreteScheduler,
        EulerAncestralDiscreteScheduler, PNDMScheduler, LMSDiscreteScheduler, HeunDiscreteScheduler,
        UniPCMultistepScheduler, LCMScheduler, DPMSolverSDEScheduler, KDPM2DiscreteScheduler,
        DEISMultistepScheduler, FlowMatchEulerDiscreteScheduler, DiTTransformer2DModel,
        Transformer2DModel, UNet1DModel, AutoencoderTiny, ControlNetModel, SD3Transformer2DModel)
    from diffusers.models.attention_processor import AttnProcessor, AttnProcessor2_0
    from diffusers.training_utils import compute_snr, cast_training_params, EMAModel
    from diffusers.utils import logging
    from diffusers.utils.torch_utils import randn_tensor
    logging.set_verbosity_error()
    out = {}
    def trial(name, fn):
        fn()  # (a failure ends the run: its traceback is the test's message)

    def scheds():
        torch.manual_seed(0)
        for S in (DDPMScheduler, DDIMScheduler, DPMSolverMultistepScheduler, EulerDiscreteScheduler,
                  EulerAncestralDiscreteScheduler, PNDMScheduler, LMSDiscreteScheduler,
                  HeunDiscreteScheduler, UniPCMultistepScheduler, LCMScheduler,
                  KDPM2DiscreteScheduler,
                  DEISMultistepScheduler, FlowMatchEulerDiscreteScheduler):
            def one(S=S):
                s = S()
                s.set_timesteps(5)
                g = torch.Generator().manual_seed(0)
                x = torch.randn(1, 2, 4, 4, generator=g) * getattr(s, 'init_noise_sigma', 1.0)
                for t in s.timesteps:
                    xi = s.scale_model_input(x, t) if hasattr(s, 'scale_model_input') else x
                    eps = torch.sin(xi * 3 + float(t) / 100)
                    takes_g = 'generator' in inspect.signature(s.step).parameters
                    kw = {'generator': g} if takes_g else {}
                    x = s.step(eps, t, x, **kw).prev_sample
                out["sched_" + S.__name__] = x.numpy()
                out["sched_ts_" + S.__name__] = s.timesteps.float().numpy()
            trial(S.__name__, one)
    trial("scheds", scheds)

    def unet_feats():
        torch.manual_seed(0)
        cu = UNet2DConditionModel(sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
                block_out_channels=(8, 16), norm_num_groups=4, cross_attention_dim=12,
                attention_head_dim=4, time_cond_proj_dim=6, class_embed_type="timestep",
                down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
        x = torch.randn(2, 4, 8, 8); ctx = torch.randn(2, 5, 12); tc = torch.randn(2, 6)
        mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
        kw = dict(encoder_hidden_states=ctx, timestep_cond=tc, class_labels=torch.tensor([4, 9]),
                  encoder_attention_mask=mask)
        out["u_a"] = cu(x, 5, **kw).sample.detach().numpy()
        cu.set_attn_processor(AttnProcessor())
        out["u_classic"] = cu(x, 5, **kw).sample.detach().numpy()
        cu.set_attn_processor(AttnProcessor2_0())
        cu.fuse_qkv_projections()
        out["u_fused"] = cu(x, 5, **kw).sample.detach().numpy()
        cu.unfuse_qkv_projections()
        cu.enable_gradient_checkpointing(); cu.train()
        y = cu(x, torch.tensor([1, 2]), **kw).sample
        y.square().mean().backward()
        out["u_ckpt_g"] = np.stack([p.grad.norm().numpy() for p in cu.parameters()
                                     if p.grad is not None])
        cu.disable_gradient_checkpointing()
        cu.to(memory_format=torch.channels_last)
        out["u_cl"] = cu(x, 5, **kw).sample.detach().numpy()
        cub = cu.to(torch.bfloat16)
        out["u_bf16"] = cub(x.bfloat16(), 5, **{k: (v.bfloat16() if v.is_floating_point() else v)
                            for k, v in kw.items()}).sample.float().detach().numpy()
        cu.float()
        with tempfile.TemporaryDirectory() as d:
            cu.save_pretrained(d)
            c2 = UNet2DConditionModel.from_pretrained(d, torch_dtype=torch.float16)
            out["u_fp16_dtype"] = np.array(str(c2.dtype))
            out["u_fp16_w"] = next(c2.parameters()).float().detach().numpy()
            c3 = UNet2DConditionModel.from_pretrained(d, low_cpu_mem_usage=False)
            out["u_lowmem"] = c3(x, 5, **kw).sample.detach().numpy()
        p = [torch.nn.Parameter(torch.randn(3, dtype=torch.float16))]
        cast_training_params(torch.nn.ModuleList([torch.nn.Linear(2, 2).half()]))
        s = DDPMScheduler()
        out["snr"] = compute_snr(s, torch.tensor([0, 10, 999])).numpy()
        gens = [torch.Generator().manual_seed(i) for i in range(2)]
        out["randn"] = randn_tensor((2, 3), generator=gens).numpy()
    trial("unet_feats", unet_feats)

    def lora_unet():
        from peft import LoraConfig
        from peft.utils import get_peft_model_state_dict
        torch.manual_seed(0)
        cu = UNet2DConditionModel(sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
                block_out_channels=(8, 16), norm_num_groups=4, cross_attention_dim=12,
                attention_head_dim=4,
                down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
        cu.requires_grad_(False)
        cu.add_adapter(LoraConfig(r=4, lora_alpha=4, init_lora_weights="gaussian",
                                  target_modules=["to_k", "to_q", "to_v", "to_out.0"]))
        x = torch.randn(2, 4, 8, 8); ctx = torch.randn(2, 5, 12)
        params = [p for p in cu.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=1e-2)
        for i in range(2):
            loss = cu(x, 5, encoder_hidden_states=ctx).sample.square().mean()
            loss.backward(); opt.step(); opt.zero_grad()
            out[f"lora_loss{i}"] = loss.detach().numpy()
        sd = get_peft_model_state_dict(cu)
        out["lora_keys"] = np.array(sorted(sd))
        from diffusers.utils import convert_state_dict_to_diffusers
        out["lora_conv_keys"] = np.array(sorted(convert_state_dict_to_diffusers(sd)))
        cu.disable_adapters()
        out["lora_off"] = cu(x, 5, encoder_hidden_states=ctx).sample.detach().numpy()
        cu.enable_adapters()
        out["lora_on"] = cu(x, 5, encoder_hidden_states=ctx).sample.detach().numpy()
    trial("lora_unet", lora_unet)

    def others():
        torch.manual_seed(0)
        vae = AutoencoderKL(block_out_channels=(8, 16), norm_num_groups=4, layers_per_block=1,
                            down_block_types=("DownEncoderBlock2D",) * 2,
                            up_block_types=("UpDecoderBlock2D",) * 2, sample_size=16)
        img = torch.randn(1, 3, 48, 48)
        vae.enable_tiling(); vae.tile_sample_min_size = 16; vae.tile_latent_min_size = 8
        with torch.no_grad():
            out["vae_tiled"] = vae(img, sample_posterior=False).sample.numpy()
        torch.manual_seed(0)
        vq = VQModel(block_out_channels=(8, 16), norm_num_groups=4, layers_per_block=1,
                     down_block_types=("DownEncoderBlock2D",) * 2,
                     up_block_types=("UpDecoderBlock2D",) * 2, num_vq_embeddings=16,
                     latent_channels=3)
        r = vq(torch.randn(2, 3, 8, 8))
        out["vq"] = r.sample.detach().numpy()
        (r.sample.mean() + r.commit_loss.mean()).backward()
        out["vq_g"] = vq.quantize.embedding.weight.grad.numpy()
        torch.manual_seed(0)
        dit = DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4,
                                    num_layers=2, sample_size=8, patch_size=2,
                                    num_embeds_ada_norm=10,
                                    norm_num_groups=4)
        out["dit"] = dit(torch.randn(2, 4, 8, 8), timestep=torch.tensor([1, 3]),
                         class_labels=torch.tensor([1, 2])).sample.detach().numpy()
    trial("others", others)
    def others3():
        torch.manual_seed(0)
        tiny = AutoencoderTiny(encoder_block_out_channels=(8, 8), decoder_block_out_channels=(8, 8),
                               num_encoder_blocks=(1, 1), num_decoder_blocks=(1, 1),
                               latent_channels=4)
        out["tiny"] = tiny(torch.randn(1, 3, 16, 16)).sample.detach().numpy()
        torch.manual_seed(0)
        sd3 = SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=2,
                                    attention_head_dim=8, num_attention_heads=2,
                                    joint_attention_dim=12,
                                    caption_projection_dim=16, pooled_projection_dim=6,
                                    out_channels=4,
                                    pos_embed_max_size=16)
        out["sd3"] = sd3(torch.randn(1, 4, 8, 8), encoder_hidden_states=torch.randn(1, 3, 12),
                         pooled_projections=torch.randn(1, 6),
                         timestep=torch.tensor([5])).sample.detach().numpy()
    trial("others3", others3)
    np.savez(sys.argv[1], **out)
"""


@_needs("diffusers", "peft")
def test_diffusers_schedulers_attention_lora_and_models_match_torch(tmp_path):
    t, e = _both(tmp_path, DIFFUSERS_MORE_DRIVER)
    # (KDPM2's timesteps go through float32 exp, whose last bit NumPy and PyTorch round
    # differently; bfloat16 attention rounds its probabilities differently from PyTorch's
    # CPU flash kernel: a few bfloat16 ulps)
    loose = ("sched_KDPM2DiscreteScheduler", "sched_ts_KDPM2DiscreteScheduler", "u_bf16")
    _assert_same(t, e, rtol=1e-4, atol=2e-5, skip=loose)
    np.testing.assert_allclose(e["sched_KDPM2DiscreteScheduler"],
                               t["sched_KDPM2DiscreteScheduler"], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(e["sched_ts_KDPM2DiscreteScheduler"],
                               t["sched_ts_KDPM2DiscreteScheduler"], rtol=1e-6)
    np.testing.assert_allclose(e["u_bf16"], t["u_bf16"], atol=4e-2)


# -- PEFT -----------------------------------------------------------------------------------

PEFT_LORA_DRIVER = """
    import sys, os, tempfile, io, contextlib
    import numpy as np
    import torch
    torch.set_num_threads(1)
    from torch import nn
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM
    from peft import (LoraConfig, get_peft_model, PeftModel, TaskType, get_peft_model_state_dict,
                      set_peft_model_state_dict)
    transformers.logging.set_verbosity_error()
    out = {}

    def tr(m, x, y, n, key, loss_fn):
        opt = torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=1e-2)
        for i in range(n):
            loss = loss_fn(m, x, y)
            loss.backward(); opt.step(); opt.zero_grad()
            out[f"{key}_loss{i}"] = loss.detach().numpy()

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.seq = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 20), nn.ReLU())
            self.head = nn.Linear(20, 2)
        def forward(self, x):
            return self.head(self.seq(x))

    torch.manual_seed(0)
    mlp = MLP()
    cfg = LoraConfig(r=4, lora_alpha=8, target_modules=["seq.0", "seq.2"], modules_to_save=["head"],
                     lora_dropout=0.1, init_lora_weights="gaussian")
    pm = get_peft_model(mlp, cfg)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        pm.print_trainable_parameters()
    out["mlp_trainable"] = np.array(buf.getvalue())
    out["mlp_counts"] = np.array(pm.get_nb_trainable_parameters())
    x = torch.randn(16, 10); y = torch.randint(0, 2, (16,))
    pm.train()
    tr(pm, x, y, 3, "mlp", lambda m, x, y: nn.functional.cross_entropy(m(x), y))
    pm.eval()
    out["mlp_out"] = pm(x).detach().numpy()
    with pm.disable_adapter():
        out["mlp_base"] = pm(x).detach().numpy()
    with tempfile.TemporaryDirectory() as d:
        pm.save_pretrained(d)
        out["mlp_files"] = np.array(sorted(os.listdir(d)))
        torch.manual_seed(0)
        base = MLP()
        lm = PeftModel.from_pretrained(base, d).eval()
        out["mlp_loaded"] = lm(x).detach().numpy()
        lm.load_adapter(d, adapter_name="second")
        lm.set_adapter("second")
        out["mlp_second"] = lm(x).detach().numpy()
    sd = get_peft_model_state_dict(pm)
    out["mlp_sd_keys"] = np.array(sorted(sd))
    merged = pm.merge_and_unload()
    out["mlp_merged"] = merged(x).detach().numpy()
    out["mlp_merged_type"] = np.array(str([type(mm).__name__ for mm in merged.modules()]))

    # transformers
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, 97, (2, 9), generator=g)
    for name in ("gpt2", "llama"):
        torch.manual_seed(0)
        if name == "gpt2":
            m = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=97,
                                           n_positions=64))
            tm = ["c_attn", "c_proj"]
        else:
            m = LlamaForCausalLM(LlamaConfig(
                num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                                 num_key_value_heads=2, intermediate_size=64, vocab_size=97,
                                 max_position_embeddings=64, pad_token_id=2))
            tm = ["q_proj", "v_proj", "gate_proj"]
        out[name + "_base"] = m(ids).logits.detach().numpy()
        cfg = LoraConfig(task_type=TaskType.CAUSAL_LM, r=4, lora_alpha=16, lora_dropout=0.05,
                         target_modules=tm, fan_in_fan_out=(name == "gpt2"))
        pm = get_peft_model(m, cfg)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            pm.print_trainable_parameters()
        out[name + "_trainable"] = np.array(buf.getvalue())
        pm.train()
        tr(pm, ids, ids, 3, name, lambda m, x, y: m(input_ids=x, labels=y).loss)
        pm.eval()
        with torch.no_grad():
            out[name + "_out"] = pm(input_ids=ids).logits.numpy()
            out[name + "_gen"] = pm.generate(input_ids=ids, max_new_tokens=4, do_sample=False,
                                             pad_token_id=2).numpy()
        with tempfile.TemporaryDirectory() as d:
            pm.save_pretrained(d)
            out[name + "_files"] = np.array(sorted(os.listdir(d)))
            m.base_model  # noqa
            torch.manual_seed(0)
            base = type(pm.get_base_model())(pm.get_base_model().config)
            lp = PeftModel.from_pretrained(base, d).eval()
            with torch.no_grad():
                out[name + "_loaded"] = lp(input_ids=ids).logits.numpy()
        merged = pm.merge_and_unload()
        with torch.no_grad():
            out[name + "_merged"] = merged(input_ids=ids).logits.numpy()
    np.savez(sys.argv[1], **out)
"""


@_needs("peft", "transformers")
def test_peft_lora_mlp_gpt2_llama_match_torch(tmp_path):
    # get_peft_model, print_trainable_parameters, training, disable_adapter, save/load and
    # a second adapter, merge_and_unload
    t, e = _both(tmp_path, PEFT_LORA_DRIVER)
    _assert_same(t, e, rtol=1e-4, atol=2e-5)


PEFT_TUNERS_DRIVER = """
    import sys, os, tempfile
    import numpy as np
    import torch
    torch.set_num_threads(1)
    from torch import nn
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
    import peft
    from peft import (LoraConfig, get_peft_model, PeftModel, TaskType, LoHaConfig, LoKrConfig,
                      IA3Config, AdaLoraConfig, PrefixTuningConfig, PromptTuningConfig, VeraConfig,
                      OFTConfig, BOFTConfig, PromptEncoderConfig)
    transformers.logging.set_verbosity_error()
    out = {}

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(30, 16)
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.lin1 = nn.Linear(16 * 4, 32)
            self.lin2 = nn.Linear(32, 3)
        def forward(self, x):
            h = self.emb(x).unsqueeze(1)  # b,1,L,16
            h = torch.relu(self.conv(h)).mean(2)  # b,4,16
            return self.lin2(torch.relu(self.lin1(h.flatten(1))))

    torch.manual_seed(3)
    x = torch.randint(0, 30, (8, 5)); y = torch.randint(0, 3, (8,))
    cfgs = {
      "lora": lambda: LoraConfig(r=4, target_modules=["emb", "conv", "lin1"], bias="lora_only"),
      "dora": lambda: LoraConfig(r=4, target_modules=["conv", "lin1", "lin2"], use_dora=True,
                                 init_lora_weights=False),
      "rslora": lambda: LoraConfig(r=4, target_modules=["lin1"], use_rslora=True, lora_dropout=0.2),
      "pissa": lambda: LoraConfig(r=4, target_modules=["lin1", "lin2"], init_lora_weights="pissa"),
      "olora": lambda: LoraConfig(r=4, target_modules=["lin1", "lin2"], init_lora_weights="olora"),
      "loha": lambda: LoHaConfig(r=4, target_modules=["conv", "lin1"], init_weights=False),
      "lokr": lambda: LoKrConfig(r=4, target_modules=["conv", "lin1"], init_weights=False),
      "ia3": lambda: IA3Config(target_modules=["lin1", "lin2"], feedforward_modules=["lin2"]),
      "vera": lambda: VeraConfig(r=4, target_modules=["lin1"]),
      "oft": lambda: OFTConfig(r=0, oft_block_size=4, target_modules=["lin1", "conv"]),
      "boft": lambda: BOFTConfig(boft_block_size=4, target_modules=["lin1"]),
    }
    for name, mk in cfgs.items():
        torch.manual_seed(0)
        pm = get_peft_model(Net(), mk())
        opt = torch.optim.AdamW([p for p in pm.parameters() if p.requires_grad], lr=1e-2)
        pm.train()
        for i in range(2):
            loss = nn.functional.cross_entropy(pm(x), y)
            loss.backward(); opt.step(); opt.zero_grad()
            out[f"{name}_loss{i}"] = loss.detach().numpy()
        pm.eval()
        out[name + "_out"] = pm(x).detach().numpy()
        out[name + "_n"] = np.array(pm.get_nb_trainable_parameters())
        with tempfile.TemporaryDirectory() as d:
            pm.save_pretrained(d)
            torch.manual_seed(0)
            lp = PeftModel.from_pretrained(Net(), d).eval()
            out[name + "_loaded"] = lp(x).detach().numpy()
        if name not in ("vera",):
            out[name + "_merged"] = pm.merge_and_unload()(x).detach().numpy()

    # weighted adapters
    torch.manual_seed(0)
    pm = get_peft_model(Net(), LoraConfig(r=4, target_modules=["lin1"], init_lora_weights=False))
    pm.add_adapter("b", LoraConfig(r=4, target_modules=["lin1"], init_lora_weights=False))
    for ct in ("svd", "cat", "linear", "ties", "dare_linear"):
        kw = dict(density=0.5) if ct in ("ties", "dare_linear") else {}
        pm.add_weighted_adapter(["default", "b"], [0.7, 0.3], "w_" + ct, combination_type=ct, **kw)
        pm.set_adapter("w_" + ct)
        if ct != "dare_linear":
            out["wa_" + ct] = pm(x).detach().numpy()
    pm.delete_adapter("b")
    out["adapters"] = np.array(sorted(pm.peft_config))

    # prompt learning on llama
    ids = torch.randint(3, 97, (2, 7), generator=torch.Generator().manual_seed(1))
    lm = dict(task_type="CAUSAL_LM")
    for name, mk in {"prefix": lambda: PrefixTuningConfig(**lm, num_virtual_tokens=3),
                     "prompt": lambda: PromptTuningConfig(**lm, num_virtual_tokens=3),
                     "ptuning": lambda: PromptEncoderConfig(**lm, num_virtual_tokens=3,
                                                            encoder_hidden_size=16),
                     "adalora": lambda: AdaLoraConfig(task_type="CAUSAL_LM", init_r=6, target_r=2,
                         tinit=0, tfinal=0, deltaT=1, total_step=4,
                         target_modules=["q_proj", "v_proj"]),
                     }.items():
        torch.manual_seed(0)
        m = LlamaForCausalLM(LlamaConfig(
            num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                             num_key_value_heads=2, intermediate_size=64, vocab_size=97,
                             max_position_embeddings=64, pad_token_id=2))
        pm = get_peft_model(m, mk())
        opt = torch.optim.AdamW([p for p in pm.parameters() if p.requires_grad], lr=1e-2)
        pm.train()
        for i in range(3):
            loss = pm(input_ids=ids, labels=ids).loss
            loss.backward(); opt.step()
            if name == "adalora":
                pm.base_model.update_and_allocate(i)
            opt.zero_grad()
            out[f"{name}_loss{i}"] = loss.detach().numpy()
        pm.eval()
        with torch.no_grad():
            out[name + "_gen"] = pm.generate(input_ids=ids, max_new_tokens=3, do_sample=False,
                                             pad_token_id=2).numpy()
    np.savez(sys.argv[1], **out)
"""


@_needs("peft", "transformers")
def test_peft_other_tuners_and_weighted_adapters_match_torch(tmp_path):
    # DoRA, rsLoRA, PiSSA, OLoRA, LoHa, LoKr, IA3, VeRA, OFT, BOFT, weighted adapters
    # (svd, cat, linear, ties), prefix, prompt and p-tuning, AdaLoRA on a tiny Llama
    t, e = _both(tmp_path, PEFT_TUNERS_DRIVER)
    _assert_same(t, e, rtol=1e-4, atol=2e-5)


# -- the ember fixes, in process ------------------------------------------------------------

def _to_cases(t):
    x = t.zeros(2)
    return [x.to(None), x.to(None, None), x.to(device=None), x.to(dtype=None),
            x.to(None, t.float64), x.to(t.float32, False, True), x.to(t.float32, True),
            x.to("cpu", None, False, True), x.to(x, False, True)], x


def test_to_positional_none_and_copy_flag_as_torch():
    # diffusers' schedulers call ``timesteps.to(device)`` with ``device=None``
    torch = pytest.importorskip("torch")
    got, x = _to_cases(ember)
    want, y = _to_cases(torch)
    assert [r is x for r in got] == [r is y for r in want]
    assert [str(r.dtype) for r in got] == [str(r.dtype).replace("torch", "ember") for r in want]


def test_to_positional_copy_flag_copies():
    x = ember.ones(3)
    y = x.to(ember.float32, False, True)
    y.add_(1)
    assert y is not x and x.tolist() == [1.0, 1.0, 1.0]
    assert x.to(ember.float32, True) is x  # (one bool: non_blocking)


@pytest.mark.parametrize("name", ["mps", "xla", "hpu", "xpu", "mtia", "ipu", "lazy", "hip",
                                  "maia", "vulkan", "ve", "fpga", "mps:0", "xla:1"])
def test_every_torch_device_type_parses(name):
    # PEFT's adapter loader compares ``device == torch.device("mps")``
    d = ember.device(name)
    assert str(d) == name and d != ember.device("cpu")
    torch = pytest.importorskip("torch")
    t = torch.device(name)
    assert (d.type, d.index) == (t.type, t.index)


def test_unknown_device_type_message_lists_torch_types():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as want:
        torch.device("nodev")
    with pytest.raises(RuntimeError) as got:
        ember.device("nodev")
    # (PyTorch's types in its order; backends registered through ember.library follow)
    head = str(want.value).split(" device type")[0]
    assert str(got.value).startswith(head)
    assert str(got.value).endswith("device type at start of device string: nodev")


def test_tensor_on_device_without_backend_raises():
    with pytest.raises(RuntimeError, match="mps"):
        ember.zeros(2).to("mps")


def test_cpp_extension_load_raises_as_a_failed_build():
    # PEFT's BOFT tries ``load(...)`` and falls back on any exception
    from ember.utils import cpp_extension

    with pytest.raises(RuntimeError, match="cannot build"):
        cpp_extension.load("fbd_cuda", sources=["a.cpp", "b.cu"], verbose=True)
    with pytest.raises(RuntimeError):
        cpp_extension.load_inline("ext", cpp_sources="int f();", functions=["f"])
    with pytest.raises(RuntimeError):
        cpp_extension.CUDAExtension("ext", ["a.cu"])
    assert cpp_extension.include_paths() == [] and cpp_extension.ROCM_HOME is None
    assert isinstance(cpp_extension.is_ninja_available(), bool)


def test_cpp_extension_under_the_alias(tmp_path):
    code = ("import torch.utils.cpp_extension as c\n"
            "try:\n    c.load('x', ['x.cpp'])\nexcept Exception as e:\n"
            "    print(type(e).__name__)\n")
    script = tmp_path / "s.py"
    script.write_text(code)
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-m", "ember.compat.run", str(script)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(root)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "RuntimeError"
