"""A two-tower retrieval model as recommender-system code (TorchRec-free YouTube/DSSM style)
writes it: hashed categorical features through ``nn.EmbeddingBag(mode="sum")`` with
``offsets`` and ``per_sample_weights``, user history mean-pooled with
``padding_idx``-masked ``nn.Embedding``, L2-normalised towers, in-batch softmax with a
temperature and the logQ correction from item frequencies, duplicates masked by
``masked_fill``, ``SparseAdam`` for the sparse embeddings next to ``Adam`` for the dense
layers, recall@k and NDCG@k by ``topk``, and a brute-force index by ``torch.mm``."""
import math
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
# more buckets than items: items sharing every bucket would tie, and a product rounds
# their equal scores apart by where each column falls in its blocks
NUM_USERS, NUM_ITEMS, HASH_BUCKETS, DIM, HIST = 40, 60, 61, 16, 5
g = torch.Generator().manual_seed(1)
user_taste = torch.randn(NUM_USERS, 4, generator=g)
item_topic = torch.randn(NUM_ITEMS, 4, generator=g)
affinity = user_taste @ item_topic.T
interactions = []
for u in range(NUM_USERS):
    top = torch.topk(affinity[u] + 0.5 * torch.randn(NUM_ITEMS, generator=g), 6).indices.tolist()
    interactions += [(u, i) for i in top]
item_freq = Counter(i for _, i in interactions)
history = torch.zeros(NUM_USERS, HIST, dtype=torch.long)
for u in range(NUM_USERS):
    items = [i + 1 for uu, i in interactions if uu == u][:HIST - (u % 3)]
    history[u, :len(items)] = torch.tensor(items)
print("interactions", len(interactions), "distinct items", len(item_freq), "padded rows", int((history == 0).any(1).sum()))


def hash_features(ids, n_feats=3):
    """Each id spreads over ``n_feats`` hashed buckets with weights, as a bag."""
    values = torch.stack([(ids * p + s) % HASH_BUCKETS for p, s in ((7, 3), (13, 5), (17, 11))[:n_feats]], 1)
    weights = torch.tensor([1.0, 0.5, 0.25])[:n_feats].repeat(len(ids))
    offsets = torch.arange(0, len(ids) * n_feats, n_feats)
    return values.flatten(), offsets, weights


class UserTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.id_bag = nn.EmbeddingBag(HASH_BUCKETS, DIM, mode="sum", sparse=True)
        self.hist = nn.Embedding(NUM_ITEMS + 1, DIM, padding_idx=0, sparse=True)
        self.mlp = nn.Sequential(nn.Linear(2 * DIM, 32), nn.ReLU(), nn.Linear(32, DIM))

    def forward(self, users):
        v, o, w = hash_features(users)
        a = self.id_bag(v, o, per_sample_weights=w)
        h = history[users]
        mask = (h != 0).unsqueeze(-1).float()
        pooled = (self.hist(h) * mask).sum(1) / mask.sum(1).clamp(min=1)
        return F.normalize(self.mlp(torch.cat([a, pooled], -1)), dim=-1)


class ItemTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.id_bag = nn.EmbeddingBag(HASH_BUCKETS, DIM, mode="sum", sparse=True)
        self.mlp = nn.Sequential(nn.Linear(DIM, 32), nn.ReLU(), nn.Linear(32, DIM))

    def forward(self, items):
        v, o, w = hash_features(items)
        return F.normalize(self.mlp(self.id_bag(v, o, per_sample_weights=w)), dim=-1)


user_tower, item_tower = UserTower(), ItemTower()
sparse_params = [user_tower.id_bag.weight, user_tower.hist.weight, item_tower.id_bag.weight]
dense_params = [p for m in (user_tower, item_tower) for n, p in m.named_parameters()
                if not any(p is s for s in sparse_params)]
opt_sparse = torch.optim.SparseAdam(sparse_params, lr=0.02)
opt_dense = torch.optim.Adam(dense_params, lr=0.01)
log_q = torch.log(torch.tensor([item_freq.get(i, 1) for i in range(NUM_ITEMS)], dtype=torch.float) / len(interactions))
temperature = 0.1
pairs = torch.tensor(interactions)
for epoch in range(4):
    perm = torch.randperm(len(pairs))
    total = 0.0
    for b in range(0, len(pairs), 48):
        batch = pairs[perm[b:b + 48]]
        u, i = batch[:, 0], batch[:, 1]
        logits = user_tower(u) @ item_tower(i).T / temperature
        logits = logits - log_q[i][None, :]
        dup = (i[None, :] == i[:, None]) & ~torch.eye(len(i), dtype=torch.bool)
        logits = logits.masked_fill(dup, torch.finfo(logits.dtype).min)
        loss = F.cross_entropy(logits, torch.arange(len(i)))
        opt_sparse.zero_grad()
        opt_dense.zero_grad()
        loss.backward()
        opt_sparse.step()
        opt_dense.step()
        total += loss.item() * len(i)
    print(f"epoch {epoch} loss {total / len(pairs):.5f} sparse grad {user_tower.id_bag.weight.grad.is_sparse}")

with torch.no_grad():
    U = user_tower(torch.arange(NUM_USERS))
    I = item_tower(torch.arange(NUM_ITEMS))
    scores = torch.mm(U, I.T)
print("padding row stays zero", user_tower.hist.weight[0].abs().sum().item())
K = 10
topk = scores.topk(K, dim=1).indices
truth = torch.zeros(NUM_USERS, NUM_ITEMS, dtype=torch.bool)
truth[pairs[:, 0], pairs[:, 1]] = True
hits = truth.gather(1, topk).float()
recall = (hits.sum(1) / truth.sum(1)).mean()
discounts = 1.0 / torch.log2(torch.arange(2, K + 2).float())
dcg = (hits * discounts).sum(1)
idcg = torch.stack([discounts[:int(n)].sum() for n in truth.sum(1).clamp(max=K)])
print(f"recall@{K} {recall.item():.5f} ndcg@{K} {(dcg / idcg).mean().item():.5f}")
print("score stats", scores.mean().item(), scores.max().item())
