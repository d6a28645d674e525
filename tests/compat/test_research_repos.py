"""Research repositories' model code, vendored unchanged, on ember and on PyTorch.

The model files of openai/whisper, openai/CLIP, facebookresearch/segment-anything and
facebookresearch/detr, and nine of lucidrains/vit-pytorch's variants (CaiT, DeepViT, CrossViT,
LeViT, CvT, MobileViT, MaxViT, PiT, CCT; float64) live under ``programs/third_party/`` (see its
README; each folder holds the upstream licence). One driver builds each model at a tiny size
from a fixed seed, runs it forward and backward (whisper: logits, the no-sdpa path and greedy
decoding through its kv-cache hooks; CLIP: the ViT and ModifiedResNet towers and
``build_model``'s float16 rebuild; SAM: the batched ``Sam`` call and gradients through encoder,
prompt encoder and mask decoder; detr: the encoder-decoder transformer, the scipy Hungarian
matcher and a giou/l1/class loss), once under PyTorch and once under ember, and every output
and gradient is compared.

lucidrains' x-transformers and denoising-diffusion-pytorch are in
``test_research_repos_2.py``.
"""

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.compat._programs import assert_runs_match, driver_source

ROOT = Path(__file__).resolve().parents[2]
THIRD_PARTY = Path(__file__).parent / "programs" / "third_party"

# detr's util/box_ops imports torchvision's box_area, the one torchvision name it uses
_BOXES = """
    def box_area(boxes):
        return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
"""

