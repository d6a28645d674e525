"""karpathy's micrograd torch comparison, makemore's bigram counts / bigram net / MLP with hand-written batch norm (torch.Generator streams), and minGPT's adder dataset, RandomSampler with replacement, causal attention, configure_optimizers and generate."""
import math, random, string, unicodedata
import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.dataloader import DataLoader as DL2
# micrograd test_more_ops torch side
x = torch.Tensor([-4.0]).double(); x.requires_grad = True
z = 2 * x + 2 + x; q = z.relu() + z * x; h = (z * z).relu(); y = h + q + q * x
y.backward(); xpt, ypt = x, y
print(ypt.data.item(), xpt.grad.item())
a = torch.Tensor([-4.0]).double(); b = torch.Tensor([2.0]).double(); a.requires_grad = True; b.requires_grad = True
c = a + b; d = a * b + b**3; c = c + c + 1; c = c + 1 + c + (-a); d = d + d * 2 + (b + a).relu(); d = d + 3 * d + (b - a).relu()
e = c - d; f = e**2; g = f / 2.0; g = g + 10.0 / f; g.backward()
print(round(g.data.item(), 6), round(a.grad.item(), 6), round(b.grad.item(), 6))
# makemore bigram / MLP
words = ['emma', 'olivia', 'ava', 'isabella', 'sophia', 'charlotte', 'mia', 'amelia', 'harper', 'evelyn']
chars = sorted(list(set(''.join(words)))); stoi = {s: i+1 for i, s in enumerate(chars)}; stoi['.'] = 0; itos = {i: s for s, i in stoi.items()}
N = torch.zeros((27, 27), dtype=torch.int32)
for w in words:
    chs = ['.'] + list(w) + ['.']
    for ch1, ch2 in zip(chs, chs[1:]): N[stoi[ch1], stoi[ch2]] += 1
V = len(stoi); N = N[:V, :V]
g = torch.Generator().manual_seed(2147483647)
P = (N + 1).float(); P /= P.sum(1, keepdims=True)
print(P.shape, P[0].sum().item() == 1.0 or abs(P[0].sum().item() - 1) < 1e-6)
out = []; ix = 0
for _ in range(20):
    p = P[ix]; ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item(); out.append(itos[ix])
    if ix == 0: break
print(type(ix), len(out) > 0)
log_likelihood = 0.0; n = 0
for w in words:
    chs = ['.'] + list(w) + ['.']
    for ch1, ch2 in zip(chs, chs[1:]):
        prob = P[stoi[ch1], stoi[ch2]]; log_likelihood += torch.log(prob); n += 1
nll = -log_likelihood; print(f'{nll/n=:.4f}'[:8], type(log_likelihood).__name__)
xs, ys = [], []
for w in words:
    chs = ['.'] + list(w) + ['.']
    for ch1, ch2 in zip(chs, chs[1:]): xs.append(stoi[ch1]); ys.append(stoi[ch2])
xs = torch.tensor(xs); ys = torch.tensor(ys); num = xs.nelement()
W = torch.randn((V, V), generator=g, requires_grad=True)
for k in range(20):
    xenc = F.one_hot(xs, num_classes=V).float(); logits = xenc @ W; counts = logits.exp(); probs = counts / counts.sum(1, keepdims=True)
    loss = -probs[torch.arange(num), ys].log().mean() + 0.01*(W**2).mean()
    W.grad = None; loss.backward(); W.data += -50 * W.grad
print('bigram nn loss finite', math.isfinite(loss.item()), xenc.dtype, xenc.shape)
block_size = 3
def build_dataset(words):
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + '.':
            ix = stoi[ch]; X.append(context); Y.append(ix); context = context[1:] + [ix]
    X = torch.tensor(X); Y = torch.tensor(Y); print(X.shape, Y.shape); return X, Y
Xtr, Ytr = build_dataset(words)
C = torch.randn((V, 10), generator=g); W1 = torch.randn((30, 64), generator=g) * (5/3)/((30)**0.5)
b1 = torch.randn(64, generator=g) * 0.01; W2 = torch.randn((64, V), generator=g) * 0.01; b2 = torch.randn(V, generator=g) * 0
bngain = torch.ones((1, 64)); bnbias = torch.zeros((1, 64)); bnmean_running = torch.zeros((1, 64)); bnstd_running = torch.ones((1, 64))
parameters = [C, W1, b1, W2, b2, bngain, bnbias]; print(sum(p.nelement() for p in parameters))
for p in parameters: p.requires_grad = True
lossi = []
for i in range(30):
    ix = torch.randint(0, Xtr.shape[0], (16,), generator=g); Xb, Yb = Xtr[ix], Ytr[ix]
    emb = C[Xb]; embcat = emb.view(emb.shape[0], -1); hpreact = embcat @ W1 + b1
    bnmeani = hpreact.mean(0, keepdim=True); bnstdi = hpreact.std(0, keepdim=True)
    hpreact = bngain * (hpreact - bnmeani) / bnstdi + bnbias
    with torch.no_grad():
        bnmean_running = 0.999 * bnmean_running + 0.001 * bnmeani; bnstd_running = 0.999 * bnstd_running + 0.001 * bnstdi
    h = torch.tanh(hpreact); logits = h @ W2 + b2; loss = F.cross_entropy(logits, Yb)
    for p in parameters: p.grad = None
    loss.backward(); lr = 0.1 if i < 100000 else 0.01
    for p in parameters: p.data += -lr * p.grad
    lossi.append(loss.log10().item())
