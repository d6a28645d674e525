"""'Learning PyTorch with examples': tensors, autograd, a custom Function, nn, optim,
custom nn.Module and control flow + weight sharing, all fitting sin(x) with a cubic."""
import math
import random
import torch

dtype = torch.float
device = torch.device("cpu")
x = torch.linspace(-math.pi, math.pi, 200, device=device, dtype=dtype)
y = torch.sin(x)
a = torch.full((), 0.1, device=device, dtype=dtype, requires_grad=True)
b = torch.full((), -0.2, device=device, dtype=dtype, requires_grad=True)
c = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)
d = torch.full((), -0.1, device=device, dtype=dtype, requires_grad=True)
learning_rate = 1e-6
for t in range(300):
    y_pred = a + b * x + c * x ** 2 + d * x ** 3
    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, round(loss.item(), 1))
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None
print(f'Result: y = {a.item():.2f} + {b.item():.2f} x + {c.item():.2f} x^2 + {d.item():.2f} x^3')

class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)
    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)

P3 = LegendrePolynomial3.apply
a = torch.full((), 0.0, requires_grad=True); b = torch.full((), -1.0, requires_grad=True)
c = torch.full((), 0.0, requires_grad=True); d = torch.full((), 0.3, requires_grad=True)
for t in range(200):
    y_pred = a + b * P3(c + d * x)
    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, round(loss.item(), 1), y_pred.grad_fn.name() if hasattr(y_pred.grad_fn, 'name') else None)
    loss.backward()
    with torch.no_grad():
        for p_ in (a, b, c, d):
            p_ -= 5e-6 * p_.grad
            p_.grad = None
print(f'Result: y = {abs(a.item()):.2f} + {b.item():.2f} * P3({abs(c.item()):.2f} + {d.item():.2f} x)')

p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)
print(xx.shape, xx.dtype)
model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
with torch.no_grad():
    model[0].weight.fill_(0.1); model[0].bias.fill_(0.0)
loss_fn = torch.nn.MSELoss(reduction='sum')
for t in range(200):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    if t % 100 == 99:
        print(t, round(loss.item(), 1))
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for param in model.parameters():
            param -= 1e-5 * param.grad
linear_layer = model[0]
print(f'Result: y = {linear_layer.bias.item():.2f} + {linear_layer.weight[:, 0].item():.2f} x + {linear_layer.weight[:, 1].item():.2f} x^2 + {linear_layer.weight[:, 2].item():.2f} x^3')
optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
for t in range(200):
    loss = loss_fn(model(xx), y)
    optimizer.zero_grad(); loss.backward(); optimizer.step()
print(round(loss.item(), 1))

class Polynomial3(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.tensor(0.1))
        self.b = torch.nn.Parameter(torch.tensor(0.2))
        self.c = torch.nn.Parameter(torch.tensor(-0.1))
        self.d = torch.nn.Parameter(torch.tensor(0.05))
        self.e = torch.nn.Parameter(torch.tensor(0.0))
    def forward(self, x):
        y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
        for exp in range(4, random.randint(4, 6)):
            y = y + self.e * x ** exp
        return y
    def string(self):
        return f'y = {self.a.item():.2f} + {self.b.item():.2f} x + {self.c.item():.2f} x^2 + {self.d.item():.2f} x^3 + {self.e.item():.2f} x^4 ? + {self.e.item():.2f} x^5 ?'
random.seed(0)
model = Polynomial3()
criterion = torch.nn.MSELoss(reduction='sum')
optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
for t in range(100):
    loss = criterion(model(x), y)
    optimizer.zero_grad(); loss.backward(); optimizer.step()
print(f'Result: {model.string()}')
print(list(model.state_dict().keys()))
