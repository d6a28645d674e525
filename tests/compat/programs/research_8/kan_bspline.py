"""A Kolmogorov-Arnold network the way Blealtan/efficient-kan writes it: ``KANLinear`` with
a grid buffer, B-spline bases by the Cox-de Boor recursion over broadcast comparisons,
``curve2coeff`` through ``torch.linalg.lstsq`` (batched over input features), a SiLU base
branch, a standalone spline scaler, grid updates from the data's sorted quantiles and the
L1/entropy regulariser; fitted to a symbolic formula with argparse flags, a tqdm-style
progress loop, LBFGS refinement and a ``state_dict`` round trip."""
import argparse
import math

import torch
import torch.nn.functional as F

parser = argparse.ArgumentParser(description="KAN on a symbolic formula")
parser.add_argument("--grid-size", type=int, default=5)
parser.add_argument("--spline-order", type=int, default=3)
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--lr", type=float, default=1e-2)
parser.add_argument("--seed", type=int, default=0)
args = parser.parse_args([])

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(args.seed)


class KANLinear(torch.nn.Module):
    def __init__(self, in_features, out_features, grid_size=5, spline_order=3,
                 scale_noise=0.1, scale_base=1.0, scale_spline=1.0,
                 enable_standalone_scale_spline=True, base_activation=torch.nn.SiLU,
                 grid_eps=0.02, grid_range=(-1, 1)):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.grid_size = grid_size
        self.spline_order = spline_order

        h = (grid_range[1] - grid_range[0]) / grid_size
        grid = (torch.arange(-spline_order, grid_size + spline_order + 1) * h
                + grid_range[0]).expand(in_features, -1).contiguous()
        self.register_buffer("grid", grid)

        self.base_weight = torch.nn.Parameter(torch.Tensor(out_features, in_features))
        self.spline_weight = torch.nn.Parameter(
            torch.Tensor(out_features, in_features, grid_size + spline_order))
        if enable_standalone_scale_spline:
            self.spline_scaler = torch.nn.Parameter(torch.Tensor(out_features, in_features))

        self.scale_noise = scale_noise
        self.scale_base = scale_base
        self.scale_spline = scale_spline
        self.enable_standalone_scale_spline = enable_standalone_scale_spline
        self.base_activation = base_activation()
        self.grid_eps = grid_eps
        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.kaiming_uniform_(self.base_weight, a=math.sqrt(5) * self.scale_base)
        with torch.no_grad():
            noise = ((torch.rand(self.grid_size + 1, self.in_features, self.out_features) - 1 / 2)
                     * self.scale_noise / self.grid_size)
            self.spline_weight.data.copy_(
                (self.scale_spline if not self.enable_standalone_scale_spline else 1.0)
                * self.curve2coeff(self.grid.T[self.spline_order:-self.spline_order], noise))
            if self.enable_standalone_scale_spline:
                torch.nn.init.kaiming_uniform_(self.spline_scaler, a=math.sqrt(5) * self.scale_spline)

    def b_splines(self, x: torch.Tensor):
        assert x.dim() == 2 and x.size(1) == self.in_features
        grid: torch.Tensor = self.grid
        x = x.unsqueeze(-1)
        bases = ((x >= grid[:, :-1]) & (x < grid[:, 1:])).to(x.dtype)
        for k in range(1, self.spline_order + 1):
            bases = ((x - grid[:, : -(k + 1)]) / (grid[:, k:-1] - grid[:, : -(k + 1)]) * bases[:, :, :-1]) + (
                (grid[:, k + 1:] - x) / (grid[:, k + 1:] - grid[:, 1:(-k)]) * bases[:, :, 1:])
        assert bases.size() == (x.size(0), self.in_features, self.grid_size + self.spline_order)
        return bases.contiguous()

    def curve2coeff(self, x: torch.Tensor, y: torch.Tensor):
        A = self.b_splines(x).transpose(0, 1)
        B = y.transpose(0, 1)
        solution = torch.linalg.lstsq(A, B).solution
        result = solution.permute(2, 0, 1)
        assert result.size() == (self.out_features, self.in_features,
                                 self.grid_size + self.spline_order)
        return result.contiguous()

    @property
    def scaled_spline_weight(self):
        return self.spline_weight * (self.spline_scaler.unsqueeze(-1)
                                     if self.enable_standalone_scale_spline else 1.0)

    def forward(self, x: torch.Tensor):
        original_shape = x.shape
        x = x.reshape(-1, self.in_features)
        base_output = F.linear(self.base_activation(x), self.base_weight)
        spline_output = F.linear(self.b_splines(x).view(x.size(0), -1),
                                 self.scaled_spline_weight.view(self.out_features, -1))
        output = base_output + spline_output
        return output.reshape(*original_shape[:-1], self.out_features)

    @torch.no_grad()
    def update_grid(self, x: torch.Tensor, margin=0.01):
        batch = x.size(0)
        splines = self.b_splines(x).permute(1, 0, 2)
        orig_coeff = self.scaled_spline_weight.permute(1, 2, 0)
        unreduced_spline_output = torch.bmm(splines, orig_coeff).permute(1, 0, 2)
        x_sorted = torch.sort(x, dim=0)[0]
        grid_adaptive = x_sorted[torch.linspace(0, batch - 1, self.grid_size + 1,
                                                dtype=torch.int64, device=x.device)]
        uniform_step = (x_sorted[-1] - x_sorted[0] + 2 * margin) / self.grid_size
        grid_uniform = (torch.arange(self.grid_size + 1, dtype=torch.float32,
                                     device=x.device).unsqueeze(1)
                        * uniform_step + x_sorted[0] - margin)
        grid = self.grid_eps * grid_uniform + (1 - self.grid_eps) * grid_adaptive
        grid = torch.concatenate([
            grid[:1] - uniform_step * torch.arange(self.spline_order, 0, -1,
                                                   device=x.device).unsqueeze(1),
            grid,
            grid[-1:] + uniform_step * torch.arange(1, self.spline_order + 1,
                                                    device=x.device).unsqueeze(1),
        ], dim=0)
        self.grid.copy_(grid.T)
        self.spline_weight.data.copy_(self.curve2coeff(x, unreduced_spline_output))

    def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
        l1_fake = self.spline_weight.abs().mean(-1)
        regularization_loss_activation = l1_fake.sum()
        p = l1_fake / regularization_loss_activation
        regularization_loss_entropy = -torch.sum(p * p.log())
        return (regularize_activation * regularization_loss_activation
                + regularize_entropy * regularization_loss_entropy)


