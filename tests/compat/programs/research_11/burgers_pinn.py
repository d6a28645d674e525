"""A physics-informed network for the viscous Burgers equation as maziarraissi/PINNs'
PyTorch ports write it: a ``DNN`` built from an ``OrderedDict`` of layers, collocation
points from a Latin-hypercube-like NumPy draw, boundary and initial data, PDE residuals
``u_t + u u_x - nu u_xx`` through ``torch.autograd.grad`` with ``create_graph=True`` and
``grad_outputs=torch.ones_like``, Adam warm-up then ``LBFGS`` with a closure and
``line_search_fn="strong_wolfe"``, and the inverse problem learning ``lambda_1`` and
``log(lambda_2)`` as ``nn.Parameter`` registered on the model, in float64."""
from collections import OrderedDict

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
np.random.seed(1234)
torch.manual_seed(1234)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
nu = 0.01 / np.pi


class DNN(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.depth = len(layers) - 1
        self.activation = torch.nn.Tanh
        layer_list = []
        for i in range(self.depth - 1):
            layer_list.append(("layer_%d" % i, torch.nn.Linear(layers[i], layers[i + 1])))
            layer_list.append(("activation_%d" % i, self.activation()))
        layer_list.append(("layer_%d" % (self.depth - 1), torch.nn.Linear(layers[-2], layers[-1])))
        self.layers = torch.nn.Sequential(OrderedDict(layer_list))

    def forward(self, x):
        return self.layers(x)


class PhysicsInformedNN:
    def __init__(self, X_u, u, X_f, layers, lb, ub, inverse=False):
        self.lb = torch.tensor(lb).float().double().to(device)
        self.ub = torch.tensor(ub).double().to(device)
        self.x_u = torch.tensor(X_u[:, 0:1], requires_grad=True).to(device)
        self.t_u = torch.tensor(X_u[:, 1:2], requires_grad=True).to(device)
        self.x_f = torch.tensor(X_f[:, 0:1], requires_grad=True).to(device)
        self.t_f = torch.tensor(X_f[:, 1:2], requires_grad=True).to(device)
        self.u = torch.tensor(u).to(device)
        self.dnn = DNN(layers).to(device)
        self.inverse = inverse
        if inverse:
            self.lambda_1 = torch.nn.Parameter(torch.tensor([0.0]))
            self.lambda_2 = torch.nn.Parameter(torch.tensor([-6.0]))
            self.dnn.register_parameter("lambda_1", self.lambda_1)
            self.dnn.register_parameter("lambda_2", self.lambda_2)
        self.optimizer = torch.optim.LBFGS(self.dnn.parameters(), lr=1.0, max_iter=25, max_eval=30,
                                           history_size=20, tolerance_grad=1e-9,
                                           tolerance_change=1.0 * np.finfo(float).eps,
                                           line_search_fn="strong_wolfe")
        self.optimizer_Adam = torch.optim.Adam(self.dnn.parameters(), lr=3e-3)
        self.iter = 0

    def net_u(self, x, t):
        X = torch.cat([x, t], dim=1)
        H = 2.0 * (X - self.lb) / (self.ub - self.lb) - 1.0
        return self.dnn(H)

    def net_f(self, x, t):
        u = self.net_u(x, t)
        u_t = torch.autograd.grad(u, t, grad_outputs=torch.ones_like(u), retain_graph=True, create_graph=True)[0]
        u_x = torch.autograd.grad(u, x, grad_outputs=torch.ones_like(u), retain_graph=True, create_graph=True)[0]
        u_xx = torch.autograd.grad(u_x, x, grad_outputs=torch.ones_like(u_x), retain_graph=True, create_graph=True)[0]
        if self.inverse:
            return u_t + self.lambda_1 * u * u_x - torch.exp(self.lambda_2) * u_xx
        return u_t + u * u_x - nu * u_xx

    def loss_func(self):
        u_pred = self.net_u(self.x_u, self.t_u)
        f_pred = self.net_f(self.x_f, self.t_f)
        loss_u = torch.mean((self.u - u_pred) ** 2)
        loss_f = torch.mean(f_pred ** 2)
        return loss_u, loss_f

    def closure(self):
        self.optimizer.zero_grad()
        loss_u, loss_f = self.loss_func()
        loss = loss_u + loss_f
        loss.backward()
        self.iter += 1
        if self.iter % 10 == 0:
            extra = (f", l1 {self.lambda_1.item():.5f}, l2 {torch.exp(self.lambda_2).item():.6f}"
                     if self.inverse else "")
            print("Iter %d, Loss: %.5e, Loss_u: %.5e, Loss_f: %.5e%s"
                  % (self.iter, loss.item(), loss_u.item(), loss_f.item(), extra))
        return loss

    def train(self, adam_steps):
        self.dnn.train()
        for _ in range(adam_steps):
            self.optimizer_Adam.zero_grad()
            lu, lf = self.loss_func()
            (lu + lf).backward()
            self.optimizer_Adam.step()
        print(f"after Adam loss_u {lu.item():.6e} loss_f {lf.item():.6e}")
        self.optimizer.step(self.closure)

    def predict(self, X):
        x = torch.tensor(X[:, 0:1], requires_grad=True).to(device)
        t = torch.tensor(X[:, 1:2], requires_grad=True).to(device)
        self.dnn.eval()
        u = self.net_u(x, t)
        f = self.net_f(x, t)
        return u.detach().cpu().numpy(), f.detach().cpu().numpy()


lb, ub = np.array([-1.0, 0.0]), np.array([1.0, 1.0])
N_u, N_f = 30, 200
x0 = np.linspace(-1, 1, 20)[:, None]
X_ic = np.hstack([x0, np.zeros_like(x0)])
u_ic = -np.sin(np.pi * x0)
tb = np.linspace(0, 1, 10)[:, None]
X_bc = np.vstack([np.hstack([-np.ones_like(tb), tb]), np.hstack([np.ones_like(tb), tb])])
u_bc = np.zeros((20, 1))
X_u_train = np.vstack([X_ic, X_bc])
u_train = np.vstack([u_ic, u_bc])
idx = np.random.choice(X_u_train.shape[0], N_u, replace=False)
X_u_train, u_train = X_u_train[idx, :], u_train[idx, :]
X_f_train = lb + (ub - lb) * np.random.rand(N_f, 2)
X_f_train = np.vstack((X_f_train, X_u_train))
layers = [2, 16, 16, 1]

model = PhysicsInformedNN(X_u_train, u_train, X_f_train, layers, lb, ub)
print(model.dnn)
model.train(adam_steps=50)
X_star = np.stack([np.linspace(-0.9, 0.9, 5), np.full(5, 0.3)], 1)
u_pred, f_pred = model.predict(X_star)
print("u_pred", np.round(u_pred.ravel(), 5), "max |f|", float(np.abs(f_pred).max()) < 1.0)

inv = PhysicsInformedNN(X_u_train, u_train, X_f_train, layers, lb, ub, inverse=True)
print([n for n, _ in inv.dnn.named_parameters()][-2:])
inv.train(adam_steps=30)
print(f"lambda_1 {inv.lambda_1.item():.6f} lambda_2 {torch.exp(inv.lambda_2).item():.6e}")
state = inv.optimizer.state_dict()
print("LBFGS state", sorted(state["state"][0].keys())[:6], state["state"][0]["n_iter"])
