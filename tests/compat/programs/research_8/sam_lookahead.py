"""Sharpness-aware minimisation the way davda54/sam writes it: an ``Optimizer`` subclass
wrapping a base optimizer class and sharing its ``param_groups``, ``first_step``/
``second_step`` under ``@torch.no_grad()``, the closure form through
``torch.enable_grad()(closure)``, adaptive SAM, BatchNorm running statistics switched off
for the second pass by zeroing ``momentum``, smoothed cross-entropy, a step-wise learning
rate written into the groups; a Lookahead wrapper (slow weights in its ``state``), the
gradient-clipping helpers (``clip_grad_norm_`` returning the norm, ``get_total_norm`` and
``clip_grads_with_norm_``, ``clip_grad_value_``, ``error_if_nonfinite``), a DataLoader
with workers, a ``collate_fn`` and ``pin_memory``, and optimizer state saved and
reloaded."""
import argparse
from collections import OrderedDict, defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, adaptive=False, **kwargs):
        assert rho >= 0.0, f"Invalid rho, should be non-negative: {rho}"
        defaults = dict(rho=rho, adaptive=adaptive, **kwargs)
        super(SAM, self).__init__(params, defaults)
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups
        self.defaults.update(self.base_optimizer.defaults)

    @torch.no_grad()
    def first_step(self, zero_grad=False):
        grad_norm = self._grad_norm()
        for group in self.param_groups:
            scale = group["rho"] / (grad_norm + 1e-12)
            for p in group["params"]:
                if p.grad is None:
                    continue
                self.state[p]["old_p"] = p.data.clone()
                e_w = (torch.pow(p, 2) if group["adaptive"] else 1.0) * p.grad * scale.to(p)
                p.add_(e_w)
        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def second_step(self, zero_grad=False):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.data = self.state[p]["old_p"]
        self.base_optimizer.step()
        if zero_grad:
            self.zero_grad()

    @torch.no_grad()
    def step(self, closure=None):
        assert closure is not None, "Sharpness Aware Minimization requires closure"
        closure = torch.enable_grad()(closure)
        self.first_step(zero_grad=True)
        closure()
        self.second_step()

    def _grad_norm(self):
        shared_device = self.param_groups[0]["params"][0].device
        norm = torch.norm(
            torch.stack([
                ((torch.abs(p) if group["adaptive"] else 1.0) * p.grad).norm(p=2).to(shared_device)
                for group in self.param_groups for p in group["params"]
                if p.grad is not None
            ]),
            p=2,
        )
        return norm

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self.base_optimizer.param_groups = self.param_groups


class Lookahead(torch.optim.Optimizer):
    def __init__(self, base_optimizer, alpha=0.5, k=6):
        # NOTE super().__init__() not called on purpose; Optimizer.zero_grad wraps ``step``
        # with the hook-running wrapper, which needs these two
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"Invalid slow update rate: {alpha}")
        defaults = dict(lookahead_alpha=alpha, lookahead_k=k, lookahead_step=0)
        self._base_optimizer = base_optimizer
        self.param_groups = base_optimizer.param_groups
        self.defaults = base_optimizer.defaults
        self.defaults.update(defaults)
        self.state = defaultdict(dict)
        for name, default in defaults.items():
            for group in self._base_optimizer.param_groups:
                group.setdefault(name, default)

    @torch.no_grad()
    def update_slow(self, group):
        for fast_p in group["params"]:
            if fast_p.grad is None:
                continue
            param_state = self._base_optimizer.state[fast_p]
            if "lookahead_slow_buff" not in param_state:
                param_state["lookahead_slow_buff"] = torch.empty_like(fast_p)
                param_state["lookahead_slow_buff"].copy_(fast_p)
            slow = param_state["lookahead_slow_buff"]
            slow.add_(fast_p - slow, alpha=group["lookahead_alpha"])
            fast_p.copy_(slow)

    def step(self, closure=None):
        loss = self._base_optimizer.step(closure)
        for group in self._base_optimizer.param_groups:
            group["lookahead_step"] += 1
            if group["lookahead_step"] % group["lookahead_k"] == 0:
                self.update_slow(group)
        return loss

    def state_dict(self):
        return self._base_optimizer.state_dict()

    def load_state_dict(self, state_dict):
        self._base_optimizer.load_state_dict(state_dict)
        self.param_groups = self._base_optimizer.param_groups