class KAN(torch.nn.Module):
    def __init__(self, layers_hidden, grid_size=5, spline_order=3, **kw):
        super().__init__()
        self.layers = torch.nn.ModuleList()
        for in_features, out_features in zip(layers_hidden, layers_hidden[1:]):
            self.layers.append(KANLinear(in_features, out_features, grid_size=grid_size,
                                         spline_order=spline_order, **kw))

    def forward(self, x: torch.Tensor, update_grid=False):
        for layer in self.layers:
            if update_grid:
                layer.update_grid(x)
            x = layer(x)
        return x

    def regularization_loss(self, regularize_activation=1.0, regularize_entropy=1.0):
        return sum(layer.regularization_loss(regularize_activation, regularize_entropy)
                   for layer in self.layers)


def target_fn(x):
    return torch.exp(torch.sin(math.pi * x[:, [0]]) + x[:, [1]] ** 2)


x_train = torch.rand(128, 2, device=device) * 2 - 1
y_train = target_fn(x_train)
x_test = torch.rand(64, 2, device=device) * 2 - 1
y_test = target_fn(x_test)

model = KAN([2, 4, 1], grid_size=args.grid_size, spline_order=args.spline_order).to(device)
print(model)
print("params:", sum(p.numel() for p in model.parameters()))
print("grid[0]:", model.layers[0].grid[0])
print("bases row sums:", model.layers[0].b_splines(x_train[:3]).sum(-1))

optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.98)
for step in range(args.steps):
    model.train()
    update = step in (10, 20)
    pred = model(x_train, update_grid=update)
    mse = F.mse_loss(pred, y_train)
    reg = model.regularization_loss(1.0, 1.0)
    loss = mse + 1e-5 * reg
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    scheduler.step()
    if step % 5 == 0 or update:
        with torch.no_grad():
            test = F.mse_loss(model(x_test), y_test)
        print(f"step {step:3d} | mse {mse.item():.5f} | reg {reg.item():.4f} | "
              f"test {test.item():.5f} | lr {scheduler.get_last_lr()[0]:.6f}"
              + (" | grid updated" if update else ""))

print("grid after update:", model.layers[0].grid[1, :4])

lbfgs = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4, history_size=5,
                          line_search_fn="strong_wolfe")


def closure():
    lbfgs.zero_grad()
    loss = F.mse_loss(model(x_train), y_train)
    loss.backward()
    return loss


for it in range(2):
    loss = lbfgs.step(closure)
    print(f"lbfgs {it} loss {loss.item():.6f}")

state = model.state_dict()
torch.save(state, "kan.pt")
clone = KAN([2, 4, 1], grid_size=args.grid_size, spline_order=args.spline_order)
missing = clone.load_state_dict(torch.load("kan.pt", map_location="cpu", weights_only=True))
print(missing)
with torch.no_grad():
    print("reloaded equal:", torch.equal(clone(x_test), model(x_test)))
    print("prediction:", clone(x_test[:4]).squeeze(-1))
