"""Keyword spotting on synthesised audio: spectrograms from ``ember.stft``, a 1-D CNN.

Five "keywords" are synthesised as short sounds with random pitch, timing, duration, level
and background noise: a rising chirp, a falling chirp, a two-tone call, a buzz (square
wave) and a warble (vibrato). Each 0.5 s clip at 8 kHz becomes a log-magnitude spectrogram
(Hann window, 256-point FFT, hop 64); a 1-D convolutional network over time, with the
frequency bins as channels, classifies it.

    python examples/speech_keywords.py --epochs 6
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import ember as torch
from ember import nn
from ember.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _plot import save_loss_curve  # noqa: E402  (examples/_plot.py)
from _run import add_output_args, progress, resolve_outputs  # noqa: E402

RATE = 8000
CLIP = 4000  # 0.5 s
KEYWORDS = ["rise", "fall", "two-tone", "buzz", "warble"]


def synthesise(label, rng):
    t = np.arange(CLIP) / RATE
    f0 = rng.uniform(300, 900)
    start = rng.uniform(0.0, 0.15)
    dur = rng.uniform(0.2, 0.3)
    env = ((t >= start) & (t < start + dur)).astype(np.float64)
    env *= np.sin(np.pi * np.clip((t - start) / dur, 0, 1)) ** 0.5
    tt = t - start
    if label == 0:
        phase = 2 * np.pi * (f0 * tt + 0.5 * 2 * f0 * tt ** 2 / dur)
        wave = np.sin(phase)
    elif label == 1:
        phase = 2 * np.pi * (2 * f0 * tt - 0.5 * f0 * tt ** 2 / dur)
        wave = np.sin(phase)
    elif label == 2:
        wave = np.where(tt < dur / 2, np.sin(2 * np.pi * f0 * tt),
                        np.sin(2 * np.pi * 1.6 * f0 * tt))
    elif label == 3:
        wave = np.sign(np.sin(2 * np.pi * f0 / 2 * tt)) * 0.6
    else:
        wave = np.sin(2 * np.pi * (f0 * tt + 30 * np.sin(2 * np.pi * 8 * tt)))
    x = env * wave * rng.uniform(0.3, 1.0) + rng.normal(0, 0.05, CLIP)
    return x.astype(np.float32)


def make_dataset(n, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(KEYWORDS), n)
    audio = np.stack([synthesise(int(k), rng) for k in labels])
    return torch.from_numpy(audio), torch.from_numpy(labels)


def spectrogram(audio, window):
    spec = torch.stft(audio, n_fft=256, hop_length=64, window=window, return_complex=True)
    return (spec.abs() + 1e-6).log()  # (batch, 129 frequency bins, frames)


class KeywordNet(nn.Module):
    def __init__(self, bins=129, classes=len(KEYWORDS)):
        super().__init__()
        self.net = nn.Sequential(
            nn.BatchNorm1d(bins),
            nn.Conv1d(bins, 64, 5, padding=2), nn.ReLU(), nn.MaxPool1d(2),
            nn.Conv1d(64, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool1d(1),
            nn.Flatten(), nn.Linear(64, classes))

    def forward(self, spec):
        return self.net(spec)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--train-size", type=int, default=2000)
    p.add_argument("--test-size", type=int, default=500)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=2e-3)
    add_output_args(p, "speech_keywords")
    p.add_argument("--seed", type=int, default=0)
    args = resolve_outputs(p.parse_args(argv), "speech_keywords")

    torch.manual_seed(args.seed)
    window = torch.hann_window(256)
    x_train, y_train = make_dataset(args.train_size, args.seed)
    x_test, y_test = make_dataset(args.test_size, args.seed + 1)
    s_train, s_test = spectrogram(x_train, window), spectrogram(x_test, window)
    print(f"spectrograms: {tuple(s_train.shape)} (clips, frequency bins, frames)")
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(s_train, y_train),
                                         batch_size=args.batch_size, shuffle=True)
    model = KeywordNet()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    acc, losses = 0.0, []
    for epoch in range(1, args.epochs + 1):
        model.train()
        total = 0.0
        it = progress(loader, desc=f"epoch {epoch}", unit="batch", leave=False)
        for s, y in it:
            loss = F.cross_entropy(model(s), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
            total += losses[-1] * s.shape[0]
        model.eval()
        with torch.no_grad():
            acc = (model(s_test).argmax(1) == y_test).float().mean().item()
        print(f"epoch {epoch}: train loss {total / len(loader.dataset):.4f}, "
              f"test accuracy {acc:.4f}")
    torch.save(model.state_dict(), args.checkpoint)
    print(f"checkpoint saved to {args.checkpoint}")
    save_loss_curve(losses, args.plot, "keyword classifier", ylabel="cross-entropy")
    return acc


if __name__ == "__main__":
    main()
