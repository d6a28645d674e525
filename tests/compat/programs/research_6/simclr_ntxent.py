"""SimCLR the way its public re-implementations write it: two random augmentations of each
image done with tensor ops (random resized crops through F.grid_sample affine grids, colour
jitter, flips), a ResNet-ish encoder with a projection head, the NT-Xent loss built from a
cosine-similarity matrix with the diagonal masked out and F.cross_entropy over the positives,
LARS-free SGD with a warmup-then-cosine LambdaLR, and a linear probe on frozen features."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def augment(x):
    n = x.size(0)
    scale = torch.empty(n).uniform_(0.6, 1.0)
    tx, ty = torch.empty(n).uniform_(-0.2, 0.2), torch.empty(n).uniform_(-0.2, 0.2)
    flip = torch.where(torch.rand(n) < 0.5, -1.0, 1.0)
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0] = scale * flip
    theta[:, 1, 1] = scale
    theta[:, 0, 2], theta[:, 1, 2] = tx, ty
    grid = F.affine_grid(theta, x.shape, align_corners=False)
    x = F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
    brightness = torch.empty(n, 1, 1, 1).uniform_(0.8, 1.2)
    contrast = torch.empty(n, 1, 1, 1).uniform_(0.8, 1.2)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    x = ((x * brightness - mean) * contrast + mean).clamp(0, 1)
    gray = (x * torch.tensor([0.299, 0.587, 0.114]).view(1, 3, 1, 1)).sum(1, keepdim=True)
    to_gray = (torch.rand(n, 1, 1, 1) < 0.2).float()
    return to_gray * gray.expand_as(x) + (1 - to_gray) * x


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class SimCLR(nn.Module):
    def __init__(self, feat_dim=16):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8),
                                     nn.ReLU(inplace=True), BasicBlock(8, 16, 2),
                                     nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.projector = nn.Sequential(nn.Linear(16, 32), nn.ReLU(inplace=True),
                                       nn.Linear(32, feat_dim))

    def forward(self, x):
        h = self.encoder(x)
        return h, self.projector(h)


def info_nce_loss(features, batch_size, n_views=2, temperature=0.5):
    labels = torch.cat([torch.arange(batch_size) for _ in range(n_views)], dim=0)
    labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
    features = F.normalize(features, dim=1)
    similarity_matrix = torch.matmul(features, features.T)
    mask = torch.eye(labels.shape[0], dtype=torch.bool)
    labels = labels[~mask].view(labels.shape[0], -1)
    similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)
    positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
    negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)
    logits = torch.cat([positives, negatives], dim=1) / temperature
    labels = torch.zeros(logits.shape[0], dtype=torch.long)
    return logits, labels


def nt_xent(z1, z2, tau=0.5):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    sim = F.cosine_similarity(z.unsqueeze(1), z.unsqueeze(0), dim=2) / tau
    n = z1.size(0)
    sim.fill_diagonal_(float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    return F.cross_entropy(sim, targets)


images = torch.rand(32, 3, 12, 12)
classes = (images[:, 0].mean((1, 2)) > images[:, 2].mean((1, 2))).long()
model = SimCLR()
optimizer = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9, weight_decay=1e-4,
                            nesterov=True)
epochs, warmup = 8, 2
scheduler = torch.optim.lr_scheduler.LambdaLR(
    optimizer, lambda e: (e + 1) / warmup if e < warmup
    else 0.5 * (1 + math.cos(math.pi * (e - warmup) / (epochs - warmup))))
criterion = nn.CrossEntropyLoss()
for epoch in range(epochs):
    for i in range(0, 32, 16):
        x = images[i:i + 16]
        _, z = model(torch.cat([augment(x), augment(x)]))
        logits, labels = info_nce_loss(z, 16)
        loss = criterion(logits, labels)
        loss2 = nt_xent(*z.chunk(2))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    top1 = (logits.argmax(1) == labels).float().mean()
    print(f"epoch {epoch} loss {loss.item():.5f} ntxent {loss2.item():.5f} "
          f"top1 {top1.item():.4f} lr {scheduler.get_last_lr()[0]:.5f}")
    scheduler.step()

# linear evaluation on frozen features
model.eval()
for p in model.parameters():
    p.requires_grad = False
with torch.no_grad():
    feats, _ = model(images)
probe = nn.Linear(16, 2)
popt = torch.optim.Adam(probe.parameters(), lr=0.05)
for _ in range(40):
    ploss = F.cross_entropy(probe(feats), classes)
    popt.zero_grad()
    ploss.backward()
    popt.step()
print("probe", f"{ploss.item():.5f}", (probe(feats).argmax(1) == classes).sum().item())
