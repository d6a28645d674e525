"""d2l.ai-style code (Dive into Deep Learning, PyTorch edition): ndarray basics with axis=/keepdims=, autograd with control flow, linear and softmax regression from scratch, lazy modules and parameter management, saving tensors, try_gpu on a CPU machine, corr2d, LazyConv2d training by hand, pooling, batch norm from scratch, LeNet shapes, grad clipping, masked softmax."""
import math, random, collections, os, tempfile
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F
from torch.utils import data
torch.manual_seed(0); random.seed(0)
x = torch.arange(12, dtype=torch.float32); X = x.reshape(3, 4)
print(x.numel(), X.shape, torch.zeros((2, 3, 4)).shape, torch.exp(x)[:2])
Y = torch.tensor([[2.0, 1, 4, 3], [1, 2, 3, 4], [4, 3, 2, 1]])
print(torch.cat((X, Y), dim=0).shape, torch.cat((X, Y), dim=1).shape, X == Y, X.sum())
a = torch.arange(3).reshape((3, 1)); b = torch.arange(2).reshape((1, 2)); print(a + b)
before = id(Y); Y = Y + X; print(id(Y) == before)
Z = torch.zeros_like(Y); print('id(Z):', id(Z) == id(Z)); Z[:] = X + Y
A = X.numpy(); B = torch.from_numpy(A); print(type(A), type(B)); a = torch.tensor([3.5]); print(a, a.item(), float(a), int(a))
A = torch.arange(20, dtype=torch.float32).reshape(5, 4); B = A.clone()
print(A.T.shape, A * B, A.sum(axis=0), A.sum(axis=[0, 1]), A.mean(), A.sum() / A.numel(), A.mean(axis=0))
sum_A = A.sum(axis=1, keepdims=True); print(sum_A, A / sum_A, A.cumsum(axis=0))
y = torch.ones(4, dtype=torch.float32); print(torch.dot(x[:4], y), torch.sum(x[:4] * y), torch.mv(A, x[:4]), torch.mm(A, torch.ones(4, 3)))
u = torch.tensor([3.0, -4.0]); print(torch.norm(u), torch.abs(u).sum(), torch.norm(torch.ones((4, 9))))
x = torch.arange(4.0); x.requires_grad_(True); print(x.grad)
y = 2 * torch.dot(x, x); y.backward(); print(x.grad, x.grad == 4 * x)
x.grad.zero_(); y = x.sum(); y.backward(); print(x.grad)
x.grad.zero_(); y = x * x; y.sum().backward(); print(x.grad)
x.grad.zero_(); y = x * x; u = y.detach(); z = u * x; z.sum().backward(); print(x.grad == u)
def f(a):
    b = a * 2
    while b.norm() < 1000: b = b * 2
    if b.sum() > 0: c = b
    else: c = 100 * b
    return c
a = torch.randn(size=(), requires_grad=True); d = f(a); d.backward(); print(a.grad == d / a)
# linear regression from scratch
def synthetic_data(w, b, num_examples):
    X = torch.normal(0, 1, (num_examples, len(w))); y = torch.matmul(X, w) + b; y += torch.normal(0, 0.01, y.shape); return X, y.reshape((-1, 1))
true_w = torch.tensor([2, -3.4]); true_b = 4.2
features, labels = synthetic_data(true_w, true_b, 1000); print('features:', features[0].shape, '\nlabel:', labels[0].shape)
def data_iter(batch_size, features, labels):
    num_examples = len(features); indices = list(range(num_examples)); random.shuffle(indices)
    for i in range(0, num_examples, batch_size):
        batch_indices = torch.tensor(indices[i: min(i + batch_size, num_examples)]); yield features[batch_indices], labels[batch_indices]
w = torch.normal(0, 0.01, size=(2, 1), requires_grad=True); b = torch.zeros(1, requires_grad=True)
def linreg(X, w, b): return torch.matmul(X, w) + b
def squared_loss(y_hat, y): return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2
def sgd(params, lr, batch_size):
    with torch.no_grad():
        for param in params: param -= lr * param.grad / batch_size; param.grad.zero_()
for epoch in range(3):
    for X, y in data_iter(10, features, labels):
        l = squared_loss(linreg(X, w, b), y); l.sum().backward(); sgd([w, b], 0.03, 10)
    with torch.no_grad():
        train_l = squared_loss(linreg(features, w, b), labels); print(f'epoch {epoch + 1}, loss {float(train_l.mean()):f}'[:9])
