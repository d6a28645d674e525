"""The PyTorch tutorials' tensor and autograd pages as a reader types them in: tensor
creation from lists and NumPy (sharing memory both ways), indexing and in-place updates, the
``out=`` forms, ``grad_fn`` and ``next_functions``, ``backward`` with a gradient and
``retain_graph``, accumulation, ``no_grad``/``detach``, freezing parameters, higher-order
``autograd.grad`` and ``autograd.functional``. Object addresses are masked."""
import re
import numpy as np
import torch


def masked(obj):
    return re.sub(r"0x[0-9a-f]+", "0x?", str(obj))


data = [[1, 2], [3, 4]]
x_data = torch.tensor(data)
np_array = np.array(data)
x_np = torch.from_numpy(np_array)
x_ones = torch.ones_like(x_data)
print(f"Ones Tensor: \n {x_ones} \n")
x_rand = torch.rand_like(x_data, dtype=torch.float)
print(x_rand.shape, x_rand.dtype)
shape = (2, 3,)
print(f"Zeros Tensor: \n {torch.zeros(shape)}")
tensor = torch.ones(4, 4)
print(f"Shape of tensor: {tensor.shape}")
print(f"Datatype of tensor: {tensor.dtype}")
print(f"Device tensor is stored on: {tensor.device}")
if torch.cuda.is_available():
    tensor = tensor.to("cuda")
if torch.accelerator.is_available():
    tensor = tensor.to(torch.accelerator.current_accelerator())
print(f"First row: {tensor[0]}")
print(f"First column: {tensor[:, 0]}")
print(f"Last column: {tensor[..., -1]}")
tensor[:,1] = 0
print(tensor)
t1 = torch.cat([tensor, tensor, tensor], dim=1)
print(t1)
y1 = tensor @ tensor.T
y2 = tensor.matmul(tensor.T)
y3 = torch.rand_like(y1)
torch.matmul(tensor, tensor.T, out=y3)
z1 = tensor * tensor
z2 = tensor.mul(tensor)
z3 = torch.rand_like(tensor)
torch.mul(tensor, tensor, out=z3)
print(y3, z3)
agg = tensor.sum()
agg_item = agg.item()
print(agg_item, type(agg_item))
print(f"{tensor} \n")
tensor.add_(5)
print(tensor)
t = torch.ones(5)
print(f"t: {t}")
n = t.numpy()
print(f"n: {n}")
t.add_(1)
print(f"t: {t}")
print(f"n: {n}")
n = np.ones(5)
t = torch.from_numpy(n)
np.add(n, 1, out=n)
print(f"t: {t}")
print(f"n: {n}")

x = torch.ones(5)  # input tensor
y = torch.zeros(3)  # expected output
w = torch.tensor([[0.1 * i + 0.01 * j for j in range(3)] for i in range(5)], requires_grad=True)
b = torch.tensor([0.5, -0.5, 0.25], requires_grad=True)
z = torch.matmul(x, w)+b
loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
print(f"Gradient function for z = {masked(z.grad_fn)}")
print(f"Gradient function for loss = {masked(loss.grad_fn)}")
print(masked(z.grad_fn.next_functions))
print(loss.grad_fn.name())
loss.backward()
print(w.grad)
print(b.grad)
z = torch.matmul(x, w)+b
print(z.requires_grad)
with torch.no_grad():
    z = torch.matmul(x, w)+b
print(z.requires_grad)
z = torch.matmul(x, w)+b
z_det = z.detach()
print(z_det.requires_grad)
inp = torch.eye(4, 5, requires_grad=True)
out = (inp+1).pow(2).t()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"First call\n{inp.grad}")
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nSecond call\n{inp.grad}")
inp.grad.zero_()
out.backward(torch.ones_like(out), retain_graph=True)
print(f"\nCall after zeroing gradients\n{inp.grad}")
print(out)
print(masked(out.grad_fn), masked(out.grad_fn.next_functions[0][0]))
a = torch.tensor([2., 3.], requires_grad=True)
b = torch.tensor([6., 4.], requires_grad=True)
Q = 3*a**3 - b**2
external_grad = torch.tensor([1., 1.])
Q.backward(gradient=external_grad)
print(9*a**2 == a.grad)
print(-2*b == b.grad)
print(Q)
x = torch.rand(5, 5)
y = torch.rand(5, 5)
z = torch.rand((5, 5), requires_grad=True)
a = x + y
print(f"Does `a` require gradients?: {a.requires_grad}")
b = x + z
print(f"Does `b` require gradients?: {b.requires_grad}")
from torch import nn, optim
model = nn.Linear(3, 2)
for param in model.parameters():
    param.requires_grad = False
model.fc = nn.Linear(2, 10)
params = [p for p in model.parameters() if p.requires_grad]
print(len(params), [p.shape for p in params])
optimizer = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
print(optimizer)
try:
    out.backward(torch.ones_like(out))
    out.backward(torch.ones_like(out))
except RuntimeError as e:
    print("RuntimeError:", str(e)[:120])
x = torch.tensor(2.0, requires_grad=True)
y = x ** 3
g, = torch.autograd.grad(y, x, create_graph=True)
g2, = torch.autograd.grad(g, x)
print(g, g2)
print(torch.autograd.functional.jacobian(lambda t: t ** 2, torch.tensor([1., 2.])))
print(torch.autograd.functional.hessian(lambda t: (t ** 3).sum(), torch.tensor([1., 2.])))
