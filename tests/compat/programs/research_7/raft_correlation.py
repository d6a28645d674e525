"""Optical flow the way princeton-vl/RAFT writes it: a feature encoder with instance norm,
the all-pairs correlation volume (``torch.matmul`` over flattened features divided by
``sqrt(dim)``), its pyramid from ``F.avg_pool2d``, the lookup that samples a (2r+1)^2
neighbourhood with ``grid_sample(align_corners=True)`` after normalising pixel coordinates
(``bilinear_sampler``), ``coords_grid`` from ``torch.meshgrid(indexing="ij")``, a
ConvGRU update block with separable kernels, convex upsampling through ``F.unfold`` and
``softmax`` over the 9 neighbours, the exponentially weighted ``sequence_loss`` with the
end-point error metrics, and ``torch.cuda.amp.autocast(enabled=False)`` and
``GradScaler(enabled=False)`` left in place as the training script has them."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--iters", type=int, default=4)
parser.add_argument("--lr", type=float, default=4e-4)
parser.add_argument("--wdecay", type=float, default=1e-5)
parser.add_argument("--epsilon", type=float, default=1e-8)
parser.add_argument("--clip", type=float, default=1.0)
parser.add_argument("--gamma", type=float, default=0.8)
parser.add_argument("--num_steps", type=int, default=4)
parser.add_argument("--mixed_precision", action="store_true")
args = parser.parse_args()
torch.manual_seed(1234)
np.random.seed(1234)
MAX_FLOW = 400


def bilinear_sampler(img, coords, mode="bilinear", mask=False):
    H, W = img.shape[-2:]
    xgrid, ygrid = coords.split([1, 1], dim=-1)
    xgrid = 2 * xgrid / (W - 1) - 1
    ygrid = 2 * ygrid / (H - 1) - 1
    grid = torch.cat([xgrid, ygrid], dim=-1)
    img = F.grid_sample(img, grid, align_corners=True)
    if mask:
        mask = (xgrid > -1) & (ygrid > -1) & (xgrid < 1) & (ygrid < 1)
        return img, mask.float()
    return img


def coords_grid(batch, ht, wd, device="cpu"):
    coords = torch.meshgrid(torch.arange(ht, device=device), torch.arange(wd, device=device),
                            indexing="ij")
    coords = torch.stack(coords[::-1], dim=0).float()
    return coords[None].repeat(batch, 1, 1, 1)


def upflow8(flow, mode="bilinear"):
    new_size = (8 * flow.shape[2], 8 * flow.shape[3])
    return 8 * F.interpolate(flow, size=new_size, mode=mode, align_corners=True)


class CorrBlock:
    def __init__(self, fmap1, fmap2, num_levels=2, radius=2):
        self.num_levels, self.radius = num_levels, radius
        self.corr_pyramid = []
        corr = CorrBlock.corr(fmap1, fmap2)
        batch, h1, w1, dim, h2, w2 = corr.shape
        corr = corr.reshape(batch * h1 * w1, dim, h2, w2)
        self.corr_pyramid.append(corr)
        for i in range(self.num_levels - 1):
            corr = F.avg_pool2d(corr, 2, stride=2)
            self.corr_pyramid.append(corr)

    def __call__(self, coords):
        r = self.radius
        coords = coords.permute(0, 2, 3, 1)
        batch, h1, w1, _ = coords.shape
        out_pyramid = []
        for i in range(self.num_levels):
            corr = self.corr_pyramid[i]
            dx = torch.linspace(-r, r, 2 * r + 1, device=coords.device)
            dy = torch.linspace(-r, r, 2 * r + 1, device=coords.device)
            delta = torch.stack(torch.meshgrid(dy, dx, indexing="ij"), axis=-1)
            centroid_lvl = coords.reshape(batch * h1 * w1, 1, 1, 2) / 2 ** i
            delta_lvl = delta.view(1, 2 * r + 1, 2 * r + 1, 2)
            coords_lvl = centroid_lvl + delta_lvl
            corr = bilinear_sampler(corr, coords_lvl)
            corr = corr.view(batch, h1, w1, -1)
            out_pyramid.append(corr)
        out = torch.cat(out_pyramid, dim=-1)
        return out.permute(0, 3, 1, 2).contiguous().float()

    @staticmethod
    def corr(fmap1, fmap2):
        batch, dim, ht, wd = fmap1.shape
        fmap1 = fmap1.view(batch, dim, ht * wd)
        fmap2 = fmap2.view(batch, dim, ht * wd)
        corr = torch.matmul(fmap1.transpose(1, 2), fmap2)
        corr = corr.view(batch, ht, wd, 1, ht, wd)
        return corr / torch.sqrt(torch.tensor(dim).float())


class ResidualBlock(nn.Module):
    def __init__(self, in_planes, planes, norm_fn="instance", stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, padding=1, stride=stride)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, padding=1)
        self.relu = nn.ReLU(inplace=True)
        if norm_fn == "instance":
            self.norm1 = nn.InstanceNorm2d(planes)
            self.norm2 = nn.InstanceNorm2d(planes)
            self.norm3 = nn.InstanceNorm2d(planes) if stride != 1 else None
        else:
            self.norm1 = self.norm2 = nn.Sequential()
            self.norm3 = nn.Sequential() if stride != 1 else None
        if stride == 1:
            self.downsample = None
        else:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride), self.norm3)

    def forward(self, x):
        y = self.relu(self.norm1(self.conv1(x)))
        y = self.relu(self.norm2(self.conv2(y)))
        if self.downsample is not None:
            x = self.downsample(x)
        return self.relu(x + y)


class BasicEncoder(nn.Module):
    def __init__(self, output_dim=16, norm_fn="instance", dropout=0.0):
        super().__init__()
        self.norm_fn = norm_fn
        self.norm1 = nn.InstanceNorm2d(8) if norm_fn == "instance" else nn.Sequential()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=7, stride=2, padding=3)
        self.relu1 = nn.ReLU(inplace=True)
        self.layer1 = ResidualBlock(8, 12, norm_fn, stride=2)
        self.layer2 = ResidualBlock(12, 16, norm_fn, stride=2)
        self.conv2 = nn.Conv2d(16, output_dim, kernel_size=1)
        self.dropout = nn.Dropout2d(p=dropout) if dropout > 0 else None
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.InstanceNorm2d, nn.GroupNorm)):
                if m.weight is not None:
                    nn.init.constant_(m.weight, 1)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x):
        is_list = isinstance(x, (tuple, list))
        if is_list:
            batch_dim = x[0].shape[0]
            x = torch.cat(x, dim=0)
        x = self.relu1(self.norm1(self.conv1(x)))
        x = self.layer2(self.layer1(x))
        x = self.conv2(x)
        if self.training and self.dropout is not None:
            x = self.dropout(x)
        if is_list:
            x = torch.split(x, [batch_dim, batch_dim], dim=0)
        return x


class SepConvGRU(nn.Module):
    def __init__(self, hidden_dim=16, input_dim=32):
        super().__init__()
        self.convz1 = nn.Conv2d(hidden_dim + input_dim, hidden_dim, (1, 5), padding=(0, 2))
        self.convr1 = nn.Conv2d(hidden_dim + input_dim, hidden_dim, (1, 5), padding=(0, 2))
        self.convq1 = nn.Conv2d(hidden_dim + input_dim, hidden_dim, (1, 5), padding=(0, 2))
        self.convz2 = nn.Conv2d(hidden_dim + input_dim, hidden_dim, (5, 1), padding=(2, 0))
        self.convr2 = nn.Conv2d(hidden_dim + input_dim, hidden_dim, (5, 1), padding=(2, 0))
        self.convq2 = nn.Conv2d(hidden_dim + input_dim, hidden_dim, (5, 1), padding=(2, 0))

    def forward(self, h, x):
        hx = torch.cat([h, x], dim=1)
        z = torch.sigmoid(self.convz1(hx))
        r = torch.sigmoid(self.convr1(hx))
        q = torch.tanh(self.convq1(torch.cat([r * h, x], dim=1)))
        h = (1 - z) * h + z * q
        hx = torch.cat([h, x], dim=1)
        z = torch.sigmoid(self.convz2(hx))
        r = torch.sigmoid(self.convr2(hx))
        q = torch.tanh(self.convq2(torch.cat([r * h, x], dim=1)))
        return (1 - z) * h + z * q


class BasicMotionEncoder(nn.Module):
    def __init__(self, cor_planes):
        super().__init__()
        self.convc1 = nn.Conv2d(cor_planes, 16, 1, padding=0)
        self.convf1 = nn.Conv2d(2, 8, 7, padding=3)
        self.convf2 = nn.Conv2d(8, 8, 3, padding=1)
        self.conv = nn.Conv2d(16 + 8, 14, 3, padding=1)

    def forward(self, flow, corr):
        cor = F.relu(self.convc1(corr))
        flo = F.relu(self.convf2(F.relu(self.convf1(flow))))
        out = F.relu(self.conv(torch.cat([cor, flo], dim=1)))
        return torch.cat([out, flow], dim=1)


class BasicUpdateBlock(nn.Module):
    def __init__(self, cor_planes, hidden_dim=16, input_dim=16):
        super().__init__()
        self.encoder = BasicMotionEncoder(cor_planes)
        self.gru = SepConvGRU(hidden_dim=hidden_dim, input_dim=16 + input_dim)
        self.flow_head = nn.Sequential(nn.Conv2d(hidden_dim, 16, 3, padding=1),
                                       nn.ReLU(inplace=True), nn.Conv2d(16, 2, 3, padding=1))
        self.mask = nn.Sequential(nn.Conv2d(hidden_dim, 32, 3, padding=1), nn.ReLU(inplace=True),
                                  nn.Conv2d(32, 64 * 9, 1, padding=0))

    def forward(self, net, inp, corr, flow):
        motion_features = self.encoder(flow, corr)
        inp = torch.cat([inp, motion_features], dim=1)
        net = self.gru(net, inp)
        delta_flow = self.flow_head(net)
        mask = .25 * self.mask(net)
        return net, mask, delta_flow


class RAFT(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.hidden_dim = hdim = 16
        self.context_dim = cdim = 16
        args.corr_levels, args.corr_radius = 2, 2
        self.fnet = BasicEncoder(output_dim=16, norm_fn="instance")
        self.cnet = BasicEncoder(output_dim=hdim + cdim, norm_fn="batch")
        cor_planes = args.corr_levels * (2 * args.corr_radius + 1) ** 2
        self.update_block = BasicUpdateBlock(cor_planes, hidden_dim=hdim)

    def freeze_bn(self):
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.eval()

    def initialize_flow(self, img):
        N, C, H, W = img.shape
        coords0 = coords_grid(N, H // 8, W // 8, device=img.device)
        coords1 = coords_grid(N, H // 8, W // 8, device=img.device)
        return coords0, coords1

    def upsample_flow(self, flow, mask):
        N, _, H, W = flow.shape
        mask = mask.view(N, 1, 9, 8, 8, H, W)
        mask = torch.softmax(mask, dim=2)
        up_flow = F.unfold(8 * flow, [3, 3], padding=1)
        up_flow = up_flow.view(N, 2, 9, 1, 1, H, W)
        up_flow = torch.sum(mask * up_flow, dim=2)
        up_flow = up_flow.permute(0, 1, 4, 2, 5, 3)
        return up_flow.reshape(N, 2, 8 * H, 8 * W)

    def forward(self, image1, image2, iters=12, flow_init=None, test_mode=False):
        image1 = 2 * (image1 / 255.0) - 1.0
        image2 = 2 * (image2 / 255.0) - 1.0
        image1, image2 = image1.contiguous(), image2.contiguous()
        hdim, cdim = self.hidden_dim, self.context_dim
        with torch.autocast("cpu", enabled=self.args.mixed_precision):
            fmap1, fmap2 = self.fnet([image1, image2])
        fmap1, fmap2 = fmap1.float(), fmap2.float()
        corr_fn = CorrBlock(fmap1, fmap2, radius=self.args.corr_radius,
                            num_levels=self.args.corr_levels)
        with torch.autocast("cpu", enabled=self.args.mixed_precision):
            cnet = self.cnet(image1)
            net, inp = torch.split(cnet, [hdim, cdim], dim=1)
            net = torch.tanh(net)
            inp = torch.relu(inp)
        coords0, coords1 = self.initialize_flow(image1)
        if flow_init is not None:
            coords1 = coords1 + flow_init
        flow_predictions = []
        for itr in range(iters):
            coords1 = coords1.detach()
            corr = corr_fn(coords1)
            flow = coords1 - coords0
            with torch.autocast("cpu", enabled=self.args.mixed_precision):
                net, up_mask, delta_flow = self.update_block(net, inp, corr, flow)
            coords1 = coords1 + delta_flow
            if up_mask is None:
                flow_up = upflow8(coords1 - coords0)
            else:
                flow_up = self.upsample_flow(coords1 - coords0, up_mask)
            flow_predictions.append(flow_up)
        if test_mode:
            return coords1 - coords0, flow_up
        return flow_predictions


def sequence_loss(flow_preds, flow_gt, valid, gamma=0.8, max_flow=MAX_FLOW):
    n_predictions = len(flow_preds)
    flow_loss = 0.0
    mag = torch.sum(flow_gt ** 2, dim=1).sqrt()
    valid = (valid >= 0.5) & (mag < max_flow)
    for i in range(n_predictions):
        i_weight = gamma ** (n_predictions - i - 1)
        i_loss = (flow_preds[i] - flow_gt).abs()
        flow_loss += i_weight * (valid[:, None] * i_loss).mean()
    epe = torch.sum((flow_preds[-1] - flow_gt) ** 2, dim=1).sqrt()
    epe = epe.view(-1)[valid.view(-1)]
    metrics = {"epe": epe.mean().item(), "1px": (epe < 1).float().mean().item(),
               "3px": (epe < 3).float().mean().item(), "5px": (epe < 5).float().mean().item()}
    return flow_loss, metrics


# synthetic pair: the second image is the first shifted by (2, 1) pixels
image1 = torch.rand(2, 3, 32, 32) * 255
image2 = torch.roll(image1, shifts=(1, 2), dims=(2, 3))
flow_gt = torch.zeros(2, 2, 32, 32)
flow_gt[:, 0], flow_gt[:, 1] = 2.0, 1.0
valid = torch.ones(2, 32, 32)
valid[:, :2] = 0

model = RAFT(args)
print("Parameter Count: %d" % sum(p.numel() for p in model.parameters() if p.requires_grad))
model.train()
model.freeze_bn()
optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.wdecay,
                              eps=args.epsilon)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, args.lr, args.num_steps + 100,
                                                pct_start=0.05, cycle_momentum=False,
                                                anneal_strategy="linear")
scaler = torch.cuda.amp.GradScaler(enabled=args.mixed_precision)
for total_steps in range(args.num_steps):
    optimizer.zero_grad()
    flow_predictions = model(image1, image2, iters=args.iters)
    loss, metrics = sequence_loss(flow_predictions, flow_gt, valid, args.gamma)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
    scaler.step(optimizer)
    scheduler.step()
    scaler.update()
    print("[%d, %10.7f] loss %.6f epe %.6f 1px %.4f" % (
        total_steps + 1, scheduler.get_last_lr()[0], loss.item(), metrics["epe"],
        metrics["1px"]))

model.eval()
with torch.no_grad():
    flow_low, flow_up = model(image1, image2, iters=3, test_mode=True)
print("flow_low", tuple(flow_low.shape), "flow_up", tuple(flow_up.shape),
      "mean flow %.6f %.6f" % (flow_up[:, 0].mean().item(), flow_up[:, 1].mean().item()))
f1 = torch.randn(1, 4, 4, 4)
corr = CorrBlock(f1, f1.roll(1, dims=3), num_levels=2, radius=1)
look = corr(coords_grid(1, 4, 4))
print("corr lookup", tuple(look.shape), "%.6f" % look.sum().item(),
      "pyramid", [tuple(c.shape) for c in corr.corr_pyramid])
img = torch.arange(16.0).view(1, 1, 4, 4)
pts = torch.tensor([[[[0.5, 0.5], [3.0, 0.0], [4.0, 1.0]]]])
vals, mask = bilinear_sampler(img, pts, mask=True)
print("bilinear_sampler", vals.flatten().tolist(), mask.flatten().tolist())
print("upflow8", tuple(upflow8(torch.ones(1, 2, 2, 2)).shape),
      upflow8(torch.ones(1, 2, 2, 2))[0, 0, 0, :3].tolist())
