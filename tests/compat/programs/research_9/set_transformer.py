"""Set Transformer and Deep Sets the way juho-lee/set_transformer's ``modules.py`` and
the Deep Sets examples write them (our own code after their pattern): ``MAB`` with queries
split across heads by ``torch.cat(Q.split(dim_split, 2), 0)``, ``softmax`` of ``bmm`` scores
over keys, optional ``LayerNorm``; ``SAB``, ``ISAB`` with learned inducing points
(``nn.init.xavier_uniform_``), ``PMA`` seeds for pooling; permutation invariance checked
under ``torch.randperm``, a Deep Sets sum/max pooling baseline, trained on "max of a set"
and on amortised clustering by a mixture-of-Gaussians log-likelihood
(``torch.logsumexp``)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class MAB(nn.Module):
    def __init__(self, dim_Q, dim_K, dim_V, num_heads, ln=False):
        super(MAB, self).__init__()
        self.dim_V = dim_V
        self.num_heads = num_heads
        self.fc_q = nn.Linear(dim_Q, dim_V)
        self.fc_k = nn.Linear(dim_K, dim_V)
        self.fc_v = nn.Linear(dim_K, dim_V)
        if ln:
            self.ln0 = nn.LayerNorm(dim_V)
            self.ln1 = nn.LayerNorm(dim_V)
        self.fc_o = nn.Linear(dim_V, dim_V)

    def forward(self, Q, K):
        Q = self.fc_q(Q)
        K, V = self.fc_k(K), self.fc_v(K)
        dim_split = self.dim_V // self.num_heads
        Q_ = torch.cat(Q.split(dim_split, 2), 0)
        K_ = torch.cat(K.split(dim_split, 2), 0)
        V_ = torch.cat(V.split(dim_split, 2), 0)
        A = torch.softmax(Q_.bmm(K_.transpose(1, 2)) / math.sqrt(self.dim_V), 2)
        O = torch.cat((Q_ + A.bmm(V_)).split(Q.size(0), 0), 2)
        O = O if getattr(self, "ln0", None) is None else self.ln0(O)
        O = O + F.relu(self.fc_o(O))
        O = O if getattr(self, "ln1", None) is None else self.ln1(O)
        return O


class SAB(nn.Module):
    def __init__(self, dim_in, dim_out, num_heads, ln=False):
        super(SAB, self).__init__()
        self.mab = MAB(dim_in, dim_in, dim_out, num_heads, ln=ln)

    def forward(self, X):
        return self.mab(X, X)


class ISAB(nn.Module):
    def __init__(self, dim_in, dim_out, num_heads, num_inds, ln=False):
        super(ISAB, self).__init__()
        self.I = nn.Parameter(torch.Tensor(1, num_inds, dim_out))
        nn.init.xavier_uniform_(self.I)
        self.mab0 = MAB(dim_out, dim_in, dim_out, num_heads, ln=ln)
        self.mab1 = MAB(dim_in, dim_out, dim_out, num_heads, ln=ln)

    def forward(self, X):
        H = self.mab0(self.I.repeat(X.size(0), 1, 1), X)
        return self.mab1(X, H)


class PMA(nn.Module):
    def __init__(self, dim, num_heads, num_seeds, ln=False):
        super(PMA, self).__init__()
        self.S = nn.Parameter(torch.Tensor(1, num_seeds, dim))
        nn.init.xavier_uniform_(self.S)
        self.mab = MAB(dim, dim, dim, num_heads, ln=ln)

    def forward(self, X):
        return self.mab(self.S.repeat(X.size(0), 1, 1), X)


class SetTransformer(nn.Module):
    def __init__(self, dim_input, num_outputs, dim_output, num_inds=4, dim_hidden=16, num_heads=2, ln=True):
        super(SetTransformer, self).__init__()
        self.enc = nn.Sequential(ISAB(dim_input, dim_hidden, num_heads, num_inds, ln=ln),
                                 ISAB(dim_hidden, dim_hidden, num_heads, num_inds, ln=ln))
        self.dec = nn.Sequential(PMA(dim_hidden, num_heads, num_outputs, ln=ln),
                                 SAB(dim_hidden, dim_hidden, num_heads, ln=ln),
                                 nn.Linear(dim_hidden, dim_output))

    def forward(self, X):
        return self.dec(self.enc(X))


class DeepSet(nn.Module):
    def __init__(self, dim_input, dim_output, dim_hidden=16, pool="sum"):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(dim_input, dim_hidden), nn.ReLU(), nn.Linear(dim_hidden, dim_hidden))
        self.dec = nn.Sequential(nn.ReLU(), nn.Linear(dim_hidden, dim_output))
        self.pool = pool

    def forward(self, X):
        h = self.enc(X)
        h = h.sum(-2) if self.pool == "sum" else h.max(-2)[0]
        return self.dec(h)


def mog_log_likelihood(X, pi, mu, sigma):
    # X: B x N x D, pi: B x K, mu/sigma: B x K x D
    ll = -0.5 * (((X.unsqueeze(2) - mu.unsqueeze(1)) / sigma.unsqueeze(1)) ** 2).sum(-1) \
        - sigma.log().sum(-1).unsqueeze(1) - 0.5 * X.size(-1) * math.log(2 * math.pi)
    return torch.logsumexp(ll + pi.log_softmax(-1).unsqueeze(1), dim=2).mean()


X = torch.randn(3, 10, 2)
perm = torch.randperm(10)
model = SetTransformer(2, 1, 1)
print("permutation invariant:", torch.allclose(model(X), model(X[:, perm]), atol=1e-5),
      "equivariant ISAB:", torch.allclose(model.enc(X)[:, perm], model.enc(X[:, perm]), atol=1e-5))
print("heads split:", tuple(torch.cat(torch.randn(3, 5, 16).split(8, 2), 0).shape))

g = torch.Generator().manual_seed(1)
train_X = torch.rand(32, 8, 1, generator=g) * 10
train_y = train_X.max(1)[0]
for name, net in (("set_transformer", SetTransformer(1, 1, 1)), ("deepsets_sum", DeepSet(1, 1)),
                  ("deepsets_max", DeepSet(1, 1, pool="max"))):
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    for it in range(6):
        pred = net(train_X).reshape(-1, 1)
        loss = F.l1_loss(pred, train_y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"{name} max-of-set l1 {loss.item():.5f}")

K = 2
clusterer = SetTransformer(2, K, 1 + 2 * 2)
opt = torch.optim.Adam(clusterer.parameters(), lr=1e-3)
centres = torch.tensor([[-2.0, 0.0], [2.0, 1.0]])
for it in range(5):
    idx = torch.randint(0, K, (4, 12), generator=g)
    pts = centres[idx] + 0.3 * torch.randn(4, 12, 2, generator=g)
    out = clusterer(pts)
    pi, mu, sigma = out[..., 0], out[..., 1:3], F.softplus(out[..., 3:])
    ll = mog_log_likelihood(pts, pi, mu, sigma)
    opt.zero_grad()
    (-ll).backward()
    opt.step()
    print(f"clustering it {it} log-likelihood {ll.item():.5f}")
