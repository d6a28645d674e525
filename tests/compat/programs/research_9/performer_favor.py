"""Linear attention the way lucidrains/performer-pytorch and the "Transformers are RNNs"
(idiap/fast-transformers) code write it: FAVOR+ features from blocks of Gaussian matrices
orthogonalised by ``torch.linalg.qr(..., mode="reduced")`` and rescaled by chi-distributed
norms, the softmax kernel with its stabiliser (``amax`` over the last dimension, detached),
non-causal attention by ``einsum`` contractions, causal attention by prefix sums
(``cumsum``) of key-value outer products, the ``elu(x) + 1`` feature map, feature redrawing
through a buffer ``copy_``, compared against exact softmax attention; a small
``FastAttention`` layer trained a few steps on a copy task."""
import math
from functools import partial

import torch
import torch.nn.functional as F
from torch import einsum, nn

torch.manual_seed(0)


def orthogonal_matrix_chunk(cols, device=None):
    unstructured_block = torch.randn((cols, cols), device=device)
    q, r = torch.linalg.qr(unstructured_block.cpu(), mode="reduced")
    q, r = map(lambda t: t.to(device), (q, r))
    return q.t()


def gaussian_orthogonal_random_matrix(nb_rows, nb_columns, scaling=0, device=None):
    nb_full_blocks = int(nb_rows / nb_columns)
    block_list = []
    for _ in range(nb_full_blocks):
        block_list.append(orthogonal_matrix_chunk(nb_columns, device=device))
    remaining_rows = nb_rows - nb_full_blocks * nb_columns
    if remaining_rows > 0:
        q = orthogonal_matrix_chunk(nb_columns, device=device)
        block_list.append(q[:remaining_rows])
    final_matrix = torch.cat(block_list)
    if scaling == 0:
        multiplier = torch.randn((nb_rows, nb_columns), device=device).norm(dim=1)
    elif scaling == 1:
        multiplier = math.sqrt(float(nb_columns)) * torch.ones((nb_rows,), device=device)
    else:
        raise ValueError(f"Invalid scaling {scaling}")
    return torch.diag(multiplier) @ final_matrix


def softmax_kernel(data, *, projection_matrix, is_query, normalize_data=True, eps=1e-4):
    b, h, *_ = data.shape
    data_normalizer = (data.shape[-1] ** -0.25) if normalize_data else 1.
    ratio = (projection_matrix.shape[0] ** -0.5)
    projection = projection_matrix.unsqueeze(0).unsqueeze(0).expand(b, h, -1, -1).type_as(data)
    data_dash = einsum("...id,...jd->...ij", (data_normalizer * data), projection)
    diag_data = data ** 2
    diag_data = torch.sum(diag_data, dim=-1)
    diag_data = (diag_data / 2.0) * (data_normalizer ** 2)
    diag_data = diag_data.unsqueeze(dim=-1)
    if is_query:
        data_dash = ratio * (torch.exp(data_dash - diag_data -
                                       torch.amax(data_dash, dim=-1, keepdim=True).detach()) + eps)
    else:
        data_dash = ratio * (torch.exp(data_dash - diag_data -
                                       torch.amax(data_dash, dim=(-1, -2), keepdim=True).detach()) + eps)
    return data_dash.type_as(data)


def linear_attention(q, k, v):
    k_cumsum = k.sum(dim=-2)
    D_inv = 1. / torch.einsum("...nd,...d->...n", q, k_cumsum.type_as(q))
    context = torch.einsum("...nd,...ne->...de", k, v)
    return torch.einsum("...de,...nd,...n->...ne", context, q, D_inv)


def causal_linear_attention(q, k, v, eps=1e-6):
    k_cumsum = k.cumsum(dim=-2) + eps
    D_inv = 1. / torch.einsum("...nd,...nd->...n", q, k_cumsum.type_as(q))
    context = torch.einsum("...nd,...ne->...nde", k, v)
    context = context.cumsum(dim=-3)
    return torch.einsum("...nde,...nd,...n->...ne", context, q, D_inv)


def elu_feature_map(x):
    return F.elu(x) + 1


class FastAttention(nn.Module):
    def __init__(self, dim_heads, nb_features=None, causal=False, ortho_scaling=0):
        super().__init__()
        nb_features = nb_features or int(dim_heads * math.log(dim_heads))
        self.dim_heads, self.nb_features, self.ortho_scaling = dim_heads, nb_features, ortho_scaling
        self.create_projection = partial(gaussian_orthogonal_random_matrix, nb_rows=self.nb_features,
                                         nb_columns=dim_heads, scaling=ortho_scaling)
        projection_matrix = self.create_projection()
        self.register_buffer("projection_matrix", projection_matrix)
        self.causal = causal

    @torch.no_grad()
    def redraw_projection_matrix(self, device=None):
        projections = self.create_projection(device=device)
        self.projection_matrix.copy_(projections)
        del projections

    def forward(self, q, k, v):
        create_kernel = partial(softmax_kernel, projection_matrix=self.projection_matrix)
        q = create_kernel(q, is_query=True)
        k = create_kernel(k, is_query=False)
        attn_fn = linear_attention if not self.causal else causal_linear_attention
        return attn_fn(q, k, v)


def exact_attention(q, k, v, causal=False):
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    if causal:
        n = q.shape[-2]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return scores.softmax(-1) @ v


m = gaussian_orthogonal_random_matrix(12, 4)
blk = m[:4] / m[:4].norm(dim=1, keepdim=True)
print("orthogonal blocks:", torch.allclose(blk @ blk.t(), torch.eye(4), atol=1e-5), tuple(m.shape))
q, k, v = (torch.randn(2, 2, 16, 8) * 0.5 for _ in range(3))
for causal in (False, True):
    errs = []
    for nb in (16, 64, 256):
        torch.manual_seed(1)
        attn = FastAttention(8, nb_features=nb, causal=causal)
        approx = attn(q, k, v)
        errs.append((approx - exact_attention(q, k, v, causal)).abs().mean().item())
    print(f"causal={causal} favor+ errors", [f"{e:.4f}" for e in errs], "shrinks:", errs[2] < errs[0])
fm_out = causal_linear_attention(elu_feature_map(q), elu_feature_map(k), v)
step = torch.stack([linear_attention(elu_feature_map(q[:, :, :i + 1]), elu_feature_map(k[:, :, :i + 1]),
                                     v[:, :, :i + 1])[:, :, -1] for i in range(16)], dim=2)
print("causal prefix sums == per-step:", torch.allclose(fm_out, step, atol=1e-5))
attn = FastAttention(8, nb_features=32)
before = attn.projection_matrix.clone()
attn.redraw_projection_matrix()
print("redrawn:", not torch.equal(before, attn.projection_matrix), "buffers:",
      list(dict(attn.named_buffers())))


class Model(nn.Module):
    def __init__(self, vocab=8, dim=16, heads=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, 12, dim) * 0.1)
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.attn = FastAttention(dim // heads, nb_features=16, causal=True)
        self.out = nn.Linear(dim, vocab)
        self.heads = heads

    def forward(self, x):
        h = self.emb(x) + self.pos[:, :x.shape[1]]
        b, n, _ = h.shape
        qkv = self.to_qkv(h).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in qkv)
        o = self.attn(q, k, v).transpose(1, 2).reshape(b, n, -1)
        return self.out(h + o)


torch.manual_seed(2)
model = Model()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
seq = torch.randint(0, 8, (8, 12))
for it in range(6):
    logits = model(seq[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, 8), seq[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"it {it} loss {loss.item():.5f}")
