"""Neural combinatorial optimisation the way wouterkool/attention-learn-to-route writes it:
a graph-attention encoder (``SkipConnection`` + ``MultiHeadAttention`` + BatchNorm
``Normalization``), a decoder with a fixed context precomputed once (a ``NamedTuple`` with
``__getitem__`` for slicing), the first/last-node context, masked compatibility
``masked_fill`` with ``-inf`` and a ``tanh`` clip, greedy and sampled decoding through
``Categorical``-style ``multinomial``, tour lengths by ``gather``, REINFORCE against a
greedy rollout baseline of a frozen ``copy.deepcopy`` with a one-sided paired t-test from
``scipy.stats`` deciding the baseline update, and a ``torch.utils.data.Dataset`` of random
instances."""
# printout rtol: 1e-3
# (the REINFORCE gradient's norm carries the rounding of every reduction order, which
# the thread count changes (1.4e-4 apart between runs of one build))
import copy
import math
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from scipy.stats import ttest_rel
from torch import nn
from torch.utils.data import DataLoader, Dataset


class TSPDataset(Dataset):
    def __init__(self, size=10, num_samples=64, seed=None):
        super(TSPDataset, self).__init__()
        g = torch.Generator().manual_seed(seed) if seed is not None else None
        self.data = [torch.FloatTensor(size, 2).uniform_(0, 1, generator=g)
                     for i in range(num_samples)]
        self.size = len(self.data)

    def __len__(self):
        return self.size

    def __getitem__(self, idx):
        return self.data[idx]


def get_costs(dataset, pi):
    assert (torch.arange(pi.size(1), out=pi.data.new()).view(1, -1).expand_as(pi)
            == pi.data.sort(1)[0]).all(), "Invalid tour"
    d = dataset.gather(1, pi.unsqueeze(-1).expand_as(dataset))
    return (d[:, 1:] - d[:, :-1]).norm(p=2, dim=2).sum(1) + (d[:, 0] - d[:, -1]).norm(p=2, dim=1)


class SkipConnection(nn.Module):
    def __init__(self, module):
        super(SkipConnection, self).__init__()
        self.module = module

    def forward(self, input):
        return input + self.module(input)


class MultiHeadAttention(nn.Module):
    def __init__(self, n_heads, input_dim, embed_dim):
        super(MultiHeadAttention, self).__init__()
        val_dim = embed_dim // n_heads
        key_dim = val_dim
        self.n_heads, self.input_dim, self.embed_dim = n_heads, input_dim, embed_dim
        self.val_dim, self.key_dim = val_dim, key_dim
        self.norm_factor = 1 / math.sqrt(key_dim)
        self.W_query = nn.Parameter(torch.Tensor(n_heads, input_dim, key_dim))
        self.W_key = nn.Parameter(torch.Tensor(n_heads, input_dim, key_dim))
        self.W_val = nn.Parameter(torch.Tensor(n_heads, input_dim, val_dim))
        self.W_out = nn.Parameter(torch.Tensor(n_heads, val_dim, embed_dim))
        self.init_parameters()

    def init_parameters(self):
        for param in self.parameters():
            stdv = 1. / math.sqrt(param.size(-1))
            param.data.uniform_(-stdv, stdv)

    def forward(self, q, h=None, mask=None):
        if h is None:
            h = q
        batch_size, graph_size, input_dim = h.size()
        n_query = q.size(1)
        hflat = h.contiguous().view(-1, input_dim)
        qflat = q.contiguous().view(-1, input_dim)
        shp = (self.n_heads, batch_size, graph_size, -1)
        shp_q = (self.n_heads, batch_size, n_query, -1)
        Q = torch.matmul(qflat, self.W_query).view(shp_q)
        K = torch.matmul(hflat, self.W_key).view(shp)
        V = torch.matmul(hflat, self.W_val).view(shp)
        compatibility = self.norm_factor * torch.matmul(Q, K.transpose(2, 3))
        attn = torch.softmax(compatibility, dim=-1)
        heads = torch.matmul(attn, V)
        out = torch.mm(
            heads.permute(1, 2, 0, 3).contiguous().view(-1, self.n_heads * self.val_dim),
            self.W_out.view(-1, self.embed_dim)).view(batch_size, n_query, self.embed_dim)
        return out


class Normalization(nn.Module):
    def __init__(self, embed_dim):
        super(Normalization, self).__init__()
        self.normalizer = nn.BatchNorm1d(embed_dim, affine=True)

    def forward(self, input):
        return self.normalizer(input.view(-1, input.size(-1))).view(*input.size())


