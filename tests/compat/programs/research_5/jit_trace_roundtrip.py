"""The TorchScript deployment tutorials' round trip: torch.jit.trace a CNN (with an example
input and check_inputs), torch.jit.script a module with control flow and a scripted helper,
save both to a file and to a BytesIO, load them back (map_location, _extra_files), and check
the loaded modules agree with the eager ones, train a loaded one a step, and freeze one."""
import io
import os
import tempfile
from typing import List, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 3 * 3, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
        return F.log_softmax(self.fc(torch.flatten(x, 1)), dim=1)


@torch.jit.script
def clamp_norm(x: torch.Tensor, max_norm: float) -> torch.Tensor:
    n = torch.linalg.vector_norm(x, 2.0, dim=-1, keepdim=True)
    if bool((n > max_norm).any()):
        x = x * (max_norm / n.clamp(min=max_norm))
    return x


class Gate(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.cell = nn.GRUCell(3, hidden)
        self.out = nn.Linear(hidden, 2)
        self.steps = 3

    def forward(self, xs: torch.Tensor, h: torch.Tensor) -> Tuple[torch.Tensor, List[float]]:
        norms: List[float] = []
        for i in range(xs.size(0)):
            h = self.cell(xs[i], h)
            if i % 2 == 0:
                h = clamp_norm(h, 1.5)
            norms.append(float(h.norm()))
        return self.out(h), norms


net = Net().eval()
example = torch.randn(2, 1, 8, 8)
traced = torch.jit.trace(net, example, check_inputs=[(torch.randn(3, 1, 8, 8),)])
print("traced type", type(traced).__name__, isinstance(traced, torch.jit.ScriptModule))
x = torch.randn(5, 1, 8, 8)
print("trace matches", torch.allclose(traced(x), net(x)))

gate = Gate(6)
scripted = torch.jit.script(gate)
xs, h0 = torch.randn(4, 2, 3), torch.zeros(2, 6)
y, norms = scripted(xs, h0)
ye, norms_e = gate(xs, h0)
print("script matches", torch.allclose(y, ye), [round(n, 4) for n in norms])

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "traced.pt")
    traced.save(path)
    torch.jit.save(scripted, os.path.join(d, "gate.pt"), _extra_files={"vocab.txt": "a b c"})
    loaded = torch.jit.load(path, map_location="cpu")
    extra = {"vocab.txt": ""}
    gate2 = torch.jit.load(os.path.join(d, "gate.pt"), _extra_files=extra)
print("extra file", repr(extra["vocab.txt"]))
print("loaded traced", torch.equal(loaded(x), traced(x)))
print("loaded gate", torch.allclose(gate2(xs, h0)[0], y), gate2.steps)
buf = io.BytesIO()
torch.jit.save(loaded, buf)
buf.seek(0)
again = torch.jit.load(buf)
print("bytesio", torch.equal(again(x), net(x)))
print("state keys", list(again.state_dict())[:4])

# fine-tune the loaded script module a few steps, as deployment-side training does
again.train()
opt = torch.optim.SGD(again.parameters(), lr=0.1, momentum=0.9)
target = torch.randint(0, 10, (5,))
for step in range(3):
    loss = F.nll_loss(again(x), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"script step {step} loss {loss.item():.5f}")
frozen = torch.jit.freeze(torch.jit.script(Net().eval()))
print("frozen", type(frozen).__name__, tuple(frozen(x).shape))
