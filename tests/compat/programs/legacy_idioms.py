"""Old-style and everyday idioms from blog posts and older repositories: legacy tensor
types, Variable, .data, printing tensors, NumPy interop, f-string formatting of tensors,
a hand-written training loop with manual gradient descent, and default dtypes."""
import math
import random
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

random.seed(0)
np.random.seed(0)
torch.manual_seed(0)
if torch.cuda.is_available():
    torch.cuda.manual_seed(0)
torch.cuda.manual_seed_all(0)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
dtype = torch.FloatTensor
print(torch.__version__ >= "1.0", torch.__version__.split('.')[0] >= '2', sys.version_info >= (3,))
print(torch.cuda.is_available(), torch.cuda.device_count(), torch.backends.mps.is_available())
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
if device == 'cpu':  # never true in PyTorch: a device does not equal a string
    print('compared with a string')
print(device, device.type == 'cpu', str(device) == 'cpu', device == torch.device('cpu'))

# legacy constructors and types
a = torch.FloatTensor([[1, 2], [3, 4]])
b = torch.LongTensor(2, 3).zero_()
c = torch.Tensor(2, 2).fill_(0.5)
print(a.type(), b.type(), c.type(), a.type(torch.DoubleTensor).dtype, a.type('torch.IntTensor'))
print(isinstance(a, torch.FloatTensor), isinstance(b, torch.FloatTensor), torch.is_tensor(a))
print(a, b, c, sep='\n')
x = Variable(torch.randn(3, 2).type(dtype), requires_grad=False)
w = Variable(torch.ones(2, 1).type(dtype), requires_grad=True)
print(type(x).__name__, x.requires_grad, w.requires_grad, w.data.requires_grad)

# printing in all its forms
print(torch.arange(6).view(2, 3))
print(torch.tensor([1.5, -2.25, 1e-4]))
print(torch.tensor([1e10, 1.0]))
print(torch.tensor([[True, False]]), torch.tensor(3.0), torch.tensor([], dtype=torch.int64))
print(torch.zeros(2, 2, dtype=torch.float64), torch.tensor([1, 2], dtype=torch.uint8))
print(torch.tensor([float('nan'), float('inf'), -float('inf'), 0.1]))
print(torch.tensor([1 + 2j, 3 - 1j]))
print(torch.tensor([0.1, 0.2], dtype=torch.half), torch.tensor([0.1], dtype=torch.bfloat16))
print(torch.linspace(0, 1, 5), torch.eye(2, dtype=torch.int32))
print(torch.ones(2, requires_grad=True) * 2)
print(torch.arange(1200).reshape(2, 600))
print(repr(torch.tensor(7)), str(torch.tensor([[0.12345678]])))
torch.set_printoptions(precision=2)
print(torch.tensor([3.14159, 2.71828]))
torch.set_printoptions(profile='default')
print(nn.Parameter(torch.zeros(2)))
loss = torch.tensor(0.123456)
print(f"loss: {loss:.3f} {loss.item():.4f} {float(loss):.2e}", "{:.2f}".format(loss))
print('%.3f' % loss, f"{torch.tensor(5)}", f"{torch.tensor([1, 2])}")
print(torch.Size([2, 3]), torch.zeros(2, 3).size(), tuple(torch.zeros(2, 3).shape), torch.float32)
print(torch.zeros(2, 3).size(1), torch.zeros(2, 3).shape[-1], len(torch.zeros(4, 2)))

# NumPy interop
arr = np.arange(6, dtype=np.float32).reshape(2, 3)
t = torch.from_numpy(arr)
t[0, 0] = 100
print(arr[0, 0], t.numpy().dtype, torch.tensor(arr).dtype, torch.Tensor(arr).dtype,
      torch.as_tensor(np.float64(2.5)).dtype)
