"""Weight averaging as the SWA tutorial and timm's ModelEmaV3 users write it: a small
BatchNorm CNN trained with SGD and ``CosineAnnealingLR``, then from ``swa_start`` on an
``AveragedModel`` updated each epoch with ``SWALR`` (linear and cosine annealing), a second
``AveragedModel`` as an EMA through ``get_ema_multi_avg_fn`` with ``use_buffers=True``,
``update_bn`` over a loader of (input, target) pairs and over a loader of bare tensors, the
averaged models' ``n_averaged`` and ``state_dict`` keys, and a checkpoint of the SWA state."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 3, padding=1, bias=False), nn.BatchNorm2d(6), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(6, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


g = torch.Generator().manual_seed(1)
X = torch.randn(128, 1, 8, 8, generator=g)
proto = torch.randn(4, 1, 8, 8, generator=g)
Y = torch.einsum("nchw,kchw->nk", X, proto).argmax(1)
train_loader = DataLoader(TensorDataset(X[:96], Y[:96]), batch_size=16, shuffle=True,
                          generator=torch.Generator().manual_seed(2))
test_x, test_y = X[96:].to(device, non_blocking=True), Y[96:].to(device, non_blocking=True)

model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10)
swa_model = AveragedModel(model)
ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.8), use_buffers=True)
swa_start = 3
swa_scheduler = SWALR(optimizer, swa_lr=0.02, anneal_epochs=2, anneal_strategy="linear")
print(swa_model.module is not model, type(swa_model.n_averaged), swa_model.n_averaged)


def evaluate(m):
    m.eval()
    with torch.no_grad():
        out = m(test_x)
    return F.cross_entropy(out, test_y).item(), (out.argmax(1) == test_y).float().mean().item()


for epoch in range(7):
    model.train()
    total = 0.0
    for x, y in train_loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        ema_model.update_parameters(model)
        total += loss.item() * len(x)
    if epoch >= swa_start:
        swa_model.update_parameters(model)
        swa_scheduler.step()
    else:
        scheduler.step()
    print(f"epoch {epoch} loss {total / 96:.5f} lr {optimizer.param_groups[0]['lr']:.6f} "
          f"test {evaluate(model)[0]:.5f} n_averaged swa {swa_model.n_averaged.item()} "
          f"ema {ema_model.n_averaged.item()}")

bn = swa_model.module.features[1]
print("swa bn before update_bn", bn.running_mean[:3], bn.num_batches_tracked)
update_bn(train_loader, swa_model, device=device)
print("swa bn after update_bn", bn.running_mean[:3], bn.running_var[:3], bn.num_batches_tracked,
      bn.momentum)
print("swa test loss/acc", evaluate(swa_model))
print("ema test loss/acc", evaluate(ema_model))

# update_bn over bare tensors (a loader of inputs only)
plain = AveragedModel(model)
update_bn(DataLoader(X[:96], batch_size=32), plain)
print("bare loader bn mean", plain.module.features[5].running_mean[:4])
print(sorted(swa_model.state_dict())[:4], len(swa_model.state_dict()))

# a cosine-annealed SWALR on a fresh optimizer, printing its lrs
opt2 = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.5)
s2 = SWALR(opt2, swa_lr=[0.05], anneal_epochs=4, anneal_strategy="cos")
lrs = []
for _ in range(6):
    lrs.append(round(opt2.param_groups[0]["lr"], 6))
    opt2.step()
    s2.step()
print("cos SWALR", lrs)

torch.save({"swa": swa_model.state_dict(), "ema": ema_model.state_dict(),
            "swa_scheduler": swa_scheduler.state_dict()}, "swa.pt")
ck = torch.load("swa.pt", weights_only=True)
again = AveragedModel(Net())
again.load_state_dict(ck["swa"])
print("reloaded", again.n_averaged.item(), evaluate(again), sorted(ck["swa_scheduler"]))
