"""Knowledge-graph embeddings the way OpenKE / TorchKGE / KnowledgeGraphEmbedding
(RotatE) scripts write them: TransE with L1/L2 scores and entity renormalisation
(``embedding.weight.data`` divided by its norm, and ``max_norm`` embeddings), RotatE's
complex rotation by phases with ``torch.chunk``/``cos``/``sin`` and self-adversarial
negative sampling (``F.softmax(... * temperature).detach()`` and ``F.logsigmoid``), DistMult,
head/tail corruption by ``torch.randint`` with a Bernoulli choice, ``nn.MarginRankingLoss``,
a ``Dataset``/``DataLoader`` with a ``collate_fn``, and filtered MRR/Hits@k with
``argsort`` ranks under ``torch.no_grad``."""
import argparse
import logging

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

logging.basicConfig(format="%(levelname)s %(message)s", level=logging.WARNING)
logger = logging.getLogger("kge")

parser = argparse.ArgumentParser()
parser.add_argument("--dim", type=int, default=8)
parser.add_argument("--margin", type=float, default=2.0)
parser.add_argument("--epochs", type=int, default=5)
parser.add_argument("--neg", type=int, default=4)
args = parser.parse_args([])
torch.manual_seed(11)

n_ent, n_rel = 20, 3
# a synthetic graph: relation r maps entity e to (e + r + 1) % n_ent
triples = torch.tensor([[e, r, (e + 2 * r + 1) % n_ent] for r in range(n_rel) for e in range(n_ent)])
perm = torch.randperm(len(triples))
train_triples, test_triples = triples[perm[:50]], triples[perm[50:]]
all_true = {tuple(t) for t in triples.tolist()}


class TrainDataset(Dataset):
    def __init__(self, triples, n_ent, neg, mode):
        self.triples, self.n_ent, self.neg, self.mode = triples, n_ent, neg, mode

    def __len__(self):
        return len(self.triples)

    def __getitem__(self, idx):
        pos = self.triples[idx]
        negs = torch.randint(0, self.n_ent, (self.neg,))
        return pos, negs, self.mode

    @staticmethod
    def collate_fn(data):
        positive_sample = torch.stack([_[0] for _ in data], dim=0)
        negative_sample = torch.stack([_[1] for _ in data], dim=0)
        return positive_sample, negative_sample, data[0][2]


class TransE(nn.Module):
    def __init__(self, n_ent, n_rel, dim, p_norm=1):
        super().__init__()
        self.ent_embeddings = nn.Embedding(n_ent, dim)
        self.rel_embeddings = nn.Embedding(n_rel, dim, max_norm=1.0)
        nn.init.xavier_uniform_(self.ent_embeddings.weight.data)
        nn.init.xavier_uniform_(self.rel_embeddings.weight.data)
        self.p_norm = p_norm

    def normalize(self):
        w = self.ent_embeddings.weight.data
        self.ent_embeddings.weight.data = w / w.norm(p=2, dim=1, keepdim=True)

    def forward(self, h, r, t):
        h, r, t = self.ent_embeddings(h), self.rel_embeddings(r), self.ent_embeddings(t)
        return torch.norm(h + r - t, self.p_norm, -1)


class RotatE(nn.Module):
    def __init__(self, n_ent, n_rel, dim, gamma=6.0):
        super().__init__()
        self.gamma = nn.Parameter(torch.Tensor([gamma]), requires_grad=False)
        self.embedding_range = nn.Parameter(torch.Tensor([(gamma + 2.0) / dim]), requires_grad=False)
        self.entity_embedding = nn.Parameter(torch.zeros(n_ent, dim * 2))
        nn.init.uniform_(self.entity_embedding, -self.embedding_range.item(), self.embedding_range.item())
        self.relation_embedding = nn.Parameter(torch.zeros(n_rel, dim))
        nn.init.uniform_(self.relation_embedding, -self.embedding_range.item(), self.embedding_range.item())

    def forward(self, sample, negs=None, mode="single"):
        if mode == "single":
            head = torch.index_select(self.entity_embedding, 0, sample[:, 0]).unsqueeze(1)
            tail = torch.index_select(self.entity_embedding, 0, sample[:, 2]).unsqueeze(1)
        else:
            head = torch.index_select(self.entity_embedding, 0, sample[:, 0]).unsqueeze(1)
            tail = torch.index_select(self.entity_embedding, 0, negs.view(-1)).view(negs.size(0), negs.size(1), -1)
        relation = torch.index_select(self.relation_embedding, 0, sample[:, 1]).unsqueeze(1)
        pi = 3.14159265358979323846
        re_head, im_head = torch.chunk(head, 2, dim=2)
        re_tail, im_tail = torch.chunk(tail, 2, dim=2)
        phase_relation = relation / (self.embedding_range.item() / pi)
        re_relation, im_relation = torch.cos(phase_relation), torch.sin(phase_relation)
        re_score = re_head * re_relation - im_head * im_relation - re_tail
        im_score = re_head * im_relation + im_head * re_relation - im_tail
        score = torch.stack([re_score, im_score], dim=0).norm(dim=0)
        return self.gamma.item() - score.sum(dim=2)


