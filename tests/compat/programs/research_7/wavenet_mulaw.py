"""A WaveNet the way pytorch-wavenet style repositories write it: mu-law companding and
quantisation, one-hot inputs through a causal convolution (left ``F.pad``), stacked
dilated gated residual blocks with 1x1 skip and residual convolutions and a global
speaker conditioning, the receptive field computed from the dilations, teacher-forced
cross-entropy over quantised samples, a checkpoint dict with the optimizer and epoch, and
slow autoregressive generation with ``torch.multinomial`` next to a fast queue-based
generator that must produce the same samples."""
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

config = {
    "quantization_channels": 32, "residual_channels": 8, "dilation_channels": 8,
    "skip_channels": 16, "kernel_size": 2, "dilations": [1, 2, 4, 8, 1, 2, 4, 8],
    "n_speakers": 2, "lr": 3e-3, "steps": 12, "sample_len": 64,
}
print(json.dumps(config, sort_keys=True))
torch.manual_seed(2024)
np.random.seed(2024)


def mu_law_encode(audio, quantization_channels):
    mu = quantization_channels - 1.0
    safe = torch.clamp(audio, -1.0, 1.0)
    magnitude = torch.log1p(mu * torch.abs(safe)) / math.log1p(mu)
    signal = torch.sign(safe) * magnitude
    return ((signal + 1) / 2 * mu + 0.5).to(torch.int64)


def mu_law_decode(output, quantization_channels):
    mu = quantization_channels - 1.0
    signal = 2 * (output.float() / mu) - 1
    magnitude = (1 / mu) * ((1 + mu) ** torch.abs(signal) - 1)
    return torch.sign(signal) * magnitude


class CausalConv1d(nn.Conv1d):
    def __init__(self, in_channels, out_channels, kernel_size, dilation=1, **kwargs):
        super().__init__(in_channels, out_channels, kernel_size, dilation=dilation,
                         padding=0, **kwargs)
        self.left_padding = dilation * (kernel_size - 1)

    def forward(self, x):
        return super().forward(F.pad(x, (self.left_padding, 0)))


class ResidualBlock(nn.Module):
    def __init__(self, residual_channels, dilation_channels, skip_channels, kernel_size,
                 dilation, n_speakers):
        super().__init__()
        self.dilation = dilation
        self.filter_conv = CausalConv1d(residual_channels, dilation_channels, kernel_size,
                                        dilation=dilation)
        self.gate_conv = CausalConv1d(residual_channels, dilation_channels, kernel_size,
                                      dilation=dilation)
        self.cond_filter = nn.Linear(n_speakers, dilation_channels, bias=False)
        self.cond_gate = nn.Linear(n_speakers, dilation_channels, bias=False)
        self.residual_conv = nn.Conv1d(dilation_channels, residual_channels, 1)
        self.skip_conv = nn.Conv1d(dilation_channels, skip_channels, 1)

    def forward(self, x, g):
        f = self.filter_conv(x) + self.cond_filter(g).unsqueeze(-1)
        t = self.gate_conv(x) + self.cond_gate(g).unsqueeze(-1)
        z = torch.tanh(f) * torch.sigmoid(t)
        return self.residual_conv(z) + x, self.skip_conv(z)

    def step(self, x_t, queue, g):
        # x_t: (B, C, 1); queue holds the past input `dilation` steps ago
        x_prev = queue[0]
        inp = torch.cat([x_prev, x_t], dim=-1)
        f = F.conv1d(inp, self.filter_conv.weight, self.filter_conv.bias, dilation=1)
        t = F.conv1d(inp, self.gate_conv.weight, self.gate_conv.bias, dilation=1)
        f = f + self.cond_filter(g).unsqueeze(-1)
        t = t + self.cond_gate(g).unsqueeze(-1)
        z = torch.tanh(f) * torch.sigmoid(t)
        queue.pop(0)
        queue.append(x_t)
        return self.residual_conv(z) + x_t, self.skip_conv(z)


