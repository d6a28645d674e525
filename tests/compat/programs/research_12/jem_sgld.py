"""Joint energy-based training (JEM, wgrathwohl/JEM ``train_wrn_ebm.py``) on 2-D data: a
classifier whose ``logsumexp`` of logits is the negative energy, a persistent replay buffer
re-initialised with probability ``reinit_freq`` by ``torch.rand`` masks, SGLD chains that
take ``torch.autograd.grad`` of the summed energy and add ``sgld_std * randn_like`` noise
under ``model.eval()``/``model.train(mode)`` toggling, the buffer written back by
``buffer[inds] = samples.cpu()``, ``p(x)`` and ``p(y|x)`` losses weighted apart, a
``MultiStepLR``, calibration by expected calibration error over confidence bins, and
out-of-distribution scores compared by a rank-based AUROC."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser("Energy Based Models and Shit")
parser.add_argument("--n_classes", type=int, default=3)
parser.add_argument("--buffer_size", type=int, default=200)
parser.add_argument("--reinit_freq", type=float, default=0.05)
parser.add_argument("--n_steps", type=int, default=10)
parser.add_argument("--sgld_lr", type=float, default=1.0)
parser.add_argument("--sgld_std", type=float, default=1e-2)
parser.add_argument("--p_x_weight", type=float, default=1.0)
parser.add_argument("--p_y_given_x_weight", type=float, default=1.0)
parser.add_argument("--n_iters", type=int, default=40)
args = parser.parse_args([])
torch.manual_seed(1)
np.random.seed(1)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def blobs(n, g):
    centers = torch.tensor([[2.0, 0.0], [-1.0, 1.7], [-1.0, -1.7]])
    y = torch.randint(0, 3, (n,), generator=g)
    return centers[y] + 0.5 * torch.randn(n, 2, generator=g), y


class F_(nn.Module):
    def __init__(self, n_classes=3):
        super().__init__()
        self.f = nn.Sequential(nn.Linear(2, 64), nn.SiLU(), nn.Linear(64, 64), nn.SiLU())
        self.class_output = nn.Linear(64, n_classes)

    def forward(self, x, y=None):
        logits = self.classify(x)
        if y is None:
            return logits.logsumexp(1)
        return torch.gather(logits, 1, y[:, None])

    def classify(self, x):
        return self.class_output(self.f(x)).squeeze()


def init_random(bs):
    return torch.FloatTensor(bs, 2).uniform_(-3, 3)


def sample_p_0(replay_buffer, bs):
    if len(replay_buffer) == 0:
        return init_random(bs), []
    inds = torch.randint(0, args.buffer_size, (bs,))
    buffer_samples = replay_buffer[inds]
    random_samples = init_random(bs)
    choose_random = (torch.rand(bs) < args.reinit_freq).float()[:, None]
    samples = choose_random * random_samples + (1 - choose_random) * buffer_samples
    return samples.to(device), inds


def sample_q(f, replay_buffer, bs, n_steps=args.n_steps):
    was_training = f.training
    f.eval()
    init_sample, buffer_inds = sample_p_0(replay_buffer, bs)
    x_k = torch.autograd.Variable(init_sample, requires_grad=True)
    for k in range(n_steps):
        f_prime = torch.autograd.grad(f(x_k).sum(), [x_k], retain_graph=True)[0]
        x_k.data += args.sgld_lr * f_prime + args.sgld_std * torch.randn_like(x_k)
    f.train(was_training)
    final_samples = x_k.detach()
    if len(replay_buffer) > 0:
        replay_buffer[buffer_inds] = final_samples.cpu()
    return final_samples


g = torch.Generator().manual_seed(0)
x_train, y_train = blobs(300, g)
x_test, y_test = blobs(150, g)
f = F_(args.n_classes).to(device)
print(f)
optim = torch.optim.Adam(f.parameters(), lr=3e-3, betas=(0.9, 0.999), weight_decay=0.0)
sched = torch.optim.lr_scheduler.MultiStepLR(optim, milestones=[25, 35], gamma=0.3)
replay_buffer = init_random(args.buffer_size)
print("buffer", tuple(replay_buffer.shape), "range", replay_buffer.min().item(), replay_buffer.max().item())
for it in range(args.n_iters):
    idx = torch.randint(0, 300, (64,), generator=g)
    x_lab, y_lab = x_train[idx].to(device), y_train[idx].to(device)
    L = 0.0
    if args.p_x_weight > 0:
        x_q = sample_q(f, replay_buffer, 64)
        fp_all, fq_all = f(x_lab), f(x_q)
        fp, fq = fp_all.mean(), fq_all.mean()
        l_p_x = -(fp - fq)
        L += args.p_x_weight * l_p_x
    if args.p_y_given_x_weight > 0:
        logits = f.classify(x_lab)
        l_p_y_given_x = nn.CrossEntropyLoss()(logits, y_lab)
        acc = (logits.max(1)[1] == y_lab).float().mean()
        L += args.p_y_given_x_weight * l_p_y_given_x
    if L.abs().item() > 1e8:
        print("BAD BOIIIIIIIIII")
        break
    optim.zero_grad()
    L.backward()
    optim.step()
    sched.step()
    if it % 10 == 9:
        print(f"P(x) | {it + 1}: f(x_p_d)={fp.item():.4f} f(x_q)={fq.item():.4f} "
              f"P(y|x) {l_p_y_given_x.item():.4f} acc {acc.item():.4f}")

f.eval()
with torch.no_grad():
    probs = F.softmax(f.classify(x_test), 1)
    conf, pred = probs.max(1)
    correct = pred.eq(y_test).float()
    bins = torch.linspace(0, 1, 6)
    ece = torch.zeros(())
    for lo, hi in zip(bins[:-1], bins[1:]):
        in_bin = (conf > lo) & (conf <= hi)
        if in_bin.any():
            ece += in_bin.float().mean() * (conf[in_bin].mean() - correct[in_bin].mean()).abs()
    print(f"test acc {correct.mean().item():.4f} ece {ece.item():.4f}")
    ood = torch.randn(150, 2) * 0.3 + torch.tensor([6.0, 6.0])
    s_in, s_out = f(x_test), f(ood)
    scores = torch.cat([s_in, s_out])
    labels = torch.cat([torch.ones(150), torch.zeros(150)])
    ranks = scores.argsort().argsort().float() + 1
    auroc = (ranks[labels == 1].sum() - 150 * 151 / 2) / (150 * 150)
    print(f"OOD AUROC (logsumexp score) {auroc.item():.4f}; mean energy in {-s_in.mean().item():.4f} "
          f"out {-s_out.mean().item():.4f}")
print("buffer after training mean", replay_buffer.mean(0).tolist())
