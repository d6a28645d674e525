"""Semi-supervised learning the way kekmodel/FixMatch-pytorch writes it: labelled and
unlabelled datasets built from index lists (``x_u_split``), ``RandomSampler`` with
replacement feeding both loaders (two workers each, a ``collate_fn`` stacking the weak and
strong views), ``interleave``/``de_interleave`` around one forward pass, pseudo-labels by
``torch.max`` of the detached softmax above a threshold, a ``ModelEMA`` over parameters and
buffers, the cosine schedule with warmup as a ``LambdaLR``, no weight decay on biases and
BatchNorm, a disabled ``GradScaler``, evaluation under CPU bfloat16 ``autocast``, and a
checkpoint with the EMA state."""
import copy
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import LambdaLR
from torch.utils.data import DataLoader, Dataset, RandomSampler, SequentialSampler


@dataclass
class Config:
    num_labeled: int = 40
    num_classes: int = 4
    batch_size: int = 8
    mu: int = 3
    threshold: float = 0.7
    lambda_u: float = 1.0
    T: float = 1.0
    lr: float = 0.03
    wdecay: float = 5e-4
    warmup: int = 2
    total_steps: int = 12
    ema_decay: float = 0.9
    seed: int = 5


args = Config()
print(args)
np.random.seed(args.seed)
torch.manual_seed(args.seed)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

rng = np.random.RandomState(0)
centers = rng.randn(args.num_classes, 3, 1, 1).astype(np.float32)
labels_all = rng.randint(0, args.num_classes, 400)
images_all = (centers[labels_all] + 0.8 * rng.randn(400, 3, 8, 8)).astype(np.float32)


def x_u_split(labels):
    label_per_class = args.num_labeled // args.num_classes
    labels = np.array(labels)
    labeled_idx = []
    unlabeled_idx = np.array(range(len(labels)))
    for i in range(args.num_classes):
        idx = np.where(labels == i)[0]
        idx = np.random.choice(idx, label_per_class, False)
        labeled_idx.extend(idx)
    labeled_idx = np.array(labeled_idx)
    assert len(labeled_idx) == args.num_labeled
    np.random.shuffle(labeled_idx)
    return labeled_idx, unlabeled_idx


def weak(x, rs):
    if rs.rand() < 0.5:
        x = x[:, :, ::-1]
    dx, dy = rs.randint(-1, 2, 2)
    return np.roll(x, (dy, dx), axis=(1, 2)).copy()


def strong(x, rs):
    x = weak(x, rs) * rs.uniform(0.6, 1.4) + rs.uniform(-0.3, 0.3)
    cy, cx = rs.randint(0, 8, 2)
    x[:, max(cy - 2, 0):cy + 2, max(cx - 2, 0):cx + 2] = 0.5
    return x.astype(np.float32)


class SSLData(Dataset):
    def __init__(self, indexs, unlabeled=False):
        self.data, self.targets = images_all[indexs], labels_all[indexs]
        self.unlabeled = unlabeled

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        rs = np.random.RandomState(index)  # per-item augmentation, independent of workers
        img, target = self.data[index], int(self.targets[index])
        if self.unlabeled:
            return (torch.from_numpy(weak(img, rs)), torch.from_numpy(strong(img, rs))), target
        return torch.from_numpy(weak(img, rs)), target


def collate_views(batch):
    views, t = zip(*batch)
    w, s = zip(*views)
    return (torch.stack(w), torch.stack(s)), torch.tensor(t)


def interleave(x, size):
    s = list(x.shape)
    return x.reshape([-1, size] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])


def de_interleave(x, size):
    s = list(x.shape)
    return x.reshape([size, -1] + s[1:]).transpose(0, 1).reshape([-1] + s[1:])


class WideBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(cin, momentum=0.001)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout, momentum=0.001)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.shortcut = nn.Conv2d(cin, cout, 1, stride, bias=False) if cin != cout else None

    def forward(self, x):
        o = F.leaky_relu(self.bn1(x), 0.1)
        y = self.conv2(F.leaky_relu(self.bn2(self.conv1(o)), 0.1))
        return y + (self.shortcut(o) if self.shortcut is not None else x)


class WideResNet(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.block1 = WideBlock(8, 8, 1)
        self.block2 = WideBlock(8, 16, 2)
        self.bn = nn.BatchNorm2d(16, momentum=0.001)
        self.fc = nn.Linear(16, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="leaky_relu")
            elif isinstance(m, nn.Linear):
                nn.init.xavier_normal_(m.weight)
                nn.init.constant_(m.bias, 0.0)

    def forward(self, x):
        out = F.leaky_relu(self.bn(self.block2(self.block1(self.conv1(x)))), 0.1)
        return self.fc(F.adaptive_avg_pool2d(out, 1).view(-1, 16))


class ModelEMA(object):
    def __init__(self, model, decay):
        self.ema = copy.deepcopy(model)
        self.ema.eval()
        self.decay = decay
        self.param_keys = [k for k, _ in self.ema.named_parameters()]
        self.buffer_keys = [k for k, _ in self.ema.named_buffers()]
        for p in self.ema.parameters():
            p.requires_grad_(False)

    def update(self, model):
        with torch.no_grad():
            msd = model.state_dict()
            esd = self.ema.state_dict()
            for k in self.param_keys:
                model_v = msd[k].detach()
                ema_v = esd[k]
                esd[k].copy_(ema_v * self.decay + (1. - self.decay) * model_v)
            for k in self.buffer_keys:
                esd[k].copy_(msd[k])


def get_cosine_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps,
                                    num_cycles=7. / 16., last_epoch=-1):
    def _lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        no_progress = float(current_step - num_warmup_steps) / \
            float(max(1, num_training_steps - num_warmup_steps))
        return max(0., math.cos(math.pi * num_cycles * no_progress))
    return LambdaLR(optimizer, _lr_lambda, last_epoch)


