"""Graph networks written the way dependency-free GNN repositories write message passing:
an edge_index of (source, target) rows, messages gathered with index_select, aggregated with
index_add_ and Tensor.scatter_reduce (sum, mean, amax), a segment softmax for GAT attention,
GIN with a learnable epsilon, degree normalisation from torch.bincount, batched graphs
pooled with scatter, and a node-classification loop with a boolean train mask."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def scatter(src, index, dim_size, reduce="sum"):
    out_shape = (dim_size,) + tuple(src.shape[1:])
    idx = index.view(-1, *([1] * (src.dim() - 1))).expand_as(src)
    if reduce == "sum":
        return torch.zeros(out_shape, dtype=src.dtype).scatter_add_(0, idx, src)
    if reduce == "mean":
        return torch.zeros(out_shape, dtype=src.dtype).scatter_reduce(
            0, idx, src, reduce="mean", include_self=False)
    if reduce == "max":
        return torch.full(out_shape, float("-inf"), dtype=src.dtype).scatter_reduce(
            0, idx, src, reduce="amax", include_self=True)
    raise ValueError(reduce)


def segment_softmax(scores, index, num_nodes):
    seg_max = scatter(scores, index, num_nodes, "max")
    scores = (scores - seg_max.index_select(0, index)).exp()
    denom = scatter(scores, index, num_nodes, "sum")
    return scores / (denom.index_select(0, index) + 1e-16)


class GCNLayer(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out, bias=False)
        self.bias = nn.Parameter(torch.zeros(d_out))

    def forward(self, x, edge_index):
        n = x.size(0)
        loops = torch.arange(n).repeat(2, 1)
        src, dst = torch.cat([edge_index, loops], 1)
        deg = torch.bincount(dst, minlength=n).float()
        norm = deg.pow(-0.5)[src] * deg.pow(-0.5)[dst]
        h = self.lin(x)
        out = torch.zeros_like(h).index_add_(0, dst, h[src] * norm[:, None])
        return out + self.bias


class GATLayer(nn.Module):
    def __init__(self, d_in, d_out, heads=2):
        super().__init__()
        self.heads, self.d_out = heads, d_out
        self.lin = nn.Linear(d_in, heads * d_out, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, d_out))
        self.att_dst = nn.Parameter(torch.empty(1, heads, d_out))
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)

    def forward(self, x, edge_index):
        src, dst = edge_index
        h = self.lin(x).view(-1, self.heads, self.d_out)
        a_src = (h * self.att_src).sum(-1)
        a_dst = (h * self.att_dst).sum(-1)
        e = F.leaky_relu(a_src[src] + a_dst[dst], 0.2)
        alpha = segment_softmax(e, dst, x.size(0))
        alpha = F.dropout(alpha, p=0.1, training=self.training)
        out = scatter(h[src] * alpha.unsqueeze(-1), dst, x.size(0), "sum")
        return out.flatten(1)


class GINLayer(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.eps = nn.Parameter(torch.zeros(1))
        self.mlp = nn.Sequential(nn.Linear(d_in, d_out), nn.BatchNorm1d(d_out), nn.ReLU(),
                                 nn.Linear(d_out, d_out))

    def forward(self, x, edge_index):
        src, dst = edge_index
        agg = x.new_zeros(x.shape).index_add_(0, dst, x.index_select(0, src))
        return self.mlp((1 + self.eps) * x + agg)


def random_graph(n, p):
    adj = torch.rand(n, n) < p
    adj = torch.triu(adj, diagonal=1)
    adj = adj | adj.t()
    return adj.nonzero().t().contiguous()


# node classification on a planted-partition graph
N, C = 60, 3
labels = torch.arange(N) % C
same = labels[:, None] == labels[None, :]
probs = torch.where(same, torch.tensor(0.25), torch.tensor(0.02))
adj = torch.triu(torch.rand(N, N) < probs, 1)
edge_index = (adj | adj.t()).nonzero().t()
x = F.one_hot(labels, C).float() * 0.5 + torch.randn(N, C)
train_mask = torch.zeros(N, dtype=torch.bool)
train_mask[torch.randperm(N)[:20]] = True


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = GCNLayer(C, 16)
        self.conv2 = GATLayer(16, 8, heads=2)
        self.out = nn.Linear(16, C)

    def forward(self, x, edge_index):
        x = F.relu(self.conv1(x, edge_index))
        x = F.dropout(x, p=0.3, training=self.training)
        x = F.elu(self.conv2(x, edge_index))
        return F.log_softmax(self.out(x), dim=1)


model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=0.02, weight_decay=5e-4)
for epoch in range(30):
    model.train()
    optimizer.zero_grad()
    out = model(x, edge_index)
    loss = F.nll_loss(out[train_mask], labels[train_mask])
    loss.backward()
    optimizer.step()
    if epoch % 10 == 9:
        model.eval()
        pred = model(x, edge_index).argmax(dim=1)
        acc = (pred[~train_mask] == labels[~train_mask]).sum().item() / int((~train_mask).sum())
        print(f"Epoch: {epoch:03d}, Loss: {loss.item():.5f}, Test: {acc:.4f}")

# graph classification: a mini-batch of graphs concatenated with a batch vector
graphs = [random_graph(n, 0.3) for n in (5, 7, 6, 8)]
xs, eis, batch, offset = [], [], [], 0
for g, (n, ei) in enumerate(zip((5, 7, 6, 8), graphs)):
    xs.append(torch.randn(n, 4))
    eis.append(ei + offset)
    batch.append(torch.full((n,), g, dtype=torch.long))
    offset += n
bx, bei, bvec = torch.cat(xs), torch.cat(eis, 1), torch.cat(batch)
y = torch.tensor([0, 1, 0, 1])
gin1, gin2 = GINLayer(4, 16), GINLayer(16, 16)
head = nn.Linear(32, 2)
params = list(gin1.parameters()) + list(gin2.parameters()) + list(head.parameters())
opt = torch.optim.AdamW(params, lr=0.01)
for step in range(15):
    h = F.relu(gin1(bx, bei))
    h = gin2(h, bei)
    pooled = torch.cat([scatter(h, bvec, 4, "mean"), scatter(h, bvec, 4, "max")], -1)
    loss = F.cross_entropy(head(pooled), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("gin", f"{loss.item():.6f}", f"{gin1.eps.item():.6f}", f"{gin2.eps.item():.6f}")
deg = torch.bincount(bei[1], minlength=bx.size(0))
print("degrees", deg.tolist(), "edges", bei.size(1))
