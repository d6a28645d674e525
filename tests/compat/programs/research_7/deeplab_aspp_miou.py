"""Semantic segmentation the way VainF/DeepLabV3Plus-Pytorch and torchvision's reference
scripts write it: an output-stride-8 backbone with dilated convolutions
(``replace_stride_with_dilation``), ASPP with an image-pooling branch upsampled by
``F.interpolate(mode="bilinear", align_corners=False)``, the DeepLabV3+ decoder fusing
low-level features, ``CrossEntropyLoss(ignore_index=255)`` and a focal-loss variant,
a polynomial learning-rate schedule through ``LambdaLR``, a ``StreamSegMetrics`` confusion
matrix built with ``np.bincount`` (overall/mean accuracy, frequency-weighted and mean IoU),
``torch.inference_mode`` evaluation with sliding-window and flip test-time augmentation,
and a checkpoint holding the best score."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)
np.random.seed(5)


class _SimpleSegmentationModel(nn.Module):
    def __init__(self, backbone, classifier):
        super().__init__()
        self.backbone, self.classifier = backbone, classifier

    def forward(self, x):
        input_shape = x.shape[-2:]
        features = self.backbone(x)
        x = self.classifier(features)
        return F.interpolate(x, size=input_shape, mode="bilinear", align_corners=False)


class Backbone(nn.Module):
    def __init__(self, replace_stride_with_dilation=(False, True)):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(inplace=True))
        self.layer1 = self._make(8, 12, stride=2, dilation=1)
        d = 2 if replace_stride_with_dilation[1] else 1
        self.layer2 = self._make(12, 16, stride=1 if d > 1 else 2, dilation=d)

    @staticmethod
    def _make(cin, cout, stride, dilation):
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, padding=dilation, dilation=dilation, bias=False),
            nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, 1, padding=dilation, dilation=dilation, bias=False),
            nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

    def forward(self, x):
        low = self.layer1(self.stem(x))
        return {"low_level": low, "out": self.layer2(low)}


class ASPPConv(nn.Sequential):
    def __init__(self, in_channels, out_channels, dilation):
        modules = [nn.Conv2d(in_channels, out_channels, 3, padding=dilation, dilation=dilation,
                             bias=False), nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True)]
        super().__init__(*modules)


class ASPPPooling(nn.Sequential):
    def __init__(self, in_channels, out_channels):
        super().__init__(nn.AdaptiveAvgPool2d(1), nn.Conv2d(in_channels, out_channels, 1,
                                                            bias=False),
                         nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True))

    def forward(self, x):
        size = x.shape[-2:]
        x = super().forward(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class ASPP(nn.Module):
    def __init__(self, in_channels, atrous_rates, out_channels=16):
        super().__init__()
        modules = [nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, bias=False),
                                 nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True))]
        rate1, rate2, rate3 = tuple(atrous_rates)
        modules.append(ASPPConv(in_channels, out_channels, rate1))
        modules.append(ASPPConv(in_channels, out_channels, rate2))
        modules.append(ASPPConv(in_channels, out_channels, rate3))
        modules.append(ASPPPooling(in_channels, out_channels))
        self.convs = nn.ModuleList(modules)
        self.project = nn.Sequential(
            nn.Conv2d(len(self.convs) * out_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True), nn.Dropout(0.1))

    def forward(self, x):
        res = [conv(x) for conv in self.convs]
        return self.project(torch.cat(res, dim=1))


class DeepLabHeadV3Plus(nn.Module):
    def __init__(self, in_channels, low_level_channels, num_classes, aspp_dilate=(1, 2, 3)):
        super().__init__()
        self.project = nn.Sequential(nn.Conv2d(low_level_channels, 8, 1, bias=False),
                                     nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.aspp = ASPP(in_channels, aspp_dilate)
        self.classifier = nn.Sequential(nn.Conv2d(24, 16, 3, padding=1, bias=False),
                                        nn.BatchNorm2d(16), nn.ReLU(inplace=True),
                                        nn.Conv2d(16, num_classes, 1))
        self._init_weight()

    def forward(self, feature):
        low_level_feature = self.project(feature["low_level"])
        output_feature = self.aspp(feature["out"])
        output_feature = F.interpolate(output_feature, size=low_level_feature.shape[2:],
                                       mode="bilinear", align_corners=False)
        return self.classifier(torch.cat([low_level_feature, output_feature], dim=1))

    def _init_weight(self):
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)


class FocalLoss(nn.Module):
    def __init__(self, alpha=1, gamma=0, size_average=True, ignore_index=255):
        super().__init__()
        self.alpha, self.gamma = alpha, gamma
        self.ignore_index, self.size_average = ignore_index, size_average

    def forward(self, inputs, targets):
        ce_loss = F.cross_entropy(inputs, targets, reduction="none",
                                  ignore_index=self.ignore_index)
        pt = torch.exp(-ce_loss)
        focal_loss = self.alpha * (1 - pt) ** self.gamma * ce_loss
        return focal_loss.mean() if self.size_average else focal_loss.sum()


class StreamSegMetrics:
    def __init__(self, n_classes):
        self.n_classes = n_classes
        self.confusion_matrix = np.zeros((n_classes, n_classes))

    def update(self, label_trues, label_preds):
        for lt, lp in zip(label_trues, label_preds):
            self.confusion_matrix += self._fast_hist(lt.flatten(), lp.flatten())

    def _fast_hist(self, label_true, label_pred):
        mask = (label_true >= 0) & (label_true < self.n_classes)
        hist = np.bincount(self.n_classes * label_true[mask].astype(int) + label_pred[mask],
                           minlength=self.n_classes ** 2).reshape(self.n_classes,
                                                                   self.n_classes)
        return hist

    def get_results(self):
        hist = self.confusion_matrix
        acc = np.diag(hist).sum() / hist.sum()
        acc_cls = np.diag(hist) / hist.sum(axis=1)
        acc_cls = np.nanmean(acc_cls)
        iu = np.diag(hist) / (hist.sum(axis=1) + hist.sum(axis=0) - np.diag(hist))
        mean_iu = np.nanmean(iu)
        freq = hist.sum(axis=1) / hist.sum()
        fwavacc = (freq[freq > 0] * iu[freq > 0]).sum()
        cls_iu = dict(zip(range(self.n_classes), iu))
        return {"Overall Acc": acc, "Mean Acc": acc_cls, "FreqW Acc": fwavacc,
                "Mean IoU": mean_iu, "Class IoU": cls_iu}

    @staticmethod
    def to_str(results):
        string = "\n"
        for k, v in results.items():
            if k != "Class IoU":
                string += "%s: %f\n" % (k, v)
        return string

    def reset(self):
        self.confusion_matrix = np.zeros((self.n_classes, self.n_classes))


def make_batch(n, size=32, num_classes=3):
    # discs and squares on a background; a border band is "void" (255)
    imgs = 0.2 * torch.randn(n, 3, size, size)
    masks = torch.zeros(n, size, size, dtype=torch.long)
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    for i in range(n):
        cx, cy = torch.randint(8, size - 8, (2,)).tolist()
        disc = (xx - cx) ** 2 + (yy - cy) ** 2 < 36
        masks[i][disc] = 1
        imgs[i, 0][disc] += 1.0
        sx, sy = torch.randint(2, size - 10, (2,)).tolist()
        masks[i, sy:sy + 8, sx:sx + 8] = 2
        imgs[i, 2, sy:sy + 8, sx:sx + 8] += 1.0
    masks[:, :2] = 255
    return imgs, masks


num_classes = 3
model = _SimpleSegmentationModel(Backbone(), DeepLabHeadV3Plus(16, 12, num_classes))
total_itrs = 8
optimizer = torch.optim.SGD(params=[
    {"params": model.backbone.parameters(), "lr": 0.01},
    {"params": model.classifier.parameters(), "lr": 0.1}], lr=0.1, momentum=0.9,
    weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.LambdaLR(
    optimizer, lambda it: (1 - it / total_itrs) ** 0.9)
criterion = nn.CrossEntropyLoss(ignore_index=255, reduction="mean")
focal = FocalLoss(gamma=2, ignore_index=255)
metrics = StreamSegMetrics(num_classes)
train = [make_batch(4) for _ in range(total_itrs)]
val_images, val_labels = make_batch(4)
best_score = 0.0


def validate(model, tta=False):
    metrics.reset()
    model.eval()
    with torch.inference_mode():
        outputs = model(val_images)
        if tta:
            outputs = outputs + model(val_images.flip(-1)).flip(-1)
        preds = outputs.detach().max(dim=1)[1].cpu().numpy()
        targets = val_labels.cpu().numpy()
        metrics.update(targets, preds)
    model.train()
    return metrics.get_results()


cur_itrs = 0
for images, labels in train:
    cur_itrs += 1
    optimizer.zero_grad()
    outputs = model(images)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
    scheduler.step()
    if cur_itrs % 4 == 0:
        print("Itrs %d/%d, Loss=%f, lr=%s" % (cur_itrs, total_itrs, loss.item(),
                                             ["%.6f" % g["lr"] for g in optimizer.param_groups]))
        score = validate(model)
        print(metrics.to_str(score).strip().replace("\n", " | "))
        if score["Mean IoU"] > best_score:
            best_score = score["Mean IoU"]
            torch.save({"cur_itrs": cur_itrs, "model_state": model.state_dict(),
                        "optimizer_state": optimizer.state_dict(),
                        "scheduler_state": scheduler.state_dict(),
                        "best_score": best_score}, "best_deeplabv3plus.pth")
            print("Model saved as best_deeplabv3plus.pth")

ckpt = torch.load("best_deeplabv3plus.pth", map_location=torch.device("cpu"),
                  weights_only=False)  # best_score is a NumPy float
model.load_state_dict(ckpt["model_state"])
print("restored itrs", ckpt["cur_itrs"], "best %.6f" % ckpt["best_score"],
      "scheduler last_epoch", ckpt["scheduler_state"]["last_epoch"])
tta = validate(model, tta=True)
print("TTA Mean IoU %.6f class IoU %s" % (tta["Mean IoU"], {k: round(v, 4) for k, v in
                                                           tta["Class IoU"].items()}))
os.remove("best_deeplabv3plus.pth")
with torch.no_grad():
    model.eval()
    out = model(val_images)
    print("focal %.6f ce %.6f" % (focal(out, val_labels).item(),
                                  criterion(out, val_labels).item()))
    all_void = torch.full_like(val_labels, 255)
    print("all ignored ce:", criterion(out, all_void).item())
    feats = model.backbone(val_images)
    print({k: tuple(v.shape) for k, v in feats.items()})
    pooled = ASPPPooling(16, 4).eval()(feats["out"])
    print("image pooling branch constant per map:",
          bool(((pooled - pooled[..., :1, :1]).abs() < 1e-6).all()))
    x = torch.arange(16.0).view(1, 1, 4, 4)
    print("interp", [round(v, 5) for v in F.interpolate(x, scale_factor=1.5, mode="bilinear",
                                                        align_corners=False)[0, 0, 0].tolist()])
    print("interp ac", F.interpolate(x, size=(3, 5), mode="bilinear",
                                     align_corners=True)[0, 0, 1].tolist())
