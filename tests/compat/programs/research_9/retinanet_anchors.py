"""A one-stage detector head the way torchvision's RetinaNet/FCOS code and the many
"detection from scratch" repositories write it, without ``torchvision.ops``: an
``AnchorGenerator`` over feature-map strides (``meshgrid`` of shifts, base anchors from
scales and aspect ratios), ``box_iou`` by broadcasting, a ``Matcher`` with low-quality
matches, ``BoxCoder`` encode/decode with clamped ``dw``/``dh``, sigmoid focal loss, smooth-L1
regression, a hand-written greedy NMS and batched NMS by coordinate offsets, and an
``roi_align``-like bilinear pooling through ``F.grid_sample(align_corners=False)``."""
import math
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    area1, area2 = box_area(boxes1), box_area(boxes2)
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter / (area1[:, None] + area2 - inter)


def nms(boxes, scores, iou_threshold):
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0].item()
        keep.append(i)
        if order.numel() == 1:
            break
        ious = box_iou(boxes[i].unsqueeze(0), boxes[order[1:]])[0]
        order = order[1:][ious <= iou_threshold]
    return torch.tensor(keep, dtype=torch.int64)


def batched_nms(boxes, scores, idxs, iou_threshold):
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    return nms(boxes + offsets[:, None], scores, iou_threshold)


class AnchorGenerator(nn.Module):
    def __init__(self, sizes=((16,), (32,)), aspect_ratios=((0.5, 1.0, 2.0),) * 2):
        super().__init__()
        self.cell_anchors = [self.generate_anchors(s, a) for s, a in zip(sizes, aspect_ratios)]

    @staticmethod
    def generate_anchors(scales, aspect_ratios, dtype=torch.float32):
        scales = torch.as_tensor(scales, dtype=dtype)
        aspect_ratios = torch.as_tensor(aspect_ratios, dtype=dtype)
        h_ratios = torch.sqrt(aspect_ratios)
        w_ratios = 1 / h_ratios
        ws = (w_ratios[:, None] * scales[None, :]).view(-1)
        hs = (h_ratios[:, None] * scales[None, :]).view(-1)
        base_anchors = torch.stack([-ws, -hs, ws, hs], dim=1) / 2
        return base_anchors.round()

    def forward(self, image_size, feature_maps):
        anchors = []
        for base, fmap in zip(self.cell_anchors, feature_maps):
            gh, gw = fmap.shape[-2:]
            sh, sw = image_size[0] // gh, image_size[1] // gw
            shifts_x = torch.arange(0, gw, dtype=torch.int32) * sw
            shifts_y = torch.arange(0, gh, dtype=torch.int32) * sh
            shift_y, shift_x = torch.meshgrid(shifts_y, shifts_x, indexing="ij")
            shift_x, shift_y = shift_x.reshape(-1), shift_y.reshape(-1)
            shifts = torch.stack((shift_x, shift_y, shift_x, shift_y), dim=1)
            anchors.append((shifts.view(-1, 1, 4) + base.view(1, -1, 4)).reshape(-1, 4))
        return torch.cat(anchors)


class BoxCoder:
    def __init__(self, weights=(1.0, 1.0, 1.0, 1.0), bbox_xform_clip=math.log(1000.0 / 16)):
        self.weights, self.bbox_xform_clip = weights, bbox_xform_clip

    def encode(self, reference_boxes, proposals):
        wx, wy, ww, wh = self.weights
        ex_w = proposals[:, 2] - proposals[:, 0]
        ex_h = proposals[:, 3] - proposals[:, 1]
        ex_cx = proposals[:, 0] + 0.5 * ex_w
        ex_cy = proposals[:, 1] + 0.5 * ex_h
        gt_w = reference_boxes[:, 2] - reference_boxes[:, 0]
        gt_h = reference_boxes[:, 3] - reference_boxes[:, 1]
        gt_cx = reference_boxes[:, 0] + 0.5 * gt_w
        gt_cy = reference_boxes[:, 1] + 0.5 * gt_h
        return torch.stack((wx * (gt_cx - ex_cx) / ex_w, wy * (gt_cy - ex_cy) / ex_h,
                            ww * torch.log(gt_w / ex_w), wh * torch.log(gt_h / ex_h)), dim=1)

    def decode(self, rel_codes, boxes):
        widths = boxes[:, 2] - boxes[:, 0]
        heights = boxes[:, 3] - boxes[:, 1]
        ctr_x = boxes[:, 0] + 0.5 * widths
        ctr_y = boxes[:, 1] + 0.5 * heights
        wx, wy, ww, wh = self.weights
        dx, dy = rel_codes[:, 0::4] / wx, rel_codes[:, 1::4] / wy
        dw = torch.clamp(rel_codes[:, 2::4] / ww, max=self.bbox_xform_clip)
        dh = torch.clamp(rel_codes[:, 3::4] / wh, max=self.bbox_xform_clip)
        pcx = dx * widths[:, None] + ctr_x[:, None]
        pcy = dy * heights[:, None] + ctr_y[:, None]
        pw = torch.exp(dw) * widths[:, None]
        ph = torch.exp(dh) * heights[:, None]
        return torch.stack((pcx - 0.5 * pw, pcy - 0.5 * ph, pcx + 0.5 * pw, pcy + 0.5 * ph),
                           dim=2).flatten(1)


