"""Self-supervised learning the way facebookresearch/moco and /swav write it: MoCo v2's
momentum key encoder updated under ``@torch.no_grad()``, a normalised negative queue kept
as a registered buffer with a pointer (``queue_ptr``) and replaced slice-wise, batch
shuffling for BN through ``randperm``/``argsort`` (single-process ``concat_all_gather``),
InfoNCE logits from ``einsum``; SwAV's prototypes (a weight-normalised linear layer whose
weights are renormalised every step), Sinkhorn-Knopp codes in ``distributed_sinkhorn``,
the swapped-prediction loss over crops, and freezing the prototypes for the first
iterations by zeroing their gradients."""
import argparse
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser(description="MoCo / SwAV")
parser.add_argument("--moco-dim", default=16, type=int)
parser.add_argument("--moco-k", default=48, type=int)
parser.add_argument("--moco-m", default=0.99, type=float)
parser.add_argument("--moco-t", default=0.2, type=float)
parser.add_argument("--nmb_prototypes", default=12, type=int)
parser.add_argument("--epsilon", default=0.05, type=float)
parser.add_argument("--sinkhorn_iterations", default=3, type=int)
parser.add_argument("--freeze_prototypes_niters", default=2, type=int)
parser.add_argument("--temperature", default=0.1, type=float)
parser.add_argument("--seed", type=int, default=31)
args = parser.parse_args()
torch.manual_seed(args.seed)
np.random.seed(args.seed)


def make_encoder(num_classes):
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
        nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16),
        nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, num_classes))


@torch.no_grad()
def concat_all_gather(tensor):
    # torch.distributed.all_gather over a world of one
    tensors_gather = [torch.ones_like(tensor) for _ in range(1)]
    tensors_gather[0].copy_(tensor)
    return torch.cat(tensors_gather, dim=0)


class MoCo(nn.Module):
    def __init__(self, base_encoder, dim=128, K=65536, m=0.999, T=0.07):
        super().__init__()
        self.K, self.m, self.T = K, m, T
        self.encoder_q = base_encoder(num_classes=dim)
        self.encoder_k = base_encoder(num_classes=dim)
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data.copy_(param_q.data)
            param_k.requires_grad = False
        self.register_buffer("queue", torch.randn(dim, K))
        self.queue = nn.functional.normalize(self.queue, dim=0)
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _momentum_update_key_encoder(self):
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data = param_k.data * self.m + param_q.data * (1.0 - self.m)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        keys = concat_all_gather(keys)
        batch_size = keys.shape[0]
        ptr = int(self.queue_ptr)
        assert self.K % batch_size == 0
        self.queue[:, ptr:ptr + batch_size] = keys.T
        ptr = (ptr + batch_size) % self.K
        self.queue_ptr[0] = ptr

    @torch.no_grad()
    def _batch_shuffle_ddp(self, x):
        x_gather = concat_all_gather(x)
        batch_size_all = x_gather.shape[0]
        idx_shuffle = torch.randperm(batch_size_all)
        idx_unshuffle = torch.argsort(idx_shuffle)
        return x_gather[idx_shuffle], idx_unshuffle

    @torch.no_grad()
    def _batch_unshuffle_ddp(self, x, idx_unshuffle):
        return concat_all_gather(x)[idx_unshuffle]

    def forward(self, im_q, im_k):
        q = self.encoder_q(im_q)
        q = nn.functional.normalize(q, dim=1)
        with torch.no_grad():
            self._momentum_update_key_encoder()
            im_k, idx_unshuffle = self._batch_shuffle_ddp(im_k)
            k = self.encoder_k(im_k)
            k = nn.functional.normalize(k, dim=1)
            k = self._batch_unshuffle_ddp(k, idx_unshuffle)
        l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", [q, self.queue.clone().detach()])
        logits = torch.cat([l_pos, l_neg], dim=1)
        logits /= self.T
        labels = torch.zeros(logits.shape[0], dtype=torch.long)
        self._dequeue_and_enqueue(k)
        return logits, labels


def accuracy(output, target, topk=(1,)):
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        res = []
        for k in topk:
            correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


def augment(x):
    # random resized crop as a random shift, horizontal flip, colour jitter
    shift = torch.randint(-2, 3, (2,)).tolist()
    x = torch.roll(x, shifts=shift, dims=(2, 3))
    flip = torch.rand(x.shape[0]) < 0.5
    x = torch.where(flip[:, None, None, None], x.flip(3), x)
    return x * (1 + 0.2 * (torch.rand(x.shape[0], 3, 1, 1) - 0.5))