labeled_idx, unlabeled_idx = x_u_split(labels_all[:300])
labeled_dataset, unlabeled_dataset = SSLData(labeled_idx), SSLData(unlabeled_idx, True)
test_dataset = SSLData(np.arange(300, 400))
labeled_trainloader = DataLoader(
    labeled_dataset, sampler=RandomSampler(labeled_dataset, replacement=True,
                                           num_samples=args.total_steps * args.batch_size,
                                           generator=torch.Generator().manual_seed(1)),
    batch_size=args.batch_size, num_workers=2, drop_last=True)
unlabeled_trainloader = DataLoader(
    unlabeled_dataset, sampler=RandomSampler(unlabeled_dataset, replacement=True,
                                             num_samples=args.total_steps * args.batch_size
                                             * args.mu,
                                             generator=torch.Generator().manual_seed(2)),
    batch_size=args.batch_size * args.mu, num_workers=2, drop_last=True,
    collate_fn=collate_views)
test_loader = DataLoader(test_dataset, sampler=SequentialSampler(test_dataset), batch_size=32)
print(len(labeled_trainloader), len(unlabeled_trainloader), len(test_loader))

model = WideResNet(args.num_classes).to(device)
no_decay = ["bias", "bn"]
grouped_parameters = [
    {"params": [p for n, p in model.named_parameters()
                if not any(nd in n for nd in no_decay)], "weight_decay": args.wdecay},
    {"params": [p for n, p in model.named_parameters()
                if any(nd in n for nd in no_decay)], "weight_decay": 0.0}]
optimizer = optim.SGD(grouped_parameters, lr=args.lr, momentum=0.9, nesterov=True)
scheduler = get_cosine_schedule_with_warmup(optimizer, args.warmup, args.total_steps)
scaler = torch.amp.GradScaler("cpu", enabled=False)
ema_model = ModelEMA(model, args.ema_decay)
print(optimizer)
print([len(g["params"]) for g in optimizer.param_groups], scaler.is_enabled())

model.train()
for step, ((inputs_x, targets_x), ((inputs_u_w, inputs_u_s), _)) in enumerate(
        zip(labeled_trainloader, unlabeled_trainloader)):
    batch_size = inputs_x.shape[0]
    inputs = interleave(torch.cat((inputs_x, inputs_u_w, inputs_u_s)), 2 * args.mu + 1)
    logits = model(inputs.to(device))
    logits = de_interleave(logits, 2 * args.mu + 1)
    logits_x = logits[:batch_size]
    logits_u_w, logits_u_s = logits[batch_size:].chunk(2)
    del logits
    Lx = F.cross_entropy(logits_x, targets_x, reduction="mean")
    pseudo_label = torch.softmax(logits_u_w.detach() / args.T, dim=-1)
    max_probs, targets_u = torch.max(pseudo_label, dim=-1)
    mask = max_probs.ge(args.threshold).float()
    Lu = (F.cross_entropy(logits_u_s, targets_u, reduction="none") * mask).mean()
    loss = Lx + args.lambda_u * Lu
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    scheduler.step()
    ema_model.update(model)
    model.zero_grad()
    print(f"step {step:2d} lr {scheduler.get_last_lr()[0]:.5f} Lx {Lx.item():.4f} "
          f"Lu {Lu.item():.4f} mask {mask.mean().item():.4f} "
          f"max_prob {max_probs.mean().item():.4f}")


def evaluate(net, use_amp):
    net.eval()
    correct, total_loss, n = 0, 0.0, 0
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=use_amp):
        for x, y in test_loader:
            out = net(x)
            total_loss += F.cross_entropy(out.float(), y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
            n += len(y)
            dtype = out.dtype
    return correct / n, total_loss / n, dtype


for name, net in (("model", model), ("ema", ema_model.ema)):
    for amp in (False, True):
        acc, loss, dtype = evaluate(net, amp)
        print(f"{name} amp={amp} acc {acc:.4f} loss {loss:.3f} out dtype {dtype}")

state = {"step": args.total_steps, "state_dict": model.state_dict(),
         "ema_state_dict": ema_model.ema.state_dict(), "acc": acc,
         "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
         "config": vars(args)}
torch.save(state, "checkpoint.pth.tar")
ckpt = torch.load("checkpoint.pth.tar", weights_only=False)
fresh = WideResNet(args.num_classes)
print(fresh.load_state_dict(ckpt["ema_state_dict"]))
print(sorted(ckpt.keys()), ckpt["scheduler"]["last_epoch"], ckpt["scheduler"]["_last_lr"])
print("bn buffers", {k: tuple(v.shape) for k, v in ckpt["state_dict"].items()
                     if "num_batches" in k})
print("ema fc", ckpt["ema_state_dict"]["fc.weight"][0])
