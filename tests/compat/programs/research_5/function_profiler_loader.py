"""Three pieces of the extending-PyTorch and performance tutorials: a custom
autograd.Function (ctx.save_for_backward, ctx.needs_input_grad, once_differentiable,
mark_non_differentiable, set_materialize_grads) checked with gradcheck; torch.profiler
with a wait/warmup/active schedule, record_function ranges and a tensorboard_trace_handler
writing its traces; and an IterableDataset that shards itself by get_worker_info(), seeded in
worker_init_fn, read by a DataLoader with num_workers=2."""
import glob
import math
import os
import random
import tempfile

import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Function
from torch.autograd.function import once_differentiable
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import DataLoader, IterableDataset, get_worker_info


class LinearFunction(Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class ClampWithIndex(Function):
    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.set_materialize_grads(False)
        mask = (x >= lo) & (x <= hi)
        idx = mask.nonzero()
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(mask)
        return x.clamp(lo, hi), idx

    @staticmethod
    @once_differentiable
    def backward(ctx, grad, _grad_idx):
        if grad is None:
            return None, None, None
        (mask,) = ctx.saved_tensors
        return grad * mask, None, None


class MyLinear(nn.Module):
    def __init__(self, input_features, output_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(output_features, input_features))
        self.bias = nn.Parameter(torch.empty(output_features)) if bias else None
        self.weight.data.uniform_(-0.1, 0.1)
        if self.bias is not None:
            self.bias.data.uniform_(-0.1, 0.1)

    def forward(self, input):
        return LinearFunction.apply(input, self.weight, self.bias)

    def extra_repr(self):
        return f"input_features={self.weight.size(1)}, output_features={self.weight.size(0)}"


torch.manual_seed(0)
inp = (torch.randn(5, 4, dtype=torch.double, requires_grad=True),
       torch.randn(3, 4, dtype=torch.double, requires_grad=True),
       torch.randn(3, dtype=torch.double, requires_grad=True))
print("gradcheck", torch.autograd.gradcheck(LinearFunction.apply, inp, eps=1e-6, atol=1e-4))
x = torch.randn(6, requires_grad=True)
y, idx = ClampWithIndex.apply(x, -0.5, 0.5)
print("idx", idx.flatten().tolist(), idx.requires_grad, y.requires_grad)
y.sum().backward()
print("clamp grad", x.grad.tolist())
try:
    x2 = torch.randn(3, requires_grad=True)
    y2, _ = ClampWithIndex.apply(x2, -1.0, 1.0)
    g, = torch.autograd.grad(y2.sum(), x2, create_graph=True)
    g.sum().backward()
except RuntimeError as e:
    print("double backward:", str(e).split(".")[0])
print(MyLinear(4, 3))

# ---- profiler with a schedule and a trace handler ----------------------------------------
model = nn.Sequential(MyLinear(16, 32), nn.ReLU(), MyLinear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
data = torch.randn(64, 16)
target = torch.randn(64, 4)
steps_seen = []
with tempfile.TemporaryDirectory() as logdir:
    handler = torch.profiler.tensorboard_trace_handler(logdir, worker_name="worker0")

    def on_ready(prof):
        steps_seen.append(prof.step_num)
        handler(prof)

    with profile(activities=[ProfilerActivity.CPU],
                 schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=on_ready, record_shapes=True) as prof:
        for step in range(9):
            with record_function("train_step"):
                loss = nn.functional.mse_loss(model(data), target)
                opt.zero_grad()
                loss.backward()
                opt.step()
            prof.step()
    traces = sorted(glob.glob(os.path.join(logdir, "*.pt.trace.json")))
    print("trace files", len(traces), all(os.path.basename(t).startswith("worker0")
                                          for t in traces))
print("ready at steps", steps_seen, f"final loss {loss.item():.5f}")
names = {e.key for e in prof.key_averages()}
print("ranges", "train_step" in names, any("mm" in n for n in names))
row = [e for e in prof.key_averages() if e.key == "train_step"][0]
print("train_step count", row.count)


# ---- IterableDataset sharded across two workers ------------------------------------------
class RangeStream(IterableDataset):
    def __init__(self, start, end):
        super().__init__()
        self.start, self.end = start, end

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            lo, hi = self.start, self.end
        else:
            per = int(math.ceil((self.end - self.start) / float(info.num_workers)))
            lo = self.start + info.id * per
            hi = min(lo + per, self.end)
        for i in range(lo, hi):
            yield i, torch.randn(2), np.random.randint(0, 1000), random.random()


def worker_init_fn(worker_id):
    info = get_worker_info()
    seed = info.seed % 2 ** 32
    np.random.seed(seed)
    random.seed(seed)
    assert info.dataset.start == 3


ds = RangeStream(3, 17)
print("main", [i for i, *_ in DataLoader(ds, batch_size=None)][:5])
torch.manual_seed(1)
loader = DataLoader(ds, batch_size=3, num_workers=2, worker_init_fn=worker_init_fn,
                    persistent_workers=False)
seen = []
for ids, noise, npint, pyrand in loader:
    seen.extend(ids.tolist())
    print("batch", ids.tolist(), tuple(noise.shape), f"{noise.sum().item():.4f}",
          npint.tolist(), [round(v, 4) for v in pyrand.tolist()])
print("all items once", sorted(seen) == list(range(3, 17)))
g = torch.Generator().manual_seed(5)
print("generator", [b.tolist() for b, *_ in DataLoader(ds, batch_size=4, num_workers=2,
                                                       generator=g)][:2])
