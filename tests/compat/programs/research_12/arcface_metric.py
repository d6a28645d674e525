"""Deep metric learning as insightface / pytorch-metric-learning style code writes it: an
``ArcMarginProduct`` head (``F.normalize`` of features and weights, ``cos(theta + m)`` with
the ``th``/``mm`` easy-margin fallback, ``one_hot`` by ``scatter_``), a CosFace head, a
P-K ``BatchSampler`` subclass, a ``collate_fn`` building a dict, recall@k from a
cosine-similarity matrix with the diagonal masked by ``fill_diagonal_``, and a
``MultiStepLR`` over SGD with ``nesterov=True``."""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import BatchSampler, DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=4)
parser.add_argument("--margin", type=float, default=0.3)
parser.add_argument("--scale", type=float, default=16.0)
args = parser.parse_args()

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
NUM_CLASSES, PER_CLASS, DIM = 6, 12, 16
centers = torch.randn(NUM_CLASSES, DIM) * 1.5
x_all = torch.cat([centers[c] + torch.randn(PER_CLASS, DIM) for c in range(NUM_CLASSES)])
y_all = torch.arange(NUM_CLASSES).repeat_interleave(PER_CLASS)
dataset = TensorDataset(x_all, y_all)


class PKSampler(BatchSampler):
    """P classes, K samples each, a fresh draw per batch."""

    def __init__(self, labels, p, k, batches, seed=0):
        self.labels, self.p, self.k, self.batches = labels, p, k, batches
        self.g = torch.Generator().manual_seed(seed)

    def __iter__(self):
        for _ in range(self.batches):
            classes = torch.randperm(NUM_CLASSES, generator=self.g)[: self.p]
            idx = []
            for c in classes.tolist():
                pool = (self.labels == c).nonzero(as_tuple=True)[0]
                idx += pool[torch.randperm(len(pool), generator=self.g)[: self.k]].tolist()
            yield idx

    def __len__(self):
        return self.batches


def collate(batch):
    xs, ys = zip(*batch)
    return {"x": torch.stack(xs), "y": torch.stack(ys)}


class ArcMarginProduct(nn.Module):
    def __init__(self, in_features, out_features, s=30.0, m=0.50, easy_margin=False):
        super().__init__()
        self.in_features, self.out_features, self.s, self.m = in_features, out_features, s, m
        self.weight = nn.Parameter(torch.FloatTensor(out_features, in_features))
        nn.init.xavier_uniform_(self.weight)
        self.easy_margin = easy_margin
        self.cos_m, self.sin_m = math.cos(m), math.sin(m)
        self.th = math.cos(math.pi - m)
        self.mm = math.sin(math.pi - m) * m

    def forward(self, input, label):
        cosine = F.linear(F.normalize(input), F.normalize(self.weight))
        sine = torch.sqrt((1.0 - torch.pow(cosine, 2)).clamp(0, 1))
        phi = cosine * self.cos_m - sine * self.sin_m
        if self.easy_margin:
            phi = torch.where(cosine > 0, phi, cosine)
        else:
            phi = torch.where(cosine > self.th, phi, cosine - self.mm)
        one_hot = torch.zeros(cosine.size(), device=input.device)
        one_hot.scatter_(1, label.view(-1, 1).long(), 1)
        output = (one_hot * phi) + ((1.0 - one_hot) * cosine)
        return output * self.s

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, s={self.s}, m={self.m}"


class CosFace(nn.Module):
    def __init__(self, in_features, out_features, s=16.0, m=0.2):
        super().__init__()
        self.s, self.m = s, m
        self.W = nn.Parameter(torch.randn(in_features, out_features) * 0.1)

    def forward(self, x, labels):
        logits = F.normalize(x, dim=1) @ F.normalize(self.W, dim=0)
        margin = F.one_hot(labels, logits.size(1)).float() * self.m
        return self.s * (logits - margin)


def embedder():
    return nn.Sequential(nn.Linear(DIM, 32), nn.BatchNorm1d(32), nn.PReLU(), nn.Linear(32, 8))


@torch.no_grad()
def recall_at_k(model, ks=(1, 3)):
    model.eval()
    emb = F.normalize(model(x_all.to(device)), dim=1)
    sim = emb @ emb.t()
    sim.fill_diagonal_(-float("inf"))
    top = sim.topk(max(ks), dim=1).indices
    hits = y_all[top] == y_all[:, None]
    model.train()
    return {k: hits[:, :k].any(dim=1).float().mean().item() for k in ks}


def main():
    for head_name in ("arcface", "cosface"):
        torch.manual_seed(1)
        model = embedder().to(device)
        head = (ArcMarginProduct(8, NUM_CLASSES, s=args.scale, m=args.margin) if head_name == "arcface"
                else CosFace(8, NUM_CLASSES)).to(device)
        print(head)
        opt = torch.optim.SGD([{"params": model.parameters()}, {"params": head.parameters(), "weight_decay": 5e-4}],
                              lr=0.1, momentum=0.9, nesterov=True)
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[2, 3], gamma=0.1)
        loader = DataLoader(dataset, batch_sampler=PKSampler(y_all, p=3, k=4, batches=6), collate_fn=collate)
        criterion = nn.CrossEntropyLoss()
        for epoch in range(args.epochs):
            total = 0.0
            for batch in loader:
                x, y = batch["x"].to(device, non_blocking=True), batch["y"].to(device, non_blocking=True)
                logits = head(model(x), y)
                loss = criterion(logits, y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += loss.item()
            sched.step()
            r = recall_at_k(model)
            print(f"[{head_name}] epoch {epoch} loss {total / len(loader):.4f} lr {sched.get_last_lr()[0]:.4f} "
                  f"R@1 {r[1]:.4f} R@3 {r[3]:.4f}")
        print(f"{head_name} prelu weight {model[2].weight.item():.5f}, head norm {sum(p.norm() for p in head.parameters()).item():.4f}")


if __name__ == "__main__":
    main()