def disable_running_stats(model):
    def _disable(module):
        if isinstance(module, nn.BatchNorm2d):
            module.backup_momentum = module.momentum
            module.momentum = 0

    model.apply(_disable)


def enable_running_stats(model):
    def _enable(module):
        if isinstance(module, nn.BatchNorm2d) and hasattr(module, "backup_momentum"):
            module.momentum = module.backup_momentum

    model.apply(_enable)


def smooth_crossentropy(pred, gold, smoothing=0.1):
    n_class = pred.size(1)
    one_hot = torch.full_like(pred, fill_value=smoothing / (n_class - 1))
    one_hot.scatter_(dim=1, index=gold.unsqueeze(1), value=1.0 - smoothing)
    log_prob = F.log_softmax(pred, dim=1)
    return F.kl_div(input=log_prob, target=one_hot, reduction="none").sum(-1)


class StepLR:
    def __init__(self, optimizer, learning_rate, total_epochs):
        self.optimizer = optimizer
        self.total_epochs = total_epochs
        self.base = learning_rate

    def __call__(self, epoch):
        if epoch < self.total_epochs * 3 / 10:
            lr = self.base
        elif epoch < self.total_epochs * 6 / 10:
            lr = self.base * 0.2
        else:
            lr = self.base * 0.2 ** 2
        for param_group in self.optimizer.param_groups:
            param_group["lr"] = lr

    def lr(self):
        return self.optimizer.param_groups[0]["lr"]


class BasicBlock(nn.Module):
    def __init__(self, in_planes, out_planes, stride):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_planes, momentum=0.001)
        self.conv1 = nn.Conv2d(in_planes, out_planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_planes, momentum=0.001)
        self.conv2 = nn.Conv2d(out_planes, out_planes, 3, 1, 1, bias=False)
        self.shortcut = (nn.Conv2d(in_planes, out_planes, 1, stride, bias=False)
                         if in_planes != out_planes or stride != 1 else None)

    def forward(self, x):
        o = F.leaky_relu(self.bn1(x), 0.1)
        y = self.conv1(o)
        y = self.conv2(F.leaky_relu(self.bn2(y), 0.1))
        return y + (self.shortcut(o) if self.shortcut is not None else x)


class WideResNet(nn.Module):
    def __init__(self, width=2, labels=4):
        super().__init__()
        c = [8, 8 * width, 16 * width]
        self.f = nn.Sequential(
            nn.Conv2d(3, c[0], 3, 1, 1, bias=False),
            BasicBlock(c[0], c[1], 1),
            BasicBlock(c[1], c[2], 2),
            nn.BatchNorm2d(c[2], momentum=0.001),
            nn.LeakyReLU(0.1),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(c[2], labels),
        )
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="leaky_relu")
            elif isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.f(x)


class Shapes(Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 3, 8, 8, generator=g)
        self.y = torch.randint(0, 4, (n,), generator=g)
        self.x[torch.arange(n), self.y % 3, :, : 2 + int(self.y.max())] += 1.5

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"image": self.x[i], "label": int(self.y[i])}