class MultiHeadAttentionLayer(nn.Sequential):
    def __init__(self, n_heads, embed_dim, feed_forward_hidden=64):
        super(MultiHeadAttentionLayer, self).__init__(
            SkipConnection(MultiHeadAttention(n_heads, input_dim=embed_dim, embed_dim=embed_dim)),
            Normalization(embed_dim),
            SkipConnection(nn.Sequential(nn.Linear(embed_dim, feed_forward_hidden), nn.ReLU(),
                                         nn.Linear(feed_forward_hidden, embed_dim))),
            Normalization(embed_dim))


class AttentionModelFixed(NamedTuple):
    node_embeddings: torch.Tensor
    context_node_projected: torch.Tensor
    glimpse_key: torch.Tensor
    glimpse_val: torch.Tensor
    logit_key: torch.Tensor

    def __getitem__(self, key):
        assert torch.is_tensor(key) or isinstance(key, slice)
        return AttentionModelFixed(
            node_embeddings=self.node_embeddings[key],
            context_node_projected=self.context_node_projected[key],
            glimpse_key=self.glimpse_key[:, key],
            glimpse_val=self.glimpse_val[:, key],
            logit_key=self.logit_key[key])


class AttentionModel(nn.Module):
    def __init__(self, embedding_dim=32, n_encode_layers=2, tanh_clipping=10., n_heads=4):
        super(AttentionModel, self).__init__()
        self.embedding_dim, self.n_heads = embedding_dim, n_heads
        self.tanh_clipping = tanh_clipping
        self.decode_type = None
        self.W_placeholder = nn.Parameter(torch.Tensor(2 * embedding_dim))
        self.W_placeholder.data.uniform_(-1, 1)
        self.init_embed = nn.Linear(2, embedding_dim)
        self.embedder = nn.Sequential(*(MultiHeadAttentionLayer(n_heads, embedding_dim)
                                        for _ in range(n_encode_layers)))
        self.project_node_embeddings = nn.Linear(embedding_dim, 3 * embedding_dim, bias=False)
        self.project_fixed_context = nn.Linear(embedding_dim, embedding_dim, bias=False)
        self.project_step_context = nn.Linear(2 * embedding_dim, embedding_dim, bias=False)
        self.project_out = nn.Linear(embedding_dim, embedding_dim, bias=False)

    def set_decode_type(self, decode_type):
        self.decode_type = decode_type

    def _precompute(self, embeddings):
        graph_embed = embeddings.mean(1)
        fixed_context = self.project_fixed_context(graph_embed)[:, None, :]
        glimpse_key_fixed, glimpse_val_fixed, logit_key_fixed = \
            self.project_node_embeddings(embeddings[:, None, :, :]).chunk(3, dim=-1)
        fixed_attention_node_data = (self._make_heads(glimpse_key_fixed),
                                     self._make_heads(glimpse_val_fixed),
                                     logit_key_fixed.contiguous())
        return AttentionModelFixed(embeddings, fixed_context, *fixed_attention_node_data)

    def _make_heads(self, v):
        return (v.contiguous().view(v.size(0), v.size(1), v.size(2), self.n_heads, -1)
                .permute(3, 0, 1, 2, 4))

    def _one_to_many_logits(self, query, glimpse_K, glimpse_V, logit_K, mask):
        batch_size, num_steps, embed_dim = query.size()
        key_size = val_size = embed_dim // self.n_heads
        glimpse_Q = query.view(batch_size, num_steps, self.n_heads, 1, key_size).permute(
            2, 0, 1, 3, 4)
        compatibility = torch.matmul(glimpse_Q, glimpse_K.transpose(-2, -1)) / math.sqrt(
            glimpse_Q.size(-1))
        compatibility[mask[None, :, :, None, :].expand_as(compatibility)] = -math.inf
        heads = torch.matmul(torch.softmax(compatibility, dim=-1), glimpse_V)
        glimpse = self.project_out(heads.permute(1, 2, 3, 0, 4).contiguous().view(
            -1, num_steps, 1, self.n_heads * val_size))
        final_Q = glimpse
        logits = torch.matmul(final_Q, logit_K.transpose(-2, -1)).squeeze(-2) / math.sqrt(
            final_Q.size(-1))
        logits = torch.tanh(logits) * self.tanh_clipping
        logits[mask] = -math.inf
        return logits

    def forward(self, input, return_pi=False):
        embeddings = self.embedder(self.init_embed(input))
        fixed = self._precompute(embeddings)
        batch_size, n = input.size(0), input.size(1)
        visited = torch.zeros(batch_size, 1, n, dtype=torch.bool)
        first = last = None
        outputs, sequences = [], []
        for i in range(n):
            if i == 0:
                step_context = self.W_placeholder[None, None, :].expand(
                    batch_size, 1, self.W_placeholder.size(-1))
            else:
                idx = torch.cat((first, last), 1)[:, :, None].expand(batch_size, 2,
                                                                      self.embedding_dim)
                step_context = embeddings.gather(1, idx).view(batch_size, 1, -1)
            query = fixed.context_node_projected + self.project_step_context(step_context)
            logits = self._one_to_many_logits(query, fixed.glimpse_key, fixed.glimpse_val,
                                              fixed.logit_key, visited)
            log_p = torch.log_softmax(logits, dim=-1)[:, 0, :]
            if self.decode_type == "greedy":
                selected = log_p.exp().max(1)[1]
            else:
                selected = log_p.exp().multinomial(1).squeeze(1)
            outputs.append(log_p)
            sequences.append(selected)
            visited = visited.scatter(-1, selected[:, None, None], True)
            if first is None:
                first = selected[:, None]
            last = selected[:, None]
        _log_p, pi = torch.stack(outputs, 1), torch.stack(sequences, 1)
        cost = get_costs(input, pi)
        ll = _log_p.gather(2, pi.unsqueeze(-1)).squeeze(-1).sum(1)
        if return_pi:
            return cost, ll, pi
        return cost, ll


