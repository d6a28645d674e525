"""Train a character-level GPT on the Python standard library's own source code.

The text exists on every machine with Python, so this runs anywhere: it reads the stdlib's
.py files, trains a small decoder-only transformer (causal self-attention, pre-norm blocks)
with AdamW and a cosine schedule, prints generated text, and saves a checkpoint with
``ember.save``. Defaults take about 4.7 minutes of CPU time (about 4 minutes on 2 lightly
loaded cores); lower ``--steps`` for a quicker run, or raise ``--steps``,
``--layers``, ``--d-model`` and ``--context`` for a longer, better run.

    python examples/char_gpt.py                 # the quick run
    python examples/char_gpt.py --steps 5000 --layers 6 --d-model 256 --context 128
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import sys
import sysconfig
import time

import ember as torch
from ember import nn
from ember.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _plot import save_loss_curve  # noqa: E402  (examples/_plot.py)
from _run import add_output_args, progress, resolve_outputs  # noqa: E402
from _tensorboard import add_tensorboard_arg, open_writer  # noqa: E402


def load_text(max_chars):
    """Concatenated standard-library sources, in a fixed order, up to ``max_chars``."""
    stdlib = sysconfig.get_paths()["stdlib"]
    parts, total = [], 0
    for path in sorted(glob.glob(os.path.join(stdlib, "*.py"))):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(text)
        total += len(text)
        if total >= max_chars:
            break
    return "".join(parts)[:max_chars]


class Block(nn.Module):
    def __init__(self, d_model, n_head, dropout):
        super().__init__()
        self.n_head = n_head
        self.ln1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model), nn.Dropout(dropout))
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.n_head, d // self.n_head).transpose(1, 2)
                   for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.drop(self.proj(y.transpose(1, 2).reshape(b, t, d)))
        return x + self.mlp(self.ln2(x))


class CharGPT(nn.Module):
    def __init__(self, vocab, context, d_model, n_head, n_layer, dropout):
        super().__init__()
        self.context = context
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(context, d_model)
        self.blocks = nn.Sequential(*[Block(d_model, n_head, dropout) for _ in range(n_layer)])
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t))
        return self.head(self.ln(self.blocks(x)))

    @torch.no_grad()
    def generate(self, idx, n, temperature=0.8, generator=None):
        for _ in range(n):
            logits = self(idx[:, -self.context:])[:, -1] / temperature
            nxt = torch.multinomial(logits.softmax(-1), 1, generator=generator)
            idx = torch.cat([idx, nxt], dim=1)
        return idx


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--context", type=int, default=64)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--chars", type=int, default=1_000_000, help="training text size")
    p.add_argument("--sample-chars", type=int, default=300)
    add_output_args(p, "char_gpt")
    add_tensorboard_arg(p)
    p.add_argument("--seed", type=int, default=0)
    args = resolve_outputs(p.parse_args(argv), "char_gpt")

    torch.manual_seed(args.seed)
    text = load_text(args.chars)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.int64)
    split = int(0.95 * len(data))
    train, val = data[:split], data[split:]
    print(f"{len(text):,} characters of Python stdlib source, vocabulary {len(chars)}")

    model = CharGPT(len(chars), args.context, args.d_model, args.heads, args.layers,
                    args.dropout)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {args.layers} layers, d_model {args.d_model}, {n_params:,} parameters")
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warmup = max(1, args.steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * s /
                                                                        args.steps)))
    g = torch.Generator().manual_seed(args.seed)

    def batch(source):
        ix = torch.randint(len(source) - args.context - 1, (args.batch_size,), generator=g)
        offsets = torch.arange(args.context + 1)
        rows = source[ix.unsqueeze(1) + offsets]
        return rows[:, :-1], rows[:, 1:]

    def loss_of(x, y):
        logits = model(x)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    writer = open_writer(args.tensorboard)
    start = time.perf_counter()
    steps = range(1, args.steps + 1)
    bar = progress(steps, desc="training", unit="step")
    running, losses = None, []
    for step in bar:
        x, y = batch(train)
        loss = loss_of(x, y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        writer.add_scalar("loss/train", losses[-1], step)
        running = losses[-1] if running is None else 0.95 * running + 0.05 * losses[-1]
        bar.set_postfix(loss=f"{running:.3f}")
        if step % max(1, args.steps // 4) == 0 or step == args.steps:
            model.eval()
            with torch.no_grad():
                vl = sum(loss_of(*batch(val)).item() for _ in range(5)) / 5
            model.train()
            writer.add_scalar("loss/validation", vl, step)
            msg = f"step {step}: train loss {running:.3f}, validation loss {vl:.3f}"
            bar.write(msg)
    elapsed = time.perf_counter() - start
    writer.close()
    print(f"trained {args.steps} steps in {elapsed:.0f}s "
          f"({args.steps * args.batch_size * args.context / elapsed:,.0f} tokens/s)")

    model.eval()
    prompt = "def "
    idx = torch.tensor([[stoi[c] for c in prompt]])
    out = model.generate(idx, args.sample_chars, generator=g)[0].tolist()
    print("--- sample " + "-" * 60)
    print("".join(chars[i] for i in out))
    print("-" * 71)
    torch.save({"model": model.state_dict(), "chars": chars, "args": vars(args)},
               args.checkpoint)
    print(f"checkpoint saved to {args.checkpoint}")
    save_loss_curve(losses, args.plot, "character-level GPT", ylabel="cross-entropy")
    return running, vl


if __name__ == "__main__":
    main()