def collate(batch):
    images = torch.stack([b["image"] for b in batch])
    labels = torch.tensor([b["label"] for b in batch], dtype=torch.long)
    return images, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--adaptive", default=True, type=bool)
    parser.add_argument("--batch_size", default=16, type=int)
    parser.add_argument("--epochs", default=3, type=int)
    parser.add_argument("--label_smoothing", default=0.1, type=float)
    parser.add_argument("--learning_rate", default=0.1, type=float)
    parser.add_argument("--momentum", default=0.9, type=float)
    parser.add_argument("--rho", default=2.0, type=float)
    parser.add_argument("--weight_decay", default=0.0005, type=float)
    args = parser.parse_args([])

    torch.manual_seed(42)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    train = DataLoader(Shapes(64, 1), batch_size=args.batch_size, shuffle=True,
                       num_workers=2, collate_fn=collate, pin_memory=torch.cuda.is_available(),
                       generator=torch.Generator().manual_seed(3), persistent_workers=True)
    test = DataLoader(Shapes(32, 2), batch_size=32, collate_fn=collate)

    model = WideResNet().to(device)
    base_optimizer = torch.optim.SGD
    optimizer = SAM(model.parameters(), base_optimizer, rho=args.rho, adaptive=args.adaptive,
                    lr=args.learning_rate, momentum=args.momentum,
                    weight_decay=args.weight_decay)
    print(optimizer)
    print("defaults:", sorted(optimizer.defaults))
    scheduler = StepLR(optimizer, args.learning_rate, args.epochs)

    for epoch in range(args.epochs):
        model.train()
        total, correct, count = 0.0, 0, 0
        for inputs, targets in train:
            inputs, targets = inputs.to(device), targets.to(device)
            enable_running_stats(model)
            predictions = model(inputs)
            loss = smooth_crossentropy(predictions, targets, smoothing=args.label_smoothing)
            loss.mean().backward()
            optimizer.first_step(zero_grad=True)

            disable_running_stats(model)
            smooth_crossentropy(model(inputs), targets,
                                smoothing=args.label_smoothing).mean().backward()
            optimizer.second_step(zero_grad=True)

            with torch.no_grad():
                correct += (torch.argmax(predictions, 1) == targets).sum().item()
                total += loss.sum().item()
                count += targets.size(0)
        scheduler(epoch)
        model.eval()
        with torch.no_grad():
            inputs, targets = next(iter(test))
            acc = (model(inputs).argmax(1) == targets).float().mean()
        print(f"epoch {epoch} | loss {total / count:.4f} | train acc {correct / count:.3f} "
              f"| test acc {acc.item():.3f} | lr {scheduler.lr():.4f}")

    bn = model.f[1].bn1
    print("bn running mean:", bn.running_mean[:4], "momentum:", bn.momentum)

    # the closure form
    inputs, targets = next(iter(test))

    def closure():
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        return loss

    model.train()
    F.cross_entropy(model(inputs), targets).backward()
    optimizer.step(closure)
    optimizer.zero_grad()
    sd = optimizer.state_dict()
    print("state keys:", sorted(sd["state"][0]), "groups:", len(sd["param_groups"]))
    torch.save({"model": model.state_dict(), "optimizer": sd}, "sam.pt")

    model2 = WideResNet()
    opt2 = SAM(model2.parameters(), torch.optim.SGD, rho=args.rho, adaptive=True, lr=0.1,
               momentum=0.9)
    ckpt = torch.load("sam.pt")
    model2.load_state_dict(ckpt["model"])
    opt2.load_state_dict(ckpt["optimizer"])
    print("groups shared:", opt2.base_optimizer.param_groups is opt2.param_groups,
          "lr:", opt2.param_groups[0]["lr"])
    # the checkpoint's state lands in the wrapper, not in the base optimizer
    first = next(model2.parameters())
    print("old_p:", opt2.state[first]["old_p"].flatten()[:4],
          "base state:", len(opt2.base_optimizer.state))

    # Lookahead around Adam, with the clipping helpers
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
    opt = Lookahead(torch.optim.Adam(net.parameters(), lr=0.05), alpha=0.5, k=3)
    x, y = torch.randn(32, 6), torch.randn(32, 1)
    for step in range(7):
        opt.zero_grad()
        loss = F.mse_loss(net(x), y)
        loss.backward()
        if step % 3 == 0:
            norm = nn.utils.clip_grad_norm_(net.parameters(), max_norm=0.5)
        elif step % 3 == 1:
            grads = [p.grad for p in net.parameters()]
            norm = nn.utils.get_total_norm(grads, norm_type=2.0)
            nn.utils.clip_grads_with_norm_(net.parameters(), 0.25, norm)
        else:
            nn.utils.clip_grad_value_(net.parameters(), clip_value=0.01)
            norm = nn.utils.get_total_norm([p.grad for p in net.parameters()], norm_type="inf")
        opt.step()
        print(f"la step {step} loss {loss.item():.5f} norm {norm.item():.5f} "
              f"slow {opt.param_groups[0]['lookahead_step']}")
    slow = opt._base_optimizer.state[net[0].weight]["lookahead_slow_buff"]
    print("slow == fast:", torch.equal(slow, net[0].weight))
    print("lookahead state:", sorted(opt.state_dict()["state"][0]))

    net[0].weight.grad = torch.full_like(net[0].weight, float("nan"))
    try:
        nn.utils.clip_grad_norm_(net.parameters(), 1.0, error_if_nonfinite=True)
    except RuntimeError as e:
        print("RuntimeError:", e)
    n = nn.utils.clip_grad_norm_([], 1.0)
    print("empty norm:", n)


if __name__ == "__main__":
    main()