print(f'w error: {(true_w - w.reshape(true_w.shape)).abs().max() < 0.01}', f'b error: {abs(true_b - b.item()) < 0.01}')
def load_array(data_arrays, batch_size, is_train=True):
    dataset = data.TensorDataset(*data_arrays); return data.DataLoader(dataset, batch_size, shuffle=is_train)
data_iter2 = load_array((features, labels), 10); print(len(next(iter(data_iter2))))
net = nn.Sequential(nn.Linear(2, 1)); net[0].weight.data.normal_(0, 0.01); net[0].bias.data.fill_(0)
loss = nn.MSELoss(); trainer = torch.optim.SGD(net.parameters(), lr=0.03)
for epoch in range(2):
    for X, y in data_iter2:
        l = loss(net(X), y); trainer.zero_grad(); l.backward(); trainer.step()
print(net[0].weight.data.shape, net.state_dict()['0.bias'].data.shape)
# softmax from scratch
def softmax(X):
    X_exp = torch.exp(X); partition = X_exp.sum(1, keepdim=True); return X_exp / partition
X = torch.normal(0, 1, (2, 5)); X_prob = softmax(X); print(X_prob.shape, torch.allclose(X_prob.sum(1), torch.ones(2)))
y = torch.tensor([0, 2]); y_hat = torch.tensor([[0.1, 0.3, 0.6], [0.3, 0.2, 0.5]]); print(y_hat[[0, 1], y])
def cross_entropy(y_hat, y): return - torch.log(y_hat[range(len(y_hat)), y])
print(cross_entropy(y_hat, y))
def accuracy(y_hat, y):
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1: y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y; return float(cmp.type(y.dtype).sum())
print(accuracy(y_hat, y) / len(y))
# lazy modules, parameter management, files
net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1)); print(net[0].weight)
X = torch.rand(size=(2, 4)); net(X); print(net[0].weight.shape, [(name, param.shape) for name, param in net.named_parameters()])
def init_normal(module):
    if type(module) == nn.Linear: nn.init.normal_(module.weight, mean=0, std=0.01); nn.init.zeros_(module.bias)
net.apply(init_normal); print(net[0].bias.data[0])
def my_init(m):
    if type(m) == nn.Linear:
        print("Init", *[(name, param.shape) for name, param in m.named_parameters()][0]); nn.init.uniform_(m.weight, -10, 10); m.weight.data *= m.weight.data.abs() >= 5
net.apply(my_init)
shared = nn.LazyLinear(8); net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), shared, nn.ReLU(), shared, nn.ReLU(), nn.LazyLinear(1)); net(X)
print(net[2].weight.data[0] == net[4].weight.data[0])
class CenteredLayer(nn.Module):
    def __init__(self): super().__init__()
    def forward(self, X): return X - X.mean()
layer = CenteredLayer(); print(layer(torch.tensor([1.0, 2, 3, 4, 5])))
class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__(); self.weight = nn.Parameter(torch.randn(in_units, units)); self.bias = nn.Parameter(torch.randn(units,))
    def forward(self, X): linear = torch.matmul(X, self.weight.data) + self.bias.data; return F.relu(linear)
linear = MyLinear(5, 3); print(linear.weight.shape)
d = tempfile.mkdtemp(); x = torch.arange(4); torch.save(x, os.path.join(d, 'x-file')); x2 = torch.load(os.path.join(d, 'x-file')); print(x2)
y = torch.zeros(4); torch.save([x, y], os.path.join(d, 'x-files')); x2, y2 = torch.load(os.path.join(d, 'x-files')); print((x2, y2))
mydict = {'x': x, 'y': y}; torch.save(mydict, os.path.join(d, 'mydict')); print(torch.load(os.path.join(d, 'mydict')))
def cpu(): return torch.device('cpu')
def gpu(i=0): return torch.device(f'cuda:{i}')
def num_gpus(): return torch.cuda.device_count()
def try_gpu(i=0):
    if num_gpus() >= i + 1: return gpu(i)
    return cpu()
print(cpu(), gpu(), gpu(1), num_gpus(), try_gpu(), try_gpu(10))
# CNN pieces
def corr2d(X, K):
    h, w = K.shape; Y = torch.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1))
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]): Y[i, j] = (X[i:i + h, j:j + w] * K).sum()
    return Y
