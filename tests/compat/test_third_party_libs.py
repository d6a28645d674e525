"""Libraries built on torch, imported beside it, run unchanged on ember under the alias.

Each library test writes a small driver program, runs it once on PyTorch (``python
driver.py``) and once on ember (``python -m ember.compat.run driver.py``); each run saves
its numbers to its own ``.npz`` file, and the two are compared. The libraries are the real
installed packages (einops, transformers, timm, gymnasium, safetensors); the model code of
vit-pytorch, minGPT and pytorch/examples' reinforcement learning programs is vendored,
unchanged, under ``programs/third_party/`` (see its README). A test skips when its library,
or PyTorch, is not installed.

The tests at the end check, in process and without any library, the ember fixes these
libraries needed (vmap's batched 0-dim indices, attention dropout over fully masked rows,
storages over files, functional collectives, generic datasets and samplers, ...).
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
from tests.conftest import HAS_TORCH

ROOT = Path(__file__).resolve().parents[2]
THIRD_PARTY = Path(__file__).parent / "programs" / "third_party"

needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="compares with PyTorch")


def _needs(*names):
    """Skip unless torch and every package in ``names`` can be imported."""
    missing = [n for n in ("torch",) + names if importlib.util.find_spec(n) is None]
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)}")


def _run(args, cwd, extra_path=()):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), *map(str, extra_path)]),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TQDM_DISABLE="1",
               PYTHONWARNINGS="ignore")
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=cwd,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    return out.stdout


def _both(tmp_path, source, args=(), extra_path=()):
    """Run the driver ``source`` on PyTorch, then on ember; return their saved arrays.

    The driver gets the path of its ``.npz`` output as its first argument, then ``args``.
    """
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(source))
    results = []
    for name, prefix in (("torch", []), ("ember", ["-m", "ember.compat.run"])):
        out = tmp_path / f"{name}.npz"
        _run([*prefix, str(driver), str(out), *map(str, args)], tmp_path, extra_path)
        results.append(dict(np.load(out)))
    return results


def _assert_same(torch_out, ember_out, rtol=1e-5, atol=1e-5, skip=()):
    assert sorted(torch_out) == sorted(ember_out)
    for key in torch_out:
        if key in skip:
            continue
        t, e = torch_out[key], ember_out[key]
        if t.dtype.kind in "fc":
            np.testing.assert_allclose(e, t, rtol=rtol, atol=atol, err_msg=key)
        else:
            np.testing.assert_array_equal(e, t, err_msg=key)


# -- einops ---------------------------------------------------------------------------------

EINOPS_DRIVER = """
    import sys, pickle, io
    import numpy as np
    import torch
    from torch import nn
    import einops
    from einops import rearrange, reduce, repeat, pack, unpack, einsum, parse_shape, asnumpy
    from einops.layers.torch import Rearrange, Reduce, EinMix

    out = {}
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, 6, requires_grad=True)
    out["rearrange"] = rearrange(x, "b c h w -> b (h w) c").detach().numpy()
    out["reduce_max"] = reduce(x, "b c (h h2) w -> b c h w", "max", h2=2).detach().numpy()
    for op in ("min", "max", "sum", "mean", "prod"):
        out["reduce_" + op] = reduce(x, "b c h w -> b h", op).detach().numpy()
    out["any"] = reduce(x > 0, "b c h w -> b", "any").numpy()
    out["repeat"] = repeat(x, "b c h w -> b c h w r", r=2).detach().numpy()
    packed, shapes = pack([x, x[:, :1]], "b * h w")
    a, b = unpack(packed, shapes, "b * h w")
    out["pack"] = packed.detach().numpy()
    out["unpack"] = np.array([list(a.shape), list(b.shape)])
    out["einsum"] = einsum(x, x, "b c h w, b c h w -> b c").detach().numpy()
    out["parse_shape"] = np.array(sorted(parse_shape(x, "b c _ w").items()))
    out["asnumpy"] = asnumpy(x)
    out["ints"] = reduce(torch.arange(12).reshape(3, 4), "h w -> h", "sum").numpy()
    out["list"] = rearrange([torch.ones(2), torch.zeros(2)], "n d -> d n").numpy()
    model = nn.Sequential(
        Rearrange("b c h (w p) -> b (h w) (p c)", p=2),
        EinMix("b t c -> b t d", weight_shape="c d", bias_shape="d", c=6, d=5),
        nn.GELU(),
        Reduce("b t d -> b d", "mean"))
    y = model(x)
    y.pow(2).sum().backward()
    out["model"] = y.detach().numpy()
    out["x_grad"] = x.grad.numpy()
    for name, p in model.named_parameters():
        out["grad_" + name] = p.grad.numpy()
    # scripting, compiling, saving and pickling einops layers
    z = torch.randn(2, 3, 4, 6)
    out["script"] = torch.jit.script(Rearrange("b c h w -> b (c h w)"))(z).numpy()
    out["script_reduce"] = torch.jit.script(Reduce("b c h w -> b c", "mean"))(z).numpy()
    out["compiled"] = torch.compile(model)(z).detach().numpy()
    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    out["saved"] = torch.load(buf, weights_only=False)(z).detach().numpy()
    out["pickled"] = pickle.loads(pickle.dumps(model))(z).detach().numpy()
    out["repr"] = np.array(repr(model))
    out["backend"] = np.array(type(einops._backends.get_backend(z)).__name__)
    import einops._torch_specific as ts
    out["registered"] = np.array(bool(getattr(ts, "_ops_were_registered_in_torchdynamo", False)))
    np.savez(sys.argv[1], **out)