def distmult(h, r, t):
    return (h * r * t).sum(-1)


@torch.no_grad()
def evaluate(score_fn, test):
    ranks = []
    for h, r, t in test.tolist():
        cand = torch.arange(n_ent)
        scores = score_fn(torch.full_like(cand, h), torch.full_like(cand, r), cand)
        for c in range(n_ent):  # filtered setting
            if c != t and (h, r, c) in all_true:
                scores[c] = -float("inf")
        order = torch.argsort(scores, descending=True)
        ranks.append((order == t).nonzero()[0, 0].item() + 1)
    ranks = torch.tensor(ranks, dtype=torch.float)
    return (1.0 / ranks).mean().item(), (ranks <= 3).float().mean().item()


transe = TransE(n_ent, n_rel, args.dim)
opt = torch.optim.SGD(transe.parameters(), lr=0.05)
criterion = nn.MarginRankingLoss(margin=args.margin)
loader = DataLoader(TrainDataset(train_triples, n_ent, args.neg, "tail-batch"), batch_size=10,
                    shuffle=True, collate_fn=TrainDataset.collate_fn)
for epoch in range(args.epochs):
    transe.normalize()
    total = 0.0
    for pos, negs, mode in loader:
        h, r, t = pos[:, 0], pos[:, 1], pos[:, 2]
        if torch.rand(1).item() < 0.5:
            p_score = transe(h, r, t).unsqueeze(1).expand_as(negs)
            n_score = transe(h.unsqueeze(1).expand_as(negs), r.unsqueeze(1).expand_as(negs), negs)
        else:
            p_score = transe(h, r, t).unsqueeze(1).expand_as(negs)
            n_score = transe(negs, r.unsqueeze(1).expand_as(negs), t.unsqueeze(1).expand_as(negs))
        loss = criterion(p_score.reshape(-1), n_score.reshape(-1), -torch.ones(negs.numel()))
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    logger.info("epoch %d", epoch)
    print(f"transe epoch {epoch} loss {total:.5f} mode {mode}")
print("rel norms <= 1:", bool((transe.rel_embeddings.weight.norm(dim=1) <= 1 + 1e-6).all()))
mrr, hits3 = evaluate(lambda h, r, t: -transe(h, r, t), test_triples)
print(f"transe MRR {mrr:.5f} hits@3 {hits3:.4f}")

rotate = RotatE(n_ent, n_rel, args.dim)
opt = torch.optim.Adam(rotate.parameters(), lr=0.01)
for epoch in range(args.epochs):
    total = 0.0
    for pos, negs, mode in loader:
        negative_score = rotate(pos, negs, mode=mode)
        negative_score = (F.softmax(negative_score * 1.0, dim=1).detach()
                          * F.logsigmoid(-negative_score)).sum(dim=1)
        positive_score = F.logsigmoid(rotate(pos)).squeeze(dim=1)
        loss = (-positive_score.mean() - negative_score.mean()) / 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"rotate epoch {epoch} loss {total:.5f}")
mrr, hits3 = evaluate(lambda h, r, t: rotate(torch.stack([h, r, t], 1)).squeeze(1), test_triples)
print(f"rotate MRR {mrr:.5f} hits@3 {hits3:.4f}")
e = nn.Embedding(n_ent, args.dim)
rel = nn.Embedding(n_rel, args.dim)
print("distmult symmetric:", torch.allclose(distmult(e.weight[0], rel.weight[1], e.weight[2]),
                                            distmult(e.weight[2], rel.weight[1], e.weight[0])))