X = torch.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]); K = torch.tensor([[0.0, 1.0], [2.0, 3.0]]); print(corr2d(X, K))
def corr2d_multi_in(X, K): return sum(corr2d(x, k) for x, k in zip(X, K))
def corr2d_multi_in_out(X, K): return torch.stack([corr2d_multi_in(X, k) for k in K], 0)
X = torch.stack((X, X + 1)); K = torch.stack((K, K + 1)); K = torch.stack((K, K + 1, K + 2)); print(corr2d_multi_in_out(X, K).shape)
conv2d = nn.LazyConv2d(1, kernel_size=(1, 2), bias=False); X = torch.ones((6, 8)); X[:, 2:6] = 0; K = torch.tensor([[1.0, -1.0]]); Yt = corr2d(X, K)
X = X.reshape((1, 1, 6, 8)); Yt = Yt.reshape((1, 1, 6, 7))
for i in range(10):
    Y_hat = conv2d(X); l = (Y_hat - Yt) ** 2; conv2d.zero_grad(); l.sum().backward(); conv2d.weight.data[:] -= 3e-2 * conv2d.weight.grad
print(conv2d.weight.data.reshape((1, 2)).shape)
pool2d = nn.MaxPool2d(3, padding=1, stride=2); X = torch.arange(16, dtype=torch.float32).reshape((1, 1, 4, 4)); print(pool2d(X), nn.MaxPool2d((2, 3), stride=(2, 3), padding=(0, 1))(X))
def batch_norm(X, gamma, beta, moving_mean, moving_var, eps, momentum):
    if not torch.is_grad_enabled(): X_hat = (X - moving_mean) / torch.sqrt(moving_var + eps)
    else:
        assert len(X.shape) in (2, 4)
        if len(X.shape) == 2: mean = X.mean(dim=0); var = ((X - mean) ** 2).mean(dim=0)
        else: mean = X.mean(dim=(0, 2, 3), keepdim=True); var = ((X - mean) ** 2).mean(dim=(0, 2, 3), keepdim=True)
        X_hat = (X - mean) / torch.sqrt(var + eps); moving_mean = (1.0 - momentum) * moving_mean + momentum * mean; moving_var = (1.0 - momentum) * moving_var + momentum * var
    Y = gamma * X_hat + beta; return Y, moving_mean.data, moving_var.data
Yb, mm, mv = batch_norm(torch.randn(4, 3, 5, 5), torch.ones(1, 3, 1, 1), torch.zeros(1, 3, 1, 1), torch.zeros(1, 3, 1, 1), torch.ones(1, 3, 1, 1), 1e-5, 0.1); print(Yb.shape, mm.shape)
net = nn.Sequential(nn.LazyConv2d(6, kernel_size=5), nn.LazyBatchNorm2d(), nn.Sigmoid(), nn.AvgPool2d(kernel_size=2, stride=2), nn.Flatten(), nn.LazyLinear(10))
X = torch.rand(2, 1, 28, 28)
for layer in net: X = layer(X); print(layer.__class__.__name__, 'output shape:\t', X.shape)
# RNN from scratch + attention helpers
print(F.one_hot(torch.tensor([0, 2]), 5))
def grad_clipping(params, theta):
    norm = torch.sqrt(sum(torch.sum((p.grad ** 2)) for p in params))
    if norm > theta:
        for param in params: param.grad[:] *= theta / norm
W = torch.randn(3, 3, requires_grad=True); (W * 100).sum().backward(); grad_clipping([W], 1); print(torch.norm(W.grad) <= 1.0001)
def sequence_mask(X, valid_len, value=0):
    maxlen = X.size(1); mask = torch.arange((maxlen), dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]; X[~mask] = value; return X
def masked_softmax(X, valid_lens):
    if valid_lens is None: return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1: valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else: valid_lens = valid_lens.reshape(-1)
    X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6); return nn.functional.softmax(X.reshape(shape), dim=-1)
print(masked_softmax(torch.ones(2, 2, 4), torch.tensor([2, 3])))
print(masked_softmax(torch.ones(2, 2, 4), torch.tensor([[1, 3], [2, 4]])))
print(torch.bmm(torch.ones((2, 1, 4)), torch.ones((2, 4, 6))).shape)
tokens = 'the time machine by h g wells the time'.split(); counter = collections.Counter(tokens); print(sorted(counter.items(), key=lambda x: x[1], reverse=True)[:2])
