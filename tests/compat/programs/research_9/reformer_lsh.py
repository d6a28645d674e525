"""Reformer's LSH attention the way lucidrains/reformer-pytorch writes it (our own code after
its pattern): angular LSH by random rotations (``torch.einsum`` with a random tensor,
``argmax`` over ``cat([r, -r])``), several hash rounds offset by ``n_buckets *
arange(n_hashes)``, ticker-based ``sort_key_val`` sorting (``torch.sort`` with values
gathered), chunked attention to the previous chunk by ``look_one_back``, shared-QK
normalisation with ``F.normalize`` and self-masking by ``-5e4``, unsorting via ``argsort``
of the sorted ticker and ``batched_index_select``, combining rounds by ``logsumexp``; and
reversible residual blocks (``RevNet``-style y1 = x1 + f(x2)) checked for exact inversion,
plus axial position embeddings; ``torch.bucketize``/``searchsorted`` for length buckets."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
TOKEN_SELF_ATTN_VALUE = -5e4


def sort_key_val(t1, t2, dim=-1):
    values, indices = t1.sort(dim=dim)
    t2 = t2.expand_as(t1)
    return values, t2.gather(dim, indices)


def batched_index_select(values, indices):
    last_dim = values.shape[-1]
    return values.gather(1, indices[:, :, None].expand(-1, -1, last_dim))


def look_one_back(x):
    x_extra = torch.cat([x[:, -1:, ...], x[:, :-1, ...]], dim=1)
    return torch.cat([x, x_extra], dim=2)


class LSHAttention(nn.Module):
    def __init__(self, bucket_size=4, n_hashes=2, causal=False):
        super().__init__()
        self.bucket_size, self.n_hashes, self.causal = bucket_size, n_hashes, causal

    def hash_vectors(self, n_buckets, vecs):
        batch_size, device = vecs.shape[0], vecs.device
        rot_size = n_buckets
        rotations_shape = (1, vecs.shape[-1], self.n_hashes, rot_size // 2)
        random_rotations = torch.randn(rotations_shape, dtype=vecs.dtype, device=device).expand(batch_size, -1, -1, -1)
        rotated_vecs = torch.einsum("btf,bfhi->bhti", vecs, random_rotations)
        rotated_vecs = torch.cat([rotated_vecs, -rotated_vecs], dim=-1)
        buckets = torch.argmax(rotated_vecs, dim=-1)
        offsets = torch.arange(self.n_hashes, device=device)
        offsets = torch.reshape(offsets * n_buckets, (1, -1, 1))
        return torch.reshape(buckets + offsets, (batch_size, -1,))

    def forward(self, qk, v):
        batch_size, seqlen, dim, device = *qk.shape, qk.device
        n_buckets = seqlen // self.bucket_size
        buckets = self.hash_vectors(n_buckets, qk)
        total_hashes = self.n_hashes
        ticker = torch.arange(total_hashes * seqlen, device=device).unsqueeze(0).expand_as(buckets)
        buckets_and_t = seqlen * buckets + (ticker % seqlen)
        buckets_and_t = buckets_and_t.detach()
        sbuckets_and_t, sticker = sort_key_val(buckets_and_t, ticker, dim=-1)
        _, undo_sort = sticker.sort(dim=-1)
        del ticker
        sbuckets_and_t, sticker, undo_sort = sbuckets_and_t.detach(), sticker.detach(), undo_sort.detach()
        st = (sticker % seqlen)
        sqk = batched_index_select(qk, st)
        sv = batched_index_select(v, st)
        chunk_size = total_hashes * n_buckets
        bq_t = bkv_t = torch.reshape(st, (batch_size, chunk_size, -1))
        bqk = torch.reshape(sqk, (batch_size, chunk_size, -1, dim))
        bv = torch.reshape(sv, (batch_size, chunk_size, -1, dim))
        bq = bqk
        bk = F.normalize(bqk, p=2, dim=-1).type_as(bq)
        bk, bv, bkv_t = look_one_back(bk), look_one_back(bv), look_one_back(bkv_t)
        dots = torch.einsum("bhie,bhje->bhij", bq, bk) * (dim ** -0.5)
        if self.causal:
            mask = bq_t[:, :, :, None] < bkv_t[:, :, None, :]
            dots.masked_fill_(mask, float("-inf"))
        self_mask = bq_t[:, :, :, None] == bkv_t[:, :, None, :]
        dots.masked_fill_(self_mask, TOKEN_SELF_ATTN_VALUE)
        dots_logsumexp = torch.logsumexp(dots, dim=-1, keepdim=True)
        dots = torch.exp(dots - dots_logsumexp).type_as(dots)
        bo = torch.einsum("buij,buje->buie", dots, bv)
        so = torch.reshape(bo, (batch_size, -1, dim))
        slogits = torch.reshape(dots_logsumexp, (batch_size, -1,))
        o = batched_index_select(so, undo_sort)
        logits = slogits.gather(1, undo_sort)
        o = torch.reshape(o, (batch_size, total_hashes, seqlen, dim))
        logits = torch.reshape(logits, (batch_size, total_hashes, seqlen, 1))
        probs = torch.exp(logits - torch.logsumexp(logits, dim=1, keepdim=True))
        out = torch.sum(o * probs, dim=1)
        return out, buckets


class ReversibleBlock(nn.Module):
    def __init__(self, f, g):
        super().__init__()
        self.f, self.g = f, g

    def forward(self, x):
        x1, x2 = torch.chunk(x, 2, dim=2)
        y1 = x1 + self.f(x2)
        y2 = x2 + self.g(y1)
        return torch.cat([y1, y2], dim=2)

    @torch.no_grad()
    def inverse(self, y):
        y1, y2 = torch.chunk(y, 2, dim=2)
        x2 = y2 - self.g(y1)
        x1 = y1 - self.f(x2)
        return torch.cat([x1, x2], dim=2)


class AxialPositionalEmbedding(nn.Module):
    def __init__(self, dim, axial_shape):
        super().__init__()
        self.axial_shape = axial_shape
        self.weights = nn.ParameterList([nn.Parameter(torch.zeros(1, *[1] * i, s, *[1] * (len(axial_shape) - i - 1), dim).normal_(0, 1))
                                         for i, s in enumerate(axial_shape)])

    def forward(self, x):
        b, t, e = x.shape
        emb = sum(w.expand(b, *self.axial_shape, e) for w in self.weights)
        return emb.reshape(b, -1, e)[:, :t]


class LSHSelfAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.toqk, self.tov = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.attn = LSHAttention(bucket_size=4, n_hashes=2, causal=True)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        out, _ = self.attn(self.toqk(x), self.tov(x))
        return self.to_out(out)


class Reformer(nn.Module):
    def __init__(self, num_tokens=10, dim=16, depth=2, max_seq_len=16):
        super().__init__()
        self.emb = nn.Embedding(num_tokens, dim)
        self.pos = AxialPositionalEmbedding(dim, (4, 4))
        self.blocks = nn.ModuleList([ReversibleBlock(LSHSelfAttention(dim // 2),
                                                     nn.Sequential(nn.LayerNorm(dim // 2), nn.Linear(dim // 2, dim // 2), nn.GELU()))
                                     for _ in range(depth)])
        self.out = nn.Linear(dim, num_tokens)

    def forward(self, x):
        h = self.emb(x) + self.pos(self.emb(x))
        for blk in self.blocks:
            h = blk(h)
        return self.out(h)


qk = torch.randn(1, 16, 8)
v = torch.randn(1, 16, 8)
attn = LSHAttention(bucket_size=4, n_hashes=2)
torch.manual_seed(3)
out, buckets = attn(qk, v)
print("buckets:", buckets.view(2, 16).tolist())
print("lsh out:", tuple(out.shape), f"{out.abs().mean().item():.5f}")
vals, idx = sort_key_val(torch.tensor([[3, 1, 2, 1]]), torch.tensor([[10, 11, 12, 13]]))
print("sort_key_val:", vals.tolist(), idx.tolist())
blk = ReversibleBlock(nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 4), nn.Tanh()))
xr = torch.randn(2, 3, 8)
print("reversible inverse:", torch.allclose(blk.inverse(blk(xr)), xr, atol=1e-6))
lengths = torch.tensor([3, 9, 14, 16, 5])
boundaries = torch.tensor([4, 8, 12])
print("length buckets:", torch.bucketize(lengths, boundaries).tolist(),
      torch.searchsorted(boundaries, lengths, right=True).tolist())

torch.manual_seed(4)
model = Reformer()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
seq = torch.randint(0, 10, (4, 17))
for it in range(5):
    torch.manual_seed(100 + it)  # the hashes are drawn afresh each call
    logits = model(seq[:, :-1])
    loss = F.cross_entropy(logits.transpose(1, 2), seq[:, 1:])
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"it {it} loss {loss.item():.5f}")
