"""E(n)-equivariant and continuous-filter graph networks the way vgsatorras/egnn and the
SchNet re-implementations write them, on small random molecules: a fully connected edge
list built with ``torch.combinations``/``meshgrid``, ``unsorted_segment_sum`` through
``new_full(...).scatter_add_`` and its mean, coordinate updates with ``tanh`` scaling,
Gaussian radial basis expansion with a cosine cutoff, ``torch.cdist`` pair distances,
batching several graphs by offsetting node indices, ``global_add_pool`` by ``index_add_``;
the energy's negative gradient as forces (``autograd.grad`` with ``create_graph`` and a
force-matching loss), and rotation/translation/permutation equivariance checked with an
orthogonal matrix from ``torch.linalg.qr``."""
import math

import torch
from torch import nn

torch.manual_seed(7)


def unsorted_segment_sum(data, segment_ids, num_segments):
    result_shape = (num_segments, data.size(1))
    result = data.new_full(result_shape, 0)
    segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
    result.scatter_add_(0, segment_ids, data)
    return result


def unsorted_segment_mean(data, segment_ids, num_segments):
    result_shape = (num_segments, data.size(1))
    segment_ids = segment_ids.unsqueeze(-1).expand(-1, data.size(1))
    result = data.new_full(result_shape, 0)
    count = data.new_full(result_shape, 0)
    result.scatter_add_(0, segment_ids, data)
    count.scatter_add_(0, segment_ids, torch.ones_like(data))
    return result / count.clamp(min=1)


class E_GCL(nn.Module):
    def __init__(self, input_nf, output_nf, hidden_nf, edges_in_d=0, act_fn=nn.SiLU(),
                 residual=True, attention=False, normalize=False, coords_agg="mean",
                 tanh=False):
        super(E_GCL, self).__init__()
        input_edge = input_nf * 2
        self.residual, self.attention, self.normalize = residual, attention, normalize
        self.coords_agg, self.tanh = coords_agg, tanh
        self.epsilon = 1e-8
        edge_coords_nf = 1
        self.edge_mlp = nn.Sequential(
            nn.Linear(input_edge + edge_coords_nf + edges_in_d, hidden_nf), act_fn,
            nn.Linear(hidden_nf, hidden_nf), act_fn)
        self.node_mlp = nn.Sequential(
            nn.Linear(hidden_nf + input_nf, hidden_nf), act_fn, nn.Linear(hidden_nf, output_nf))
        layer = nn.Linear(hidden_nf, 1, bias=False)
        torch.nn.init.xavier_uniform_(layer.weight, gain=0.001)
        coord_mlp = [nn.Linear(hidden_nf, hidden_nf), act_fn, layer]
        if self.tanh:
            coord_mlp.append(nn.Tanh())
        self.coord_mlp = nn.Sequential(*coord_mlp)
        if self.attention:
            self.att_mlp = nn.Sequential(nn.Linear(hidden_nf, 1), nn.Sigmoid())

    def edge_model(self, source, target, radial, edge_attr):
        if edge_attr is None:
            out = torch.cat([source, target, radial], dim=1)
        else:
            out = torch.cat([source, target, radial, edge_attr], dim=1)
        out = self.edge_mlp(out)
        if self.attention:
            out = out * self.att_mlp(out)
        return out

    def node_model(self, x, edge_index, edge_attr, node_attr):
        row, col = edge_index
        agg = unsorted_segment_sum(edge_attr, row, num_segments=x.size(0))
        out = torch.cat([x, agg], dim=1)
        out = self.node_mlp(out)
        if self.residual:
            out = x + out
        return out, agg

    def coord_model(self, coord, edge_index, coord_diff, edge_feat):
        row, col = edge_index
        trans = coord_diff * self.coord_mlp(edge_feat)
        if self.coords_agg == "sum":
            agg = unsorted_segment_sum(trans, row, num_segments=coord.size(0))
        elif self.coords_agg == "mean":
            agg = unsorted_segment_mean(trans, row, num_segments=coord.size(0))
        else:
            raise Exception("Wrong coords_agg parameter" % self.coords_agg)
        return coord + agg

    def coord2radial(self, edge_index, coord):
        row, col = edge_index
        coord_diff = coord[row] - coord[col]
        radial = torch.sum(coord_diff ** 2, 1).unsqueeze(1)
        if self.normalize:
            norm = torch.sqrt(radial).detach() + self.epsilon
            coord_diff = coord_diff / norm
        return radial, coord_diff

    def forward(self, h, edge_index, coord, edge_attr=None, node_attr=None):
        row, col = edge_index
        radial, coord_diff = self.coord2radial(edge_index, coord)
        edge_feat = self.edge_model(h[row], h[col], radial, edge_attr)
        coord = self.coord_model(coord, edge_index, coord_diff, edge_feat)
        h, agg = self.node_model(h, edge_index, edge_feat, node_attr)
        return h, coord, edge_attr


