"""A temporal convolutional network the way locuslab/TCN writes it, on the new parametrization
API: Conv1d layers wrapped in nn.utils.parametrizations.weight_norm (original0/original1),
Chomp1d cutting the causal padding, dilations doubling per level, residual 1x1 downsampling,
the adding-problem data, Adam with gradient clipping; then the old hook-based
nn.utils.weight_norm / remove_weight_norm and parametrize.remove_parametrizations."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parametrize
from torch.nn.utils.parametrizations import weight_norm

torch.manual_seed(0)


class Chomp1d(nn.Module):
    def __init__(self, chomp_size):
        super().__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, :-self.chomp_size].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, n_inputs, n_outputs, kernel_size, stride, dilation, padding, dropout=0.2):
        super().__init__()
        self.conv1 = weight_norm(nn.Conv1d(n_inputs, n_outputs, kernel_size, stride=stride,
                                           padding=padding, dilation=dilation))
        self.chomp1 = Chomp1d(padding)
        self.relu1 = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout)
        self.conv2 = weight_norm(nn.Conv1d(n_outputs, n_outputs, kernel_size, stride=stride,
                                           padding=padding, dilation=dilation))
        self.chomp2 = Chomp1d(padding)
        self.relu2 = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)
        self.net = nn.Sequential(self.conv1, self.chomp1, self.relu1, self.dropout1,
                                 self.conv2, self.chomp2, self.relu2, self.dropout2)
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.relu = nn.ReLU()
        self.init_weights()

    def init_weights(self):
        self.conv1.weight.data.normal_(0, 0.01)
        self.conv2.weight.data.normal_(0, 0.01)
        if self.downsample is not None:
            self.downsample.weight.data.normal_(0, 0.01)

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class TemporalConvNet(nn.Module):
    def __init__(self, num_inputs, num_channels, kernel_size=2, dropout=0.2):
        super().__init__()
        layers = []
        for i in range(len(num_channels)):
            dilation_size = 2 ** i
            in_channels = num_inputs if i == 0 else num_channels[i - 1]
            out_channels = num_channels[i]
            layers += [TemporalBlock(in_channels, out_channels, kernel_size, stride=1,
                                     dilation=dilation_size,
                                     padding=(kernel_size - 1) * dilation_size, dropout=dropout)]
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


class TCN(nn.Module):
    def __init__(self, input_size, output_size, num_channels, kernel_size, dropout):
        super().__init__()
        self.tcn = TemporalConvNet(input_size, num_channels, kernel_size=kernel_size,
                                   dropout=dropout)
        self.linear = nn.Linear(num_channels[-1], output_size)
        self.linear.weight.data.normal_(0, 0.01)

    def forward(self, x):
        y1 = self.tcn(x)
        return self.linear(y1[:, :, -1])


def data_generator(N, seq_length):
    X_num = torch.rand([N, 1, seq_length])
    X_mask = torch.zeros([N, 1, seq_length])
    Y = torch.zeros([N, 1])
    for i in range(N):
        positions = torch.randperm(seq_length)[:2]
        X_mask[i, 0, positions[0]] = 1
        X_mask[i, 0, positions[1]] = 1
        Y[i, 0] = X_num[i, 0, positions[0]] + X_num[i, 0, positions[1]]
    return torch.cat((X_num, X_mask), dim=1), Y


X_train, Y_train = data_generator(64, 20)
model = TCN(2, 1, [8, 8, 8], kernel_size=3, dropout=0.1)
names = [n for n, _ in model.named_parameters()][:3]
print("params", names, parametrize.is_parametrized(model.tcn.network[0].conv1))
optimizer = torch.optim.Adam(model.parameters(), lr=4e-3)
for epoch in range(3):
    model.train()
    for i in range(0, 64, 16):
        x, y = X_train[i:i + 16], Y_train[i:i + 16]
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.6f}")
model.eval()
conv = model.tcn.network[1].conv1
g, v = conv.parametrizations.weight.original0, conv.parametrizations.weight.original1
norm = v.flatten(1).norm(dim=1).view(-1, 1, 1)
print("weight = g v/|v|", torch.allclose(conv.weight, g * v / norm, atol=1e-6),
      tuple(g.shape), f"{g.abs().mean().item():.6f}")
with torch.no_grad():
    before = model(X_train[:4])
    for block in model.tcn.network:
        parametrize.remove_parametrizations(block.conv1, "weight")
        parametrize.remove_parametrizations(block.conv2, "weight")
    after = model(X_train[:4])
print("removed", torch.allclose(before, after, atol=1e-6), type(conv.weight).__name__,
      [round(v, 5) for v in after.flatten().tolist()])

lin = nn.utils.weight_norm(nn.Linear(5, 3), name="weight", dim=0)
print("old api", sorted(n for n, _ in lin.named_parameters()), tuple(lin.weight_g.shape))
out = lin(torch.randn(2, 5)).sum()
out.backward()
print("grads", f"{lin.weight_g.grad.abs().sum().item():.5f}",
      f"{lin.weight_v.grad.abs().sum().item():.5f}")
nn.utils.remove_weight_norm(lin)
print("old removed", sorted(n for n, _ in lin.named_parameters()))
