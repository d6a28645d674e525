"""Speculative decoding the way feifeibear/LLMSpeculativeSampling and the gpt-fast
``generate.py`` write it: a small draft and a larger target GPT (trained briefly on the same
text), ``norm_logits`` with temperature, top-k and top-p filtering (``torch.sort`` with
``cumsum``, ``scatter`` back, ``masked_fill``), ``sample`` by ``torch.multinomial`` with a
``Generator``, ``max_fn`` for the residual distribution, the accept/reject loop with
``torch.rand`` against ``p/q`` ratios, a ``KVCache``-free prefix recomputation, the
greedy variant that must reproduce the target's own greedy output exactly, acceptance
statistics, and ``torch.inference_mode`` around the whole decoding."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class GPT(nn.Module):
    def __init__(self, vocab, d, n_layer, n_head, block=48):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(block, d)
        layer = nn.TransformerEncoderLayer(d, n_head, 2 * d, dropout=0.0, batch_first=True, norm_first=True,
                                           activation="gelu")
        self.blocks = nn.TransformerEncoder(layer, n_layer, enable_nested_tensor=False)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T))
        mask = nn.Transformer.generate_square_subsequent_mask(T)
        return self.head(self.ln(self.blocks(x, mask=mask, is_causal=True)))


def top_k_top_p_filter(logits, top_k=0, top_p=0.0):
    if top_k > 0:
        filter = torch.topk(logits, min(top_k, logits.size(-1)))[0]
        logits[logits < filter[:, [-1]]] = float("-inf")
    if top_p > 0.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
        filter = cumulative_probs > top_p
        filter[..., 1:] = filter[..., :-1].clone()
        filter[..., 0] = 0
        indices_to_remove = filter.scatter(1, sorted_indices, filter)
        logits[indices_to_remove] = float("-inf")
    return logits


def norm_logits(logits, temperature, top_k, top_p):
    assert logits.dim() == 2
    logits = logits / temperature
    logits = top_k_top_p_filter(logits, top_k=top_k, top_p=top_p)
    return F.softmax(logits, dim=1)


def sample(probs, num_samples=1, generator=None):
    idx_next = torch.multinomial(probs, num_samples=num_samples, generator=generator)
    if idx_next.item() == 0:
        raise RuntimeError("sampled the padding token")
    return idx_next


def max_fn(x):
    x_max = torch.where(x > 0, x, torch.zeros_like(x))
    return x_max / torch.sum(x_max, dim=1, keepdim=True)


def autoregressive_sampling(x, model, N, temperature=1, top_k=0, top_p=0, generator=None):
    n = len(x)
    T = x.shape[1] + N
    while x.shape[1] < T:
        probs = norm_logits(model(x)[:, -1, :], temperature, top_k, top_p)
        x = torch.cat((x, sample(probs, generator=generator)), dim=1)
    return x


def speculative_sampling(prefix, approx_model, target_model, max_len, gamma=4, temperature=1, top_k=0, top_p=0,
                         generator=None, greedy=False):
    seq_len = prefix.shape[1]
    T = seq_len + max_len
    accepted = drafted = 0
    while prefix.shape[1] < T:
        x = prefix
        prefix_len = prefix.shape[1]
        for _ in range(gamma):
            q = approx_model(x)
            if greedy:
                next_tok = q[:, -1, :].argmax(-1, keepdim=True)
            else:
                next_tok = sample(norm_logits(q[:, -1, :], temperature, top_k, top_p), generator=generator)
            x = torch.cat((x, next_tok), dim=1)
        q = approx_model(x)
        p = target_model(x)
        n = prefix_len + gamma - 1
        for i in range(gamma):
            j = x[:, prefix_len + i]
            drafted += 1
            if greedy:
                ok = p[:, prefix_len + i - 1, :].argmax(-1) == j
            else:
                pp = norm_logits(p[:, prefix_len + i - 1, :], temperature, top_k, top_p)
                qq = norm_logits(q[:, prefix_len + i - 1, :], temperature, top_k, top_p)
                r = torch.rand(1, generator=generator)
                ok = r < torch.min(torch.tensor([1.0]), pp[:, j] / qq[:, j])
            if not bool(ok):
                n = prefix_len + i - 1
                break
            accepted += 1
        prefix = x[:, :n + 1]
        if n < prefix_len + gamma - 1:
            if greedy:
                t = p[:, n, :].argmax(-1, keepdim=True)
            else:
                pp = norm_logits(p[:, n, :], temperature, top_k, top_p)
                qq = norm_logits(q[:, n, :], temperature, top_k, top_p)
                t = sample(max_fn(pp - qq), generator=generator)
        else:
            t = (p[:, -1, :].argmax(-1, keepdim=True) if greedy
                 else sample(norm_logits(p[:, -1, :], temperature, top_k, top_p), generator=generator))
        prefix = torch.cat((prefix, t), dim=1)
    return prefix[:, :T], accepted, drafted


text = "speculative decoding lets a small model draft and a large model verify. " * 8
chars = ["<pad>"] + sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text])
V = len(chars)


def train(model, steps, lr, seed):
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    for _ in range(steps):
        ix = torch.randint(0, len(data) - 33, (8,), generator=g).tolist()
        xb = torch.stack([data[i:i + 32] for i in ix])
        yb = torch.stack([data[i + 1:i + 33] for i in ix])
        loss = F.cross_entropy(model(xb).reshape(-1, V), yb.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


draft = GPT(V, 16, 1, 2)
target = GPT(V, 32, 2, 4)
print("draft params", sum(p.numel() for p in draft.parameters()), "target params",
      sum(p.numel() for p in target.parameters()))
print(f"draft loss {train(draft, 40, 1e-2, 1):.4f} target loss {train(target, 40, 5e-3, 2):.4f}")
draft.eval(), target.eval()
prompt = torch.tensor([[stoi[c] for c in "speculative "]])

with torch.inference_mode():
    greedy_target = prompt
    for _ in range(16):
        greedy_target = torch.cat([greedy_target, target(greedy_target)[:, -1].argmax(-1, keepdim=True)], 1)
    spec, acc, dr = speculative_sampling(prompt, draft, target, 16, gamma=4, greedy=True)
    print("greedy speculative == target greedy:", torch.equal(spec, greedy_target), f"accepted {acc}/{dr}")
    print("text:", repr("".join(chars[i] for i in spec[0].tolist())))
    for temperature, top_k, top_p in ((1.0, 0, 0.0), (0.8, 5, 0.0), (0.7, 0, 0.9)):
        g = torch.Generator().manual_seed(42)
        out, acc, dr = speculative_sampling(prompt, draft, target, 12, gamma=3, temperature=temperature,
                                            top_k=top_k, top_p=top_p, generator=g)
        ar = autoregressive_sampling(prompt, target, 12, temperature, top_k, top_p,
                                     generator=torch.Generator().manual_seed(42))
        print(f"T={temperature} k={top_k} p={top_p}: acceptance {acc}/{dr}, lengths {out.shape[1]} {ar.shape[1]}, "
              f"spec {''.join(chars[i] for i in out[0, prompt.shape[1]:].tolist())!r} "
              f"ar {''.join(chars[i] for i in ar[0, prompt.shape[1]:].tolist())!r}")
    logits = target(prompt)[:, -1, :]
    filtered = top_k_top_p_filter(logits.clone(), top_p=0.5)
    print("top-p 0.5 keeps", int(torch.isfinite(filtered).sum()), "tokens; entropy",
          round(-(F.softmax(logits, -1) * F.log_softmax(logits, -1)).sum().item(), 4),
          "max_fn sums", max_fn(F.softmax(logits, -1) - F.softmax(draft(prompt)[:, -1], -1)).sum().item())
print("perplexity of target on text", math.exp(F.cross_entropy(target(data[None, :40])[0, :-1], data[1:40]).item()))