print('mlp', len(lossi), torch.tensor(lossi).view(-1, 10).mean(1).shape)
@torch.no_grad()
def split_loss():
    emb = C[Xtr]; embcat = emb.view(emb.shape[0], -1); hpreact = embcat @ W1 + b1
    hpreact = bngain * (hpreact - bnmean_running) / bnstd_running + bnbias; h = torch.tanh(hpreact)
    return F.cross_entropy(h @ W2 + b2, Ytr).item()
print(math.isfinite(split_loss()))
# minGPT-style: configure_optimizers + adder dataset + RandomSampler
class AdditionDataset(Dataset):
    def __init__(self, split, ndigit=2):
        self.ndigit = ndigit; self.split = split
        num = (10**ndigit)**2; rng = torch.Generator(); rng.manual_seed(1337)
        perm = torch.randperm(num, generator=rng); num_test = min(int(num*0.2), 500)
        self.ixes = perm[:num_test] if split == 'test' else perm[num_test:]
    def get_vocab_size(self): return 10
    def get_block_size(self): return 3*self.ndigit + 1 - 1
    def __len__(self): return self.ixes.nelement()
    def __getitem__(self, idx):
        ndigit = self.ndigit; idx = self.ixes[idx].item(); nd = 10**ndigit; a = idx // nd; b = idx % nd; c = a + b
        astr = f'%0{ndigit}d' % a; bstr = f'%0{ndigit}d' % b; cstr = (f'%0{ndigit+1}d' % c)[::-1]
        render = astr + bstr + cstr; dix = [int(s) for s in render]
        x = torch.tensor(dix[:-1], dtype=torch.long); y = torch.tensor(dix[1:], dtype=torch.long); y[:ndigit*2-1] = -1; return x, y
ds = AdditionDataset('train'); print(len(ds), ds[0][0].shape, ds[0][1][:3])
loader = DataLoader(ds, sampler=torch.utils.data.RandomSampler(ds, replacement=True, num_samples=int(1e10)), shuffle=False, pin_memory=True, batch_size=8, num_workers=0)
it = iter(loader); xb, yb = next(it); print(xb.shape, yb.dtype)
class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=16, n_head=2, block_size=6):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd); self.c_proj = nn.Linear(n_embd, n_embd); self.n_head = n_head; self.n_embd = n_embd
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))
    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2); q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2); v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1))); att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf')); att = F.softmax(att, dim=-1)
        y = att @ v; y = y.transpose(1, 2).contiguous().view(B, T, C); return self.c_proj(y)
class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(10, 16), wpe=nn.Embedding(6, 16), drop=nn.Dropout(0.1), h=nn.ModuleList([nn.Sequential(nn.LayerNorm(16), CausalSelfAttention()) for _ in range(2)]), ln_f=nn.LayerNorm(16)))
        self.lm_head = nn.Linear(16, 10, bias=False)
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weight'): torch.nn.init.normal_(p, mean=0.0, std=0.02/math.sqrt(2 * 2))
        n_params = sum(p.numel() for p in self.transformer.parameters()); print("number of parameters: %.2fM" % (n_params/1e6,))
    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None: torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding): torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
        elif isinstance(module, nn.LayerNorm): torch.nn.init.zeros_(module.bias); torch.nn.init.ones_(module.weight)
    def configure_optimizers(self):
        decay = set(); no_decay = set(); whitelist = (torch.nn.Linear, ); blacklist = (torch.nn.LayerNorm, torch.nn.Embedding)
        for mn, m in self.named_modules():
            for pn, p in m.named_parameters():
                fpn = '%s.%s' % (mn, pn) if mn else pn
                if pn.endswith('bias'): no_decay.add(fpn)
                elif pn.endswith('weight') and isinstance(m, whitelist): decay.add(fpn)
                elif pn.endswith('weight') and isinstance(m, blacklist): no_decay.add(fpn)
        param_dict = {pn: p for pn, p in self.named_parameters()}
        inter_params = decay & no_decay; union_params = decay | no_decay
        assert len(inter_params) == 0; assert len(param_dict.keys() - union_params) == 0
        optim_groups = [{"params": [param_dict[pn] for pn in sorted(list(decay))], "weight_decay": 0.1}, {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0}]
        return torch.optim.AdamW(optim_groups, lr=5e-4, betas=(0.9, 0.95))
    def forward(self, idx, targets=None):
        b, t = idx.size(); pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h: x = x + block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1) if targets is not None else None
        return logits, loss
    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, do_sample=False, top_k=None):
        for _ in range(max_new_tokens):
            logits, _ = self(idx[:, -6:]); logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, top_k); logits[logits < v[:, [-1]]] = -float('Inf')
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1) if do_sample else torch.topk(probs, k=1, dim=-1)[1]
            idx = torch.cat((idx, idx_next), dim=1)
        return idx
model = GPT(); opt = model.configure_optimizers(); print([len(gp['params']) for gp in opt.param_groups])
logits, loss = model(xb, yb); loss.backward(); torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0); opt.step()
print(logits.shape, model.generate(xb[:2, :4], 3, do_sample=True, top_k=3).shape, model.generate(xb[:2, :4], 2).shape)
