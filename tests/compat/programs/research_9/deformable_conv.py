"""Deformable convolution v2 in pure PyTorch the way 4uiiurz1/pytorch-deform-conv-v2 and
the DCN re-implementations write it: an offset conv (zero-initialised, its gradient scaled
by a tensor ``register_hook``), a modulation conv with ``sigmoid``, sampling positions built
from ``torch.meshgrid`` of kernel offsets plus the learned offsets, bilinear interpolation
by ``floor`` and four ``gather``s over a flattened padded input (``clamp`` at the borders,
``.long()`` indices), the columns rearranged to a ``ks * H`` by ``ks * W`` map and a strided
conv; checked against an ordinary conv when offsets are zero and against ``F.grid_sample``
sampling, then trained in a small classifier."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


class DeformConv2d(nn.Module):
    def __init__(self, inc, outc, kernel_size=3, padding=1, stride=1, bias=None, modulation=False):
        super(DeformConv2d, self).__init__()
        self.kernel_size, self.padding, self.stride = kernel_size, padding, stride
        self.zero_padding = nn.ZeroPad2d(padding)
        self.conv = nn.Conv2d(inc, outc, kernel_size=kernel_size, stride=kernel_size, bias=bias)
        self.p_conv = nn.Conv2d(inc, 2 * kernel_size * kernel_size, kernel_size=3, padding=1, stride=stride)
        nn.init.constant_(self.p_conv.weight, 0)
        self.modulation = modulation
        if modulation:
            self.m_conv = nn.Conv2d(inc, kernel_size * kernel_size, kernel_size=3, padding=1, stride=stride)
            nn.init.constant_(self.m_conv.weight, 0)

    def forward(self, x):
        offset = self.p_conv(x)
        if offset.requires_grad:
            offset.register_hook(lambda grad: grad * 0.1)
        if self.modulation:
            m = torch.sigmoid(self.m_conv(x))
        dtype = offset.data.type()
        ks = self.kernel_size
        N = offset.size(1) // 2
        if self.padding:
            x = self.zero_padding(x)
        p = self._get_p(offset, dtype)
        p = p.contiguous().permute(0, 2, 3, 1)
        q_lt = p.detach().floor()
        q_rb = q_lt + 1
        q_lt = torch.cat([torch.clamp(q_lt[..., :N], 0, x.size(2) - 1),
                          torch.clamp(q_lt[..., N:], 0, x.size(3) - 1)], dim=-1).long()
        q_rb = torch.cat([torch.clamp(q_rb[..., :N], 0, x.size(2) - 1),
                          torch.clamp(q_rb[..., N:], 0, x.size(3) - 1)], dim=-1).long()
        q_lb = torch.cat([q_lt[..., :N], q_rb[..., N:]], dim=-1)
        q_rt = torch.cat([q_rb[..., :N], q_lt[..., N:]], dim=-1)
        p = torch.cat([torch.clamp(p[..., :N], 0, x.size(2) - 1), torch.clamp(p[..., N:], 0, x.size(3) - 1)], dim=-1)
        g_lt = (1 + (q_lt[..., :N].type_as(p) - p[..., :N])) * (1 + (q_lt[..., N:].type_as(p) - p[..., N:]))
        g_rb = (1 - (q_rb[..., :N].type_as(p) - p[..., :N])) * (1 - (q_rb[..., N:].type_as(p) - p[..., N:]))
        g_lb = (1 + (q_lb[..., :N].type_as(p) - p[..., :N])) * (1 - (q_lb[..., N:].type_as(p) - p[..., N:]))
        g_rt = (1 - (q_rt[..., :N].type_as(p) - p[..., :N])) * (1 + (q_rt[..., N:].type_as(p) - p[..., N:]))
        x_q_lt = self._get_x_q(x, q_lt, N)
        x_q_rb = self._get_x_q(x, q_rb, N)
        x_q_lb = self._get_x_q(x, q_lb, N)
        x_q_rt = self._get_x_q(x, q_rt, N)
        x_offset = g_lt.unsqueeze(dim=1) * x_q_lt + g_rb.unsqueeze(dim=1) * x_q_rb + \
            g_lb.unsqueeze(dim=1) * x_q_lb + g_rt.unsqueeze(dim=1) * x_q_rt
        if self.modulation:
            m = m.contiguous().permute(0, 2, 3, 1)
            m = m.unsqueeze(dim=1)
            m = torch.cat([m for _ in range(x_offset.size(1))], dim=1)
            x_offset *= m
        x_offset = self._reshape_x_offset(x_offset, ks)
        return self.conv(x_offset)

    def _get_p_n(self, N, dtype):
        p_n_x, p_n_y = torch.meshgrid(
            torch.arange(-(self.kernel_size - 1) // 2, (self.kernel_size - 1) // 2 + 1),
            torch.arange(-(self.kernel_size - 1) // 2, (self.kernel_size - 1) // 2 + 1), indexing="ij")
        p_n = torch.cat([torch.flatten(p_n_x), torch.flatten(p_n_y)], 0)
        return p_n.view(1, 2 * N, 1, 1).type(dtype)

    def _get_p_0(self, h, w, N, dtype):
        p_0_x, p_0_y = torch.meshgrid(torch.arange(1, h * self.stride + 1, self.stride),
                                      torch.arange(1, w * self.stride + 1, self.stride), indexing="ij")
        p_0_x = torch.flatten(p_0_x).view(1, 1, h, w).repeat(1, N, 1, 1)
        p_0_y = torch.flatten(p_0_y).view(1, 1, h, w).repeat(1, N, 1, 1)
        return torch.cat([p_0_x, p_0_y], 1).type(dtype)

    def _get_p(self, offset, dtype):
        N, h, w = offset.size(1) // 2, offset.size(2), offset.size(3)
        p_n = self._get_p_n(N, dtype)
        p_0 = self._get_p_0(h, w, N, dtype)
        return p_0 + p_n + offset

    def _get_x_q(self, x, q, N):
        b, h, w, _ = q.size()
        padded_w = x.size(3)
        c = x.size(1)
        x = x.contiguous().view(b, c, -1)
        index = q[..., :N] * padded_w + q[..., N:]
        index = index.contiguous().unsqueeze(dim=1).expand(-1, c, -1, -1, -1).contiguous().view(b, c, -1)
        return x.gather(dim=-1, index=index).contiguous().view(b, c, h, w, N)

    @staticmethod
    def _reshape_x_offset(x_offset, ks):
        b, c, h, w, N = x_offset.size()
        x_offset = torch.cat([x_offset[..., s:s + ks].contiguous().view(b, c, h, w * ks) for s in range(0, N, ks)],
                             dim=-1)
        return x_offset.contiguous().view(b, c, h * ks, w * ks)


x = torch.randn(2, 3, 7, 7)
dcn = DeformConv2d(3, 4, modulation=False)
ref = F.conv2d(x, dcn.conv.weight, padding=1)
print("zero offsets == conv:", torch.allclose(dcn(x), ref, atol=1e-5), tuple(dcn(x).shape))
dcn_s2 = DeformConv2d(3, 4, stride=2, modulation=True)
print("stride 2 modulated:", tuple(dcn_s2(x).shape), f"{dcn_s2(x).abs().mean().item():.5f}")

# one sampling position checked against grid_sample's bilinear interpolation
with torch.no_grad():
    dcn.p_conv.bias.copy_(torch.linspace(-0.7, 0.8, 18))
    xp = F.pad(x, (1, 1, 1, 1))
    p = dcn._get_p(dcn.p_conv(x), x.type()).permute(0, 2, 3, 1)
    py, px = p[0, 3, 3, 4].item(), p[0, 3, 3, 13].item()
    grid = torch.tensor([[[[2 * px / (xp.shape[3] - 1) - 1, 2 * py / (xp.shape[2] - 1) - 1]]]])
    gs = F.grid_sample(xp[:1], grid, mode="bilinear", align_corners=True)[0, :, 0, 0]
print(f"sample at ({py:.3f}, {px:.3f}) by grid_sample:", [round(v, 5) for v in gs.tolist()])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.dconv = DeformConv2d(4, 8, modulation=True)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.bn(self.dconv(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


g = torch.Generator().manual_seed(1)
imgs = torch.rand(16, 1, 8, 8, generator=g) * 0.3
labels = torch.arange(16) % 2
for i in range(16):
    if labels[i]:
        imgs[i, 0, 2:6, 3] += 1.0
    else:
        imgs[i, 0, 3, 2:6] += 1.0
net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
for it in range(6):
    loss = F.cross_entropy(net(imgs), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"it {it} loss {loss.item():.5f} offset-grad {net.dconv.p_conv.weight.grad.abs().sum().item():.6f} "
          f"m-grad {net.dconv.m_conv.weight.grad.abs().sum().item():.6f}")
