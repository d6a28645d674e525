"""PointNet++ the way yanx27/Pointnet_Pointnet2_pytorch writes it in pure PyTorch:
``square_distance`` by the expanded-norm identity, ``index_points`` with a batched index
built from ``arange(...).view(...).repeat(...)``, farthest point sampling with a running
distance and ``torch.max``, ball query by ``sort`` over masked indices, k-NN with ``topk``,
set-abstraction layers (single- and multi-scale grouping) with ``Conv2d`` over grouped
points and ``torch.max`` over neighbours, feature propagation with inverse-distance
interpolation of the three nearest points, and a part-segmentation style training loop with
per-class accuracy and a one-hot category vector; plus a DGCNN EdgeConv graph feature."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser("training")
parser.add_argument("--batch_size", type=int, default=4)
parser.add_argument("--num_point", type=int, default=64)
parser.add_argument("--epoch", default=3, type=int)
parser.add_argument("--learning_rate", default=0.001, type=float)
parser.add_argument("--decay_rate", type=float, default=1e-4)
args = parser.parse_args()
torch.manual_seed(2)
np.random.seed(2)
# float64: ball-query membership and max-pooled winners flip on float32 rounding of the
# distances, which BLAS libraries round differently
torch.set_default_dtype(torch.float64)


def square_distance(src, dst):
    B, N, _ = src.shape
    _, M, _ = dst.shape
    dist = -2 * torch.matmul(src, dst.permute(0, 2, 1))
    dist += torch.sum(src ** 2, -1).view(B, N, 1)
    dist += torch.sum(dst ** 2, -1).view(B, 1, M)
    return dist


def index_points(points, idx):
    device = points.device
    B = points.shape[0]
    view_shape = list(idx.shape)
    view_shape[1:] = [1] * (len(view_shape) - 1)
    repeat_shape = list(idx.shape)
    repeat_shape[0] = 1
    batch_indices = torch.arange(B, dtype=torch.long).to(device).view(view_shape).repeat(
        repeat_shape)
    return points[batch_indices, idx, :]


def farthest_point_sample(xyz, npoint):
    device = xyz.device
    B, N, C = xyz.shape
    centroids = torch.zeros(B, npoint, dtype=torch.long).to(device)
    distance = torch.ones(B, N).to(device) * 1e10
    farthest = torch.randint(0, N, (B,), dtype=torch.long).to(device)
    batch_indices = torch.arange(B, dtype=torch.long).to(device)
    for i in range(npoint):
        centroids[:, i] = farthest
        centroid = xyz[batch_indices, farthest, :].view(B, 1, 3)
        dist = torch.sum((xyz - centroid) ** 2, -1)
        mask = dist < distance
        distance[mask] = dist[mask]
        farthest = torch.max(distance, -1)[1]
    return centroids


def query_ball_point(radius, nsample, xyz, new_xyz):
    device = xyz.device
    B, N, C = xyz.shape
    _, S, _ = new_xyz.shape
    group_idx = torch.arange(N, dtype=torch.long).to(device).view(1, 1, N).repeat([B, S, 1])
    sqrdists = square_distance(new_xyz, xyz)
    group_idx[sqrdists > radius ** 2] = N
    group_idx = group_idx.sort(dim=-1)[0][:, :, :nsample]
    group_first = group_idx[:, :, 0].view(B, S, 1).repeat([1, 1, nsample])
    mask = group_idx == N
    group_idx[mask] = group_first[mask]
    return group_idx


def sample_and_group(npoint, radius, nsample, xyz, points, returnfps=False):
    B, N, C = xyz.shape
    S = npoint
    fps_idx = farthest_point_sample(xyz, npoint)
    new_xyz = index_points(xyz, fps_idx)
    idx = query_ball_point(radius, nsample, xyz, new_xyz)
    grouped_xyz = index_points(xyz, idx)
    grouped_xyz_norm = grouped_xyz - new_xyz.view(B, S, 1, C)
    if points is not None:
        grouped_points = index_points(points, idx)
        new_points = torch.cat([grouped_xyz_norm, grouped_points], dim=-1)
    else:
        new_points = grouped_xyz_norm
    if returnfps:
        return new_xyz, new_points, grouped_xyz, fps_idx
    return new_xyz, new_points


def sample_and_group_all(xyz, points):
    device = xyz.device
    B, N, C = xyz.shape
    new_xyz = torch.zeros(B, 1, C).to(device)
    grouped_xyz = xyz.view(B, 1, N, C)
    if points is not None:
        new_points = torch.cat([grouped_xyz, points.view(B, 1, N, -1)], dim=-1)
    else:
        new_points = grouped_xyz
    return new_xyz, new_points


class PointNetSetAbstraction(nn.Module):
    def __init__(self, npoint, radius, nsample, in_channel, mlp, group_all):
        super().__init__()
        self.npoint, self.radius, self.nsample = npoint, radius, nsample
        self.mlp_convs = nn.ModuleList()
        self.mlp_bns = nn.ModuleList()
        last_channel = in_channel
        for out_channel in mlp:
            self.mlp_convs.append(nn.Conv2d(last_channel, out_channel, 1))
            self.mlp_bns.append(nn.BatchNorm2d(out_channel))
            last_channel = out_channel
        self.group_all = group_all

    def forward(self, xyz, points):
        xyz = xyz.permute(0, 2, 1)
        if points is not None:
            points = points.permute(0, 2, 1)
        if self.group_all:
            new_xyz, new_points = sample_and_group_all(xyz, points)
        else:
            new_xyz, new_points = sample_and_group(self.npoint, self.radius, self.nsample,
                                                   xyz, points)
        new_points = new_points.permute(0, 3, 2, 1)
        for i, conv in enumerate(self.mlp_convs):
            bn = self.mlp_bns[i]
            new_points = F.relu(bn(conv(new_points)))
        new_points = torch.max(new_points, 2)[0]
        new_xyz = new_xyz.permute(0, 2, 1)
        return new_xyz, new_points


class PointNetSetAbstractionMsg(nn.Module):
    def __init__(self, npoint, radius_list, nsample_list, in_channel, mlp_list):
        super().__init__()
        self.npoint, self.radius_list, self.nsample_list = npoint, radius_list, nsample_list
        self.conv_blocks = nn.ModuleList()
        self.bn_blocks = nn.ModuleList()
        for i in range(len(mlp_list)):
            convs, bns = nn.ModuleList(), nn.ModuleList()
            last_channel = in_channel + 3
            for out_channel in mlp_list[i]:
                convs.append(nn.Conv2d(last_channel, out_channel, 1))
                bns.append(nn.BatchNorm2d(out_channel))
                last_channel = out_channel
            self.conv_blocks.append(convs)
            self.bn_blocks.append(bns)

    def forward(self, xyz, points):
        xyz = xyz.permute(0, 2, 1)
        if points is not None:
            points = points.permute(0, 2, 1)
        B, N, C = xyz.shape
        S = self.npoint
        new_xyz = index_points(xyz, farthest_point_sample(xyz, S))
        new_points_list = []
        for i, radius in enumerate(self.radius_list):
            K = self.nsample_list[i]
            group_idx = query_ball_point(radius, K, xyz, new_xyz)
            grouped_xyz = index_points(xyz, group_idx)
            grouped_xyz -= new_xyz.view(B, S, 1, C)
            if points is not None:
                grouped_points = index_points(points, group_idx)
                grouped_points = torch.cat([grouped_points, grouped_xyz], dim=-1)
            else:
                grouped_points = grouped_xyz
            grouped_points = grouped_points.permute(0, 3, 2, 1)
            for j in range(len(self.conv_blocks[i])):
                conv, bn = self.conv_blocks[i][j], self.bn_blocks[i][j]
                grouped_points = F.relu(bn(conv(grouped_points)))
            new_points = torch.max(grouped_points, 2)[0]
            new_points_list.append(new_points)
        new_xyz = new_xyz.permute(0, 2, 1)
        return new_xyz, torch.cat(new_points_list, dim=1)


class PointNetFeaturePropagation(nn.Module):
    def __init__(self, in_channel, mlp):
        super().__init__()
        self.mlp_convs, self.mlp_bns = nn.ModuleList(), nn.ModuleList()
        last_channel = in_channel
        for out_channel in mlp:
            self.mlp_convs.append(nn.Conv1d(last_channel, out_channel, 1))
            self.mlp_bns.append(nn.BatchNorm1d(out_channel))
            last_channel = out_channel

    def forward(self, xyz1, xyz2, points1, points2):
        xyz1, xyz2 = xyz1.permute(0, 2, 1), xyz2.permute(0, 2, 1)
        points2 = points2.permute(0, 2, 1)
        B, N, C = xyz1.shape
        _, S, _ = xyz2.shape
        if S == 1:
            interpolated_points = points2.repeat(1, N, 1)
        else:
            dists = square_distance(xyz1, xyz2)
            dists, idx = dists.sort(dim=-1)
            dists, idx = dists[:, :, :3], idx[:, :, :3]
            dist_recip = 1.0 / (dists + 1e-8)
            norm = torch.sum(dist_recip, dim=2, keepdim=True)
            weight = dist_recip / norm
            interpolated_points = torch.sum(index_points(points2, idx)
                                            * weight.view(B, N, 3, 1), dim=2)
        if points1 is not None:
            points1 = points1.permute(0, 2, 1)
            new_points = torch.cat([points1, interpolated_points], dim=-1)
        else:
            new_points = interpolated_points
        new_points = new_points.permute(0, 2, 1)
        for i, conv in enumerate(self.mlp_convs):
            new_points = F.relu(self.mlp_bns[i](conv(new_points)))
        return new_points


class get_model(nn.Module):
    def __init__(self, num_classes, num_category=2):
        super().__init__()
        self.num_category = num_category
        self.sa1 = PointNetSetAbstractionMsg(16, [0.3, 0.6], [4, 8], 0, [[8, 8], [8, 16]])
        self.sa2 = PointNetSetAbstraction(4, 0.8, 4, 24 + 3, [16, 16], False)
        self.sa3 = PointNetSetAbstraction(None, None, None, 16 + 3, [16, 32], True)
        self.fp3 = PointNetFeaturePropagation(32 + 16, [16])
        self.fp2 = PointNetFeaturePropagation(16 + 24, [16])
        self.fp1 = PointNetFeaturePropagation(16 + num_category + 3, [16])
        self.conv1 = nn.Conv1d(16, 16, 1)
        self.bn1 = nn.BatchNorm1d(16)
        self.drop1 = nn.Dropout(0.5)
        self.conv2 = nn.Conv1d(16, num_classes, 1)

    def forward(self, xyz, cls_label):
        B, C, N = xyz.shape
        l0_points, l0_xyz = xyz, xyz
        l1_xyz, l1_points = self.sa1(l0_xyz, None)
        l2_xyz, l2_points = self.sa2(l1_xyz, l1_points)
        l3_xyz, l3_points = self.sa3(l2_xyz, l2_points)
        l2_points = self.fp3(l2_xyz, l3_xyz, l2_points, l3_points)
        l1_points = self.fp2(l1_xyz, l2_xyz, l1_points, l2_points)
        cls_label_one_hot = cls_label.view(B, self.num_category, 1).repeat(1, 1, N)
        l0_points = self.fp1(l0_xyz, l1_xyz, torch.cat([cls_label_one_hot, l0_xyz], 1),
                             l1_points)
        feat = F.relu(self.bn1(self.conv1(l0_points)))
        x = self.conv2(self.drop1(feat))
        x = F.log_softmax(x, dim=1)
        return x.permute(0, 2, 1), l3_points


def knn(x, k):
    inner = -2 * torch.matmul(x.transpose(2, 1), x)
    xx = torch.sum(x ** 2, dim=1, keepdim=True)
    pairwise_distance = -xx - inner - xx.transpose(2, 1)
    return pairwise_distance.topk(k=k, dim=-1)[1]


def get_graph_feature(x, k=4, idx=None):
    batch_size, num_points = x.size(0), x.size(2)
    x = x.view(batch_size, -1, num_points)
    if idx is None:
        idx = knn(x, k=k)
    idx_base = torch.arange(0, batch_size).view(-1, 1, 1) * num_points
    idx = (idx + idx_base).view(-1)
    _, num_dims, _ = x.size()
    x = x.transpose(2, 1).contiguous()
    feature = x.view(batch_size * num_points, -1)[idx, :]
    feature = feature.view(batch_size, num_points, k, num_dims)
    x = x.view(batch_size, num_points, 1, num_dims).repeat(1, 1, k, 1)
    return torch.cat((feature - x, x), dim=3).permute(0, 3, 1, 2).contiguous()


def pc_normalize(pc):
    centroid = np.mean(pc, axis=0)
    pc = pc - centroid
    m = np.max(np.sqrt(np.sum(pc ** 2, axis=1)))
    return pc / m


# two categories of shapes: sphere (parts: upper / lower) and box (parts: +x / -x side)
def make_shape(cat, n):
    if cat == 0:
        p = np.random.randn(n, 3)
        p /= np.linalg.norm(p, axis=1, keepdims=True)
        seg = (p[:, 2] > 0).astype(np.int64)
    else:
        p = np.random.rand(n, 3) * np.array([2.0, 1.0, 0.5]) - np.array([1.0, 0.5, 0.25])
        seg = 2 + (p[:, 0] > 0).astype(np.int64)
    return pc_normalize(p), seg


data = [make_shape(i % 2, args.num_point) for i in range(8)]
points = torch.from_numpy(np.stack([d[0] for d in data]))
target = torch.from_numpy(np.stack([d[1] for d in data]))
label = torch.tensor([i % 2 for i in range(8)])
classifier = get_model(num_classes=4)
optimizer = torch.optim.Adam(classifier.parameters(), lr=args.learning_rate,
                             betas=(0.9, 0.999), eps=1e-08, weight_decay=args.decay_rate)


def to_categorical(y, num_classes):
    new_y = torch.eye(num_classes)[y.cpu().data.numpy(), ]
    return new_y


for epoch in range(args.epoch):
    classifier = classifier.train()
    mean_correct = []
    for i in range(0, 8, args.batch_size):
        pts = points[i:i + args.batch_size].transpose(2, 1)
        seg_pred, trans_feat = classifier(pts, to_categorical(label[i:i + args.batch_size], 2))
        seg_pred = seg_pred.contiguous().view(-1, 4)
        tgt = target[i:i + args.batch_size].view(-1, 1)[:, 0]
        pred_choice = seg_pred.data.max(1)[1]
        correct = pred_choice.eq(tgt.data).cpu().sum()
        mean_correct.append(correct.item() / (args.batch_size * args.num_point))
        loss = F.nll_loss(seg_pred, tgt)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("Epoch %d  Train accuracy is: %.5f  loss %.6f" % (epoch + 1, np.mean(mean_correct),
                                                             loss.item()))

with torch.no_grad():
    classifier = classifier.eval()
    seg_pred, l3 = classifier(points.transpose(2, 1), to_categorical(label, 2))
    cur_pred_val = seg_pred.argmax(-1)
    for cat in range(2):
        sel = label == cat
        print("category %d part accuracy %.5f" % (
            cat, (cur_pred_val[sel] == target[sel]).float().mean().item()))
    print("global feature", tuple(l3.shape), "%.6f" % l3.abs().mean().item())

torch.manual_seed(0)
xyz = torch.rand(2, 20, 3)
fps = farthest_point_sample(xyz, 5)
print("fps", fps.tolist())
print("ball", query_ball_point(0.4, 4, xyz, index_points(xyz, fps))[0, :3].tolist())
print("knn", knn(xyz.transpose(2, 1), 3)[0, :3].tolist())
edge = get_graph_feature(xyz.transpose(2, 1), k=3)
print("edge features", tuple(edge.shape), "%.6f" % edge.sum().item())
print("sq dist check %.6f" % (square_distance(xyz, xyz) - torch.cdist(xyz, xyz) ** 2)
      .abs().max().item())

torch.set_default_dtype(torch.float32)  # leave the process as found
