"""Two research-code staples: a graph convolutional network over a normalised sparse
adjacency (torch.sparse_coo_tensor, coalesce, torch.sparse.sum for the degrees,
torch.sparse.mm in each layer, a masked semi-supervised loss), and MAML on sine-wave
regression with torch.func.functional_call, the inner loop's torch.autograd.grad with
create_graph=True, and first-order MAML beside it."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

torch.manual_seed(0)

# ---- GCN (Kipf & Welling) on a random two-community graph ------------------------------
N, FEAT, CLASSES = 40, 8, 2
labels = (torch.arange(N) >= N // 2).long()
same = labels[:, None] == labels[None, :]
prob = torch.where(same, torch.tensor(0.25), torch.tensor(0.02))
upper = torch.triu(torch.rand(N, N) < prob, diagonal=1)
edges = (upper | upper.t()).nonzero().t()
features = torch.randn(N, FEAT) + labels[:, None].float()


def normalized_adjacency(edge_index, n):
    loops = torch.arange(n).repeat(2, 1)
    idx = torch.cat([edge_index, loops], 1)
    adj = torch.sparse_coo_tensor(idx, torch.ones(idx.size(1)), (n, n)).coalesce()
    deg = torch.sparse.sum(adj, dim=1).to_dense()
    d_inv_sqrt = deg.pow(-0.5)
    d_inv_sqrt[torch.isinf(d_inv_sqrt)] = 0.0
    i = adj.indices()
    vals = d_inv_sqrt[i[0]] * adj.values() * d_inv_sqrt[i[1]]
    return torch.sparse_coo_tensor(i, vals, (n, n))


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.FloatTensor(in_features, out_features))
        self.bias = nn.Parameter(torch.FloatTensor(out_features)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.sparse.mm(adj, support)
        return output + self.bias if self.bias is not None else output


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        return F.log_softmax(self.gc2(x, adj), dim=1)


adj = normalized_adjacency(edges, N)
print("adj", adj.is_sparse, adj._nnz(), f"{torch.sparse.sum(adj).item():.4f}")
idx_train = torch.arange(0, N, 4)
idx_test = torch.tensor([i for i in range(N) if i % 4])
model = GCN(FEAT, 16, CLASSES, 0.5)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
for epoch in range(30):
    model.train()
    optimizer.zero_grad()
    output = model(features, adj)
    loss_train = F.nll_loss(output[idx_train], labels[idx_train])
    loss_train.backward()
    optimizer.step()
    if epoch % 10 == 9:
        model.eval()
        output = model(features, adj)
        acc = (output[idx_test].max(1)[1] == labels[idx_test]).double().mean()
        print(f"Epoch: {epoch + 1:04d} loss_train: {loss_train.item():.4f} "
              f"acc_test: {acc.item():.4f}")
print("sparse grad", model.gc1.weight.grad.abs().sum().item() > 0)
dense = adj.to_dense()
print("dense==sparse", torch.allclose(dense @ features, torch.sparse.mm(adj, features),
                                      atol=1e-6))


# ---- MAML on sine waves ------------------------------------------------------------------
def sine_task():
    amp = torch.empty(1).uniform_(0.1, 5.0)
    phase = torch.empty(1).uniform_(0, math.pi)

    def sample(k):
        x = torch.empty(k, 1).uniform_(-5.0, 5.0)
        return x, amp * torch.sin(x - phase)
    return sample


net = nn.Sequential(nn.Linear(1, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                    nn.Linear(32, 1))
meta_opt = torch.optim.Adam(net.parameters(), lr=1e-3)
inner_lr, K = 0.01, 10


def adapt(params, x, y, steps, first_order):
    for _ in range(steps):
        loss = F.mse_loss(functional_call(net, params, (x,)), y)
        grads = torch.autograd.grad(loss, list(params.values()),
                                    create_graph=not first_order)
        params = {n: p - inner_lr * g for (n, p), g in zip(params.items(), grads)}
    return params


for first_order in (False, True):
    for it in range(4):
        meta_opt.zero_grad()
        meta_loss = 0.0
        for _ in range(3):
            sample = sine_task()
            xs, ys = sample(K)
            xq, yq = sample(K)
            fast = adapt(dict(net.named_parameters()), xs, ys, 2, first_order)
            meta_loss = meta_loss + F.mse_loss(functional_call(net, fast, (xq,)), yq)
        meta_loss = meta_loss / 3
        meta_loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(net.parameters(), 10.0)
        meta_opt.step()
        print(f"{'fo' if first_order else 'so'}-maml {it} meta-loss {meta_loss.item():.4f} "
              f"grad {gnorm.item():.4f}")
