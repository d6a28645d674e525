"""Graph-level tooling on one small model, the way the FX, torch.compile and torch.export
tutorials use it: symbolic_trace, a pass that swaps torch.add for torch.mul and one that
fuses a conv with its batch norm, subgraph_rewriter.replace_pattern, ShapeProp, a custom
Tracer leaf module; torch.compile with mode/dynamic and a custom backend that counts the
graphs it sees; torch.export.export with a dynamic batch dimension, run through
ExportedProgram.module() and saved/loaded."""
import copy
import io

import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        y = F.relu(self.bn(self.conv(x)))
        y = torch.add(y, y)
        y = y.mean(dim=(2, 3))
        return torch.sigmoid(self.fc(y)) + 1


net = Net().eval()
net.bn.running_mean.uniform_(-0.5, 0.5)
net.bn.running_var.uniform_(0.5, 1.5)
x = torch.randn(2, 3, 6, 6)
gm = fx.symbolic_trace(net)
print("ops", [n.op for n in gm.graph.nodes])
print("targets", [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"])


def swap_add(m: fx.GraphModule) -> fx.GraphModule:
    for node in m.graph.nodes:
        if node.op == "call_function" and node.target == torch.add:
            node.target = torch.mul
    m.graph.lint()
    m.recompile()
    return m


def fuse_conv_bn(model: nn.Module) -> fx.GraphModule:
    model = copy.deepcopy(model)
    traced = fx.symbolic_trace(model)
    modules = dict(traced.named_modules())
    for node in traced.graph.nodes:
        if node.op != "call_module" or not isinstance(modules[node.target], nn.BatchNorm2d):
            continue
        prev = node.args[0]
        if prev.op != "call_module" or not isinstance(modules[prev.target], nn.Conv2d):
            continue
        conv, bn = modules[prev.target], modules[node.target]
        fused = torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
        setattr(traced, prev.target, fused)
        node.replace_all_uses_with(prev)
        traced.graph.erase_node(node)
    traced.graph.lint()
    traced.delete_all_unused_submodules()
    traced.recompile()
    return traced


swapped = swap_add(fx.symbolic_trace(net))
ref = net.fc(F.relu(net.bn(net.conv(x))).pow(2).mean(dim=(2, 3))).sigmoid() + 1
print("swap matches", torch.allclose(swapped(x), ref, atol=1e-6))
fused = fuse_conv_bn(net)
print("fused modules", [n for n, _ in fused.named_children()])
print("fused matches", torch.allclose(fused(x), net(x), atol=1e-5))


def pattern(a, b):
    return torch.sigmoid(a) + b


def replacement(a, b):
    return torch.tanh(a * 0.5) * 0.5 + 0.5 + b


gm2 = fx.symbolic_trace(net)
matches = fx.subgraph_rewriter.replace_pattern(gm2, pattern, replacement)
print("rewritten", len(matches), torch.allclose(gm2(x), net(x), atol=1e-5))
ShapeProp(gm).propagate(x)
print("shapes", [(n.name, tuple(n.meta["tensor_meta"].shape)) for n in gm.graph.nodes
                 if "tensor_meta" in n.meta])


class LeafTracer(fx.Tracer):
    def is_leaf_module(self, m, qualname):
        return isinstance(m, nn.BatchNorm2d) or super().is_leaf_module(m, qualname)


graph = LeafTracer().trace(net)
print("leaf modules", [n.target for n in graph.nodes if n.op == "call_module"])

# torch.compile with a counting backend, then the default one
seen = []


def counting_backend(gm: torch.fx.GraphModule, example_inputs):
    seen.append(len([n for n in gm.graph.nodes if n.op == "call_function"]))
    return gm.forward


compiled = torch.compile(net, backend=counting_backend)
print("compiled matches", torch.allclose(compiled(x), net(x)), len(seen) >= 1)
train_net = Net()
opt_net = torch.compile(train_net, dynamic=True, backend="aot_eager")
opt = torch.optim.SGD(train_net.parameters(), lr=0.1)
for step in range(3):
    loss = opt_net(torch.randn(4 + step, 3, 6, 6)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"compiled step {step} loss {loss.item():.6f}")
torch._dynamo.reset()

# torch.export with a dynamic batch
batch = torch.export.Dim("batch", min=1, max=64)
ep = torch.export.export(net, (x,), dynamic_shapes={"x": {0: batch}})
print("export", type(ep).__name__, [s.kind.name for s in ep.graph_signature.input_specs][:3])
mod = ep.module()
print("export matches", torch.allclose(mod(torch.ones(5, 3, 6, 6)), net(torch.ones(5, 3, 6, 6)),
                                       atol=1e-6))
buf = io.BytesIO()
torch.export.save(ep, buf)
buf.seek(0)
ep2 = torch.export.load(buf)
print("reloaded matches", torch.allclose(ep2.module()(x), net(x), atol=1e-6))
try:
    mod(torch.ones(2, 3, 7, 7))
except Exception as e:
    print("bad shape", type(e).__name__)