"""


@_needs("einops")
def test_einops_ops_and_layers_match_torch(tmp_path):
    t, e = _both(tmp_path, EINOPS_DRIVER)
    _assert_same(t, e)


VIT_DRIVER = """
    import sys
    import numpy as np
    sys.path.insert(0, sys.argv[2])
    import torch
    from vit import ViT
    from simple_vit import SimpleViT

    out = {}
    for name, cls, kw in [("vit", ViT, dict(pool="cls", dropout=0.1, emb_dropout=0.1)),
                          ("simple", SimpleViT, {})]:
        torch.manual_seed(0)
        m = cls(image_size=16, patch_size=4, num_classes=5, dim=32, depth=2, heads=4,
                mlp_dim=64, dim_head=8, **kw)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        x = torch.randn(4, 3, 16, 16)
        y = torch.tensor([0, 1, 2, 3])
        m.eval()
        out[name + "_logits"] = m(x).detach().numpy()
        m.train()
        for step in range(3):
            loss = torch.nn.functional.cross_entropy(m(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            out[f"{name}_loss{step}"] = loss.detach().numpy()
        out[name + "_param"] = next(m.parameters()).detach().numpy()
    np.savez(sys.argv[1], **out)
"""


@_needs("einops")
def test_vit_pytorch_trains_as_on_torch(tmp_path):
    # dropout included: ember draws torch's random stream
    t, e = _both(tmp_path, VIT_DRIVER, [THIRD_PARTY / "vit_pytorch"])
    _assert_same(t, e)


MINGPT_DRIVER = """
    import sys
    import numpy as np
    sys.path.insert(0, sys.argv[2])
    import torch
    from torch.utils.data import Dataset
    from mingpt.model import GPT
    from mingpt.trainer import Trainer
    from mingpt.utils import set_seed

    class SortDataset(Dataset):
        # minGPT's demo task: sort a few digits
        def __init__(self, n=64, length=6, num_digits=3):
            g = torch.Generator().manual_seed(1)
            self.data = torch.randint(num_digits, size=(n, length), generator=g)
            self.length, self.num_digits = length, num_digits
        def __len__(self):
            return len(self.data)
        def get_vocab_size(self):
            return self.num_digits
        def get_block_size(self):
            return self.length * 2 - 1
        def __getitem__(self, i):
            inp = self.data[i]
            cat = torch.cat((inp, torch.sort(inp)[0]), dim=0)
            x, y = cat[:-1].clone(), cat[1:].clone()
            y[:self.length - 1] = -1
            return x, y

    set_seed(3407)
    ds = SortDataset()
    cfg = GPT.get_default_config()
    cfg.model_type = "gpt-nano"
    cfg.vocab_size, cfg.block_size = ds.get_vocab_size(), ds.get_block_size()
    model = GPT(cfg)
    tc = Trainer.get_default_config()
    tc.learning_rate, tc.max_iters, tc.num_workers, tc.batch_size = 5e-4, 6, 0, 8
    tc.device = "cpu"
    trainer = Trainer(tc, model, ds)
    losses = []
    trainer.set_callback("on_batch_end", lambda t: losses.append(t.loss.item()))
    trainer.run()
    model.eval()
    with torch.no_grad():
        greedy = model.generate(ds.data[:2], 6, do_sample=False)
        sampled = model.generate(ds.data[:2], 4, do_sample=True, top_k=2)
    np.savez(sys.argv[1], losses=np.array(losses), greedy=greedy.numpy(),
             sampled=sampled.numpy(), iters=trainer.iter_num,
             head=model.lm_head.weight.detach().numpy())
"""


@needs_torch
def test_mingpt_trainer_runs_as_on_torch(tmp_path):
    t, e = _both(tmp_path, MINGPT_DRIVER, [THIRD_PARTY / "mingpt"])
    _assert_same(t, e)


# -- transformers ---------------------------------------------------------------------------

TRANSFORMERS_DRIVER = """
    import os, sys, tempfile
    import numpy as np
    import torch
    import transformers
    from transformers import (GPT2Config, GPT2LMHeadModel, BertConfig,
                              BertForSequenceClassification, LlamaConfig, LlamaForCausalLM)
    from transformers.utils import import_utils as iu
    transformers.logging.set_verbosity_error()
    out_path, init_dir, specs = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    # how transformers sees torch (the version string itself differs: ember's local label)
    out = {"detected": np.array([str(getattr(iu, n)()) for n in (
        "is_torch_available", "is_torch_cuda_available", "is_torch_distributed_available",
        "is_torch_mps_available", "is_torch_xpu_available", "is_torch_npu_available",
        "is_torch_flex_attn_available", "is_torch_accelerator_available",
        "is_torch_xla_available", "is_torch_hpu_available")]
        + [str(iu.is_torch_greater_or_equal("2.8"))]),
        "version": np.array(iu.get_torch_version())}

    def build(name, attn):
        torch.manual_seed(0)
        if name == "gpt2":
            cls = GPT2LMHeadModel
            cfg = GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=97, n_positions=64,
                             bos_token_id=0, eos_token_id=1)
        elif name == "bert":
            cls = BertForSequenceClassification
            cfg = BertConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                             intermediate_size=64, vocab_size=97, max_position_embeddings=64,
                             num_labels=3)
        else:
            cls = LlamaForCausalLM
            cfg = LlamaConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=4,
                              num_key_value_heads=2, intermediate_size=64, vocab_size=97,
                              max_position_embeddings=64, bos_token_id=0, eos_token_id=1,
                              pad_token_id=2)
        return cls(cfg) if attn is None else cls._from_config(cfg, attn_implementation=attn)

    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, 97, (2, 9), generator=g)
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[1, :3] = 0  # a left-padded row: its first queries attend to nothing
    for spec in specs:
        name, _, attn = spec.partition(":")
        key = spec.replace(":", "_")
        m = build(name, attn or None)
        # the PyTorch run (first) leaves its initial weights for the ember run
        f = os.path.join(init_dir, key + ".npz")
        if os.path.exists(f):
            z = np.load(f)
            m.load_state_dict({k: torch.from_numpy(z[k]) for k in z.files})
        else:
            np.savez(f, **{k: v.detach().numpy() for k, v in m.state_dict().items()})
        out[key + "_attn"] = np.array(str(m.config._attn_implementation))
        m.train()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.01)
        labels = torch.tensor([0, 2]) if name == "bert" else ids
        res = m(input_ids=ids, attention_mask=mask, labels=labels)
        out[key + "_logits"] = res.logits.detach().numpy()
        out[key + "_loss"] = res.loss.detach().numpy()
        res.loss.backward()
        out[key + "_gradnorm"] = torch.nn.utils.clip_grad_norm_(m.parameters(), 1e9).numpy()
        opt.step()
        opt.zero_grad()
        m.eval()
        with torch.no_grad():
            out[key + "_stepped"] = m(input_ids=ids, attention_mask=mask).logits.numpy()
            if name != "bert":
                out[key + "_generated"] = m.generate(
                    ids, attention_mask=mask, max_new_tokens=5, do_sample=False,
                    pad_token_id=2).numpy()
        with tempfile.TemporaryDirectory() as d:
            m.save_pretrained(d)
            out[key + "_files"] = np.array(sorted(os.listdir(d)))
            m2 = type(m).from_pretrained(d).eval()
            with torch.no_grad():
                out[key + "_reloaded"] = m2(input_ids=ids, attention_mask=mask).logits.numpy()
    np.savez(out_path, **out)
