"""Recent optimizers as their reference repositories write them, as ``torch.optim.Optimizer``
subclasses: Muon (momentum orthogonalised by the quintic Newton-Schulz iteration,
in bfloat16 on a single matrix, ``X.mT``, shape-dependent scaling) for the 2-D weights with an
AdamW for the rest, Lion (sign updates through ``torch._foreach`` ops and ``lerp_``),
schedule-free AdamW (``train()``/``eval()`` switching between y and x sequences, warmup by
``lr_max`` weighting), ``add_param_group``, step hooks, and ``state_dict`` round trips of
the custom state."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def zeropower_via_newtonschulz5(G, steps=5, dtype=torch.bfloat16):
    assert G.ndim >= 2
    a, b, c = (3.4445, -4.7750, 2.0315)
    X = G.to(dtype)
    if G.size(-2) > G.size(-1):
        X = X.mT
    X = X / (X.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for _ in range(steps):
        A = X @ X.mT
        B = b * A + c * A @ A
        X = a * X + B @ X
    if G.size(-2) > G.size(-1):
        X = X.mT
    return X


class Muon(torch.optim.Optimizer):
    def __init__(self, params, lr=0.02, weight_decay=0.0, momentum=0.95, nesterov=True, ns_steps=5,
                 ns_dtype=torch.bfloat16):
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_steps=ns_steps, ns_dtype=ns_dtype)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(g)
                buf = state["momentum_buffer"]
                buf.lerp_(g, 1 - group["momentum"])
                g = g.lerp_(buf, group["momentum"]) if group["nesterov"] else buf
                update = zeropower_via_newtonschulz5(g, group["ns_steps"], group["ns_dtype"])
                update *= max(1, g.size(-2) / g.size(-1)) ** 0.5
                p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_(update.reshape(p.shape).type_as(p), alpha=-group["lr"])
        return loss


class Lion(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            grads = [p.grad for p in params]
            exp_avgs = []
            for p in params:
                st = self.state[p]
                if len(st) == 0:
                    st["exp_avg"] = torch.zeros_like(p)
                exp_avgs.append(st["exp_avg"])
            beta1, beta2 = group["betas"]
            torch._foreach_mul_(params, 1 - group["lr"] * group["weight_decay"])
            updates = torch._foreach_mul(exp_avgs, beta1)
            torch._foreach_add_(updates, grads, alpha=1 - beta1)
            updates = [u.sign_() for u in updates]
            torch._foreach_add_(params, updates, alpha=-group["lr"])
            for ea, g in zip(exp_avgs, grads):
                ea.lerp_(g, 1 - beta2)


class AdamWScheduleFree(torch.optim.Optimizer):
    def __init__(self, params, lr=0.0025, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 warmup_steps=0, r=0.0, weight_lr_power=2.0):
        defaults = dict(lr=lr, betas=betas, eps=eps, r=r, k=0, warmup_steps=warmup_steps,
                        train_mode=False, weight_sum=0.0, lr_max=-1.0, weight_lr_power=weight_lr_power,
                        weight_decay=weight_decay)
        super().__init__(params, defaults)

    @torch.no_grad()
    def eval(self):
        for group in self.param_groups:
            if group["train_mode"]:
                for p in group["params"]:
                    if "z" in self.state[p]:
                        p.lerp_(end=self.state[p]["z"].to(p.device), weight=1 - 1 / group["betas"][0])
                group["train_mode"] = False

    @torch.no_grad()
    def train(self):
        for group in self.param_groups:
            if not group["train_mode"]:
                for p in group["params"]:
                    if "z" in self.state[p]:
                        p.lerp_(end=self.state[p]["z"].to(p.device), weight=1 - group["betas"][0])
                group["train_mode"] = True

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            eps, (beta1, beta2), decay, k = group["eps"], group["betas"], group["weight_decay"], group["k"]
            warmup_steps = group["warmup_steps"]
            sched = (k + 1) / warmup_steps if k < warmup_steps else 1.0
            bias_correction2 = 1 - beta2 ** (k + 1)
            lr = group["lr"] * sched * math.sqrt(bias_correction2)
            lr_max = group["lr_max"] = max(lr, group["lr_max"])
            weight = ((k + 1) ** group["r"]) * (lr_max ** group["weight_lr_power"])
            weight_sum = group["weight_sum"] = group["weight_sum"] + weight
            ckp1 = weight / weight_sum if weight_sum else 0.0
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                state = self.state[p]
                if "z" not in state:
                    state["z"] = torch.clone(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                z, exp_avg_sq = state["z"], state["exp_avg_sq"]
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.sqrt().add_(eps)
                grad_normalized = grad.div_(denom)
                if decay != 0:
                    grad_normalized.add_(p, alpha=decay)
                p.lerp_(end=z, weight=ckp1)
                p.add_(grad_normalized, alpha=lr * (beta1 * (1 - ckp1) - 1))
                z.sub_(grad_normalized, alpha=lr)
            group["k"] = k + 1


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))


g = torch.Generator().manual_seed(1)
X = torch.randn(64, 10, generator=g)
Y = (X[:, :4] + 0.1 * torch.randn(64, 4, generator=g)).argmax(1)

G = torch.randn(6, 10, generator=g)
O = zeropower_via_newtonschulz5(G)
print("NS dtype", O.dtype, "singular values", torch.linalg.svdvals(O.float()))
print("NS tall", zeropower_via_newtonschulz5(G.T).shape)

model = make_model()
hidden = [p for n, p in model.named_parameters() if p.ndim >= 2 and not n.startswith("4.")]
others = [p for n, p in model.named_parameters() if p.ndim < 2 or n.startswith("4.")]
# the iteration in bfloat16 only on an accelerator, as CPU ports of Muon do (a CPU bfloat16
# product rounds differently from a CUDA one anyway)
muon = Muon(hidden, lr=0.02, momentum=0.95,
            ns_dtype=torch.bfloat16 if torch.cuda.is_available() else torch.float32)
adamw = torch.optim.AdamW(others, lr=3e-3, betas=(0.9, 0.95), weight_decay=0.01)
counts = []
muon.register_step_post_hook(lambda opt, args, kwargs: counts.append(1))
for step in range(12):
    loss = F.cross_entropy(model(X), Y)
    for opt in (muon, adamw):
        opt.zero_grad(set_to_none=True)
    loss.backward()
    for opt in (muon, adamw):
        opt.step()
    if step % 4 == 3:
        print(f"muon step {step} loss {loss.item():.5f} w0 norm {model[0].weight.norm().item():.5f}")
print("post hook calls", len(counts), sorted(muon.state_dict()["state"][0]))

model = make_model()
lion = Lion(model.parameters(), lr=3e-4, weight_decay=0.1)
for step in range(12):
    loss = F.cross_entropy(model(X), Y)
    lion.zero_grad()
    loss.backward()
    lion.step()
print(f"lion loss {loss.item():.5f} exp_avg {lion.state[model[4].bias]['exp_avg']}")
sd = lion.state_dict()
lion2 = Lion(make_model().parameters(), lr=1.0)
lion2.load_state_dict(sd)
print("lion reloaded lr", lion2.param_groups[0]["lr"], lion2.param_groups[0]["betas"])
try:
    Lion(model.parameters(), lr=-1)
except ValueError as e:
    print("ValueError:", e)

model = make_model()
sf = AdamWScheduleFree(model.parameters(), lr=5e-3, warmup_steps=4, weight_decay=1e-4)
for epoch in range(3):
    model.train()
    sf.train()
    for i in range(0, 64, 16):
        loss = F.cross_entropy(model(X[i:i + 16]), Y[i:i + 16])
        sf.zero_grad()
        loss.backward()
        sf.step()
    model.eval()
    sf.eval()
    with torch.no_grad():
        ev = F.cross_entropy(model(X), Y)
    print(f"schedule-free epoch {epoch} train {loss.item():.5f} eval {ev.item():.5f} "
          f"k {sf.param_groups[0]['k']} lr_max {sf.param_groups[0]['lr_max']:.6f}")
sf.add_param_group({"params": [nn.Parameter(torch.ones(2))], "lr": 1e-2})
print(len(sf.param_groups), sf.param_groups[1]["train_mode"], sf.param_groups[1]["weight_sum"])