class WaveNet(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        q = cfg["quantization_channels"]
        self.start_conv = CausalConv1d(q, cfg["residual_channels"], 1)
        self.blocks = nn.ModuleList([
            ResidualBlock(cfg["residual_channels"], cfg["dilation_channels"],
                          cfg["skip_channels"], cfg["kernel_size"], d, cfg["n_speakers"])
            for d in cfg["dilations"]])
        self.end_conv_1 = nn.Conv1d(cfg["skip_channels"], cfg["skip_channels"], 1)
        self.end_conv_2 = nn.Conv1d(cfg["skip_channels"], q, 1)

    @property
    def receptive_field(self):
        return sum(d * (self.cfg["kernel_size"] - 1) for d in self.cfg["dilations"]) + 1

    def forward(self, x, speaker):
        g = F.one_hot(speaker, self.cfg["n_speakers"]).float()
        x = self.start_conv(x)
        skip = 0
        for block in self.blocks:
            x, s = block(x, g)
            skip = s + skip
        out = F.relu(skip)
        out = F.relu(self.end_conv_1(out))
        return self.end_conv_2(out)

    @torch.no_grad()
    def generate_slow(self, n, speaker, first, temperature=1.0):
        q = self.cfg["quantization_channels"]
        samples = first.clone()
        for _ in range(n):
            x = F.one_hot(samples[:, -self.receptive_field:], q).float().transpose(1, 2)
            logits = self(x, speaker)[:, :, -1] / temperature
            nxt = torch.multinomial(F.softmax(logits, dim=-1), 1)
            samples = torch.cat([samples, nxt], dim=1)
        return samples

    @torch.no_grad()
    def generate_fast(self, n, speaker, first, temperature=1.0):
        q = self.cfg["quantization_channels"]
        g = F.one_hot(speaker, self.cfg["n_speakers"]).float()
        b, r = first.shape[0], self.cfg["residual_channels"]
        queues = [[torch.zeros(b, r, 1) for _ in range(blk.dilation)] for blk in self.blocks]
        samples = first.clone()
        # warm the queues up on the priming samples, then sample one step at a time
        for t in range(first.shape[1] + n - 1):
            x = self.start_conv(F.one_hot(samples[:, t:t + 1], q).float().transpose(1, 2))
            skip = 0
            for blk, queue in zip(self.blocks, queues):
                x, s = blk.step(x, queue, g)
                skip = s + skip
            out = self.end_conv_2(F.relu(self.end_conv_1(F.relu(skip))))
            if t >= first.shape[1] - 1:
                logits = out[:, :, -1] / temperature
                nxt = torch.multinomial(F.softmax(logits, dim=-1), 1)
                samples = torch.cat([samples, nxt], dim=1)
        return samples


# a toy corpus: two "speakers" sing a chirp at different pitches
t = torch.arange(config["sample_len"] + 1).float() / 16.0
audio = torch.stack([0.8 * torch.sin(2 * math.pi * 0.5 * t * (1 + 0.1 * t)),
                     0.6 * torch.sin(2 * math.pi * 1.3 * t)])
audio = audio + 0.01 * torch.randn_like(audio)
q = config["quantization_channels"]
encoded = mu_law_encode(audio, q)
print("encoded[0, :12]", encoded[0, :12].tolist())
print("round trip max err %.6f" % (mu_law_decode(encoded, q) - audio).abs().max().item())

model = WaveNet(config)
print("receptive field", model.receptive_field, "parameters",
      sum(p.numel() for p in model.parameters()))
optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=8, gamma=0.5)
speaker = torch.tensor([0, 1])
inputs = F.one_hot(encoded[:, :-1], q).float().transpose(1, 2)
targets = encoded[:, 1:]
for step in range(config["steps"]):
    model.train()
    logits = model(inputs, speaker)
    loss = F.cross_entropy(logits[:, :, model.receptive_field:],
                           targets[:, model.receptive_field:])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()
    if step % 4 == 3:
        acc = (logits.argmax(1) == targets).float().mean().item()
        print(f"step {step + 1:3d} loss {loss.item():.6f} acc {acc:.4f} "
              f"lr {scheduler.get_last_lr()[0]:.6f}")

torch.save({"epoch": config["steps"], "model_state_dict": model.state_dict(),
            "optimizer_state_dict": optimizer.state_dict(), "loss": loss.item(),
            "config": config}, "wavenet.pt")
ckpt = torch.load("wavenet.pt")
restored = WaveNet(ckpt["config"])
restored.load_state_dict(ckpt["model_state_dict"])
print("checkpoint epoch", ckpt["epoch"], "loss %.6f" % ckpt["loss"],
      "adam steps", int(ckpt["optimizer_state_dict"]["state"][0]["step"]))
os.remove("wavenet.pt")

restored.eval()
first = encoded[:, :4]
torch.manual_seed(5)
slow = restored.generate_slow(12, speaker, first)
torch.manual_seed(5)
fast = restored.generate_fast(12, speaker, first)
print("slow", slow[:, 4:].tolist())
print("fast == slow", torch.equal(slow, fast))
wave = mu_law_decode(slow, q)
print("generated rms %.6f" % wave.pow(2).mean().sqrt().item())
