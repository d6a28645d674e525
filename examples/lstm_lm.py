"""A word-level-free, character-level LSTM language model on the standard library's source.

Embedding -> 2-layer LSTM -> linear head, trained with truncated backpropagation through
time (the hidden state is carried across batches and detached), Adam and gradient clipping.
Prints train/validation perplexity per epoch and a generated sample, saves a checkpoint.

    python examples/lstm_lm.py --epochs 3
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import ember as torch
from ember import nn
from ember.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from char_gpt import load_text  # noqa: E402  (same text source as the main job)
from _plot import save_loss_curve  # noqa: E402  (examples/_plot.py)
from _run import add_output_args, progress, resolve_outputs  # noqa: E402
from _tensorboard import add_tensorboard_arg, open_writer  # noqa: E402


class LSTMLM(nn.Module):
    def __init__(self, vocab, emb, hidden, layers, dropout):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.rnn = nn.LSTM(emb, hidden, num_layers=layers, dropout=dropout, batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, state=None):
        h, state = self.rnn(self.emb(x), state)
        return self.head(self.drop(h)), state


def batchify(data, batch_size):
    n = data.shape[0] // batch_size
    return data[:n * batch_size].reshape(batch_size, n)


def run_epoch(model, data, seq, opt=None, clip=1.0, desc=""):
    training = opt is not None
    model.train(training)
    state, total, count = None, 0.0, 0
    steps = range(0, data.shape[1] - 1 - seq, seq)
    it = progress(steps, desc=desc, unit="step", leave=False) if training else steps
    for i in it:
        x, y = data[:, i:i + seq], data[:, i + 1:i + 1 + seq]
        with torch.set_grad_enabled(training):
            logits, state = model(x, state)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        state = tuple(s.detach() for s in state)
        if training:
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
        total += loss.item() * x.numel()
        count += x.numel()
    return total / max(count, 1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--chars", type=int, default=200_000)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=3e-3)
    add_output_args(p, "lstm_lm")
    add_tensorboard_arg(p)
    p.add_argument("--seed", type=int, default=0)
    args = resolve_outputs(p.parse_args(argv), "lstm_lm")

    torch.manual_seed(args.seed)
    text = load_text(args.chars)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text])
    split = int(0.9 * len(data))
    train = batchify(data[:split], args.batch_size)
    val = batchify(data[split:], args.batch_size)
    model = LSTMLM(len(chars), 64, args.hidden, args.layers, args.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    writer = open_writer(args.tensorboard)
    val_loss, curve = float("nan"), []
    for epoch in range(1, args.epochs + 1):
        train_loss = run_epoch(model, train, args.seq, opt, desc=f"epoch {epoch}")
        val_loss = run_epoch(model, val, args.seq)
        curve.append(val_loss)
        writer.add_scalars("loss", {"train": train_loss, "validation": val_loss}, epoch)
        print(f"epoch {epoch}: train perplexity {math.exp(train_loss):.2f}, "
              f"validation perplexity {math.exp(val_loss):.2f}")
    writer.close()
    model.eval()
    idx, state, out = torch.tensor([[stoi["d"]]]), None, ["d"]
    with torch.no_grad():
        for _ in range(200):
            logits, state = model(idx, state)
            idx = torch.multinomial((logits[:, -1] / 0.8).softmax(-1), 1)
            out.append(chars[idx.item()])
    print("--- sample ---\n" + "".join(out))
    torch.save({"model": model.state_dict(), "chars": chars}, args.checkpoint)
    print(f"checkpoint saved to {args.checkpoint}")
    save_loss_curve(curve, args.plot, "LSTM language model", ylabel="validation loss",
                    xlabel="epoch")
    return math.exp(val_loss)


if __name__ == "__main__":
    main()
