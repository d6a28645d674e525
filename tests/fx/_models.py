"""The same small models written once for ember and once for torch (``make(lib)``), so the
fx tests can trace both and compare graphs and results."""


def make(lib):
    """The model classes built on ``lib`` (``ember`` or ``torch``)."""
    nn, F = lib.nn, lib.nn.functional

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x))).tanh()

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 3, 3, padding=1)
            self.bn = nn.BatchNorm2d(3)

        def forward(self, x):
            return lib.relu(self.bn(self.conv(x)) + x)

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.Sequential(Block(), Block())
            self.fc = nn.Linear(3, 2)

        def forward(self, x):
            y = self.layers(x).mean((2, 3))
            return self.fc(y) + self.fc.weight.sum()

    class Attrs(nn.Module):
        def __init__(self):
            super().__init__()
            self.param = nn.Parameter(lib.ones(3, 4))
            self.register_buffer("buf", lib.arange(4.0))

        def forward(self, x, y=2):
            z = lib.relu(x + self.param + self.buf) * y
            n = x.shape[0]
            return lib.cat([z, z.sum(dim=-1, keepdim=True)], 1).view(n, -1), x.size(1)

    return {"MLP": MLP, "CNN": CNN, "Attrs": Attrs}