print(np.asarray(torch.ones(2)).dtype, torch.ones(2).numpy().tolist(), np.array(torch.tensor(3)))
print(torch.tensor(np.array([1, 2], dtype=np.int32)).dtype, torch.from_numpy(np.zeros(2,
      dtype=np.bool_)).dtype, torch.tensor([np.float32(1.0)]).dtype)
print(torch.tensor(1) + np.float64(1.5), (np.float32(2.0) * torch.ones(1)).dtype)

# a two-layer network with manual gradients, as the "Learning PyTorch with Examples" page
N, D_in, H, D_out = 16, 10, 20, 2
x = torch.randn(N, D_in).type(dtype)
y = torch.randn(N, D_out).type(dtype)
w1 = torch.randn(D_in, H).type(dtype)
w2 = torch.randn(H, D_out).type(dtype)
learning_rate = 1e-4
first = None
for t in range(50):
    h = x.mm(w1)
    h_relu = h.clamp(min=0)
    y_pred = h_relu.mm(w2)
    loss = (y_pred - y).pow(2).sum()
    first = first or loss.item()
    grad_y_pred = 2.0 * (y_pred - y)
    grad_w2 = h_relu.t().mm(grad_y_pred)
    grad_h_relu = grad_y_pred.mm(w2.t())
    grad_h = grad_h_relu.clone()
    grad_h[h < 0] = 0
    grad_w1 = x.t().mm(grad_h)
    w1 -= learning_rate * grad_w1
    w2 -= learning_rate * grad_w2
print('manual loss decreased:', loss.item() < first)

w1 = Variable(torch.randn(D_in, H).type(dtype), requires_grad=True)
w2 = Variable(torch.randn(H, D_out).type(dtype), requires_grad=True)
for t in range(50):
    y_pred = x.mm(w1).clamp(min=0).mm(w2)
    loss = (y_pred - y).pow(2).sum()
    if t == 0:
        first = loss.data.item()
    loss.backward()
    w1.data -= learning_rate * w1.grad.data
    w2.data -= learning_rate * w2.grad.data
    w1.grad.data.zero_()
    w2.grad.data.zero_()
print('autograd loss decreased:', loss.data.item() < first, loss.grad_fn is not None)

# default dtype and type promotion
torch.set_default_dtype(torch.float64)
print(torch.tensor([1.0]).dtype, torch.zeros(1).dtype, torch.arange(3.).dtype, torch.get_default_dtype())
torch.set_default_dtype(torch.float32)
print((torch.ones(1, dtype=torch.int64) / 2).dtype, (torch.ones(1, dtype=torch.int32) * 2.5).dtype,
      (torch.ones(1, dtype=torch.uint8) + 300).tolist(), (torch.tensor([5]) // 2).tolist())
print(torch.tensor([-7]) // 2, torch.tensor([-7]) % 3, torch.tensor([-7.5]).fmod(2))
print(F.softmax(torch.tensor([1.0, 2.0, 3.0]), dim=0))
print(torch.max(torch.tensor([[1, 5], [7, 2]]), 1))
print(torch.sort(torch.tensor([3, 1, 2]), descending=True))
print(torch.topk(torch.tensor([1., 4., 2.]), 2))
print(torch.tensor([1, 2, 3]).float().mean(), torch.tensor([[1., 2.], [3., 4.]]).std(0))
print(math.isclose(torch.tensor(math.pi).item(), math.pi, rel_tol=1e-6), torch.pi == math.pi)
print(torch.tensor([1, 2, 3]) == torch.tensor([1, 0, 3]), torch.equal(a, a.clone()))
print(torch.chunk(torch.arange(5), 2), torch.split(torch.arange(5), [2, 3]))
print(torch.stack([torch.zeros(2), torch.ones(2)], 1), torch.cat([a, a]).shape)
print(torch.where(torch.tensor([1., -1.]) > 0), torch.nonzero(torch.tensor([0, 3, 0, 4])))
print(torch.unique(torch.tensor([3, 1, 3, 2]), return_counts=True))
