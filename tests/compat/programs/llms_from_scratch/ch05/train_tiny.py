# Test driver (ember's, not part of LLMs-from-scratch): ``python train_tiny.py DTYPE`` runs
# chapter 5's gpt_train.main with the tiny configuration of the chapter's own tests.py, saves
# and reloads the model as gpt_train.py's ``__main__`` does, then loads seeded GPT-2-shaped
# weights with gpt_generate.load_weights_into_gpt and samples with its ``generate`` (top-k and
# temperature, then greedy). Every number is printed with all its digits.
import sys

import numpy as np
import torch

from gpt_generate import generate, load_weights_into_gpt, text_to_token_ids, token_ids_to_text
from gpt_train import main
from previous_chapters import GPTModel

torch.set_default_dtype(getattr(torch, sys.argv[1]))
GPT_CONFIG = {"vocab_size": 50257, "context_length": 12, "emb_dim": 32, "n_heads": 4,
              "n_layers": 2, "drop_rate": 0.1, "qkv_bias": False}
SETTINGS = {"learning_rate": 5e-4, "num_epochs": 1, "batch_size": 2, "weight_decay": 0.1}

train_losses, val_losses, tokens_seen, model = main(GPT_CONFIG, SETTINGS)
print("train", [repr(x) for x in train_losses])
print("val", [repr(x) for x in val_losses])
print("tokens", tokens_seen)
torch.save(model.state_dict(), "model.pth")
reloaded = GPTModel(GPT_CONFIG)
reloaded.load_state_dict(torch.load("model.pth", weights_only=True))
print("reloaded", repr(sum(p.double().sum().item() for p in reloaded.parameters())))

# GPT-2's parameter layout (as load_gpt2_params_from_tf_ckpt builds it), seeded numbers
config = dict(GPT_CONFIG, qkv_bias=True, drop_rate=0.0)
d, rng = config["emb_dim"], np.random.default_rng(0)
dt = np.dtype(sys.argv[1])


def w(*shape, scale=0.2):
    return (rng.standard_normal(shape) * scale).astype(dt)


params = {"wpe": w(config["context_length"], d), "wte": w(config["vocab_size"], d),
          "g": 1 + w(d), "b": w(d), "blocks": [
              {"attn": {"c_attn": {"w": w(d, 3 * d), "b": w(3 * d)},
                        "c_proj": {"w": w(d, d), "b": w(d)}},
               "mlp": {"c_fc": {"w": w(d, 4 * d), "b": w(4 * d)},
                       "c_proj": {"w": w(4 * d, d), "b": w(d)}},
               "ln_1": {"g": 1 + w(d), "b": w(d)}, "ln_2": {"g": 1 + w(d), "b": w(d)}}
              for _ in range(config["n_layers"])]}
gpt = GPTModel(config)
load_weights_into_gpt(gpt, params)
gpt.eval()
import tiktoken  # noqa: E402 (the stand-in, after gpt_generate imported it)

tokenizer = tiktoken.get_encoding("gpt2")
for kwargs in ({"top_k": 50, "temperature": 1.0}, {"top_k": None, "temperature": 0.0}):
    torch.manual_seed(123)
    ids = generate(model=gpt, idx=text_to_token_ids("Every effort moves you", tokenizer),
                   max_new_tokens=25, context_size=config["context_length"], **kwargs)
    print("generate", kwargs, ids.tolist(), repr(token_ids_to_text(ids, tokenizer)))