"""


def _transformers_case(tmp_path, specs):
    init = tmp_path / "init"
    init.mkdir()
    t, e = _both(tmp_path, TRANSFORMERS_DRIVER, [init, specs])
    _assert_same(t, e, rtol=1e-4, atol=2e-5, skip=("version",))
    assert str(e["version"]) == str(ember.__version__)  # importlib.metadata under the alias
    assert t["detected"][0] == "True"


@_needs("transformers", "safetensors")
def test_transformers_tiny_models_match_torch(tmp_path):
    # default attention (sdpa): forward, loss, backward, AdamW, greedy generate, and a
    # save_pretrained/from_pretrained round trip through safetensors
    _transformers_case(tmp_path, "gpt2,bert,llama")


@_needs("transformers", "safetensors")
def test_transformers_eager_attention_matches_torch(tmp_path):
    _transformers_case(tmp_path, "gpt2:eager,bert:eager,llama:eager")


SAFETENSORS_DRIVER = """
    import sys
    import numpy as np
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    path = sys.argv[1] + ".safetensors"
    save_file({"a": torch.arange(6.0).reshape(2, 3), "b": torch.tensor([1, 2], dtype=torch.int16),
               "c": torch.ones(3, dtype=torch.bfloat16)}, path)
    out = {}
    with safe_open(path, framework="pt", device="cpu") as f:
        for k in f.keys():
            t = f.get_tensor(k)
            out[k] = t.float().numpy()
            out[k + "_dtype"] = np.array(str(t.dtype))
        out["slice"] = f.get_slice("a")[:, 1:].numpy()
    loaded = load_file(path)
    out["loaded"] = np.array(sorted(loaded))
    loaded["a"] += 1  # the loaded tensors are writable; the file keeps its bytes
    out["again"] = load_file(path)["a"].numpy()
    np.savez(sys.argv[1], **out)
