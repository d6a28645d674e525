"""minGRU and minLSTM ("Were RNNs All We Needed?") the way lucidrains/minGRU-pytorch and
the paper's reference code write them: the parallel mode by a log-space Heinsen scan
(``logcumsumexp`` of ``log_coeffs`` cumulated by ``cumsum``), ``g(x)``/``log_g(x)``
continuous activations through ``torch.where`` and ``softplus``, the sequential mode with a
carried hidden state that must agree with the parallel one (float64 check), a character
language model over stacked minGRU blocks with ``RMSNorm``, causal depthwise convolution
and ``nn.utils.parametrizations``-free weight tying, and sampling with ``multinomial``
under a ``torch.Generator``."""
import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import Module

torch.manual_seed(42)


def exists(v):
    return v is not None


def heinsen_associative_scan_log(log_coeffs, log_values):
    a_star = log_coeffs.cumsum(dim=1)
    log_h0_plus_b_star = (log_values - a_star).logcumsumexp(dim=1)
    log_h = a_star + log_h0_plus_b_star
    return log_h.exp()


def g(x):
    return torch.where(x >= 0, x + 0.5, x.sigmoid())


def log_g(x):
    return torch.where(x >= 0, (F.relu(x) + 0.5).log(), -F.softplus(-x))


class minGRU(Module):
    def __init__(self, dim, expansion_factor=1.0):
        super().__init__()
        dim_inner = int(dim * expansion_factor)
        self.to_hidden_and_gate = nn.Linear(dim, dim_inner * 2, bias=False)
        self.to_out = nn.Linear(dim_inner, dim, bias=False) if expansion_factor != 1.0 else nn.Identity()

    def forward(self, x, prev_hidden=None, return_next_prev_hidden=False):
        seq_len = x.shape[1]
        hidden, gate = self.to_hidden_and_gate(x).chunk(2, dim=-1)
        if seq_len == 1:
            hidden = g(hidden)
            gate = gate.sigmoid()
            out = torch.lerp(prev_hidden, hidden, gate) if exists(prev_hidden) else (hidden * gate)
        else:
            log_coeffs = -F.softplus(gate)
            log_z = -F.softplus(-gate)
            log_tilde_h = log_g(hidden)
            log_values = log_z + log_tilde_h
            if exists(prev_hidden):
                log_values = torch.cat((prev_hidden.log(), log_values), dim=1)
                log_coeffs = F.pad(log_coeffs, (0, 0, 1, 0))
            out = heinsen_associative_scan_log(log_coeffs, log_values)
            out = out[:, -seq_len:]
        next_prev_hidden = out[:, -1:]
        out = self.to_out(out)
        return (out, next_prev_hidden) if return_next_prev_hidden else out


class minLSTM(Module):
    def __init__(self, dim):
        super().__init__()
        self.to_hidden_and_gates = nn.Linear(dim, dim * 3, bias=False)

    def forward(self, x):
        hidden, f_gate, i_gate = self.to_hidden_and_gates(x).chunk(3, dim=-1)
        diff = F.softplus(-f_gate) - F.softplus(-i_gate)
        log_f = -F.softplus(diff)
        log_i = -F.softplus(-diff)
        return heinsen_associative_scan_log(log_f, log_i + log_g(hidden))


class RMSNorm(Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = dim ** 0.5
        self.gamma = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return F.normalize(x, dim=-1) * self.scale * (self.gamma + 1)


class CausalDepthWiseConv1d(Module):
    def __init__(self, dim, kernel_size):
        super().__init__()
        self.kernel_size = kernel_size
        self.net = nn.Sequential(nn.Conv1d(dim, dim, kernel_size=kernel_size, groups=dim), nn.Conv1d(dim, dim, kernel_size=1))

    def forward(self, x):
        x = x.transpose(1, 2)
        x = F.pad(x, (self.kernel_size - 1, 0), value=0.0)
        return self.net(x).transpose(1, 2)


class minGRULM(Module):
    def __init__(self, num_tokens, dim, depth, ff_mult=2, conv_kernel_size=3):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.layers = nn.ModuleList([])
        for _ in range(depth):
            self.layers.append(nn.ModuleList([
                CausalDepthWiseConv1d(dim, conv_kernel_size), RMSNorm(dim), minGRU(dim), RMSNorm(dim),
                nn.Sequential(nn.Linear(dim, dim * ff_mult), nn.GELU(), nn.Linear(dim * ff_mult, dim))]))
        self.norm = RMSNorm(dim)
        self.to_logits = nn.Linear(dim, num_tokens, bias=False)

    def forward(self, x, return_loss=False):
        if return_loss:
            x, labels = x[:, :-1], x[:, 1:]
        x = self.token_emb(x)
        for conv, norm, mingru, ff_norm, ff in self.layers:
            x = conv(x) + x
            x = mingru(norm(x)) + x
            x = ff(ff_norm(x)) + x
        logits = self.to_logits(self.norm(x))
        if not return_loss:
            return logits
        return F.cross_entropy(logits.transpose(1, 2), labels)


# the parallel scan against the recurrence, in float64
cell = minGRU(6).double()
x = torch.randn(2, 9, 6, dtype=torch.float64)
parallel = cell(x)
h, seq = None, []
for t in range(9):
    o, h = cell(x[:, t:t + 1], prev_hidden=h, return_next_prev_hidden=True)
    seq.append(o)
print("minGRU parallel == sequential:", torch.allclose(parallel, torch.cat(seq, 1)), parallel[0, -1, :3].tolist())
first, hid = cell(x[:, :5], return_next_prev_hidden=True)
rest = cell(x[:, 5:], prev_hidden=hid)
print("chunked continuation:", torch.allclose(torch.cat([first, rest], 1), parallel))
lstm = minLSTM(6).double()
print("minLSTM out", lstm(x)[1, 4, :3].tolist())
print("logcumsumexp", torch.tensor([[0.0, -1.0, 2.0, -float("inf"), 3.0]]).logcumsumexp(-1).tolist())

text = "the quick brown fox jumps over the lazy dog. " * 12
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text])
model = minGRULM(num_tokens=len(chars), dim=24, depth=2)
optim = torch.optim.Adam(model.parameters(), lr=3e-3)
g = torch.Generator().manual_seed(0)
SEQ = 32
for step in range(30):
    ix = torch.randint(0, len(data) - SEQ - 1, (8,), generator=g)
    batch = torch.stack([data[i:i + SEQ + 1] for i in ix.tolist()])
    loss = model(batch, return_loss=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optim.step()
    optim.zero_grad()
    if step % 10 == 9:
        print(f"step {step + 1} loss {loss.item():.4f} bpc {loss.item() / math.log(2):.4f}")

model.eval()
with torch.no_grad():
    prompt = data[:8][None]
    logits = model(prompt)[:, -1]
    probs = F.softmax(logits / 0.8, dim=-1)
    print("next-char probs top3", [round(p, 4) for p in probs.topk(3).values[0].tolist()])
    sample = torch.multinomial(probs, 4, replacement=True, generator=torch.Generator().manual_seed(3))
    print("sampled ids", sample.tolist())
