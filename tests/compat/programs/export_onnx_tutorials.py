"""torch.export and torch.onnx as their tutorials use them: export a module, print the ExportedProgram, its graph module and signature, run .module(), dynamic shapes with Dim, the errors for a wrong input and for data-dependent control flow, save/load of a .pt2, and ONNX export checked with onnxruntime when it is installed."""
import io
import os
import tempfile
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim, export
torch.manual_seed(0)


class MyModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(100, 10)

    def forward(self, x, y):
        return F.relu(self.lin(x + y), inplace=True)


mod = MyModule()
ep = export(mod, (torch.randn(8, 100), torch.randn(8, 100)))
print(type(ep).__name__)
print(ep.graph_signature)
print([(n.op, n.name) for n in ep.graph.nodes])
x, y = torch.randn(8, 100), torch.randn(8, 100)
print(torch.allclose(ep.module()(x, y), mod(x, y)))
print(type(ep.module()).__name__)
print(sorted(ep.state_dict))
try:
    ep.module()(torch.randn(4, 100), torch.randn(4, 100))
except Exception as e:
    print(type(e).__name__)

batch = Dim("batch")
dep = export(mod, (torch.randn(8, 100), torch.randn(8, 100)),
             dynamic_shapes={"x": {0: batch}, "y": {0: batch}})
print(dep.module()(torch.randn(3, 100), torch.randn(3, 100)).shape)
print(dep.range_constraints.__class__.__name__, len(dep.range_constraints))


class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x.sin()
        return x.cos()


try:
    export(Branchy(), (torch.randn(3),))
except Exception as e:
    print("data-dependent:", type(e).__name__)


class CondM(nn.Module):
    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda x: x.sin(), lambda x: x.cos(), (x,))


cep = export(CondM(), (torch.ones(3),))
print([(n.op, n.name) for n in cep.graph.nodes])
print(sorted(name for name, _ in cep.graph_module.named_children()))
print(torch.allclose(cep.module()(-torch.ones(3)), torch.ones(3).neg().cos()))

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "mod.pt2")
    torch.export.save(ep, path)
    loaded = torch.export.load(path)
    print(torch.allclose(loaded.module()(x, y), mod(x, y)))
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    buf.seek(0)
    print(type(torch.export.load(buf)).__name__)


# run_decompositions, bounded dynamic dimensions and their guards, unflatten
class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.fc(x.mean(dim=(2, 3)))


conv = ConvNet().eval()
xc = torch.randn(2, 3, 8, 8)
cep2 = export(conv, (xc,))
print(cep2.graph_signature.user_inputs, cep2.graph_signature.user_outputs)
print(sorted(cep2.graph_signature.buffers))
dec = cep2.run_decompositions()
print(type(dec).__name__, torch.allclose(dec.module()(xc), conv(xc), atol=1e-5))
bounded = export(conv, (torch.randn(8, 3, 8, 8),), dynamic_shapes={"x": {0: Dim("batch", min=4, max=16)}})
print(bounded.module()(torch.randn(5, 3, 8, 8)).shape)
for n in (32, 3):
    try:
        bounded.module()(torch.randn(n, 3, 8, 8))
    except AssertionError as e:
        print(type(e).__name__, str(e).splitlines()[0])
try:
    cep2.module()(torch.randn(2, 3, 8, 9))
except AssertionError as e:
    print(type(e).__name__, str(e).splitlines()[0])


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.block(x))


outer = Outer()
oep = export(outer, (torch.randn(3, 4),))
un = torch.export.unflatten(oep)
print(type(un).__name__, [n for n, _ in un.named_children()])
print(torch.allclose(un(torch.ones(3, 4)), outer(torch.ones(3, 4))))
print([e.fqn for e in oep.module_call_graph])


# ONNX
class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return F.log_softmax(self.fc(torch.flatten(x, 1)), dim=1)


small = Small().eval()
inp = torch.randn(2, 1, 14, 14)
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "small.onnx")
    torch.onnx.export(small, (inp,), path, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                      dynamo=False)
    print(os.path.exists(path))
    import onnx
    model = onnx.load(path)
    onnx.checker.check_model(model)
    print([i.name for i in model.graph.input], [o.name for o in model.graph.output])
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        for b in (2, 5):
            xb = torch.randn(b, 1, 14, 14)
            (out,) = sess.run(None, {"input": xb.numpy()})
            print(out.shape, torch.allclose(torch.from_numpy(out), small(xb), atol=1e-5))