"""


@_needs("safetensors")
def test_safetensors_safe_open_matches_torch(tmp_path):
    t, e = _both(tmp_path, SAFETENSORS_DRIVER)
    _assert_same(t, e)


# -- timm -----------------------------------------------------------------------------------

# timm imports torchvision at its top (datasets, transforms, ops.misc) though its models use
# none of it; torchvision is built against real PyTorch and cannot load under the alias, so
# both runs get this stand-in holding just the names timm imports
_TIMM_TORCHVISION = {
    "__init__.py": "from . import datasets, ops, transforms  # noqa: F401\n",
    "datasets.py": "".join(f"class {n}:\n    pass\n\n\n" for n in (
        "CIFAR10", "CIFAR100", "MNIST", "KMNIST", "FashionMNIST", "ImageFolder")),
    "transforms/__init__.py": "from . import functional  # noqa: F401\n\n\n"
                              "class ToTensor:\n    pass\n",
    "transforms/functional.py": textwrap.dedent("""
        import enum


        class InterpolationMode(enum.Enum):
            NEAREST = "nearest"
            NEAREST_EXACT = "nearest-exact"
            BILINEAR = "bilinear"
            BICUBIC = "bicubic"
            BOX = "box"
            HAMMING = "hamming"
            LANCZOS = "lanczos"
        """),
    "ops/__init__.py": "from . import misc  # noqa: F401\n",
    "ops/misc.py": textwrap.dedent("""
        import torch


        class FrozenBatchNorm2d(torch.nn.Module):
            def __init__(self, num_features, eps=1e-5):
                super().__init__()
                self.eps = eps
                for name, fill in (("weight", 1), ("bias", 0), ("running_mean", 0),
                                   ("running_var", 1)):
                    self.register_buffer(name, torch.full((num_features,), float(fill)))

            def forward(self, x):
                scale = self.weight * (self.running_var + self.eps).rsqrt()
                shift = self.bias - self.running_mean * scale
                return x * scale.reshape(1, -1, 1, 1) + shift.reshape(1, -1, 1, 1)
        """),
}

TIMM_DRIVER = """
    import sys
    import numpy as np
    import torch
    import timm

    out = {}
    for name in ("resnet18", "vit_tiny_patch16_224"):
        torch.manual_seed(0)
        m = timm.create_model(name, pretrained=False, num_classes=10)
        x = torch.randn(2, 3, 64 if name == "resnet18" else 224, 64 if name == "resnet18" else 224)
        y = m(x)
        y.square().mean().backward()
        out[name] = y.detach().numpy()
        out[name + "_grad"] = next(m.parameters()).grad.numpy()
        out[name + "_n"] = np.array(sum(p.numel() for p in m.parameters()))
    np.savez(sys.argv[1], **out)
