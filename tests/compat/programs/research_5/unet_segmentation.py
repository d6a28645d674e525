"""A U-Net for binary segmentation as milesial/Pytorch-UNet writes it (DoubleConv, Down, Up
with bilinear upsampling or ConvTranspose2d, F.pad to match skip sizes, a Dice term beside
BCEWithLogits), trained with RMSprop, ReduceLROnPlateau and gradient clipping on synthetic
discs."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim


class DoubleConv(nn.Module):
    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels), nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, in_channels, out_channels, bilinear=True):
        super().__init__()
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class UNet(nn.Module):
    def __init__(self, n_channels, n_classes, bilinear=False, base=4):
        super().__init__()
        self.n_channels, self.n_classes, self.bilinear = n_channels, n_classes, bilinear
        factor = 2 if bilinear else 1
        self.inc = DoubleConv(n_channels, base)
        self.down1 = Down(base, base * 2)
        self.down2 = Down(base * 2, base * 4 // factor)
        self.up1 = Up(base * 4, base * 2 // factor, bilinear)
        self.up2 = Up(base * 2, base, bilinear)
        self.outc = nn.Conv2d(base, n_classes, kernel_size=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


def dice_coeff(input, target, reduce_batch_first=False, epsilon=1e-6):
    sum_dim = (-1, -2) if input.dim() == 2 or not reduce_batch_first else (-1, -2, -3)
    inter = 2 * (input * target).sum(dim=sum_dim)
    sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
    sets_sum = torch.where(sets_sum == 0, inter, sets_sum)
    return ((inter + epsilon) / (sets_sum + epsilon)).mean()


def multiclass_dice_coeff(input, target, reduce_batch_first=False, epsilon=1e-6):
    return dice_coeff(input.flatten(0, 1), target.flatten(0, 1), reduce_batch_first, epsilon)


def dice_loss(input, target, multiclass=False):
    fn = multiclass_dice_coeff if multiclass else dice_coeff
    return 1 - fn(input, target, reduce_batch_first=True)


def make_batch(n, size=18):
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    c = torch.randint(5, size - 5, (n, 2, 1, 1))
    r = torch.randint(2, 5, (n, 1, 1))
    mask = ((yy - c[:, 0]) ** 2 + (xx - c[:, 1]) ** 2 <= r ** 2).long()
    img = mask[:, None].float() + 0.3 * torch.randn(n, 1, size, size)
    return img, mask


for bilinear, n_classes in ((False, 1), (True, 2)):
    torch.manual_seed(0)
    model = UNet(n_channels=1, n_classes=n_classes, bilinear=bilinear)
    model = model.to(memory_format=torch.channels_last)
    optimizer = optim.RMSprop(model.parameters(), lr=1e-3, weight_decay=1e-8, momentum=0.999,
                              foreach=True)
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, "max", patience=1)
    criterion = nn.CrossEntropyLoss() if model.n_classes > 1 else nn.BCEWithLogitsLoss()
    for step in range(4):
        images, true_masks = make_batch(4)
        images = images.to(dtype=torch.float32, memory_format=torch.channels_last)
        masks_pred = model(images)
        if model.n_classes == 1:
            loss = criterion(masks_pred.squeeze(1), true_masks.float())
            loss += dice_loss(F.sigmoid(masks_pred.squeeze(1)), true_masks.float())
        else:
            loss = criterion(masks_pred, true_masks)
            loss += dice_loss(F.softmax(masks_pred, dim=1).float(),
                              F.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2).float(),
                              multiclass=True)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        model.eval()
        with torch.no_grad():
            images, true_masks = make_batch(2)
            pred = model(images)
            if model.n_classes == 1:
                pred = (F.sigmoid(pred) > 0.5).float()
                score = dice_coeff(pred.squeeze(1), true_masks.float())
            else:
                pred = F.one_hot(pred.argmax(dim=1), model.n_classes).permute(0, 3, 1, 2).float()
                score = multiclass_dice_coeff(
                    pred[:, 1:], F.one_hot(true_masks, 2).permute(0, 3, 1, 2).float()[:, 1:])
        model.train()
        scheduler.step(score)
        print(f"bilinear={bilinear} step {step} loss {loss.item():.5f} dice {score.item():.5f} "
              f"lr {optimizer.param_groups[0]['lr']:.2e}")
    print("out", tuple(masks_pred.shape), masks_pred.is_contiguous(
        memory_format=torch.channels_last))