class EGNN(nn.Module):
    def __init__(self, in_node_nf, hidden_nf, out_node_nf, in_edge_nf=0, n_layers=3,
                 attention=True, tanh=True):
        super(EGNN, self).__init__()
        self.n_layers = n_layers
        self.embedding_in = nn.Linear(in_node_nf, hidden_nf)
        self.embedding_out = nn.Linear(hidden_nf, out_node_nf)
        for i in range(0, n_layers):
            self.add_module("gcl_%d" % i, E_GCL(hidden_nf, hidden_nf, hidden_nf,
                                                edges_in_d=in_edge_nf, attention=attention,
                                                normalize=True, tanh=tanh))

    def forward(self, h, x, edges, edge_attr):
        h = self.embedding_in(h)
        for i in range(0, self.n_layers):
            h, x, _ = self._modules["gcl_%d" % i](h, edges, x, edge_attr=edge_attr)
        return self.embedding_out(h), x


def get_edges_batch(n_nodes, batch_size):
    rows, cols = torch.meshgrid(torch.arange(n_nodes), torch.arange(n_nodes), indexing="ij")
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    offsets = (torch.arange(batch_size) * n_nodes).repeat_interleave(rows.numel())
    edges = [rows.repeat(batch_size) + offsets, cols.repeat(batch_size) + offsets]
    edge_attr = torch.ones(len(edges[0]), 1)
    return edges, edge_attr


# --- EGNN equivariance ------------------------------------------------------------------------
batch_size, n_nodes, n_feat, x_dim = 3, 5, 4, 3
h = torch.ones(batch_size * n_nodes, n_feat)
x = torch.randn(batch_size * n_nodes, x_dim)
edges, edge_attr = get_edges_batch(n_nodes, batch_size)
egnn = EGNN(in_node_nf=n_feat, hidden_nf=16, out_node_nf=1, in_edge_nf=1)
h_out, x_out = egnn(h, x, edges, edge_attr)
print("edges:", len(edges[0]), "h:", tuple(h_out.shape), "x:", tuple(x_out.shape))
print("h_out:", h_out[:4, 0])

Q, R = torch.linalg.qr(torch.randn(3, 3))
Q = Q * torch.sign(torch.diagonal(R))
if torch.linalg.det(Q) < 0:
    Q[:, 0] = -Q[:, 0]
print(f"det(Q) {torch.linalg.det(Q).item():.5f}  QQ^T=I: "
      f"{torch.allclose(Q @ Q.T, torch.eye(3), atol=1e-6)}")
t = torch.randn(1, 3)
h_rot, x_rot = egnn(h, x @ Q.T + t, edges, edge_attr)
print("invariant h:", torch.allclose(h_rot, h_out, atol=1e-5),
      "equivariant x:", torch.allclose(x_rot, x_out @ Q.T + t, atol=1e-5))
perm = torch.randperm(n_nodes)
full_perm = torch.cat([perm + b * n_nodes for b in range(batch_size)])
h_p, x_p = egnn(h[full_perm], x[full_perm], edges, edge_attr)
print("permutation equivariant:", torch.allclose(h_p, h_out[full_perm], atol=1e-5))


# --- SchNet-style energy and forces ----------------------------------------------------------
class GaussianSmearing(nn.Module):
    def __init__(self, start=0.0, stop=5.0, num_gaussians=16):
        super().__init__()
        offset = torch.linspace(start, stop, num_gaussians)
        self.coeff = -0.5 / (offset[1] - offset[0]).item() ** 2
        self.register_buffer("offset", offset)

    def forward(self, dist):
        dist = dist.view(-1, 1) - self.offset.view(1, -1)
        return torch.exp(self.coeff * torch.pow(dist, 2))


