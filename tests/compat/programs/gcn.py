"""Graph convolutional network on a synthetic two-community graph, written the way
pygcn/kipf and PyG-free tutorials write it: a sparse normalized adjacency with
torch.sparse.mm, message passing with index_add_ and scatter_reduce."""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.nn.parameter import Parameter


def make_graph(n_per_class=20, p_in=0.3, p_out=0.02, n_feat=8, seed=0):
    rng = np.random.RandomState(seed)
    n = 2 * n_per_class
    labels = np.array([0] * n_per_class + [1] * n_per_class)
    edges = []
    for i in range(n):
        for j in range(i + 1, n):
            p = p_in if labels[i] == labels[j] else p_out
            if rng.rand() < p:
                edges.append((i, j))
                edges.append((j, i))
    edges = np.array(edges).T
    feats = rng.randn(n, n_feat).astype(np.float32) + labels[:, None] * 0.5
    return torch.from_numpy(edges).long(), torch.FloatTensor(feats), torch.LongTensor(labels)


def normalize_adj(edge_index, n):
    loops = torch.arange(n).unsqueeze(0).repeat(2, 1)
    edge_index = torch.cat([edge_index, loops], dim=1)
    values = torch.ones(edge_index.size(1))
    deg = torch.zeros(n).index_add_(0, edge_index[0], values)
    d_inv_sqrt = deg.pow(-0.5)
    d_inv_sqrt[torch.isinf(d_inv_sqrt)] = 0.
    values = d_inv_sqrt[edge_index[0]] * values * d_inv_sqrt[edge_index[1]]
    return torch.sparse_coo_tensor(edge_index, values, (n, n)).coalesce()


class GraphConvolution(nn.Module):
    def __init__(self, in_features, out_features, bias=True):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(torch.FloatTensor(in_features, out_features))
        if bias:
            self.bias = Parameter(torch.FloatTensor(out_features))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / (self.weight.size(1) ** 0.5)
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.sparse.mm(adj, support)
        if self.bias is not None:
            return output + self.bias
        return output

    def __repr__(self):
        return self.__class__.__name__ + ' (' + str(self.in_features) + ' -> ' \
            + str(self.out_features) + ')'


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super(GCN, self).__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


class MeanAggregator(nn.Module):
    """A message-passing layer: mean and max of the neighbours, by scatter."""

    def __init__(self, nin, nout):
        super().__init__()
        self.lin = nn.Linear(2 * nin, nout)

    def forward(self, x, edge_index):
        src, dst = edge_index
        n = x.size(0)
        mean = torch.zeros_like(x).index_add_(0, dst, x[src])
        count = torch.zeros(n).index_add_(0, dst, torch.ones(dst.numel())).clamp(min=1)
        mean = mean / count.unsqueeze(-1)
        mx = torch.zeros_like(x).scatter_reduce(0, dst.unsqueeze(-1).expand(-1, x.size(1)), x[src],
                                                reduce='amax', include_self=False)
        return self.lin(torch.cat([mean, mx], dim=-1))


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    correct = correct.sum()
    return correct / len(labels)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--seed', type=int, default=42)
    parser.add_argument('--epochs', type=int, default=60)
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--weight_decay', type=float, default=5e-4)
    parser.add_argument('--hidden', type=int, default=16)
    args = parser.parse_args()
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    edge_index, features, labels = make_graph()
    n = features.shape[0]
    adj = normalize_adj(edge_index, n)
    print('adj', adj.shape, adj.layout, adj.is_coalesced(), adj._nnz() == edge_index.size(1) + n)
    dense = adj.to_dense()
    print('symmetric:', torch.allclose(dense, dense.t()), 'row sums positive:',
          bool((dense.sum(1) > 0).all()))
    idx_train = torch.LongTensor(list(range(0, 10)) + list(range(20, 30)))
    idx_test = torch.LongTensor(list(range(10, 20)) + list(range(30, 40)))

    model = GCN(nfeat=features.shape[1], nhid=args.hidden, nclass=labels.max().item() + 1,
                dropout=0.5)
    print(model)
    optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    t_total = time.time()
    first = None
    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        output = model(features, adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        acc_train = accuracy(output[idx_train], labels[idx_train])
        loss_train.backward()
        optimizer.step()
        if first is None:
            first = loss_train.item()
    model.eval()
    output = model(features, adj)
    loss_test = F.nll_loss(output[idx_test], labels[idx_test])
    acc_test = accuracy(output[idx_test], labels[idx_test])
    print('train loss decreased:', loss_train.item() < first, acc_train.dtype)
    print('test accuracy above 0.6:', acc_test.item() > 0.6)
    assert time.time() - t_total >= 0

    agg = MeanAggregator(features.shape[1], 4)
    out = agg(features, edge_index)
    out.sum().backward()
    print('aggregator', out.shape, agg.lin.weight.grad.shape)
    x = torch.tensor([[1., 2.], [3., 4.], [5., 6.]])
    ei = torch.tensor([[0, 1, 2, 0], [1, 2, 0, 2]])
    src, dst = ei
    print(torch.zeros(3, 2).index_add_(0, dst, x[src]).tolist())
    print(torch.zeros(3, 2).scatter_reduce(0, dst.unsqueeze(-1).expand(-1, 2), x[src],
                                           reduce='mean', include_self=False).tolist())
    print(torch.zeros(3).scatter_add(0, dst, torch.ones(4)).tolist(),
          torch.bincount(dst, minlength=4).tolist())
    sp = torch.sparse_coo_tensor(ei, torch.tensor([1., 2., 3., 4.]), (3, 3))
    print(torch.sparse.mm(sp, x).tolist(), torch.sparse.sum(sp).item())
    print(sp.coalesce().indices().tolist(), (sp @ x).shape)


if __name__ == '__main__':
    main()
