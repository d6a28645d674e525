"""Memory-saving and mixed-precision training as the AMP and activation-checkpointing recipes
write them on CPU: residual blocks run through torch.utils.checkpoint (non-reentrant, then
reentrant), a Sequential through checkpoint_sequential, the forward under
torch.autocast("cpu", dtype=torch.bfloat16), and a torch.amp.GradScaler stepping the
optimiser, with unscale_ before clipping and the scaler's state saved and restored."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, dim * 2)
        self.fc2 = nn.Linear(dim * 2, dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.norm(x)))))


class Net(nn.Module):
    def __init__(self, dim=16, depth=3, use_reentrant=False):
        super().__init__()
        self.embed = nn.Linear(8, dim)
        self.blocks = nn.ModuleList(Block(dim) for _ in range(depth))
        self.tail = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim), nn.ReLU())
        self.head = nn.Linear(dim, 3)
        self.use_reentrant = use_reentrant
        self.grad_checkpointing = True

    def forward(self, x):
        x = self.embed(x)
        for blk in self.blocks:
            if self.grad_checkpointing and self.training:
                x = checkpoint(blk, x, use_reentrant=self.use_reentrant)
            else:
                x = blk(x)
        if self.training:
            x = checkpoint_sequential(self.tail, 2, x, use_reentrant=self.use_reentrant)
        else:
            x = self.tail(x)
        return self.head(x)


x = torch.randn(64, 8)
y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
for use_reentrant in (False, True):
    torch.manual_seed(1)
    model = Net(use_reentrant=use_reentrant)
    plain = Net()
    plain.load_state_dict(model.state_dict())
    plain.grad_checkpointing = False
    torch.manual_seed(2)
    loss_a = F.cross_entropy(model(x), y)
    loss_a.backward()
    torch.manual_seed(2)
    plain.train()
    out = plain.embed(x)
    for blk in plain.blocks:
        out = blk(out)
    loss_b = F.cross_entropy(plain.head(plain.tail(out)), y)
    loss_b.backward()
    same = all(torch.allclose(p.grad, q.grad, atol=1e-6)
               for p, q in zip(model.parameters(), plain.parameters()))
    print(f"reentrant={use_reentrant} loss {loss_a.item():.6f} plain {loss_b.item():.6f} "
          f"grads match {same}")

torch.manual_seed(3)
model = Net()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=2)
for step in range(6):
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    if step == 0:
        print("autocast dtypes", logits.dtype, loss.dtype)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    print(f"amp step {step} loss {loss.item():.4f} norm {norm.item():.4f} "
          f"scale {scaler.get_scale():.0f}")
state = scaler.state_dict()
fresh = torch.amp.GradScaler("cpu")
fresh.load_state_dict(state)
print("scaler state", sorted(state), fresh.get_scale(), fresh.get_growth_interval())
model.eval()
with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
    pred = model(x).argmax(1)
print("accuracy", (pred == y).float().mean().item())
