"""Hyperbolic embeddings the way facebookresearch/poincare-embeddings writes them: the
Poincaré distance as a ``torch.autograd.Function`` with a hand-written backward (clamped
norms, ``arcosh`` through ``log``/``sqrt``), a Riemannian SGD ``Optimizer`` whose step
rescales the Euclidean gradient by ``(1 - |x|^2)^2 / 4`` and projects back into the ball
with ``renorm_``, an ``nn.Embedding`` initialised ``uniform_(-1e-3, 1e-3)``, negatives
drawn with ``torch.multinomial`` from a unigram distribution raised to a power, the
softmax ranking loss over (positive, negatives), and mean rank / MAP evaluation on a small
tree; the Lorentz model's distance compared with it through the isometry."""
import torch
import torch.nn as nn
from torch.autograd import Function
from torch.optim.optimizer import Optimizer, required

torch.manual_seed(0)
EPS = 1e-5


class PoincareDistance(Function):
    boundary = 1 - EPS

    @staticmethod
    def grad(x, v, sqnormx, sqnormv, sqdist):
        alpha = (1 - sqnormx)
        beta = (1 - sqnormv)
        z = 1 + 2 * sqdist / (alpha * beta)
        a = ((sqnormv - 2 * torch.sum(x * v, dim=-1) + 1) / torch.pow(alpha, 2)).unsqueeze(-1)
        a = a.expand_as(x) * x - v / alpha.unsqueeze(-1).expand_as(v)
        z = torch.sqrt(torch.pow(z, 2) - 1)
        z = torch.clamp(z * beta, min=EPS).unsqueeze(-1)
        return 4 * a / z.expand_as(x)

    @staticmethod
    def forward(ctx, u, v):
        squnorm = torch.clamp(torch.sum(u * u, dim=-1), 0, PoincareDistance.boundary)
        sqvnorm = torch.clamp(torch.sum(v * v, dim=-1), 0, PoincareDistance.boundary)
        sqdist = torch.sum(torch.pow(u - v, 2), dim=-1)
        ctx.save_for_backward(u, v, squnorm, sqvnorm, sqdist)
        x = sqdist / ((1 - squnorm) * (1 - sqvnorm)) * 2 + 1
        # arcosh
        z = torch.sqrt(torch.pow(x, 2) - 1)
        return torch.log(x + z)

    @staticmethod
    def backward(ctx, g):
        u, v, squnorm, sqvnorm, sqdist = ctx.saved_tensors
        g = g.unsqueeze(-1)
        gu = PoincareDistance.grad(u, v, squnorm, sqvnorm, sqdist)
        gv = PoincareDistance.grad(v, u, sqvnorm, squnorm, sqdist)
        return g.expand_as(gu) * gu, g.expand_as(gv) * gv


def poincare_grad(p, d_p):
    p_sqnorm = torch.clamp(torch.sum(p.data ** 2, dim=-1, keepdim=True), 0, 1 - EPS)
    d_p = d_p * ((1 - p_sqnorm) ** 2 / 4).expand_as(d_p)
    return d_p


def euclidean_retraction(p, d_p, lr):
    p.data.add_(d_p, alpha=-lr)


class RiemannianSGD(Optimizer):
    def __init__(self, params, lr=required, rgrad=required, retraction=required):
        defaults = dict(lr=lr, rgrad=rgrad, retraction=retraction)
        super(RiemannianSGD, self).__init__(params, defaults)

    def step(self, lr=None):
        loss = None
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d_p = p.grad.data
                if lr is None:
                    lr = group["lr"]
                d_p = group["rgrad"](p, d_p)
                group["retraction"](p, d_p, lr)
        return loss


class Embedding(nn.Module):
    def __init__(self, size, dim, max_norm=1 - EPS):
        super().__init__()
        self.lt = nn.Embedding(size, dim, max_norm=None, sparse=False, scale_grad_by_freq=False)
        self.max_norm = max_norm
        self.lt.weight.data.uniform_(-1e-3, 1e-3)
        self.dist = PoincareDistance

    def forward(self, inputs):
        e = self.lt(inputs)
        o = e.narrow(1, 1, e.size(1) - 1)
        s = e.narrow(1, 0, 1).expand_as(o)
        dists = self.dist.apply(s, o).squeeze(-1)
        return -dists

    def loss(self, preds, targets, weight=None, size_average=True):
        return nn.functional.cross_entropy(preds, targets)

    def normalize(self):
        self.lt.weight.data.renorm_(2, 0, self.max_norm)


