"""Few-shot learning as jakesnell/prototypical-networks and learn2learn-style code write it:
an episodic ``Sampler`` yielding N-way K-shot index batches (``batch_sampler=``), a
``collate_fn`` splitting support and query, a Conv-4 embedding net, prototypes by
``mean`` over shots, ``torch.cdist`` squared distances as logits, episode accuracy with
95% confidence intervals, a cosine-classifier variant with a learnable temperature,
``StepLR`` over Nesterov SGD, and an ``IterableDataset`` of episodes sharded by ``get_worker_info`` across two
workers with ``worker_init_fn`` seeding and ``persistent_workers``."""
import math
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, IterableDataset, Sampler, get_worker_info

N_WAY, K_SHOT, N_QUERY = 3, 2, 3
rng = np.random.RandomState(0)
NUM_CLASSES, PER_CLASS = 8, 10
protos = rng.randn(NUM_CLASSES, 1, 8, 8).astype(np.float32)
images = np.concatenate([protos[c] + 0.7 * rng.randn(PER_CLASS, 1, 8, 8).astype(np.float32)
                         for c in range(NUM_CLASSES)])
labels = np.repeat(np.arange(NUM_CLASSES), PER_CLASS)


class FewShotDataset(Dataset):
    def __init__(self, classes):
        self.idx = [i for i in range(len(labels)) if labels[i] in classes]

    def __len__(self):
        return len(self.idx)

    def __getitem__(self, i):
        j = self.idx[i]
        return torch.from_numpy(images[j]), int(labels[j])


class EpisodicBatchSampler(Sampler):
    def __init__(self, labels, n_way, n_support, n_query, n_episodes, seed):
        self.labels = np.asarray(labels)
        self.classes = np.unique(self.labels)
        self.n_way, self.n_shot, self.n_query, self.n_episodes = n_way, n_support, n_query, n_episodes
        self.g = torch.Generator().manual_seed(seed)

    def __len__(self):
        return self.n_episodes

    def __iter__(self):
        for _ in range(self.n_episodes):
            cls = self.classes[torch.randperm(len(self.classes), generator=self.g)[: self.n_way].numpy()]
            batch = []
            for c in cls:
                where = np.nonzero(self.labels == c)[0]
                pick = torch.randperm(len(where), generator=self.g)[: self.n_shot + self.n_query]
                batch.append(where[pick.numpy()])
            yield np.stack(batch).reshape(-1).tolist()


def episode_collate(batch):
    x = torch.stack([b[0] for b in batch]).view(N_WAY, K_SHOT + N_QUERY, 1, 8, 8)
    return x[:, :K_SHOT], x[:, K_SHOT:]


def conv_block(i, o):
    # no bias before BatchNorm: it would cancel, leaving the bias a gradient of rounding noise
    # whose sign Adam's first step follows (a different one in every library and thread count)
    return nn.Sequential(nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(), nn.MaxPool2d(2))


class ProtoNet(nn.Module):
    def __init__(self, hid=8):
        super().__init__()
        self.encoder = nn.Sequential(conv_block(1, hid), conv_block(hid, hid), conv_block(hid, hid),
                                     nn.Flatten())

    def loss(self, support, query, metric="euclidean", scale=None):
        n_way, n_shot = support.shape[:2]
        n_query = query.shape[1]
        x = torch.cat([support.reshape(n_way * n_shot, *support.shape[2:]),
                       query.reshape(n_way * n_query, *query.shape[2:])])
        z = self.encoder(x)
        z_proto = z[: n_way * n_shot].view(n_way, n_shot, -1).mean(1)
        zq = z[n_way * n_shot:]
        if metric == "euclidean":
            logits = -torch.cdist(zq, z_proto).pow(2)
        else:
            logits = scale * F.normalize(zq, dim=-1) @ F.normalize(z_proto, dim=-1).T
        target = torch.arange(n_way).repeat_interleave(n_query)
        log_p = F.log_softmax(logits, dim=1)
        loss = F.nll_loss(log_p, target)
        acc = (log_p.argmax(1) == target).float().mean()
        return loss, acc


def mean_confidence_interval(accs):
    a = torch.tensor(accs)
    return a.mean().item(), 1.96 * a.std().item() / math.sqrt(len(a))


train_ds = FewShotDataset(range(5))
test_ds = FewShotDataset(range(5, 8))
train_labels = [train_ds[i][1] for i in range(len(train_ds))]
test_labels = [test_ds[i][1] for i in range(len(test_ds))]

torch.manual_seed(0)
model = ProtoNet()
opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, nesterov=True)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=6, gamma=0.5)
loader = DataLoader(train_ds, batch_sampler=EpisodicBatchSampler(train_labels, N_WAY, K_SHOT, N_QUERY, 12, 1),
                    collate_fn=episode_collate)
print("episodes per epoch", len(loader))
for ep, (support, query) in enumerate(loader):
    model.train()
    loss, acc = model.loss(support, query)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    if ep % 4 == 3:
        print(f"episode {ep} loss {loss.item():.5f} acc {acc.item():.4f} lr {sched.get_last_lr()[0]:.6f}")

model.eval()
test_loader = DataLoader(test_ds, batch_sampler=EpisodicBatchSampler(test_labels, N_WAY, K_SHOT, N_QUERY, 10, 2),
                         collate_fn=episode_collate)
with torch.no_grad():
    accs = [model.loss(s, q)[1].item() for s, q in test_loader]
m, h = mean_confidence_interval(accs)
print(f"test acc {m:.4f} +- {h:.4f}")

scale = nn.Parameter(torch.tensor(10.0))
opt2 = torch.optim.SGD(list(model.parameters()) + [scale], lr=0.01, momentum=0.9)
model.train()
for ep, (support, query) in enumerate(loader):
    if ep == 6:
        break
    loss, acc = model.loss(support, query, metric="cosine", scale=scale)
    opt2.zero_grad()
    loss.backward()
    opt2.step()
print(f"cosine head loss {loss.item():.5f} scale {scale.item():.5f}")


class EpisodeStream(IterableDataset):
    def __init__(self, n_episodes, seed):
        self.n_episodes, self.seed = n_episodes, seed

    def __iter__(self):
        info = get_worker_info()
        wid, nw = (0, 1) if info is None else (info.id, info.num_workers)
        for e in range(wid, self.n_episodes, nw):
            r = random.Random(self.seed * 1000 + e)
            cls = r.sample(range(NUM_CLASSES), N_WAY)
            idx = [c * PER_CLASS + j for c in cls for j in r.sample(range(PER_CLASS), K_SHOT + N_QUERY)]
            x = torch.from_numpy(images[idx]).view(N_WAY, K_SHOT + N_QUERY, 1, 8, 8)
            yield e, wid, x[:, :K_SHOT], x[:, K_SHOT:]


def worker_init_fn(worker_id):
    info = get_worker_info()
    np.random.seed(info.seed % 2 ** 32)
    random.seed(info.seed)


stream = DataLoader(EpisodeStream(6, 3), batch_size=None, num_workers=2, worker_init_fn=worker_init_fn,
                    persistent_workers=True)
model.eval()
for rnd in range(2):
    seen = []
    with torch.no_grad():
        for e, wid, s, q in stream:
            seen.append((e, wid, round(model.loss(s, q)[0].item(), 5)))
    print("round", rnd, seen)