DRIVER = """
    import sys, types
    import numpy as np
    import torch

    TP = sys.argv[2]
    which = sys.argv[3].split(",")


    if "whisper" in which:
        sys.path.insert(0, TP + "/whisper")
        for sub in ("decoding", "transcribe"):  # the model file's decoding imports, unused here
            stub = types.ModuleType("whisper." + sub)
            stub.decode = stub.detect_language = stub.transcribe = None
            sys.modules["whisper." + sub] = stub
        from whisper.model import ModelDimensions, Whisper, disable_sdpa
        torch.manual_seed(0)
        dims = ModelDimensions(n_mels=16, n_audio_ctx=10, n_audio_state=32, n_audio_head=4,
                               n_audio_layer=2, n_vocab=50, n_text_ctx=12, n_text_state=32,
                               n_text_head=4, n_text_layer=2)
        model = Whisper(dims)
        for p in model.parameters():  # the decoder's zero-initialised pieces, made non-trivial
            torch.nn.init.normal_(p, std=0.2)
        mel = torch.randn(2, 16, 20)
        tokens = torch.randint(0, 50, (2, 6))
        logits = model(mel, tokens)
        logits.log_softmax(-1).mean().backward()
        out["whisper_logits"] = logits.detach().numpy()
        grads("whisper", model)
        with torch.no_grad(), disable_sdpa():
            out["whisper_nosdpa"] = model(mel, tokens).numpy()
        # greedy decoding with the kv-cache hooks
        with torch.no_grad():
            audio = model.embed_audio(mel)
            cache, hooks = model.install_kv_cache_hooks()
            seq = tokens[:, :2]
            step_in = seq
            for _ in range(5):
                nxt = model.decoder(step_in, audio, kv_cache=cache)
                nxt = nxt[:, -1].argmax(-1, keepdim=True)
                seq = torch.cat([seq, nxt], 1)
                step_in = nxt
            for h in hooks:
                h.remove()
            out["whisper_greedy"] = seq.numpy()
            out["whisper_full"] = model.decoder(seq[:, :-1], audio).argmax(-1).numpy()
        out["whisper_heads"] = model.alignment_heads.to_dense().numpy()

    if "clip" in which:
        sys.path.insert(0, TP + "/clip")
        from clip.model import CLIP, build_model
        for name, layers, width in (("vit", 2, 64), ("rn", (1, 1, 1, 1), 4)):
            torch.manual_seed(0)
            model = CLIP(embed_dim=16, image_resolution=32, vision_layers=layers,
                         vision_width=width, vision_patch_size=8, context_length=8, vocab_size=40,
                         transformer_width=64, transformer_heads=1, transformer_layers=2)
            image = torch.randn(3, 3, 32, 32)
            text = torch.randint(1, 40, (3, 8))
            li, lt = model(image, text)
            (li.logsumexp(-1).sum() - li.diagonal().sum()).backward()
            out[f"clip_{name}_logits"] = li.detach().numpy()
            out[f"clip_{name}_t"] = lt.detach().numpy()
            grads("clip_" + name, model)
            # build_model reads the sizes back from a state dict and converts to float16
            rebuilt = build_model({k: v.clone() for k, v in model.state_dict().items()})
            out[f"clip_{name}_half"] = np.array([str(p.dtype) for p in rebuilt.parameters()])
            with torch.no_grad():
                out[f"clip_{name}_rebuilt"] = rebuilt.float()(image, text)[0].numpy()

    if "sam" in which:
        sys.path.insert(0, TP + "/segment_anything")
        from segment_anything.modeling import (ImageEncoderViT, MaskDecoder, PromptEncoder, Sam,
                                               TwoWayTransformer)
        torch.manual_seed(0)
        sam = Sam(
            image_encoder=ImageEncoderViT(img_size=64, patch_size=8, embed_dim=32, depth=2,
                                          num_heads=2, out_chans=16, qkv_bias=True,
                                          use_rel_pos=True, window_size=3,
                                          global_attn_indexes=(1,)),
            prompt_encoder=PromptEncoder(embed_dim=16, image_embedding_size=(8, 8),
                                         input_image_size=(64, 64), mask_in_chans=8),
            mask_decoder=MaskDecoder(num_multimask_outputs=3,
                                     transformer=TwoWayTransformer(depth=2, embedding_dim=16,
                                                                   mlp_dim=32, num_heads=2),
                                     transformer_dim=16, iou_head_depth=2, iou_head_hidden_dim=16),
            pixel_mean=[0.5, 0.5, 0.5], pixel_std=[0.2, 0.2, 0.2])
        image = torch.rand(3, 50, 64) * 255
        batched = [{"image": image, "original_size": (100, 128),
                    "point_coords": torch.tensor([[[10.0, 20.0], [40.0, 30.0]]]),
                    "point_labels": torch.tensor([[1, 0]]),
                    "boxes": torch.tensor([[5.0, 5.0, 60.0, 40.0]]),
                    "mask_inputs": torch.randn(1, 1, 32, 32)}]
        res = sam(batched, multimask_output=True)[0]
        out["sam_masks"] = res["masks"].numpy()
        out["sam_iou"] = res["iou_predictions"].numpy()
        out["sam_low"] = res["low_res_logits"].numpy()
        # gradients through encoder, prompt encoder and decoder
        feats = sam.image_encoder(sam.preprocess(image)[None])
        points = (batched[0]["point_coords"], batched[0]["point_labels"])
        sparse, dense = sam.prompt_encoder(points=points, boxes=None, masks=None)
        dense_pe = sam.prompt_encoder.get_dense_pe()
        masks, iou = sam.mask_decoder(feats, dense_pe, sparse, dense, False)
        (masks.sigmoid().mean() + iou.sum()).backward()
        out["sam_train_masks"] = masks.detach().numpy()
        grads("sam", sam)

    if "detr" in which:
        sys.path.insert(0, TP + "/detr")
        from models.transformer import Transformer
        from models.matcher import HungarianMatcher
        from util import box_ops
        torch.manual_seed(0)
        tr = Transformer(d_model=32, nhead=4, num_encoder_layers=2, num_decoder_layers=2,
                         dim_feedforward=64, dropout=0.0, return_intermediate_dec=True)
        src = torch.randn(2, 32, 4, 5)
        mask = torch.zeros(2, 4, 5, dtype=torch.bool)
        mask[1, :, 3:] = True
        query = torch.randn(6, 32)
        pos = torch.randn(2, 32, 4, 5)
        hs, memory = tr(src, mask, query, pos)
        head_cls = torch.nn.Linear(32, 4)
        head_box = torch.nn.Linear(32, 4)
        logits, boxes = head_cls(hs[-1]), head_box(hs[-1]).sigmoid()
        targets = [{"labels": torch.tensor([1, 2]),
                    "boxes": torch.tensor([[0.5, 0.5, 0.2, 0.3], [0.3, 0.6, 0.1, 0.2]])},
                   {"labels": torch.tensor([0]), "boxes": torch.tensor([[0.4, 0.4, 0.3, 0.3]])}]
        matcher = HungarianMatcher(cost_class=1, cost_bbox=5, cost_giou=2)
        idx = matcher({"pred_logits": logits, "pred_boxes": boxes}, targets)
        loss = 0
        for b, ((i, j), t) in enumerate(zip(idx, targets)):
            out[f"detr_match_{b}"] = np.stack([i.numpy(), j.numpy()])
            pb = boxes[b, i]
            tb = t["boxes"][j]
            giou = torch.diag(box_ops.generalized_box_iou(box_ops.box_cxcywh_to_xyxy(pb),
                                                          box_ops.box_cxcywh_to_xyxy(tb)))
            loss = loss + (1 - giou).sum() + (pb - tb).abs().sum()
            loss = loss + torch.nn.functional.cross_entropy(logits[b, i], t["labels"][j])
        loss.backward()
        out["detr_hs"] = hs.detach().numpy()
        out["detr_memory"] = memory.detach().numpy()
        out["detr_loss"] = loss.detach().numpy()
        grads("detr", tr)
        out["detr_masks"] = box_ops.masks_to_boxes(torch.rand(2, 6, 7) > 0.5).numpy()

    if "vit" in which:
        sys.path.insert(0, TP + "/vit_pytorch")
        from cait import CaiT
        from cct import CCT
        from cross_vit import CrossViT
        from cvt import CvT
        from deepvit import DeepViT
        from levit import LeViT
        from max_vit import MaxViT
        from mobile_vit import MobileViT
        from pit import PiT

        SPECS = {
            "cait": (lambda: CaiT(image_size=32, patch_size=8, num_classes=5, dim=32, depth=2,
                                  cls_depth=1, heads=2, mlp_dim=64, dim_head=16), 32),
            "deepvit": (lambda: DeepViT(image_size=32, patch_size=8, num_classes=5, dim=32, depth=2,
                                        heads=2, mlp_dim=64, dim_head=16), 32),
            "cross_vit": (lambda: CrossViT(image_size=32, num_classes=5, sm_dim=32, lg_dim=48,
                                           sm_patch_size=8, sm_enc_heads=2, sm_enc_mlp_dim=64,
                                           sm_enc_dim_head=16, lg_patch_size=16, lg_enc_depth=1,
                                           lg_enc_heads=2, lg_enc_mlp_dim=64, lg_enc_dim_head=16,
                                           cross_attn_depth=1, cross_attn_heads=2,
                                           cross_attn_dim_head=16, depth=1, dropout=0.,
                                           emb_dropout=0.), 32),
            "levit": (lambda: LeViT(image_size=64, num_classes=5, dim=(16, 32, 48), depth=1,
                                    heads=(2, 2, 2), mlp_mult=2, dim_key=8, dim_value=16), 64),
            "cvt": (lambda: CvT(num_classes=5, s1_emb_dim=16, s2_emb_dim=32, s2_heads=2, s2_depth=1,
                                s3_emb_dim=48, s3_heads=2, s3_depth=1), 32),
            "mobile_vit": (lambda: MobileViT(image_size=(64, 64), dims=[24, 32, 40],
                                             channels=[8, 8, 16, 16, 24, 24, 32, 32, 40, 40, 64],
                                             num_classes=5), 64),
            "max_vit": (lambda: MaxViT(num_classes=5, dim_conv_stem=16, dim=16, dim_head=8,
                                       depth=(1, 1), window_size=2, dropout=0.), 32),
            "pit": (lambda: PiT(image_size=32, patch_size=8, num_classes=5, dim=32, depth=(1, 1, 1),
                                heads=2, mlp_dim=64, dim_head=16), 32),
            "cct": (lambda: CCT(img_size=(32, 32), embedding_dim=32, n_conv_layers=1, kernel_size=3,
                                stride=1, padding=1, pooling_kernel_size=3, pooling_stride=2,
                                pooling_padding=1, num_layers=1, num_heads=2, mlp_ratio=2.,
                                num_classes=5, positional_embedding="learnable",
                                attention_dropout=0., stochastic_depth_rate=0.), 32),
        }
        for name, (make, size) in SPECS.items():
            torch.manual_seed(0)
            model = make().double()
            torch.manual_seed(1)
            x = torch.randn(2, 3, size, size, dtype=torch.float64)
            y = model(x)
            y = y[0] if isinstance(y, tuple) else y
            y.square().mean().backward()
            out["vit_" + name] = y.detach().numpy()
            for n, p in model.named_parameters():
                if p.grad is not None:
                    out[f"vit_{name}_g_{n}"] = p.grad.numpy()
            model.eval()
            with torch.no_grad():
                e = model(x)
                out["vit_" + name + "_eval"] = (e[0] if isinstance(e, tuple) else e).numpy()

    np.savez(sys.argv[1], **out)
"""


