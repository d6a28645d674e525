"""Unsupervised domain adaptation the way fungtion/DANN and the pytorch-domain-adaptation
repositories write it: a ``ReverseLayerF`` autograd ``Function`` that passes features
through and multiplies the gradient by ``-alpha`` (``x.view_as(x)`` in forward), the
feature extractor / class classifier / domain classifier split, the ``2 / (1 + exp(-10 p))
- 1`` alpha schedule, the learning-rate annealing ``lr / (1 + 10 p) ** 0.75`` written
into ``param_groups``, ``NLLLoss`` on ``LogSoftmax`` heads, source and target loaders
zipped with ``iter``/``next``, and a MMD (multi-kernel RBF) and CORAL loss for
comparison; accuracy on both domains under ``torch.no_grad``."""
import random

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
import torch.utils.data
from torch.autograd import Function

manual_seed = 4242  # upstream draws it with random.randint(1, 10000), unseeded
random.seed(manual_seed)
torch.manual_seed(manual_seed)
cuda = torch.cuda.is_available()
torch.backends.cudnn.benchmark = True
lr, batch_size, n_epoch = 1e-2, 16, 4


class ReverseLayerF(Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        output = grad_output.neg() * ctx.alpha
        return output, None


class CNNModel(nn.Module):
    def __init__(self):
        super(CNNModel, self).__init__()
        self.feature = nn.Sequential()
        self.feature.add_module("f_conv1", nn.Conv2d(3, 8, kernel_size=3))
        self.feature.add_module("f_bn1", nn.BatchNorm2d(8))
        self.feature.add_module("f_pool1", nn.MaxPool2d(2))
        self.feature.add_module("f_relu1", nn.ReLU(True))
        self.feature.add_module("f_conv2", nn.Conv2d(8, 12, kernel_size=3))
        self.feature.add_module("f_bn2", nn.BatchNorm2d(12))
        self.feature.add_module("f_drop1", nn.Dropout2d())
        self.feature.add_module("f_pool2", nn.MaxPool2d(2))
        self.feature.add_module("f_relu2", nn.ReLU(True))
        self.class_classifier = nn.Sequential()
        self.class_classifier.add_module("c_fc1", nn.Linear(12 * 2 * 2, 32))
        self.class_classifier.add_module("c_bn1", nn.BatchNorm1d(32))
        self.class_classifier.add_module("c_relu1", nn.ReLU(True))
        self.class_classifier.add_module("c_fc2", nn.Linear(32, 3))
        self.class_classifier.add_module("c_softmax", nn.LogSoftmax(dim=1))
        self.domain_classifier = nn.Sequential()
        self.domain_classifier.add_module("d_fc1", nn.Linear(12 * 2 * 2, 32))
        self.domain_classifier.add_module("d_bn1", nn.BatchNorm1d(32))
        self.domain_classifier.add_module("d_relu1", nn.ReLU(True))
        self.domain_classifier.add_module("d_fc2", nn.Linear(32, 2))
        self.domain_classifier.add_module("d_softmax", nn.LogSoftmax(dim=1))

    def forward(self, input_data, alpha):
        input_data = input_data.expand(input_data.data.shape[0], 3, 14, 14)
        feature = self.feature(input_data)
        feature = feature.view(-1, 12 * 2 * 2)
        reverse_feature = ReverseLayerF.apply(feature, alpha)
        class_output = self.class_classifier(feature)
        domain_output = self.domain_classifier(reverse_feature)
        return class_output, domain_output, feature


def guassian_kernel(source, target, kernel_mul=2.0, kernel_num=3, fix_sigma=None):
    n_samples = int(source.size()[0]) + int(target.size()[0])
    total = torch.cat([source, target], dim=0)
    total0 = total.unsqueeze(0).expand(int(total.size(0)), int(total.size(0)), int(total.size(1)))
    total1 = total.unsqueeze(1).expand(int(total.size(0)), int(total.size(0)), int(total.size(1)))
    L2_distance = ((total0 - total1) ** 2).sum(2)
    bandwidth = fix_sigma if fix_sigma else torch.sum(L2_distance.data) / (n_samples ** 2 - n_samples)
    bandwidth /= kernel_mul ** (kernel_num // 2)
    bandwidth_list = [bandwidth * (kernel_mul ** i) for i in range(kernel_num)]
    kernel_val = [torch.exp(-L2_distance / bandwidth_temp) for bandwidth_temp in bandwidth_list]
    return sum(kernel_val)


def mmd_rbf(source, target):
    batch_size = int(source.size()[0])
    kernels = guassian_kernel(source, target)
    XX = kernels[:batch_size, :batch_size]
    YY = kernels[batch_size:, batch_size:]
    XY = kernels[:batch_size, batch_size:]
    YX = kernels[batch_size:, :batch_size]
    return torch.mean(XX + YY - XY - YX)


def coral(source, target):
    d = source.size(1)
    xm = torch.mean(source, 0, keepdim=True) - source
    xc = xm.t() @ xm / (source.size(0) - 1)
    xmt = torch.mean(target, 0, keepdim=True) - target
    xct = xmt.t() @ xmt / (target.size(0) - 1)
    return torch.sum((xc - xct) * (xc - xct)) / (4 * d * d)


def make_domain(n, shift, g):
    labels = torch.randint(0, 3, (n,), generator=g)
    imgs = torch.rand(n, 1, 14, 14, generator=g) * 0.2
    for i, c in enumerate(labels.tolist()):
        imgs[i, 0, 2 + 4 * c: 5 + 4 * c, 3:11] += 0.8
    return imgs + shift, labels


g = torch.Generator().manual_seed(0)
src = torch.utils.data.TensorDataset(*make_domain(64, 0.0, g))
tgt = torch.utils.data.TensorDataset(*make_domain(64, 0.4, g))
dataloader_source = torch.utils.data.DataLoader(src, batch_size=batch_size, shuffle=True, num_workers=0)
dataloader_target = torch.utils.data.DataLoader(tgt, batch_size=batch_size, shuffle=True, num_workers=0)

x = torch.randn(3, requires_grad=True)
ReverseLayerF.apply(x, 0.5).sum().backward()
print("reversed grad:", x.grad.tolist())
my_net = CNNModel()
optimizer = optim.SGD(my_net.parameters(), lr=lr, momentum=0.9)
loss_class = torch.nn.NLLLoss()
loss_domain = torch.nn.NLLLoss()
for p in my_net.parameters():
    p.requires_grad = True
for epoch in range(n_epoch):
    len_dataloader = min(len(dataloader_source), len(dataloader_target))
    data_source_iter = iter(dataloader_source)
    data_target_iter = iter(dataloader_target)
    for i in range(len_dataloader):
        p = float(i + epoch * len_dataloader) / n_epoch / len_dataloader
        alpha = 2. / (1. + np.exp(-10 * p)) - 1
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr / (1. + 10 * p) ** 0.75
        s_img, s_label = next(data_source_iter)
        my_net.zero_grad()
        domain_label = torch.zeros(len(s_label)).long()
        class_output, domain_output, s_feat = my_net(input_data=s_img, alpha=alpha)
        err_s_label = loss_class(class_output, s_label)
        err_s_domain = loss_domain(domain_output, domain_label)
        t_img, _ = next(data_target_iter)
        domain_label = torch.ones(len(t_img)).long()
        _, domain_output, t_feat = my_net(input_data=t_img, alpha=alpha)
        err_t_domain = loss_domain(domain_output, domain_label)
        err = err_t_domain + err_s_domain + err_s_label
        err.backward()
        optimizer.step()
    with torch.no_grad():
        mmd, crl = mmd_rbf(s_feat, t_feat), coral(s_feat, t_feat)
    print(f"epoch: {epoch}, err_s_label: {err_s_label.item():.5f}, err_s_domain: {err_s_domain.item():.5f}, "
          f"err_t_domain: {err_t_domain.item():.5f}, alpha {alpha:.5f}, mmd {mmd.item():.5f}, coral {crl.item():.6f}")

my_net.eval()
with torch.no_grad():
    for name, ds in (("source", src), ("target", tgt)):
        out, dom, _ = my_net(ds.tensors[0], alpha=0)
        acc = out.data.max(1, keepdim=True)[1].eq(ds.tensors[1].view(-1, 1)).sum().item() / len(ds)
        print(f"accuracy of the {name} dataset: {acc:.6f}, domain says target: {dom.argmax(1).float().mean().item():.4f}")