class Matcher:
    BELOW_LOW_THRESHOLD, BETWEEN_THRESHOLDS = -1, -2

    def __init__(self, high, low, allow_low_quality_matches=True):
        self.high, self.low, self.allow = high, low, allow_low_quality_matches

    def __call__(self, match_quality_matrix):
        matched_vals, matches = match_quality_matrix.max(dim=0)
        all_matches = matches.clone() if self.allow else None
        below = matched_vals < self.low
        between = (matched_vals >= self.low) & (matched_vals < self.high)
        matches[below] = self.BELOW_LOW_THRESHOLD
        matches[between] = self.BETWEEN_THRESHOLDS
        if self.allow:
            highest, _ = match_quality_matrix.max(dim=1)
            gt_pred_pairs = torch.where(match_quality_matrix == highest[:, None])
            pred_inds_to_update = gt_pred_pairs[1]
            matches[pred_inds_to_update] = all_matches[pred_inds_to_update]
        return matches


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2.0, reduction="sum"):
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    return loss.sum() if reduction == "sum" else loss.mean()


def roi_align(features, boxes, output_size, spatial_scale):
    # bilinear samples at bin centres through grid_sample, one sample per bin
    n, c, h, w = features.shape
    rois = boxes[:, 1:] * spatial_scale
    bi = boxes[:, 0].long()
    ph, pw = output_size
    ys = (torch.arange(ph, dtype=features.dtype) + 0.5) / ph
    xs = (torch.arange(pw, dtype=features.dtype) + 0.5) / pw
    y = rois[:, 1, None] + ys[None] * (rois[:, 3] - rois[:, 1])[:, None]
    x = rois[:, 0, None] + xs[None] * (rois[:, 2] - rois[:, 0])[:, None]
    gy = (y / h) * 2 - 1
    gx = (x / w) * 2 - 1
    grid = torch.stack(torch.broadcast_tensors(gx[:, None, :], gy[:, :, None]), dim=-1)
    return F.grid_sample(features[bi], grid, mode="bilinear", align_corners=False)


class RetinaHead(nn.Module):
    def __init__(self, in_channels, num_anchors, num_classes, prior_probability=0.01):
        super().__init__()
        self.num_classes = num_classes
        self.cls_logits = nn.Conv2d(in_channels, num_anchors * num_classes, 3, padding=1)
        self.bbox_reg = nn.Conv2d(in_channels, num_anchors * 4, 3, padding=1)
        for layer in (self.cls_logits, self.bbox_reg):
            torch.nn.init.normal_(layer.weight, std=0.01)
        torch.nn.init.constant_(self.cls_logits.bias, -math.log((1 - prior_probability) / prior_probability))
        torch.nn.init.zeros_(self.bbox_reg.bias)

    def forward(self, feats):
        cls, reg = [], []
        for f in feats:
            n, _, h, w = f.shape
            c = self.cls_logits(f).view(n, -1, self.num_classes, h, w)
            cls.append(c.permute(0, 3, 4, 1, 2).reshape(n, -1, self.num_classes))
            r = self.bbox_reg(f).view(n, -1, 4, h, w)
            reg.append(r.permute(0, 3, 4, 1, 2).reshape(n, -1, 4))
        return torch.cat(cls, 1), torch.cat(reg, 1)