class ShiftedSoftplus(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = torch.log(torch.tensor(2.0)).item()

    def forward(self, x):
        return nn.functional.softplus(x) - self.shift


class Interaction(nn.Module):
    def __init__(self, hidden, num_gaussians, cutoff):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(num_gaussians, hidden), ShiftedSoftplus(),
                                 nn.Linear(hidden, hidden))
        self.lin1 = nn.Linear(hidden, hidden, bias=False)
        self.lin2 = nn.Linear(hidden, hidden)
        self.act = ShiftedSoftplus()
        self.cutoff = cutoff

    def forward(self, h, edge_index, edge_weight, edge_attr):
        C = 0.5 * (torch.cos(edge_weight * math.pi / self.cutoff) + 1.0)
        C = C * (edge_weight < self.cutoff).float()
        W = self.mlp(edge_attr) * C.view(-1, 1)
        src, dst = edge_index
        msg = self.lin1(h)[src] * W
        agg = torch.zeros_like(h).index_add_(0, dst, msg)
        return h + self.lin2(self.act(agg))


class SchNet(nn.Module):
    def __init__(self, hidden=32, num_interactions=2, num_gaussians=16, cutoff=4.0):
        super().__init__()
        self.embedding = nn.Embedding(5, hidden, padding_idx=0)
        self.distance_expansion = GaussianSmearing(0.0, cutoff, num_gaussians)
        self.interactions = nn.ModuleList(Interaction(hidden, num_gaussians, cutoff)
                                          for _ in range(num_interactions))
        self.out = nn.Sequential(nn.Linear(hidden, hidden // 2), ShiftedSoftplus(),
                                 nn.Linear(hidden // 2, 1))
        self.cutoff = cutoff

    def forward(self, z, pos, batch):
        same = batch.unsqueeze(0) == batch.unsqueeze(1)
        dist = torch.cdist(pos, pos)
        adj = same & (dist < self.cutoff)
        adj.fill_diagonal_(False)
        edge_index = adj.nonzero().t()
        row, col = edge_index
        edge_weight = (pos[row] - pos[col]).norm(dim=-1)
        edge_attr = self.distance_expansion(edge_weight)
        h = self.embedding(z)
        for interaction in self.interactions:
            h = interaction(h, edge_index, edge_weight, edge_attr)
        h = self.out(h)
        n_graphs = int(batch.max()) + 1
        return torch.zeros(n_graphs, 1).index_add_(0, batch, h).squeeze(-1)


def lj_energy(pos, batch):
    """Reference Lennard-Jones energies per graph (the regression target)."""
    d = torch.cdist(pos, pos)
    same = (batch[:, None] == batch[None, :]) & ~torch.eye(len(batch), dtype=torch.bool)
    inv6 = torch.where(same, (1.2 / d.clamp(min=0.8)) ** 6, torch.zeros_like(d))
    e = 0.5 * 4 * 0.1 * (inv6 ** 2 - inv6)
    return torch.zeros(int(batch.max()) + 1).index_add_(0, batch, e.sum(1))


n_mol, atoms = 6, 5
z = torch.randint(1, 5, (n_mol * atoms,))
pos = torch.randn(n_mol * atoms, 3) * 1.1
batch = torch.arange(n_mol).repeat_interleave(atoms)
pos_req = pos.clone().requires_grad_(True)
target_e = lj_energy(pos_req, batch)
target_f = -torch.autograd.grad(target_e.sum(), pos_req)[0]
print("LJ energies:", target_e.detach())

model = SchNet()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
rho = 0.5
for step in range(15):
    p = pos.clone().requires_grad_(True)
    energy = model(z, p, batch)
    forces = -torch.autograd.grad(energy.sum(), p, create_graph=True)[0]
    loss = (rho * nn.functional.mse_loss(energy, target_e.detach())
            + (1 - rho) * nn.functional.mse_loss(forces, target_f))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0 or step == 14:
        print(f"step {step} loss {loss.item():.5f} |F| {forces.norm().item():.4f}")

p = pos.clone().requires_grad_(True)
e = model(z, p, batch)
f = -torch.autograd.grad(e.sum(), p)[0]
e_rot = model(z, (pos @ Q.T + t).requires_grad_(True), batch)
print("energy invariant:", torch.allclose(e, e_rot, atol=1e-5),
      "net force ~ 0:", f.view(n_mol, atoms, 3).sum(1).abs().max().item() < 1e-4)