# a tree: root 0, children 1..3, grandchildren 4..12; the transitive closure as relations
children = {0: [1, 2, 3], 1: [4, 5, 6], 2: [7, 8, 9], 3: [10, 11, 12]}
parent = {c: p for p, cs in children.items() for c in cs}
closure = []
for node in range(1, 13):
    a = parent[node]
    while True:
        closure.append((node, a))
        if a not in parent:
            break
        a = parent[a]
idx = torch.tensor(closure)
n_nodes, nnegs = 13, 5
print("relations:", len(closure))
counts = torch.bincount(idx.flatten(), minlength=n_nodes).float()
unigram = counts ** 0.75
unigram /= unigram.sum()
related = {(u, v) for u, v in closure} | {(v, u) for u, v in closure}

# gradcheck of the Function in double precision, inside the ball
u = (torch.rand(3, 4, dtype=torch.double) - 0.5) * 0.5
v = (torch.rand(3, 4, dtype=torch.double) - 0.5) * 0.5
print("gradcheck:", torch.autograd.gradcheck(PoincareDistance.apply,
                                              (u.requires_grad_(), v.requires_grad_())))

# float64, as the repository's default: arcosh near 1 (points start within 1e-3 of the
# origin) cancels most float32 digits, and training would amplify the rounding
model = Embedding(n_nodes, 2).double()
optimizer = RiemannianSGD(model.parameters(), lr=0.5, rgrad=poincare_grad,
                          retraction=euclidean_retraction)
g = torch.Generator().manual_seed(1)
for epoch in range(30):
    lr = 0.5 * (0.1 if epoch < 5 else 1.0)  # burn-in
    perm = torch.randperm(len(closure), generator=g)
    epoch_loss = 0.0
    for b in range(0, len(closure), 8):
        batch = idx[perm[b: b + 8]]
        negs = torch.multinomial(unigram, batch.size(0) * nnegs, replacement=True,
                                 generator=g).view(-1, nnegs)
        inputs = torch.cat([batch, negs], dim=1)
        targets = torch.zeros(inputs.size(0), dtype=torch.long)
        optimizer.zero_grad()
        preds = model(inputs)
        loss = model.loss(preds, targets)
        loss.backward()
        optimizer.step(lr=lr)
        model.normalize()
        epoch_loss += loss.item()
    if epoch % 6 == 0 or epoch == 29:
        print(f"epoch {epoch:2d} loss {epoch_loss:.5f} max norm "
              f"{model.lt.weight.norm(dim=1).max().item():.5f}")

# evaluation: rank of each true relation among all non-related nodes
with torch.no_grad():
    emb = model.lt.weight
    ranks, aps = [], []
    for node in range(1, n_nodes):
        d = PoincareDistance.apply(emb[node].expand(n_nodes, -1), emb)
        for a in [v for (u, v) in closure if u == node]:
            others = [k for k in range(n_nodes) if k != node and (node, k) not in related]
            rank = 1 + int((d[others] < d[a]).sum())
            ranks.append(rank)
            aps.append(1.0 / rank)
print(f"mean rank {sum(ranks) / len(ranks):.4f} MAP {sum(aps) / len(aps):.4f}")
norms = emb.norm(dim=1)
print("root closest to origin:", int(norms.argmin()) == 0, "norms:", norms[[0, 1, 4]])


# the hyperboloid model: map the ball to it and compare distances
def to_lorentz(x):
    sq = (x * x).sum(-1, keepdim=True)
    return torch.cat([1 + sq, 2 * x], dim=-1) / (1 - sq)


def lorentz_distance(a, b):
    inner = -a[..., 0] * b[..., 0] + (a[..., 1:] * b[..., 1:]).sum(-1)
    return torch.acosh(torch.clamp(-inner, min=1 + 1e-7))


with torch.no_grad():
    a, b = emb[4], emb[10]
    print(f"poincare {PoincareDistance.apply(a[None], b[None]).item():.5f} "
          f"lorentz {lorentz_distance(to_lorentz(a), to_lorentz(b)).item():.5f}")