"""


@_needs("timm")
def test_timm_models_forward_backward_as_on_torch(tmp_path):
    standin = tmp_path / "standin"
    for rel, text in _TIMM_TORCHVISION.items():
        path = standin / "torchvision" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    t, e = _both(tmp_path, TIMM_DRIVER, extra_path=[standin])
    _assert_same(t, e, rtol=1e-4, atol=1e-5)


# -- gymnasium: pytorch/examples reinforcement learning -------------------------------------

RL_RUNNER = """
    # runs a pytorch/examples RL program unchanged, CartPole's "solved" threshold lowered so
    # that it stops after a few dozen episodes
    import runpy, sys
    import gymnasium
    gymnasium.envs.registration.registry["CartPole-v1"].reward_threshold = 25.0
    program = sys.argv[1]
    sys.argv = [program, "--log-interval", "1"]
    runpy.run_path(program, run_name="__main__")
"""


@_needs("gymnasium")
@pytest.mark.parametrize("program", ["reinforce.py", "actor_critic.py"])
def test_pytorch_examples_rl_on_gymnasium_prints_as_on_torch(program, tmp_path):
    runner = tmp_path / "runner.py"
    runner.write_text(textwrap.dedent(RL_RUNNER))
    path = THIRD_PARTY / "pytorch_examples_rl" / program
    on_torch = _run([str(runner), str(path)], tmp_path)
    on_ember = _run(["-m", "ember.compat.run", str(runner), str(path)], tmp_path)
    assert "Solved!" in on_torch
    assert on_ember == on_torch


# -- the ember fixes, in process ------------------------------------------------------------


@needs_torch
def test_vmap_batched_zero_dim_index_is_per_example():
    import torch

    m = np.array([[1, 0, 1], [1, 1, 0]])
    cases = [
        (lambda t: (lambda i: t[i]), (np.array([1, 0]),)),
        (lambda t: (lambda i: t[i, 1]), (np.array([1, 0]),)),
        (lambda t: (lambda i: t[0, i]), (np.array([2, 1]),)),
        (lambda t: (lambda i, j: t[i, j]), (np.array([1, 0]), np.array([2, 1]))),
    ]
    for make, idx in cases:
        want = torch.vmap(make(torch.from_numpy(m)))(*map(torch.from_numpy, idx))
        got = ember.vmap(make(ember.from_numpy(m)))(*map(ember.from_numpy, idx))
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@needs_torch
def test_vmap_nested_mask_lookup_as_transformers_builds_it():
    # transformers' vmapped attention masks: padding_mask[batch_idx, kv_idx] inside two vmaps
    import torch
    from torch._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex as TT

    from ember._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex as ET

    pad = np.array([[True, False, True], [True, True, False]])

    def run(lib, mode):
        p = lib.from_numpy(pad)
        f = lambda b, k: p[b, k]
        with mode():
            return lib.vmap(lib.vmap(f, in_dims=(None, 0)), in_dims=(0, None))(
                lib.arange(2), lib.arange(3))

    np.testing.assert_array_equal(run(ember, ET).numpy(), run(torch, TT).numpy())


@needs_torch
def test_sdpa_dropout_fully_masked_rows_are_zero():
    import torch

    def run(lib):
        lib.manual_seed(0)
        q = lib.randn(1, 2, 3, 4, requires_grad=True)
        k, v = lib.randn(1, 2, 3, 4), lib.randn(1, 2, 3, 4)
        mask = lib.tensor([[False, False, False], [True, False, False], [True, True, True]])
        lib.manual_seed(1)
        o = lib.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                           dropout_p=0.5)
        o.sum().backward()
        return o.detach().numpy(), q.grad.numpy()

    (eo, eg), (to, tg) = run(ember), run(torch)
    assert not np.isnan(eo).any()
    np.testing.assert_allclose(eo, to, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(eg, tg, rtol=1e-5, atol=1e-6)


def test_untyped_storage_from_file_slices_and_asarray(tmp_path):
    path = tmp_path / "bytes.bin"
    path.write_bytes(np.arange(8, dtype=np.float32).tobytes())
    s = ember.UntypedStorage.from_file(str(path), shared=False, nbytes=32)
    assert s.untyped() is s and s.nbytes() == 32
    piece = s[8:16]
    assert isinstance(piece, ember.UntypedStorage) and piece.nbytes() == 8
    t = ember.asarray(piece, dtype=ember.uint8).view(ember.float32)
    np.testing.assert_array_equal(t.numpy(), [2.0, 3.0])
    t.fill_(-1)  # private mapping: the storage sees the write, the file does not
    assert ember.asarray(s, dtype=ember.float32)[2].item() == -1
    assert np.frombuffer(path.read_bytes(), np.float32)[2] == 2
    with pytest.raises(RuntimeError, match="fewer than nbytes"):
        ember.UntypedStorage.from_file(str(path), nbytes=64)


def test_untyped_storage_from_file_shared_writes_reach_the_file(tmp_path):
    path = tmp_path / "shared.bin"
    s = ember.UntypedStorage.from_file(str(path), shared=True, nbytes=4)
    ember.asarray(s, dtype=ember.uint8).fill_(7)
    del s
    assert path.read_bytes() == bytes([7, 7, 7, 7])


@needs_torch
def test_untyped_storage_slice_shares_bytes_as_torch():
    import torch

    for lib in (torch, ember):
        s = lib.UntypedStorage(8)
        s.fill_(0)
        view = s[2:6]
        assert type(view) is lib.UntypedStorage and len(view) == 4
        lib.asarray(view, dtype=lib.uint8)[0] = 7
        assert s.tolist() == [0, 0, 7, 0, 0, 0, 0, 0]


def test_data_classes_are_generic_as_torch():
    from ember.utils.data import (ConcatDataset, DataLoader, Dataset, DistributedSampler,
                                  IterableDataset, RandomSampler, Sampler, Subset)

    for cls in (Dataset, IterableDataset, Sampler, Subset, DataLoader, ConcatDataset,
                DistributedSampler):
        assert cls[int] is not None

    class Batches(Sampler[list]):  # timm's ScheduledBatchSampler subclasses Sampler[...]
        def __iter__(self):
            return iter([[0, 1], [2]])

    loader = DataLoader(list(range(3)), batch_sampler=Batches())
    assert [b.tolist() for b in loader] == [[0, 1], [2]]
    with pytest.raises(TypeError):
        RandomSampler[int]  # not generic in torch either


@needs_torch
def test_compute_local_shape_and_global_offset_as_torch():
    from torch.distributed.tensor import Replicate as TRep
    from torch.distributed.tensor import Shard as TShard
    from torch.distributed.tensor._utils import _compute_local_shape_and_global_offset as want

    from ember.distributed.tensor import Replicate, Shard
    from ember.distributed.tensor._utils import _local_shape_and_offset as got

    for shape, mesh, placements in [((2, 5), (2, 2), (1, 1)), ((3, 7), (2,), (1,)),
                                    ((3, 1), (2,), (1,)), ((8, 6), (2, 3), (0, 1)),
                                    ((5, 4), (3, 2), (0, None))]:
        for coord in np.ndindex(*mesh):
            e = got(shape, mesh, coord, [Shard(d) if d is not None else Replicate()
                                         for d in placements], False)
            t = want(shape, mesh, list(coord), [TShard(d) if d is not None else TRep()
                                                for d in placements])
            assert e == (tuple(t[0]), tuple(t[1])), (shape, mesh, placements, coord)


def test_functional_collectives_in_a_world_of_one(tmp_path):
    # in a fresh process: a process group of one, as the distributed tests set one up
    code = textwrap.dedent("""
        import ember, ember.distributed as dist
        from ember.distributed import _functional_collectives as f
        dist.init_process_group("gloo", rank=0, world_size=1, init_method="file://STORE")
        x = ember.arange(4.0, requires_grad=True)
        for y in (f.all_reduce(x, "sum", None), f.all_gather_tensor(x, 0, None),
                  f.reduce_scatter_tensor(x, "sum", 0, None), f.broadcast(x, 0, None),
                  f.all_to_all_single(x, None, None, None)):
            assert y.tolist() == [0.0, 1.0, 2.0, 3.0] and y is not x
        y = f.all_to_all_single_autograd(x, [4], [4], None)
        (y * ember.arange(4.0)).sum().backward()
        assert x.grad.tolist() == [0.0, 1.0, 2.0, 3.0]
        assert f.wait_tensor(x) is x
        print("ok")
    """).replace("STORE", (tmp_path / "store").as_posix())
    assert _run(["-c", code], tmp_path).strip() == "ok"


def test_fsdp1_class_answers_isinstance_and_needs_a_group():
    from ember.distributed.fsdp import FullyShardedDataParallel

    assert not isinstance(ember.nn.Linear(2, 2), FullyShardedDataParallel)
    with pytest.raises(ValueError, match="init_process_group"):
        FullyShardedDataParallel(ember.nn.Linear(2, 2))


def test_hf_storage_classes_import_and_say_what_is_missing():
    from ember.distributed.checkpoint.hf_storage import (HuggingFaceStorageReader,
                                                         HuggingFaceStorageWriter)

    for cls in (HuggingFaceStorageReader, HuggingFaceStorageWriter):
        with pytest.raises(NotImplementedError, match="safetensors layout"):
            cls("somewhere")


@needs_torch
def test_small_names_libraries_import_as_torch():
    import torch
    import torch.nn.modules.module as tm
    import torch.utils._pytree as tp

    import ember.nn.modules.module as em
    import ember.utils._pytree as ep
    from ember.jit.annotations import BroadcastingList2, List, Optional

    assert em._EXTRA_STATE_KEY_SUFFIX == tm._EXTRA_STATE_KEY_SUFFIX
    d = {"a": 1, "b": 2}
    children, context = ep._dict_flatten_with_keys(d)
    t_children, t_context = tp._dict_flatten_with_keys(d)
    assert [(k.key, v) for k, v in children] == [(k.key, v) for k, v in t_children]
    assert context == t_context
    assert List[int] == torch.jit.annotations.List[int]
    assert Optional[int] == torch.jit.annotations.Optional[int]
    assert BroadcastingList2[int] is int


def test_torch_metadata_under_the_alias_is_embers(tmp_path):
    code = ("import importlib.metadata as md, ember.compat; ember.compat.install(); "
            "import torch; print(md.version('torch') == str(torch.__version__), "
            "md.version('numpy') is not None)")
    assert _run(["-c", code], tmp_path).split() == ["True", "True"]
