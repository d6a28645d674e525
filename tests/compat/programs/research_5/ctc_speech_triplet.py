"""Sequence and metric losses as speech and face-embedding repositories use them: a small
conv + bidirectional LSTM acoustic model trained with nn.CTCLoss on log_softmax outputs
(time-major, per-sample input and target lengths, zero_infinity), greedy CTC decoding with
unique_consecutive; a spatial transformer's affine_grid/grid_sample front end; an embedding
net trained with TripletMarginLoss on hardest negatives and a gumbel-softmax codebook."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
BLANK, V, FEATS = 0, 6, 10


class AcousticModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(FEATS, 16, kernel_size=3, padding=1)
        self.rnn = nn.LSTM(16, 12, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(24, V)

    def forward(self, x):  # (N, T, F)
        x = F.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        x, _ = self.rnn(x)
        return self.fc(x).log_softmax(-1)


def batch(n=4, t=20):
    lens = torch.randint(12, t + 1, (n,))
    tlens = torch.randint(2, 5, (n,))
    targets = torch.randint(1, V, (int(tlens.sum()),))
    x = torch.randn(n, t, FEATS)
    for i in range(n):
        x[i, lens[i]:] = 0
    return x, lens, targets, tlens


model = AcousticModel()
ctc = nn.CTCLoss(blank=BLANK, zero_infinity=True)
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
for step in range(6):
    x, lens, targets, tlens = batch()
    log_probs = model(x).transpose(0, 1)  # (T, N, C)
    loss = ctc(log_probs, targets, lens, tlens)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"ctc step {step} loss {loss.item():.4f}")
per = F.ctc_loss(log_probs.detach(), targets, lens, tlens, reduction="none")
print("per-sample", [round(v, 3) for v in per.tolist()])
padded = torch.zeros(4, 4, dtype=torch.long)
start = 0
for i, n in enumerate(tlens.tolist()):
    padded[i, :n] = targets[start:start + n]
    start += n
print("padded targets", torch.allclose(F.ctc_loss(log_probs.detach(), padded, lens, tlens,
                                                  reduction="sum"), per.sum(), atol=1e-4))
pred = log_probs.argmax(-1).t()
for i in range(2):
    seq = torch.unique_consecutive(pred[i, :lens[i]])
    print("decoded", seq[seq != BLANK].tolist())


# ---- spatial transformer front end ---------------------------------------------------------
class STN(nn.Module):
    def __init__(self):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(1, 4, 5), nn.MaxPool2d(2), nn.ReLU(), nn.Flatten(),
                                 nn.Linear(4 * 4 * 4, 6))
        self.loc[-1].weight.data.zero_()
        self.loc[-1].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))
        self.head = nn.Linear(12 * 12, 3)

    def forward(self, x):
        theta = self.loc(x).view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        x = F.grid_sample(x, grid, align_corners=False, padding_mode="border")
        return self.head(x.flatten(1)), theta


stn = STN()
opt = torch.optim.SGD(stn.parameters(), lr=0.05, momentum=0.9)
imgs, cls = torch.randn(8, 1, 12, 12), torch.randint(0, 3, (8,))
for step in range(4):
    out, theta = stn(imgs)
    loss = F.cross_entropy(out, cls)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"stn step {step} loss {loss.item():.4f} theta {[round(v, 4) for v in theta[0, 0].tolist()]}")


# ---- triplet embeddings with hardest negatives, gumbel-softmax codes -----------------------
embed = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
codebook = nn.Linear(4, 5)
opt = torch.optim.Adam(list(embed.parameters()) + list(codebook.parameters()), lr=1e-2)
triplet = nn.TripletMarginLoss(margin=0.5, p=2)
centers = torch.randn(3, 8) * 2
for step in range(5):
    labels = torch.randint(0, 3, (24,))
    feats = F.normalize(embed(centers[labels] + 0.5 * torch.randn(24, 8)), dim=1)
    dist = torch.cdist(feats, feats)
    same = labels[:, None] == labels[None, :]
    hardest_pos = (dist * same).argmax(1)
    hardest_neg = dist.masked_fill(same, float("inf")).argmin(1)
    loss = triplet(feats, feats[hardest_pos], feats[hardest_neg])
    codes = F.gumbel_softmax(codebook(feats), tau=0.5, hard=True)
    usage = codes.mean(0)
    loss = loss + 0.1 * (usage * torch.log(usage + 1e-6)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"triplet step {step} loss {loss.item():.4f} codes {codes.argmax(1)[:6].tolist()}")
print("functional", round(F.triplet_margin_with_distance_loss(
    feats[:4], feats[4:8], feats[8:12],
    distance_function=nn.PairwiseDistance(), margin=1.0, swap=True).item(), 4))
