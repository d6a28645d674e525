"""Graph networks on PyTorch's sparse layouts the way GCN/GraphSAGE/GAT tutorials without
a graph library write them: an adjacency built with ``torch.sparse_coo_tensor`` and
``coalesce``, symmetric normalisation with ``torch.sparse.sum`` and element-wise products,
conversion to CSR (``to_sparse_csr``, ``crow_indices``/``col_indices``) and products with
``torch.sparse.mm`` and ``@`` that train the dense weights; a GraphSAGE mean aggregator from
a row-normalised sparse matrix, edge attention with ``torch.sparse.softmax`` on a COO
tensor of scores, ``torch.sparse.addmm``, and an early-stopping loop on validation
accuracy with the best ``state_dict`` deep-copied."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(42)

# two communities joined by a few edges
n, n_feat, n_cls = 24, 6, 2
labels = torch.tensor([0] * 12 + [1] * 12)
src, dst = [], []
g = torch.Generator().manual_seed(1)
for i in range(n):
    for j in range(i + 1, n):
        same = labels[i] == labels[j]
        if torch.rand(1, generator=g).item() < (0.35 if same else 0.03):
            src += [i, j]
            dst += [j, i]
edge_index = torch.tensor([src, dst])
features = torch.randn(n, n_feat) + labels.unsqueeze(1).float() * 0.8
print("edges", edge_index.shape[1], "degree max", torch.bincount(edge_index[0]).max().item())

A = torch.sparse_coo_tensor(edge_index, torch.ones(edge_index.shape[1]), (n, n))
A = (A + torch.sparse_coo_tensor(torch.arange(n).repeat(2, 1), torch.ones(n), (n, n)))
A = A.coalesce()
print(A.is_coalesced(), A._nnz(), A.layout, A.dtype)
deg = torch.sparse.sum(A, dim=1).to_dense()
d_inv_sqrt = deg.pow(-0.5)
d_inv_sqrt[torch.isinf(d_inv_sqrt)] = 0.0
idx = A.indices()
vals = d_inv_sqrt[idx[0]] * A.values() * d_inv_sqrt[idx[1]]
A_hat = torch.sparse_coo_tensor(idx, vals, (n, n)).coalesce()
A_csr = A_hat.to_sparse_csr()
print("csr", A_csr.layout, A_csr.crow_indices()[:6].tolist(), A_csr.col_indices()[:6].tolist())
print("row sums", [round(v, 5) for v in torch.sparse.sum(A_hat, dim=1).to_dense()[:5]
                   .tolist()])
dense_check = (A_hat.to_dense() @ features - torch.sparse.mm(A_csr, features)).abs().max()
print("csr mm matches dense:", dense_check.item() < 1e-5)


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features))
        self.bias = nn.Parameter(torch.empty(out_features)) if bias else None
        nn.init.xavier_uniform_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x, adj):
        support = torch.mm(x, self.weight)
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


perm = torch.randperm(n)
idx_train, idx_val, idx_test = perm[:8], perm[8:14], perm[14:]


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    return preds.eq(labels).double().sum() / len(labels)


for name, adj in (("coo", A_hat), ("csr", A_csr)):
    torch.manual_seed(0)
    model = GCN(n_feat, 8, n_cls, dropout=0.3)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
    best_val, best_state, bad_epochs = -1.0, None, 0
    for epoch in range(30):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            output = model(features, adj)
        acc_val = accuracy(output[idx_val], labels[idx_val]).item()
        if acc_val > best_val:
            best_val, best_state, bad_epochs = acc_val, copy.deepcopy(model.state_dict()), 0
        else:
            bad_epochs += 1
        if bad_epochs >= 8:
            break
    model.load_state_dict(best_state)
    model.eval()
    output = model(features, adj)
    print(f"{name}: stopped at epoch {epoch} loss_train {loss_train.item():.6f} best val "
          f"{best_val:.4f} test {accuracy(output[idx_test], labels[idx_test]).item():.4f}")
    print(f"  grad of gc1.weight {model.gc1.weight.grad.abs().sum().item():.6f}")


# GraphSAGE-mean through a row-normalised sparse adjacency (no self loops)
class SAGEConv(nn.Module):
    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.lin_l = nn.Linear(in_dim, out_dim)
        self.lin_r = nn.Linear(in_dim, out_dim, bias=False)

    def forward(self, x, mean_adj):
        return self.lin_l(torch.sparse.mm(mean_adj, x)) + self.lin_r(x)


A_nb = torch.sparse_coo_tensor(edge_index, torch.ones(edge_index.shape[1]), (n, n)).coalesce()
row_deg = torch.sparse.sum(A_nb, dim=1).to_dense().clamp(min=1)
mean_adj = torch.sparse_coo_tensor(A_nb.indices(), A_nb.values() / row_deg[A_nb.indices()[0]],
                                   (n, n)).to_sparse_csr()
sage = SAGEConv(n_feat, n_cls)
opt = torch.optim.SGD(sage.parameters(), lr=0.1)
for _ in range(10):
    loss = F.cross_entropy(sage(features, mean_adj)[idx_train], labels[idx_train])
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"sage loss {loss.item():.6f}")

# edge attention: sparse softmax over each node's neighbours
att_src = nn.Parameter(torch.randn(n_feat) * 0.1)
att_dst = nn.Parameter(torch.randn(n_feat) * 0.1)
idx = A.indices()
scores = F.leaky_relu((features[idx[0]] * att_src).sum(-1)
                      + (features[idx[1]] * att_dst).sum(-1), 0.2)
S = torch.sparse_coo_tensor(idx, scores, (n, n))
alpha = torch.sparse.softmax(S, dim=1)
out = torch.sparse.mm(alpha, features)
out.sum().backward()
print("attention rows sum", [round(v, 5) for v in torch.sparse.sum(alpha, 1).to_dense()[:4]
                             .tolist()], f"out {out.abs().sum().item():.5f}")
print(f"att grads {att_src.grad.abs().sum().item():.6f} {att_dst.grad.abs().sum().item():.6f}")
bias = torch.ones(n, n_feat)
res = torch.sparse.addmm(bias, A_hat, features, beta=0.5, alpha=2.0)
print(f"addmm {res.sum().item():.5f}", res.shape, res.layout)
