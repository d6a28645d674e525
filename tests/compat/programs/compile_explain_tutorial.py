"""torch.compile as its tutorials debug it: torch._dynamo.explain on functions and modules with graph breaks (print, data-dependent branches, .item(), graph_break(), breaks inside called functions), the printed summary's sections, and a custom backend handed each graph between breaks."""
import torch
import torch.nn as nn
import torch.nn.functional as F
torch.manual_seed(0)


def summary(e):
    print("graphs", e.graph_count, "breaks", e.graph_break_count, "ops", e.op_count)
    for r in e.break_reasons:
        print("  reason:", r.reason.splitlines()[0])
        print("  stack:", [(f.name, f.lineno) for f in r.user_stack])
    print("  ops:", [[getattr(op, "__name__", str(op)) for op in ops] for ops in e.ops_per_graph])
    print("  graph outputs:", [[str(a) for a in list(g.graph.nodes)[-1].args[0]] for g in e.graphs])


def toy_example(a, b):
    x = a / (torch.abs(a) + 1)
    print("woo")
    if b.sum() < 0:
        b = b * -1
    return x * b


summary(torch._dynamo.explain(toy_example)(torch.ones(10), -torch.ones(10)))
text = str(torch._dynamo.explain(toy_example)(torch.ones(10), torch.ones(10)))
print([line for line in text.splitlines() if line and not line.startswith(" ")][:7])


def scalar(x):
    y = x.sin()
    z = y.item()
    return y * z


def forced(x):
    x = x + 1
    torch._dynamo.graph_break()
    return F.relu(x)


def inner(x):
    if x.sum() > 0:
        return x * 2
    return x


def outer(x):
    return inner(torch.cos(x)) - 1


def loop(x):
    for i in range(3):
        x = x + i
    return x.tolist()


for fn in (scalar, forced, outer, loop):
    print(fn.__name__)
    summary(torch._dynamo.explain(fn)(torch.ones(3) if fn is not scalar else torch.ones(1)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 4)
        self.l2 = nn.Linear(4, 2)

    def forward(self, x, scale=1.0):
        h = torch.relu(self.l1(x))
        if h.mean() > 0:
            h = h * scale
        return self.l2(h)


summary(torch._dynamo.explain(Net())(torch.ones(3, 4), scale=2.0))


def my_compiler(gm, example_inputs):
    print("my_compiler() called with FX graph:")
    print([(n.op, n.name) for n in gm.graph.nodes])
    print([tuple(t.shape) for t in example_inputs])
    return gm.forward


def toy(a, b):
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


opt = torch.compile(toy, backend=my_compiler)
for _ in range(2):
    print(opt(torch.ones(10), -torch.ones(10)).sum())
