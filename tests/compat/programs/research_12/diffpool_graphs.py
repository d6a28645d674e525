"""Hierarchical graph classification the way RexYing/diffpool and PyG's
``dense_diff_pool`` example write it, on dense padded batches: random graphs of two kinds
(rings with chords, and two cliques joined by a bridge) padded to a fixed size with node
masks, a ``collate_fn`` stacking adjacency, features and masks, a dense GraphSAGE layer
(``adj @ x / deg`` with ``clamp(min=1)``, ``F.normalize``) with a per-node norm, DiffPool's assignment
``softmax``, ``S^T X``, ``S^T A S``, the link-prediction loss ``||A - S S^T||_F / numel``
and the entropy regulariser, a ``ModuleDict`` of readouts, ``StepLR`` and
``ReduceLROnPlateau`` together, and a ``random_split`` train/test split."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, random_split

torch.manual_seed(12345)
EPS = 1e-15
MAX_NODES = 12


def ring_with_chords(n, g):
    a = torch.zeros(n, n)
    idx = torch.arange(n)
    a[idx, (idx + 1) % n] = 1
    for _ in range(2):
        i, j = torch.randint(0, n, (2,), generator=g).tolist()
        if i != j:
            a[i, j] = 1
    return ((a + a.t()) > 0).float()


def two_cliques(n, g):
    h = n // 2
    a = torch.zeros(n, n)
    a[:h, :h] = 1
    a[h:, h:] = 1
    a[h - 1, h] = 1
    a.fill_diagonal_(0)
    return ((a + a.t()) > 0).float()


class SyntheticGraphs(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.items = []
        for k in range(n):
            size = int(torch.randint(6, MAX_NODES + 1, (1,), generator=g))
            label = k % 2
            adj = ring_with_chords(size, g) if label == 0 else two_cliques(size, g)
            deg = adj.sum(1, keepdim=True)
            x = torch.cat([deg / MAX_NODES, torch.randn(size, 3, generator=g) * 0.1], 1)
            self.items.append((adj, x, label))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def pad_collate(batch):
    B = len(batch)
    adj = torch.zeros(B, MAX_NODES, MAX_NODES)
    x = torch.zeros(B, MAX_NODES, batch[0][1].shape[1])
    mask = torch.zeros(B, MAX_NODES, dtype=torch.bool)
    for b, (a, f, _) in enumerate(batch):
        n = a.shape[0]
        adj[b, :n, :n], x[b, :n], mask[b, :n] = a, f, True
    return adj, x, mask, torch.tensor([y for *_, y in batch])


class DenseSAGEConv(nn.Module):
    def __init__(self, in_channels, out_channels, normalize=False):
        super().__init__()
        self.normalize = normalize
        self.lin_rel = nn.Linear(in_channels, out_channels, bias=False)
        self.lin_root = nn.Linear(in_channels, out_channels)

    def forward(self, x, adj, mask=None):
        out = torch.matmul(adj, x)
        out = out / adj.sum(dim=-1, keepdim=True).clamp(min=1)
        out = self.lin_rel(out) + self.lin_root(x)
        if self.normalize:
            out = F.normalize(out, p=2.0, dim=-1)
        if mask is not None:
            out = out * mask.view(x.size(0), x.size(1), 1).to(x.dtype)
        return out


def dense_diff_pool(x, adj, s, mask=None, normalize=True):
    batch_size, num_nodes, _ = x.size()
    s = torch.softmax(s, dim=-1)
    if mask is not None:
        mask = mask.view(batch_size, num_nodes, 1).to(x.dtype)
        x, s = x * mask, s * mask
    out = torch.matmul(s.transpose(1, 2), x)
    out_adj = torch.matmul(torch.matmul(s.transpose(1, 2), adj), s)
    link_loss = adj - torch.matmul(s, s.transpose(1, 2))
    link_loss = torch.norm(link_loss, p=2)
    if normalize is True:
        link_loss = link_loss / adj.numel()
    ent_loss = (-s * torch.log(s + EPS)).sum(dim=-1).mean()
    return out, out_adj, link_loss, ent_loss


class GNN(nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, lin=True):
        super().__init__()
        self.conv1 = DenseSAGEConv(in_channels, hidden_channels)
        # (the example's BatchNorm1d here makes the bias before it a parameter whose gradient
        # is rounding noise, which Adam turns into full steps: a LayerNorm per node instead)
        self.bn1 = nn.LayerNorm(hidden_channels)
        self.conv2 = DenseSAGEConv(hidden_channels, out_channels)
        self.lin = nn.Linear(hidden_channels + out_channels, out_channels) if lin else None

    def bn(self, i, x):
        batch_size, num_nodes, num_channels = x.size()
        x = x.view(-1, num_channels)
        x = getattr(self, f"bn{i}")(x)
        return x.view(batch_size, num_nodes, num_channels)

    def forward(self, x, adj, mask=None):
        x1 = self.bn(1, self.conv1(x, adj, mask).relu())
        x2 = self.conv2(x1, adj, mask).relu()
        x = torch.cat([x1, x2], dim=-1)
        return self.lin(x).relu() if self.lin is not None else x


class DiffPoolNet(nn.Module):
    def __init__(self, in_ch=4, hidden=16, classes=2):
        super().__init__()
        num_nodes = math.ceil(0.5 * MAX_NODES)
        self.gnn1_pool = GNN(in_ch, hidden, num_nodes)
        self.gnn1_embed = GNN(in_ch, hidden, hidden, lin=False)
        num_nodes = math.ceil(0.5 * num_nodes)
        self.gnn2_pool = GNN(2 * hidden, hidden, num_nodes)
        self.gnn2_embed = GNN(2 * hidden, hidden, hidden, lin=False)
        self.gnn3_embed = GNN(2 * hidden, hidden, hidden, lin=False)
        self.readout = nn.ModuleDict({"mean": nn.Identity(), "proj": nn.Linear(2 * hidden, hidden)})
        self.lin2 = nn.Linear(hidden, classes)

    def forward(self, x, adj, mask=None):
        s = self.gnn1_pool(x, adj, mask)
        x = self.gnn1_embed(x, adj, mask)
        x, adj, l1, e1 = dense_diff_pool(x, adj, s, mask)
        s = self.gnn2_pool(x, adj)
        x = self.gnn2_embed(x, adj)
        x, adj, l2, e2 = dense_diff_pool(x, adj, s)
        x = self.gnn3_embed(x, adj)
        x = self.readout["mean"](x.mean(dim=1))
        x = F.relu(self.readout["proj"](x))
        return F.log_softmax(self.lin2(x), dim=-1), l1 + l2, e1 + e2


dataset = SyntheticGraphs(48, seed=0)
train_set, test_set = random_split(dataset, [36, 12], generator=torch.Generator().manual_seed(42))
print("split", len(train_set), len(test_set), "first train indices", train_set.indices[:6])
train_loader = DataLoader(train_set, batch_size=12, shuffle=True, collate_fn=pad_collate,
                          generator=torch.Generator().manual_seed(0))
test_loader = DataLoader(test_set, batch_size=12, collate_fn=pad_collate)
model = DiffPoolNet()
optimizer = torch.optim.Adam(model.parameters(), lr=0.005)
step_lr = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.7)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=1)


@torch.no_grad()
def evaluate(loader):
    model.eval()
    correct = loss = 0.0
    for adj, x, mask, y in loader:
        out, _, _ = model(x, adj, mask)
        loss += F.nll_loss(out, y, reduction="sum").item()
        correct += int(out.max(dim=1)[1].eq(y).sum())
    model.train()
    return loss / len(loader.dataset), correct / len(loader.dataset)


for epoch in range(1, 9):
    loss_all = 0.0
    for adj, x, mask, y in train_loader:
        optimizer.zero_grad()
        output, link_loss, ent_loss = model(x, adj, mask)
        loss = F.nll_loss(output, y.view(-1)) + link_loss + ent_loss
        loss.backward()
        loss_all += y.size(0) * float(loss)
        optimizer.step()
    val_loss, test_acc = evaluate(test_loader)
    step_lr.step()
    plateau.step(val_loss)
    print(f"Epoch: {epoch:03d}, Train Loss: {loss_all / len(train_set):.4f}, Val Loss: {val_loss:.4f}, "
          f"Test Acc: {test_acc:.4f}, lr: {optimizer.param_groups[0]['lr']:.6f}")
adj, x, mask, y = next(iter(test_loader))
with torch.no_grad():
    s = torch.softmax(model.gnn1_pool(x, adj, mask), -1) * mask[..., None]
print("assignment rows sum", s.sum(-1)[0].tolist())
print("cluster sizes", s.sum(1)[0].round(decimals=3).tolist())
