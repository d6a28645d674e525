"""xLSTM's matrix-memory cell (mLSTM) as the NX-AI reference's pure-PyTorch backends write
it, in float64: the parallel stabilised form (``F.logsigmoid`` forget gates, ``cumsum`` into
a log-decay matrix masked by ``tril``, row-wise max stabiliser, normaliser ``max(|sum|,
exp(-m))``), the recurrent step form with (C, n, m) state, and a chunkwise form, all three
agreeing; then a small mLSTM block (up-projection, causal ``Conv1d`` with left padding,
learnable skip, ``GroupNorm`` as multi-head layer norm) trained as a next-token model, and
an sLSTM cell with exponential gating scanned over time."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
torch.manual_seed(0)


def parallel_stabilized_simple(q, k, v, igate_preact, fgate_preact, eps=1e-6):
    B, NH, S, DH = q.shape
    log_fgates = F.logsigmoid(fgate_preact)
    ltr = torch.tril(torch.ones((S, S), dtype=torch.bool))
    log_fgates_cumsum = torch.cat([torch.zeros((B, NH, 1, 1)), torch.cumsum(log_fgates, dim=-2)], dim=-2)
    rep = log_fgates_cumsum.repeat(1, 1, 1, S + 1)
    _log_fg_matrix = rep - rep.transpose(-2, -1)
    log_fg_matrix = torch.where(ltr, _log_fg_matrix[:, :, 1:, 1:], -float("inf"))
    log_D_matrix = log_fg_matrix + igate_preact.transpose(-2, -1)
    max_log_D, _ = torch.max(log_D_matrix, dim=-1, keepdim=True)
    D_matrix = torch.exp(log_D_matrix - max_log_D)
    keys_scaled = k / math.sqrt(DH)
    C_matrix = (q @ keys_scaled.transpose(-2, -1)) * D_matrix
    normalizer = torch.maximum(C_matrix.sum(dim=-1, keepdim=True).abs(), torch.exp(-max_log_D))
    return (C_matrix / (normalizer + eps)) @ v


def recurrent_step(c, n, m, q, k, v, i, f, eps=1e-6):
    DH = q.shape[-1]
    log_f = F.logsigmoid(f)
    m_new = torch.maximum(log_f + m, i)
    fg = torch.exp(log_f + m - m_new)
    ig = torch.exp(i - m_new)
    k = k / math.sqrt(DH)
    c = fg * c + ig * (k.transpose(-1, -2) @ v)
    n = fg * n + ig * k.transpose(-1, -2)
    h_num = q @ c
    qn = q @ n
    h_den = torch.maximum(qn.abs(), torch.exp(-m_new)) + eps
    return h_num / h_den, (c, n, m_new)


def recurrent_sequence(q, k, v, i, f):
    B, NH, S, DH = q.shape
    c = torch.zeros(B, NH, DH, DH)
    n = torch.zeros(B, NH, DH, 1)
    m = torch.zeros(B, NH, 1, 1)
    hs = []
    for t in range(S):
        h, (c, n, m) = recurrent_step(c, n, m, q[:, :, t:t + 1], k[:, :, t:t + 1], v[:, :, t:t + 1],
                                      i[:, :, t:t + 1, None], f[:, :, t:t + 1, None])
        hs.append(h)
    return torch.cat(hs, dim=2), (c, n, m)


B, NH, S, DH = 2, 2, 10, 4
q, k, v = (torch.randn(B, NH, S, DH) for _ in range(3))
ig, fg = torch.randn(B, NH, S, 1), torch.randn(B, NH, S, 1) + 2.0
hp = parallel_stabilized_simple(q, k, v, ig, fg)
hr, (c, n, m) = recurrent_sequence(q, k, v, ig[..., 0], fg[..., 0])
print("parallel vs recurrent", (hp - hr).abs().max().item() < 1e-10, hp[0, 0, -1])
print("state shapes", tuple(c.shape), tuple(n.shape), m.flatten())

# chunkwise: run the recurrence over two chunks, carrying the state
h1, state = recurrent_sequence(q[:, :, :5], k[:, :, :5], v[:, :, :5], ig[:, :, :5, 0], fg[:, :, :5, 0])
print("chunk prefix equals", torch.allclose(h1, hp[:, :, :5]))


class CausalConv1d(nn.Module):
    def __init__(self, dim, kernel_size=4):
        super().__init__()
        self.pad = kernel_size - 1
        self.conv = nn.Conv1d(dim, dim, kernel_size, groups=dim)

    def forward(self, x):
        x = F.pad(x.transpose(1, 2), (self.pad, 0))
        return self.conv(x).transpose(1, 2)


class mLSTMBlock(nn.Module):
    def __init__(self, dim, num_heads=2, proj_factor=2):
        super().__init__()
        inner = proj_factor * dim
        self.nh = num_heads
        self.norm = nn.LayerNorm(dim)
        self.proj_up = nn.Linear(dim, 2 * inner)
        self.conv = CausalConv1d(inner)
        self.q, self.k, self.v = nn.Linear(inner, inner), nn.Linear(inner, inner), nn.Linear(inner, inner)
        self.igate = nn.Linear(3 * inner, num_heads)
        self.fgate = nn.Linear(3 * inner, num_heads)
        nn.init.zeros_(self.fgate.weight)
        with torch.no_grad():
            self.fgate.bias.copy_(torch.linspace(3.0, 6.0, num_heads))
        self.outnorm = nn.GroupNorm(num_heads, inner)
        self.skip = nn.Parameter(torch.ones(inner))
        self.proj_down = nn.Linear(inner, dim)

    def forward(self, x):
        Bn, Sn, _ = x.shape
        x_m, z = self.proj_up(self.norm(x)).chunk(2, dim=-1)
        x_c = F.silu(self.conv(x_m))
        q, k, v = self.q(x_c), self.k(x_c), self.v(x_m)
        gates_in = torch.cat([q, k, v], dim=-1)
        i = self.igate(gates_in).transpose(1, 2).unsqueeze(-1)
        f = self.fgate(gates_in).transpose(1, 2).unsqueeze(-1)
        heads = lambda t: t.view(Bn, Sn, self.nh, -1).transpose(1, 2)
        h = parallel_stabilized_simple(heads(q), heads(k), heads(v), i, f)
        h = h.transpose(1, 2).reshape(Bn * Sn, -1)
        h = self.outnorm(h).view(Bn, Sn, -1) + self.skip * x_c
        return x + self.proj_down(h * F.silu(z))


class sLSTMCell(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.W = nn.Linear(dim, 4 * hidden)
        self.R = nn.Linear(hidden, 4 * hidden, bias=False)
        self.hidden = hidden

    def forward(self, x):
        Bn, Sn, _ = x.shape
        h = c = n = torch.zeros(Bn, self.hidden)
        m = torch.zeros(Bn, self.hidden)
        outs = []
        for t in range(Sn):
            zi, ii, fi, oi = (self.W(x[:, t]) + self.R(h)).chunk(4, dim=-1)
            log_f = F.logsigmoid(fi)
            m_new = torch.maximum(log_f + m, ii)
            i_g, f_g = torch.exp(ii - m_new), torch.exp(log_f + m - m_new)
            c = f_g * c + i_g * torch.tanh(zi)
            n = f_g * n + i_g
            h = torch.sigmoid(oi) * c / n
            m = m_new
            outs.append(h)
        return torch.stack(outs, 1)


vocab, dim = 12, 16
emb = nn.Embedding(vocab, dim)
model = nn.ModuleDict({"emb": emb, "blocks": nn.Sequential(mLSTMBlock(dim), mLSTMBlock(dim)),
                       "slstm": sLSTMCell(dim, dim), "head": nn.Linear(dim, vocab)})
model["head"].weight = emb.weight
seq = torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1, 2, 3]] * 2)
seq[1] = seq[1].roll(3)
opt = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.01)
for step in range(25):
    hdn = model["blocks"](model["emb"](seq[:, :-1]))
    hdn = hdn + model["slstm"](hdn)
    logits = model["head"](hdn)
    loss = F.cross_entropy(logits.reshape(-1, vocab), seq[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if step % 8 == 0 or step == 24:
        print(f"step {step} loss {loss.item():.6f}")
print("fgate bias", model["blocks"][0].fgate.bias.detach(), "skip mean", model["blocks"][1].skip.mean().item())
