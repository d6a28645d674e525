"""torch.fx as its documentation and tutorials use it: symbolic_trace and the printed graph/code/tabular form, graph surgery (retarget, insert, replace uses, erase), Proxy-based decomposition, Interpreter/Transformer subclasses, ShapeProp, the subgraph rewriter, and torch.compile with a custom backend."""
import operator
import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx import Interpreter, Transformer, subgraph_rewriter, symbolic_trace
from torch.fx.passes.shape_prop import ShapeProp
torch.manual_seed(0)


class MyModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.param = nn.Parameter(torch.rand(3, 4))
        self.linear = nn.Linear(4, 5)

    def forward(self, x):
        return self.linear(x + self.param).clamp(min=0.0, max=1.0)


module = MyModule()
traced = symbolic_trace(module)
print(traced.graph)
print(traced.code)
traced.graph.print_tabular()
x = torch.rand(3, 4)
print(torch.equal(traced(x), module(x)))
print([(n.op, n.name, str(n.target)) for n in traced.graph.nodes])


# retarget: every torch.add becomes torch.mul
class AddMod(nn.Module):
    def forward(self, x, y):
        return torch.add(x, y) + torch.add(y, 2)


def transform(m, tracer_class=fx.Tracer):
    graph = tracer_class().trace(m)
    for node in graph.nodes:
        if node.op == "call_function" and node.target == torch.add:
            node.target = torch.mul
    graph.lint()
    return fx.GraphModule(m, graph)


t = transform(AddMod())
print(t.code)
print(t(torch.tensor([2.0]), torch.tensor([3.0])))


# insert a relu after every add, then erase a dead node
gm = symbolic_trace(AddMod())
for node in list(gm.graph.nodes):
    if node.op == "call_function" and node.target == operator.add:
        with gm.graph.inserting_after(node):
            new = gm.graph.call_function(torch.relu, args=(node,))
            node.replace_all_uses_with(new)
            new.args = (node,)
dead = gm.graph.call_function(torch.neg, args=(next(iter(gm.graph.nodes)),))
gm.graph.erase_node(dead)
gm.graph.lint()
gm.recompile()
print(gm.code)
print(gm(torch.tensor([-5.0]), torch.tensor([1.0])))


# decomposition through Proxies
decomposition_rules = {}


def relu_decomposition(x):
    return (x > 0) * x


decomposition_rules[F.relu] = relu_decomposition


class ReluMod(nn.Module):
    def forward(self, x):
        return F.relu(x) + 1


def decompose(model, tracer_class=fx.Tracer):
    graph = tracer_class().trace(model)
    new_graph = fx.Graph()
    env = {}
    tracer = torch.fx.proxy.GraphAppendingTracer(new_graph)
    for node in graph.nodes:
        if node.op == "call_function" and node.target in decomposition_rules:
            proxy_args = [fx.Proxy(env[a.name], tracer) if isinstance(a, fx.Node) else a
                          for a in node.args]
            output_proxy = decomposition_rules[node.target](*proxy_args)
            env[node.name] = output_proxy.node
        else:
            env[node.name] = new_graph.node_copy(node, lambda a: env[a.name])
    return fx.GraphModule(model, new_graph)


d = decompose(ReluMod())
print(d.code)
print(d(torch.tensor([-1.0, 2.0])))


# Interpreter and Transformer
class NegSigmSwapInterpreter(Interpreter):
    def call_function(self, target, args, kwargs):
        if target == torch.sigmoid:
            return torch.neg(*args, **kwargs)
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "neg":
            call_self, *args_tail = args
            return call_self.sigmoid(*args_tail, **kwargs)
        return super().call_method(target, args, kwargs)


def fn(x):
    return torch.sigmoid(x).neg()


gm = symbolic_trace(fn)
inp = torch.randn(3, 4)
result = NegSigmSwapInterpreter(gm).run(inp)
torch.testing.assert_close(result, torch.neg(inp).sigmoid())
print("interpreter ok")


class NegSigmSwapXformer(Transformer):
    def call_function(self, target, args, kwargs):
        if target == torch.sigmoid:
            return torch.neg(*args, **kwargs)
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "neg":
            call_self, *args_tail = args
            return call_self.sigmoid(*args_tail, **kwargs)
        return super().call_method(target, args, kwargs)


transformed = NegSigmSwapXformer(gm).transform()
print(transformed.code)
torch.testing.assert_close(transformed(inp), torch.neg(inp).sigmoid())
print("transformer ok")


# ShapeProp
class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 6)

    def forward(self, x):
        return torch.flatten(F.relu(self.fc(x)), 1).sum(dim=-1)


sgm = symbolic_trace(TwoLayer())
ShapeProp(sgm).propagate(torch.ones(2, 4))
for node in sgm.graph.nodes:
    meta = node.meta["tensor_meta"]
    print(node.name, meta.dtype, tuple(meta.shape), meta.requires_grad, meta.stride)


# subgraph rewriter
class M(nn.Module):
    def forward(self, x, w1, w2):
        m1 = torch.cat([w1, w2]).sum()
        m2 = torch.cat([w1, w2]).sum()
        return x + torch.max(m1) + torch.max(m2)


def pattern(w1, w2):
    return torch.cat([w1, w2]).sum()


def replacement(w1, w2):
    return torch.stack([w1, w2])


traced_module = symbolic_trace(M())
matches = subgraph_rewriter.replace_pattern(traced_module, pattern, replacement)
print(len(matches), type(matches[0]).__name__)
print(traced_module.code)
print(traced_module(torch.ones(2), torch.ones(2), torch.ones(2) * 2))


# torch.compile with a custom backend that prints the graph it is given
def my_compiler(gm: torch.fx.GraphModule, example_inputs):
    print("my_compiler() called with FX graph:")
    print([n.op for n in gm.graph.nodes])
    print([tuple(t.shape) for t in example_inputs])
    return gm.forward


@torch.compile(backend=my_compiler)
def toy(a, b):
    x = a / (torch.abs(a) + 1)
    return x * b


print(toy(torch.ones(10), torch.ones(10)).sum())
print(toy(torch.ones(10), torch.ones(10)).sum())
