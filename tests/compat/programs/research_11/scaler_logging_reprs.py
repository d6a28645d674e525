"""What a training script logs, as scripts print it: ``logging`` records formatting tensors
and modules, ``print(optimizer)`` with several groups, scheduler and ``GradScaler`` state
dicts, an enabled ``torch.amp.GradScaler("cpu")`` that skips the step and backs off its
scale when a gradient overflows (``get_scale``, ``get_growth_interval``, growth after clean
steps), ``set_printoptions`` changes, ``state_dict().keys()``, ``finfo``/``iinfo``,
``torch.backends`` flags, ``inference_mode`` and ``no_grad`` as decorators, and repr of
a ``DataLoader``'s pieces."""
import logging
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(levelname)s:%(name)s:%(message)s")
logger = logging.getLogger("train")
torch.manual_seed(0)
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
print("flags", torch.backends.cudnn.benchmark, torch.backends.cuda.matmul.allow_tf32,
      torch.backends.mkldnn.is_available() in (True, False), torch.cuda.is_available(),
      torch.backends.mps.is_available())

model = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
logger.info("model:\n%s", model)
logger.info("params %d trainable %d", sum(p.numel() for p in model.parameters()),
            sum(p.numel() for p in model.parameters() if p.requires_grad))
print(model.state_dict().keys())
optimizer = torch.optim.SGD([{"params": model[0].parameters()},
                             {"params": model[3].parameters(), "lr": 0.05, "nesterov": True,
                              "momentum": 0.9}], lr=0.1, momentum=0.8, weight_decay=1e-4)
print(optimizer)
scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2, 4], gamma=0.5)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_factor=2.0, backoff_factor=0.5,
                              growth_interval=3)
print("scaler", scaler.is_enabled(), scaler.get_scale(), scaler.get_growth_interval(),
      scaler.get_backoff_factor(), scaler.state_dict())

X = torch.randn(32, 6)
y = (X[:, 0] > 0).long()
ds = TensorDataset(X, y)
loader = DataLoader(ds, batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(1))
print(type(loader.sampler).__name__, type(loader.batch_sampler).__name__, loader.batch_size,
      loader.drop_last, len(loader), loader.num_workers)
bs = BatchSampler(RandomSampler(range(10), generator=torch.Generator().manual_seed(2)), 4, False)
print(list(bs))

for epoch in range(6):
    for step, (xb, yb) in enumerate(loader):
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(xb), yb)
        scaler.scale(loss).backward()
        if epoch == 1 and step == 0:
            model[3].weight.grad[0, 0] = float("inf")
        if epoch == 3 and step == 1:
            model[0].bias.grad[2] = float("nan")
        w_before = model[3].weight.detach().clone()
        scaler.step(optimizer)
        scaler.update()
        if not torch.equal(w_before, model[3].weight):
            continue
        logger.warning("epoch %d step %d skipped, scale now %s", epoch, step, scaler.get_scale())
    scheduler.step()
    logger.info("epoch %d loss %.5f lr %s scale %s", epoch, loss.item(), scheduler.get_last_lr(),
                scaler.get_scale())
print(scheduler.state_dict())
print(scaler.state_dict())
print({k: (v if not torch.is_tensor(v) else v.shape) for k, v in optimizer.state_dict()["param_groups"][1].items()})

torch.set_printoptions(precision=3, sci_mode=False, linewidth=60)
print(model[0].weight[:2])
print(torch.tensor([1e-8, 123456.789, -0.5]))
torch.set_printoptions(profile="default")
print(torch.tensor([1e-8, 123456.789, -0.5]))
print(torch.finfo(torch.float16), torch.finfo(torch.bfloat16).eps, torch.iinfo(torch.int16))
print(loss, type(loss.grad_fn).__name__, loss.grad_fn.name(), loss.grad_fn.next_functions[0][0].name())


@torch.inference_mode()
def predict(x):
    return model(x).softmax(-1)


@torch.no_grad()
def evaluate(x):
    return model(x).argmax(-1)


model.eval()
p = predict(X[:3])
print(p, p.requires_grad, p.is_inference(), evaluate(X[:5]))
try:
    p.add_(1.0) if False else (p * 2).sum().backward()
except RuntimeError as e:
    print("RuntimeError:", str(e).split("\n")[0])