def rollout(model, dataset, batch_size=32):
    model.set_decode_type("greedy")
    model.eval()
    with torch.no_grad():
        return torch.cat([model(bat)[0] for bat in DataLoader(dataset, batch_size=batch_size)], 0)


torch.manual_seed(1234)
np.random.seed(1234)
graph_size = 8
model = AttentionModel()
baseline_model = copy.deepcopy(model)
val_dataset = TSPDataset(graph_size, 32, seed=99)
bl_dataset = TSPDataset(graph_size, 32, seed=100)
bl_vals = rollout(baseline_model, bl_dataset).numpy()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 0.96 ** epoch)

x = val_dataset[0][None]
model.set_decode_type("greedy")
model.eval()
cost, ll, pi = model(x, return_pi=True)
print("greedy tour:", pi.tolist(), f"cost {cost.item():.4f} ll {ll.item():.4f}")

for epoch in range(3):
    training_dataset = TSPDataset(graph_size, 64)
    model.train()
    model.set_decode_type("sampling")
    for batch_id, batch in enumerate(DataLoader(training_dataset, batch_size=16)):
        cost, log_likelihood = model(batch)
        with torch.no_grad():
            baseline_model.set_decode_type("greedy")
            baseline_model.eval()
            bl_val, _ = baseline_model(batch)
        reinforce_loss = ((cost - bl_val) * log_likelihood).mean()
        optimizer.zero_grad()
        reinforce_loss.backward()
        grad_norms = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, norm_type=2)
        optimizer.step()
    lr_scheduler.step()
    avg_cost = rollout(model, val_dataset).mean()
    candidate_vals = rollout(model, bl_dataset).numpy()
    candidate_mean, bl_mean = candidate_vals.mean(), bl_vals.mean()
    update = False
    if candidate_mean - bl_mean < 0:
        t, p = ttest_rel(candidate_vals, bl_vals)
        p_val = p / 2
        assert t < 0, "T-statistic should be negative"
        update = p_val < 0.05
    if update:
        baseline_model.load_state_dict(copy.deepcopy(model.state_dict()))
        bl_vals = candidate_vals
    print(f"epoch {epoch}: loss {reinforce_loss.item():.4f} grad norm {grad_norms.item():.4f} "
          f"val cost {avg_cost.item():.4f} candidate {candidate_mean:.4f} "
          f"baseline {bl_mean:.4f} update {update}")

model.set_decode_type("greedy")
model.eval()
with torch.no_grad():
    cost, ll, pi = model(val_dataset[0][None], return_pi=True)
print("greedy tour:", pi.tolist(), f"cost {cost.item():.4f}")
fixed = model._precompute(model.embedder(model.init_embed(torch.stack(val_dataset.data[:4]))))
print("fixed slice:", tuple(fixed[torch.tensor([0, 2])].glimpse_key.shape),
      tuple(fixed[1:3].logit_key.shape))
