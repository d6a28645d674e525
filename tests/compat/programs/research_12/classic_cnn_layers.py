"""The older and rarer layers of classic CNN code, as the AlexNet, ShuffleNet, NIN and
"fractional max-pooling" reference implementations write them: ``LocalResponseNorm``
after ReLU, ``ChannelShuffle`` beside the hand-written ``view``/``transpose`` shuffle,
``LPPool2d``, ``FractionalMaxPool2d`` with a fixed ``_random_samples`` and with
``output_ratio``, ``AdaptiveMaxPool2d(return_indices=True)`` feeding ``MaxUnpool2d``,
``nn.Fold``/``nn.Unfold`` patch round trips, ``CircularPad2d``, ``Softmax2d``,
``nn.Unflatten``, ``RReLU`` (random in training, mean slope in eval), ``CELU`` and
``Hardshrink``; a small network of them trained for a few SGD steps."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.randn(2, 8, 9, 9)

lrn = nn.LocalResponseNorm(size=5, alpha=1e-4 * 50, beta=0.75, k=2.0)
y = lrn(F.relu(x))
print(lrn, "->", y.shape, round(y.sum().item(), 4), round(y[0, 3, 4].sum().item(), 5))


def channel_shuffle(x, groups):
    batchsize, num_channels, height, width = x.size()
    channels_per_group = num_channels // groups
    x = x.view(batchsize, groups, channels_per_group, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(batchsize, -1, height, width)


cs = nn.ChannelShuffle(4)
print(cs, "equal to hand-written:", torch.equal(cs(x), channel_shuffle(x, 4)),
      "channel order", cs(torch.arange(8.0).view(1, 8, 1, 1)).flatten().tolist())

lp = nn.LPPool2d(2, kernel_size=3, stride=2)
print(lp, tuple(lp(x).shape), round(lp(x.abs()).mean().item(), 5))
samples = torch.tensor([[[0.3, 0.7]] * 8, [[0.1, 0.9]] * 8])
fmp = nn.FractionalMaxPool2d(2, output_size=(5, 5), _random_samples=samples)
out, idx = F.fractional_max_pool2d(x, 2, output_size=(5, 5), return_indices=True, _random_samples=samples)
print("fractional (fixed samples)", tuple(fmp(x).shape), round(out.sum().item(), 4), idx[0, 0, 0].tolist())
torch.manual_seed(3)
fmp_r = nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.5))
print("fractional (random samples)", tuple(fmp_r(x).shape), round(fmp_r(x).sum().item(), 4))

amp = nn.AdaptiveMaxPool2d((3, 3), return_indices=True)
pooled, indices = amp(x)
unpool = nn.MaxUnpool2d(3, stride=3)
restored = unpool(pooled, indices, output_size=x.shape[-2:])
print("adaptive max pool + unpool: nonzeros", int((restored != 0).sum()), "kept max",
      torch.equal(restored.amax((-1, -2)), x.amax((-1, -2))), "first indices", indices[0, 0, 0].tolist())

unfold = nn.Unfold(kernel_size=3, stride=3)
fold = nn.Fold(output_size=(9, 9), kernel_size=3, stride=3)
patches = unfold(x)
print("unfold", tuple(patches.shape), "fold round trip:", torch.equal(fold(patches), x))
overlap = nn.Fold(output_size=(9, 9), kernel_size=3, stride=1)(nn.Unfold(3, stride=1)(torch.ones(1, 1, 9, 9)))
print("overlap counts corner/edge/centre", overlap[0, 0, 0, 0].item(), overlap[0, 0, 0, 4].item(),
      overlap[0, 0, 4, 4].item())

circ = nn.CircularPad2d((1, 2, 0, 1))
print(circ, tuple(circ(x).shape), torch.equal(circ(x)[..., :9, 0], x[..., :, -1]))
sm2d = nn.Softmax2d()
print("Softmax2d sums", sm2d(x).sum(1)[0, 0, :3].tolist())
unflat = nn.Unflatten(1, (2, 4))
print(unflat, tuple(unflat(x).shape))

rrelu = nn.RReLU(0.1, 0.3)
neg = -torch.ones(6)
torch.manual_seed(5)
train_slopes = rrelu(neg)
rrelu.eval()
print("RReLU train slopes", [round(v, 5) for v in (-train_slopes).tolist()], "eval", rrelu(neg)[0].item())
print("CELU", nn.CELU(alpha=0.5)(torch.tensor([-2.0, -0.1, 0.0, 1.5])).tolist())
print("Hardshrink", nn.Hardshrink(0.5)(torch.tensor([-0.7, -0.5, 0.2, 0.5, 0.9])).tolist())


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.CircularPad2d(1), nn.Conv2d(8, 16, 3), nn.CELU(), nn.LocalResponseNorm(3),
            nn.ChannelShuffle(2), nn.LPPool2d(2, 2), nn.Conv2d(16, 16, 1), nn.Hardshrink(0.05),
            nn.AdaptiveMaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(64, 3), nn.Unflatten(1, (3, 1)))

    def forward(self, x):
        return self.classifier(self.features(x)).squeeze(-1)


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
target = torch.tensor([0, 2])
for step in range(6):
    loss = F.cross_entropy(net(x), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.5f} grad-norm "
          f"{torch.norm(torch.stack([p.grad.norm() for p in net.parameters()])).item():.5f}")
