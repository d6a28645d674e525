"""Video classification the way torchvision's ``video_resnet`` and the R(2+1)D / C3D /
SlowFast-style repositories write it: a ``Conv2Plus1D`` factorisation (spatial (1,3,3)
then temporal (3,1,1) ``Conv3d`` with the midplanes formula), ``BasicBlock`` with a
``Conv3DNoTemporal`` downsample, ``BatchNorm3d``, ``MaxPool3d`` with ``return_indices``
and ``MaxUnpool3d``, ``AdaptiveAvgPool3d``, a SlowFast-style lateral connection by a
temporally strided ``Conv3d``, clip sampling by ``torch.linspace`` indices and
``index_select``, multi-clip test averaging, a torchinfo-style summary printed from
forward hooks (layer, output shape, parameters), ``channels_last_3d``, and the
``torch.backends.cudnn`` flags set as upstream sets them."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cudnn.benchmark = False
torch.backends.cudnn.deterministic = True
torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Conv2Plus1D(nn.Sequential):
    def __init__(self, in_planes, out_planes, midplanes, stride=1, padding=1):
        super().__init__(
            nn.Conv3d(in_planes, midplanes, kernel_size=(1, 3, 3), stride=(1, stride, stride),
                      padding=(0, padding, padding), bias=False),
            nn.BatchNorm3d(midplanes), nn.ReLU(inplace=True),
            nn.Conv3d(midplanes, out_planes, kernel_size=(3, 1, 1), stride=(stride, 1, 1),
                      padding=(padding, 0, 0), bias=False))

    @staticmethod
    def get_downsample_stride(stride):
        return stride, stride, stride


class Conv3DNoTemporal(nn.Conv3d):
    def __init__(self, in_planes, out_planes, midplanes=None, stride=1, padding=1):
        super().__init__(in_channels=in_planes, out_channels=out_planes,
                         kernel_size=(1, 3, 3), stride=(1, stride, stride),
                         padding=(0, padding, padding), bias=False)

    @staticmethod
    def get_downsample_stride(stride):
        return 1, stride, stride


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, conv_builder, stride=1, downsample=None):
        midplanes = (inplanes * planes * 3 * 3 * 3) // (inplanes * 3 * 3 + 3 * planes)
        super().__init__()
        self.conv1 = nn.Sequential(conv_builder(inplanes, planes, midplanes, stride),
                                   nn.BatchNorm3d(planes), nn.ReLU(inplace=True))
        self.conv2 = nn.Sequential(conv_builder(planes, planes, midplanes),
                                   nn.BatchNorm3d(planes))
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        residual = x
        out = self.conv2(self.conv1(x))
        if self.downsample is not None:
            residual = self.downsample(x)
        out += residual
        return self.relu(out)


class VideoResNet(nn.Module):
    def __init__(self, conv_makers, num_classes=5):
        super().__init__()
        self.inplanes = 8
        self.stem = nn.Sequential(
            nn.Conv3d(3, 6, kernel_size=(1, 5, 5), stride=(1, 2, 2), padding=(0, 2, 2),
                      bias=False), nn.BatchNorm3d(6), nn.ReLU(inplace=True),
            nn.Conv3d(6, 8, kernel_size=(3, 1, 1), stride=(1, 1, 1), padding=(1, 0, 0),
                      bias=False), nn.BatchNorm3d(8), nn.ReLU(inplace=True))
        self.layer1 = self._make_layer(conv_makers[0], 8, 1, stride=1)
        self.layer2 = self._make_layer(conv_makers[1], 12, 1, stride=2)
        self.avgpool = nn.AdaptiveAvgPool3d((1, 1, 1))
        self.fc = nn.Linear(12, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv3d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm3d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block_builder, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            ds_stride = block_builder.get_downsample_stride(stride)
            downsample = nn.Sequential(
                nn.Conv3d(self.inplanes, planes, kernel_size=1, stride=ds_stride, bias=False),
                nn.BatchNorm3d(planes))
        layers = [BasicBlock(self.inplanes, planes, block_builder, stride, downsample)]
        self.inplanes = planes
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        x = self.avgpool(x).flatten(1)
        return self.fc(x)


def summary(model, input_size):
    rows, hooks = [], []

    def register(module):
        def hook(mod, inp, out):
            name = f"{mod.__class__.__name__}-{len(rows) + 1}"
            params = sum(p.numel() for p in mod.parameters(recurse=False))
            rows.append((name, list(out.shape), params))
        if not isinstance(module, (nn.Sequential, nn.ModuleList)) and module is not model:
            hooks.append(module.register_forward_hook(hook))

    model.apply(register)
    model.eval()
    with torch.no_grad():
        model(torch.zeros(*input_size))
    for h in hooks:
        h.remove()
    print("-" * 64)
    print("{:>24}  {:>25} {:>12}".format("Layer (type)", "Output Shape", "Param #"))
    print("=" * 64)
    for name, shape, params in rows:
        print("{:>24}  {:>25} {:>12}".format(name, str(shape), "{0:,}".format(params)))
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print("=" * 64)
    print(f"Total params: {total:,}\nTrainable params: {trainable:,}")
    print("-" * 64)


model = VideoResNet([Conv2Plus1D, Conv3DNoTemporal]).to(device)
summary(model, (1, 3, 8, 16, 16))


def make_videos(n, g):
    """Moving blobs: the class is the direction/speed of motion."""
    T, H, W = 16, 16, 16
    labels = torch.randint(0, 5, (n,), generator=g)
    vids = torch.zeros(n, 3, T, H, W)
    yy, xx = torch.meshgrid(torch.arange(H).float(), torch.arange(W).float(), indexing="ij")
    for i in range(n):
        c = int(labels[i])
        dx, dy = [(1, 0), (-1, 0), (0, 1), (0, -1), (0, 0)][c]
        x0, y0 = 8 + 2 * torch.rand(2, generator=g)
        for t in range(T):
            cx, cy = x0 + dx * t * 0.5, y0 + dy * t * 0.5
            vids[i, :, t] = torch.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / 6.0)
    return vids + 0.05 * torch.randn(vids.shape, generator=g), labels


def sample_clip(video, num_frames=8, start=0.0):
    T = video.shape[1]
    span = T // 2
    begin = int(start * (T - span))
    idx = torch.linspace(begin, begin + span - 1, num_frames).round().long()
    return video.index_select(1, idx)


g = torch.Generator().manual_seed(0)
videos, labels = make_videos(20, g)
clips = torch.stack([sample_clip(v, start=0.5) for v in videos])
print("clip", tuple(clips.shape))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
model.train()
for step in range(4):
    optimizer.zero_grad()
    out = model(clips)
    loss = F.cross_entropy(out, labels)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f} acc {(out.argmax(1) == labels).float().mean():.3f}")

model.eval()
with torch.no_grad():
    multi = torch.stack([F.softmax(model(torch.stack([sample_clip(v, start=s) for v in videos])),
                                   1) for s in (0.0, 0.5, 1.0)])
    avg = multi.mean(0)
print("multi-clip", tuple(multi.shape), avg[:2], (avg.argmax(1) == labels).float().mean().item())
cl = clips.to(memory_format=torch.channels_last_3d)
print("channels_last_3d", cl.is_contiguous(memory_format=torch.channels_last_3d), cl.stride())
with torch.no_grad():
    print("same on channels_last_3d", torch.allclose(model(cl), model(clips), atol=1e-5))

pool = nn.MaxPool3d(kernel_size=2, stride=2, return_indices=True)
unpool = nn.MaxUnpool3d(kernel_size=2, stride=2)
x = torch.randn(1, 2, 4, 4, 4)
pooled, indices = pool(x)
restored = unpool(pooled, indices)
print(pooled.shape, indices.dtype, indices[0, 0, 0], (restored != 0).sum().item(),
      torch.equal(restored.amax(dim=(2, 3, 4)), x.amax(dim=(2, 3, 4))))

slow_path = torch.randn(1, 8, 2, 4, 4)
fast_path = torch.randn(1, 2, 8, 4, 4)
lateral = nn.Conv3d(2, 4, kernel_size=(5, 1, 1), stride=(4, 1, 1), padding=(2, 0, 0),
                    bias=False)
fused = torch.cat([slow_path, lateral(fast_path)], dim=1)
print("slowfast fuse", tuple(fused.shape), fused.std().item() > 0)