def _both(tmp_path, which):
    driver = tmp_path / "driver.py"
    driver.write_text(driver_source(DRIVER))
    standin = tmp_path / "standin" / "torchvision"
    (standin / "ops").mkdir(parents=True)
    (standin / "__init__.py").write_text("")
    (standin / "ops" / "__init__.py").write_text("")
    (standin / "ops" / "boxes.py").write_text(textwrap.dedent(_BOXES))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(standin.parent)]),
               PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
    results = []
    for name, prefix in (("torch", []), ("ember", ["-m", "ember.compat.run"])):
        out = tmp_path / f"{name}.npz"
        proc = subprocess.run([sys.executable, *prefix, str(driver), str(out), str(THIRD_PARTY),
                               which], capture_output=True, text=True, cwd=tmp_path, env=env,
                              timeout=300)
        assert proc.returncode == 0, f"{name}:\n{proc.stderr[-4000:]}"
        results.append(dict(np.load(out)))
    return results


@pytest.mark.parametrize("which, needs, expected", [
    ("whisper", (), 90), ("clip", (), 160), ("sam", (), 160), ("detr", ("scipy",), 60),
    ("vit", ("einops",), 700)])
def test_research_model_code_matches_torch(which, needs, expected, tmp_path):
    if any(importlib.util.find_spec(n) is None for n in ("torch",) + needs):
        pytest.skip(f"needs torch {' '.join(needs)}")
    assert_runs_match(*_both(tmp_path, which), expected)
