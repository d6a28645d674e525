"""Transfer-learning style fine-tuning (after the "finetuning torchvision models" tutorial,
with a small backbone of our own): frozen parameters, a new head, discriminative learning
rates, a checkpoint round trip with torch.save/torch.load, and a resumed run."""
import argparse
import copy
import io
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim import lr_scheduler
from torch.utils.data import DataLoader, TensorDataset

torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False


def conv_bn(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True))


class TinyResNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = conv_bn(3, 8)
        self.layer1 = nn.Sequential(conv_bn(8, 8), conv_bn(8, 16, 2))
        self.layer2 = nn.Sequential(conv_bn(16, 16), conv_bn(16, 32, 2))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def set_parameter_requires_grad(model, feature_extracting):
    if feature_extracting:
        for param in model.parameters():
            param.requires_grad = False


def train_model(model, dataloaders, criterion, optimizer, scheduler, num_epochs, device):
    since = time.time()
    best_model_wts = copy.deepcopy(model.state_dict())
    best_acc = 0.0
    history = []
    for epoch in range(num_epochs):
        for phase in ['train', 'val']:
            if phase == 'train':
                model.train()
            else:
                model.eval()
            running_loss = 0.0
            running_corrects = 0
            for inputs, labels in dataloaders[phase]:
                inputs = inputs.to(device)
                labels = labels.to(device)
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == 'train'):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)
                    if phase == 'train':
                        loss.backward()
                        optimizer.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == 'train':
                scheduler.step()
            epoch_loss = running_loss / len(dataloaders[phase].dataset)
            epoch_acc = running_corrects.double() / len(dataloaders[phase].dataset)
            history.append((phase, epoch_loss, epoch_acc))
            if phase == 'val' and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_model_wts = copy.deepcopy(model.state_dict())
    time_elapsed = time.time() - since
    assert time_elapsed >= 0
    model.load_state_dict(best_model_wts)
    return model, history, best_acc


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)
    np.random.seed(0)
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    x = torch.randn(96, 3, 16, 16)
    y = (x[:, 0].mean((1, 2)) > 0).long()
    dataloaders = {'train': DataLoader(TensorDataset(x[:64], y[:64]), batch_size=16, shuffle=True),
                   'val': DataLoader(TensorDataset(x[64:], y[64:]), batch_size=32)}

    pretrained = TinyResNet(num_classes=10)
    buf = io.BytesIO()
    torch.save(pretrained.state_dict(), buf)
    buf.seek(0)
    model_ft = TinyResNet(num_classes=10)
    model_ft.load_state_dict(torch.load(buf, weights_only=True))
    set_parameter_requires_grad(model_ft, True)
    num_ftrs = model_ft.fc.in_features
    model_ft.fc = nn.Linear(num_ftrs, 2)
    model_ft.layer2.requires_grad_(True)
    model_ft = model_ft.to(device)
    params_to_update = [p for p in model_ft.parameters() if p.requires_grad]
    names = [n for n, p in model_ft.named_parameters() if p.requires_grad]
    print('trainable', len(params_to_update), names[:3], names[-2:])
    print('frozen stem:', all(not p.requires_grad for p in model_ft.stem.parameters()))
    optimizer_ft = optim.SGD([
        {'params': model_ft.layer2.parameters(), 'lr': 1e-3},
        {'params': model_ft.fc.parameters()},
    ], lr=1e-2, momentum=0.9, nesterov=True)
    exp_lr_scheduler = lr_scheduler.StepLR(optimizer_ft, step_size=2, gamma=0.1)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    stem_before = model_ft.stem[0].weight.clone()
    model_ft, hist, best_acc = train_model(model_ft, dataloaders, criterion, optimizer_ft,
                                           exp_lr_scheduler, args.epochs, device)
    print('stem unchanged:', torch.equal(stem_before, model_ft.stem[0].weight))
    print('history', [(p, type(l).__name__, a.dtype) for p, l, a in hist[:2]])
    print('best acc type', type(best_acc).__name__, best_acc.dtype, 0 <= best_acc.item() <= 1)
    print('lrs', [g['lr'] for g in optimizer_ft.param_groups])
    print('bn running stats updated:',
          not torch.equal(model_ft.stem[1].running_mean, pretrained.stem[1].running_mean))

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 'checkpoint.pth.tar')
        torch.save({'epoch': args.epochs, 'model_state_dict': model_ft.state_dict(),
                    'optimizer_state_dict': optimizer_ft.state_dict(),
                    'scheduler': exp_lr_scheduler.state_dict(), 'loss': 0.5,
                    'rng': torch.get_rng_state(), 'np': np.arange(3)}, path)
        try:
            torch.load(path)
        except Exception as e:
            print('default load refused numpy:', type(e).__name__, 'weights_only' in str(e))
        with torch.serialization.safe_globals([np.core.multiarray._reconstruct, np.ndarray,
                                               np.dtype, type(np.dtype(np.int64))]):
            checkpoint = torch.load(path, map_location=lambda storage, loc: storage)
        print('keys', sorted(checkpoint))
        model = TinyResNet(num_classes=2)
        optimizer = optim.SGD([{'params': model.layer2.parameters(), 'lr': 1e-3},
                               {'params': model.fc.parameters()}], lr=1e-2, momentum=0.9,
                              nesterov=True)
        model.load_state_dict(checkpoint['model_state_dict'])
        optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
        sched = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)
        sched.load_state_dict(checkpoint['scheduler'])
        epoch = checkpoint['epoch']
        torch.set_rng_state(checkpoint['rng'])
        print('resumed', epoch, sched.last_epoch, [g['lr'] for g in optimizer.param_groups],
              checkpoint['np'].tolist())
        momentum = [s['momentum_buffer'].shape for s in optimizer.state.values()]
        print('momentum buffers', len(momentum), momentum[-1])
        torch.save(model, os.path.join(d, 'whole.pt'))
        whole = torch.load(os.path.join(d, 'whole.pt'), weights_only=False)
        model.eval()
        whole.eval()
        with torch.no_grad():
            print('whole model equal:', torch.equal(whole(x[:4]), model(x[:4])))
        print(type(whole).__name__, whole.training)


if __name__ == '__main__':
    main()