backbone = nn.Sequential(OrderedDict([
    ("conv1", nn.Conv2d(3, 8, 3, stride=2, padding=1)), ("relu1", nn.ReLU()),
    ("conv2", nn.Conv2d(8, 8, 3, stride=2, padding=1)), ("relu2", nn.ReLU())]))
down = nn.Conv2d(8, 8, 3, stride=2, padding=1)
head = RetinaHead(8, 3, num_classes=2)
anchor_gen = AnchorGenerator()
coder, matcher = BoxCoder(), Matcher(0.5, 0.4)

base = anchor_gen.generate_anchors((32,), (0.5, 1.0, 2.0))
print("base anchors:", base.tolist())
images = torch.rand(2, 3, 32, 32)
targets = [{"boxes": torch.tensor([[2.0, 3.0, 14.0, 17.0], [16.0, 12.0, 30.0, 28.0]]),
            "labels": torch.tensor([0, 1])},
           {"boxes": torch.tensor([[5.0, 5.0, 25.0, 21.0]]), "labels": torch.tensor([1])}]
params = [*backbone.parameters(), *down.parameters(), *head.parameters()]
opt = torch.optim.SGD(params, lr=0.2, momentum=0.9, weight_decay=1e-4)
for it in range(6):
    f1 = backbone(images)
    f2 = down(f1)
    anchors = anchor_gen((32, 32), [f1, f2]).float()
    cls_out, reg_out = head([f1, f2])
    cls_losses, reg_losses = [], []
    for i, t in enumerate(targets):
        iou = box_iou(t["boxes"], anchors)
        m = matcher(iou)
        fg = m >= 0
        valid = m != Matcher.BETWEEN_THRESHOLDS
        gt_cls = torch.zeros_like(cls_out[i])
        gt_cls[fg, t["labels"][m[fg]]] = 1.0
        cls_losses.append(sigmoid_focal_loss(cls_out[i][valid], gt_cls[valid]) / max(1, fg.sum().item()))
        tgt = coder.encode(t["boxes"][m[fg]], anchors[fg])
        reg_losses.append(F.smooth_l1_loss(reg_out[i][fg], tgt, beta=1 / 9, reduction="sum")
                          / max(1, fg.sum().item()))
    loss = sum(cls_losses) / 2 + sum(reg_losses) / 2
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"iter {it}: anchors {anchors.shape[0]} fg {[int((matcher(box_iou(t['boxes'], anchors)) >= 0).sum()) for t in targets]} "
          f"cls {sum(cls_losses).item():.5f} reg {sum(reg_losses).item():.5f}")

with torch.no_grad():
    f1 = backbone(images)
    f2 = down(f1)
    cls_out, reg_out = head([f1, f2])
    boxes = coder.decode(reg_out[0], anchors).clamp(0, 32)
    # a localisation-quality score as FCOS-style heads use: class probability times the IoU
    # of the decoded box with its best ground truth
    quality = box_iou(boxes, targets[0]["boxes"]).max(dim=1).values
    scores, labels = torch.sigmoid(cls_out[0]).max(dim=1)
    scores = scores * quality
    topk = scores.topk(20)
    keep = batched_nms(boxes[topk.indices], topk.values, labels[topk.indices], 0.3)
    print("kept:", len(keep), "labels:", labels[topk.indices][keep].tolist())
    print("scores:", [round(s, 5) for s in topk.values[keep][:5].tolist()])
    manual = nms(torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30], [0, 0, 9, 10.]]),
                 torch.tensor([0.9, 0.8, 0.7, 0.95]), 0.5)
    print("nms:", manual.tolist())
    rois = torch.tensor([[0, 2.0, 3.0, 14.0, 17.0], [1, 5.0, 5.0, 25.0, 21.0]])
    pooled = roi_align(f1, rois, (3, 3), spatial_scale=1 / 4)
    print("roi pooled:", tuple(pooled.shape), f"{pooled.sum().item():.5f}")
    dec = coder.decode(coder.encode(targets[0]["boxes"], anchors[:2]), anchors[:2])
    print("encode/decode roundtrip:", torch.allclose(dec, targets[0]["boxes"], atol=1e-4))
