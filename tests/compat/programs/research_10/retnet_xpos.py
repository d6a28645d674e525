"""Retentive networks the way microsoft/torchscale's RetNet and Jamie-Stirling/RetNet write
them: xPos rotary embeddings (``rotate_every_two`` by ``torch.stack(...).flatten(-2)``,
``duplicate_interleave``, the per-position scale), the decay mask built with
``masked_fill(~tril, inf)`` and ``torch.exp``, multi-scale retention with per-head gammas
``1 - 2 ** (-5 - arange)``, ``GroupNorm`` over heads and a swish gate; the parallel,
recurrent and chunkwise forms checked to agree, a tiny language model trained with
``clip_grad_norm_`` and ``CosineAnnealingLR``, then recurrent generation with top-k sampling
from a seeded generator; ``named_buffers`` and ``register_buffer(persistent=False)``."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_printoptions(precision=5)


def fixed_pos_embedding(x):
    seq_len, dim = x.shape
    inv_freq = 1.0 / (10000 ** (torch.arange(0, dim) / dim))
    sinusoid_inp = torch.einsum("i , j -> i j", torch.arange(0, seq_len, dtype=torch.float),
                                inv_freq).to(x)
    return torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)


def rotate_every_two(x):
    x1 = x[:, :, ::2]
    x2 = x[:, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def duplicate_interleave(m):
    dim0 = m.shape[0]
    m = m.view(-1, 1)
    m = m.repeat(1, 2)
    m = m.view(dim0, -1)
    return m


def apply_rotary_pos_emb(x, sin, cos, scale=1):
    sin, cos = map(lambda t: duplicate_interleave(t * scale), (sin, cos))
    return (x * cos) + (rotate_every_two(x) * sin)


class XPOS(nn.Module):
    def __init__(self, head_dim, scale_base=512):
        super().__init__()
        self.head_dim = head_dim
        self.scale_base = scale_base
        self.register_buffer(
            "scale", (torch.arange(0, head_dim, 2) + 0.4 * head_dim) / (1.4 * head_dim),
            persistent=False)

    def forward(self, x, offset=0, downscale=False):
        length = x.shape[1]
        min_pos = 0
        max_pos = length + offset + min_pos
        scale = self.scale ** torch.arange(min_pos, max_pos, 1).to(self.scale).div(
            self.scale_base)[:, None]
        sin, cos = fixed_pos_embedding(scale)
        if scale.shape[0] > length:
            scale, sin, cos = scale[-length:], sin[-length:], cos[-length:]
        if downscale:
            scale = 1 / scale
        return apply_rotary_pos_emb(x, sin, cos, scale)


class SimpleRetention(nn.Module):
    def __init__(self, hidden_size, gamma, head_size=None, double_v_dim=False):
        super(SimpleRetention, self).__init__()
        self.hidden_size = hidden_size
        if head_size is None:
            head_size = hidden_size
        self.head_size = head_size
        self.v_dim = head_size * 2 if double_v_dim else head_size
        self.gamma = gamma
        self.W_Q = nn.Parameter(torch.randn(hidden_size, head_size) / hidden_size)
        self.W_K = nn.Parameter(torch.randn(hidden_size, head_size) / hidden_size)
        self.W_V = nn.Parameter(torch.randn(hidden_size, self.v_dim) / hidden_size)
        self.xpos = XPOS(head_size)

    def forward(self, X):
        sequence_length = X.shape[1]
        D = self._get_D(sequence_length).to(X.device)
        Q = self.xpos(X @ self.W_Q)
        K = self.xpos(X @ self.W_K, downscale=True)
        V = X @ self.W_V
        ret = (Q @ K.permute(0, 2, 1)) * D.unsqueeze(0)
        return ret @ V

    def forward_recurrent(self, x_n, s_n_1, n):
        Q = self.xpos(x_n @ self.W_Q, n + 1)
        K = self.xpos(x_n @ self.W_K, n + 1, downscale=True)
        V = x_n @ self.W_V
        s_n = self.gamma * s_n_1 + (K.transpose(-1, -2) @ V)
        return (Q @ s_n), s_n

    def forward_chunkwise(self, x_i, r_i_1, i):
        batch, chunk_size, _ = x_i.shape
        D = self._get_D(chunk_size)
        Q = self.xpos(x_i @ self.W_Q, i * chunk_size)
        K = self.xpos(x_i @ self.W_K, i * chunk_size, downscale=True)
        V = x_i @ self.W_V
        r_i = (K.transpose(-1, -2) @ (V * D[-1].view(1, chunk_size, 1))) + \
            (self.gamma ** chunk_size) * r_i_1
        inner_chunk = ((Q @ K.transpose(-1, -2)) * D.unsqueeze(0)) @ V
        e = torch.zeros(batch, chunk_size, 1)
        for _i in range(chunk_size):
            e[:, _i, :] = self.gamma ** (_i + 1)
        cross_chunk = (Q @ r_i_1) * e
        return inner_chunk + cross_chunk, r_i

    def _get_D(self, sequence_length):
        n = torch.arange(sequence_length).unsqueeze(1)
        m = torch.arange(sequence_length).unsqueeze(0)
        D = (self.gamma ** (n - m)) * (n >= m).float()
        D[D != D] = 0
        return D


class MultiScaleRetention(nn.Module):
    def __init__(self, hidden_size, heads, double_v_dim=False):
        super(MultiScaleRetention, self).__init__()
        self.hidden_size = hidden_size
        self.v_dim = hidden_size * 2 if double_v_dim else hidden_size
        self.heads = heads
        assert hidden_size % heads == 0, "hidden_size must be divisible by heads"
        self.head_size = hidden_size // heads
        self.head_v_dim = hidden_size * 2 if double_v_dim else hidden_size
        self.gammas = (1 - torch.exp(torch.linspace(math.log(1 / 32), math.log(1 / 512),
                                                    heads))).detach().cpu().tolist()
        self.swish = lambda x: x * torch.sigmoid(x)
        self.W_G = nn.Parameter(torch.randn(hidden_size, self.v_dim) / hidden_size)
        self.W_O = nn.Parameter(torch.randn(self.v_dim, hidden_size) / hidden_size)
        self.group_norm = nn.GroupNorm(heads, self.v_dim)
        self.retentions = nn.ModuleList([
            SimpleRetention(self.hidden_size, gamma, self.head_size, double_v_dim)
            for gamma in self.gammas])

    def forward(self, X):
        Y = [self.retentions[i](X) for i in range(self.heads)]
        Y = torch.cat(Y, dim=2)
        Y_shape = Y.shape
        Y = self.group_norm(Y.reshape(-1, self.v_dim)).reshape(Y_shape)
        return (self.swish(X @ self.W_G) * Y) @ self.W_O

    def forward_recurrent(self, x_n, s_n_1s, n):
        Y, s_ns = [], []
        for i in range(self.heads):
            y, s_n = self.retentions[i].forward_recurrent(x_n[:, :, :], s_n_1s[i], n)
            Y.append(y)
            s_ns.append(s_n)
        Y = torch.cat(Y, dim=2)
        Y_shape = Y.shape
        Y = self.group_norm(Y.reshape(-1, self.v_dim)).reshape(Y_shape)
        return (self.swish(x_n @ self.W_G) * Y) @ self.W_O, s_ns

    def forward_chunkwise(self, x_i, r_i_1s, i):
        Y, r_is = [], []
        for j in range(self.heads):
            y, r_i = self.retentions[j].forward_chunkwise(x_i[:, :, :], r_i_1s[j], i)
            Y.append(y)
            r_is.append(r_i)
        Y = torch.cat(Y, dim=2)
        Y_shape = Y.shape
        Y = self.group_norm(Y.reshape(-1, self.v_dim)).reshape(Y_shape)
        return (self.swish(x_i @ self.W_G) * Y) @ self.W_O, r_is


torch.set_default_dtype(torch.float64)  # the equivalence checks want float64, as upstream's tests
B, L, H, heads = 2, 8, 8, 2
msr = MultiScaleRetention(H, heads)
print("gammas", [round(gm, 6) for gm in msr.gammas])
print("buffers", [(n, tuple(b.shape)) for n, b in msr.named_buffers()],
      "state keys", [k for k in msr.state_dict() if "scale" in k])
X = torch.randn(B, L, H)
Y_parallel = msr(X)
s = [torch.zeros(B, H // heads, H // heads) for _ in range(heads)]
Y_rec = []
for i in range(L):
    y_n, s = msr.forward_recurrent(X[:, i:i + 1, :], s, i)
    Y_rec.append(y_n)
Y_recurrent = torch.concat(Y_rec, dim=1)
r = [torch.zeros(B, H // heads, H // heads) for _ in range(heads)]
Y_chunks = []
chunk = 4
for i in range(L // chunk):
    y_i, r = msr.forward_chunkwise(X[:, i * chunk:(i + 1) * chunk, :], r, i)
    Y_chunks.append(y_i)
Y_chunkwise = torch.concat(Y_chunks, dim=1)
print("parallel vs recurrent", (Y_parallel - Y_recurrent).abs().max().item() < 1e-10)
print("parallel vs chunkwise", (Y_parallel - Y_chunkwise).abs().max().item() < 1e-10)
print(Y_parallel[0, :3, :4])
torch.set_default_dtype(torch.float32)


class RetNetLM(nn.Module):
    def __init__(self, vocab, hidden=16, heads=2, layers=2, ffn=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.retentions = nn.ModuleList([MultiScaleRetention(hidden, heads) for _ in range(layers)])
        self.ffns = nn.ModuleList([nn.Sequential(nn.Linear(hidden, ffn), nn.GELU(),
                                                 nn.Linear(ffn, hidden)) for _ in range(layers)])
        self.ln1 = nn.ModuleList([nn.LayerNorm(hidden) for _ in range(layers)])
        self.ln2 = nn.ModuleList([nn.LayerNorm(hidden) for _ in range(layers)])
        self.head = nn.Linear(hidden, vocab, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, idx):
        X = self.emb(idx)
        for ret, ffn, a, b in zip(self.retentions, self.ffns, self.ln1, self.ln2):
            Y = ret(a(X)) + X
            X = ffn(b(Y)) + Y
        return self.head(X)

    @torch.no_grad()
    def generate(self, prompt, steps, generator, top_k=3):
        hidden = self.emb.weight.shape[1]
        states = [[torch.zeros(1, r.head_size, r.head_size) for _ in range(r.heads)]
                  for r in self.retentions]
        out = prompt.tolist()
        n = 0
        tok = None
        for t in list(prompt) + [None] * steps:
            tok = t if t is not None else tok
            X = self.emb(torch.tensor([[tok]]))
            for li, (ret, ffn, a, b) in enumerate(zip(self.retentions, self.ffns, self.ln1,
                                                       self.ln2)):
                y, states[li] = ret.forward_recurrent(a(X), states[li], n)
                Y = y + X
                X = ffn(b(Y)) + Y
            n += 1
            if t is None or n == len(prompt):
                logits = self.head(X)[0, -1]
                v, ix = torch.topk(logits, top_k)
                probs = F.softmax(v, dim=-1)
                tok = ix[torch.multinomial(probs, 1, generator=generator)].item()
                if t is None or n == len(prompt):
                    out.append(tok)
        assert hidden > 0
        return out[:len(prompt) + steps]


text = "the quick brown fox jumps over the lazy dog " * 4
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text])
model = RetNetLM(len(chars))
print(sum(p.numel() for p in model.parameters()), "parameters (tied head)")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=12)
gb = torch.Generator().manual_seed(0)
for step in range(12):
    ix = torch.randint(0, len(data) - 17, (4,), generator=gb)
    xb = torch.stack([data[i:i + 16] for i in ix])
    yb = torch.stack([data[i + 1:i + 17] for i in ix])
    logits = model(xb)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), yb.view(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    if step % 4 == 3:
        print(f"step {step + 1} loss {loss.item():.4f} grad norm {norm.item():.4f} "
              f"lr {sched.get_last_lr()[0]:.5f}")
model.eval()
with torch.no_grad():
    par = model(data[None, :12])[0, -1]
    prompt = data[:12]
    states_logits = model.generate(prompt, 0, torch.Generator().manual_seed(1))
print("prompt", "".join(chars[i] for i in prompt.tolist()))
gen = model.generate(prompt, 12, torch.Generator().manual_seed(1))
print("generated", repr("".join(chars[i] for i in gen)))