images = torch.randn(16, 3, 8, 8)
model = MoCo(make_encoder, args.moco_dim, args.moco_k, args.moco_m, args.moco_t)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), 0.03, momentum=0.9, weight_decay=1e-4)
print("trainable", sum(p.numel() for p in model.parameters() if p.requires_grad),
      "frozen", sum(p.numel() for p in model.parameters() if not p.requires_grad))
for i in range(6):
    output, target = model(im_q=augment(images), im_k=augment(images))
    loss = criterion(output, target)
    acc1, acc5 = accuracy(output, target, topk=(1, 5))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"[{i}] loss {loss.item():.6f} acc@1 {acc1.item():.3f} acc@5 {acc5.item():.3f} "
          f"ptr {int(model.queue_ptr)}")
print("queue norms", f"{model.queue.norm(dim=0).mean().item():.6f}",
      "key/query gap", f"{sum((a - b).abs().sum() for a, b in zip(model.encoder_q.parameters(), model.encoder_k.parameters())).item():.6f}")


# SwAV
class SwAVHead(nn.Module):
    def __init__(self, output_dim, nmb_prototypes):
        super().__init__()
        self.backbone = make_encoder(output_dim)
        self.prototypes = nn.Linear(output_dim, nmb_prototypes, bias=False)

    def forward(self, inputs):
        if not isinstance(inputs, list):
            inputs = [inputs]
        idx_crops = torch.cumsum(torch.unique_consecutive(
            torch.tensor([inp.shape[-1] for inp in inputs]), return_counts=True)[1], 0)
        start_idx = 0
        for end_idx in idx_crops:
            _out = self.backbone(torch.cat(inputs[start_idx:end_idx]))
            output = _out if start_idx == 0 else torch.cat((output, _out))
            start_idx = end_idx
        embedding = nn.functional.normalize(output, dim=1, p=2)
        return embedding, self.prototypes(embedding)


@torch.no_grad()
def distributed_sinkhorn(out):
    Q = torch.exp(out / args.epsilon).t()
    B = Q.shape[1] * 1
    K = Q.shape[0]
    sum_Q = torch.sum(Q)
    Q /= sum_Q
    for it in range(args.sinkhorn_iterations):
        sum_of_rows = torch.sum(Q, dim=1, keepdim=True)
        Q /= sum_of_rows
        Q /= K
        Q /= torch.sum(Q, dim=0, keepdim=True)
        Q /= B
    Q *= B
    return Q.t()


swav = SwAVHead(16, args.nmb_prototypes)
optimizer = torch.optim.SGD(swav.parameters(), lr=0.1, momentum=0.9)
crops_for_assign, nmb_crops = [0, 1], [2, 2]
bs = images.shape[0]
for it in range(5):
    with torch.no_grad():
        w = swav.prototypes.weight.data.clone()
        w = nn.functional.normalize(w, dim=1, p=2)
        swav.prototypes.weight.copy_(w)
    crops = [augment(images) for _ in range(2)] + [
        F.interpolate(augment(images), size=(6, 6), mode="bilinear", align_corners=False)
        for _ in range(2)]
    embedding, output = swav(crops)
    embedding = embedding.detach()
    loss = 0
    for i, crop_id in enumerate(crops_for_assign):
        with torch.no_grad():
            out = output[bs * crop_id: bs * (crop_id + 1)].detach()
            q = distributed_sinkhorn(out)[-bs:]
        subloss = 0
        for v in np.delete(np.arange(np.sum(nmb_crops)), crop_id):
            x = output[bs * v: bs * (v + 1)] / args.temperature
            subloss -= torch.mean(torch.sum(q * F.log_softmax(x, dim=1), dim=1))
        loss += subloss / (np.sum(nmb_crops) - 1)
    loss /= len(crops_for_assign)
    optimizer.zero_grad()
    loss.backward()
    if it < args.freeze_prototypes_niters:
        for name, p in swav.named_parameters():
            if "prototypes" in name:
                p.grad = None
    optimizer.step()
    print(f"swav it {it} loss {loss.item():.6f} codes used "
          f"{torch.unique(q.argmax(1)).numel()} q row-sum {q.sum(1).mean().item():.6f}")
Q = distributed_sinkhorn(torch.randn(8, 5))
print("sinkhorn marginals", [round(v, 5) for v in Q.sum(0).tolist()],
      [round(v, 5) for v in Q.sum(1).tolist()])
