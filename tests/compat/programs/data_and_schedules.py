"""The data-loading and learning-rate machinery of a typical training script: map-style and
iterable datasets with worker sharding, samplers, collation of nested batches, random
splits by fraction, and the learning-rate schedulers (values printed exactly)."""
import argparse
import math
from collections import namedtuple

import torch
import torch.nn as nn
from torch.optim.lr_scheduler import (CosineAnnealingLR, CosineAnnealingWarmRestarts,
                                      LambdaLR, LinearLR, MultiStepLR, OneCycleLR,
                                      SequentialLR, ExponentialLR, CyclicLR, PolynomialLR)
from torch.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset,
                              IterableDataset, RandomSampler, SequentialSampler, StackDataset,
                              Subset, SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                              get_worker_info, random_split)
from torch.utils.data.dataloader import default_collate
from torch.utils.data.distributed import DistributedSampler

Pair = namedtuple('Pair', ['x', 'y'])


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {'x': torch.tensor([i, i * i], dtype=torch.float32), 'id': i,
                'pair': Pair(i, float(i) / 2), 'name': f'item{i}'}


class Stream(IterableDataset):
    def __init__(self, start, end):
        super().__init__()
        self.start, self.end = start, end

    def __iter__(self):
        worker_info = get_worker_info()
        if worker_info is None:
            iter_start, iter_end = self.start, self.end
        else:
            per_worker = int(math.ceil((self.end - self.start) / float(worker_info.num_workers)))
            worker_id = worker_info.id
            iter_start = self.start + worker_id * per_worker
            iter_end = min(iter_start + per_worker, self.end)
        return iter(range(iter_start, iter_end))


def lrs(opt, sched, steps, metric=None):
    out = []
    for _ in range(steps):
        out.append(round(opt.param_groups[0]['lr'], 6))
        opt.step()
        sched.step()
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--workers', type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)

    ds = Squares(10)
    batch = next(iter(DataLoader(ds, batch_size=4)))
    print(sorted(batch), batch['x'], batch['id'], batch['pair'], batch['name'])
    print(default_collate([(1, 2.0), (3, 4.0)]), default_collate([torch.ones(2), torch.zeros(2)]))
    print(default_collate([{'a': [1, 2]}, {'a': [3, 4]}]))
    import numpy as np
    print(default_collate([np.array([1, 2]), np.array([3, 4])]))

    print(list(DataLoader(Stream(3, 7), num_workers=0)))
    print(sorted(int(v) for v in DataLoader(Stream(3, 7), num_workers=args.workers)))
    print(list(DataLoader(Stream(0, 6), batch_size=2, num_workers=args.workers)))
    print(list(ChainDataset([Stream(0, 2), Stream(5, 7)])))

    train, val, test = random_split(range(10), [0.6, 0.2, 0.2],
                                    generator=torch.Generator().manual_seed(42))
    print(len(train), len(val), len(test), sorted(list(train) + list(val) + list(test)))
    print(len(ConcatDataset([ds, ds])), ConcatDataset([ds, ds])[12]['id'], len(Subset(ds, [1, 2])))
    st = StackDataset(TensorDataset(torch.arange(3)), torch.arange(3) * 10)
    print(len(st), st[1])
    print(list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=False)))
    print(list(BatchSampler(SequentialSampler(range(7)), batch_size=3, drop_last=True)))
    print(len(list(RandomSampler(range(5), replacement=True, num_samples=8))))
    print(sorted(SubsetRandomSampler([4, 2, 9])))
    w = WeightedRandomSampler([0.0, 0.0, 1.0], num_samples=5, replacement=True)
    print(list(w), len(w))
    for rank in range(2):
        s = DistributedSampler(range(10), num_replicas=2, rank=rank, shuffle=False)
        print(rank, list(s), len(s))
    s = DistributedSampler(range(9), num_replicas=2, rank=1, shuffle=True, seed=0, drop_last=True)
    s.set_epoch(3)
    print(len(list(s)), len(s))
    loader = DataLoader(TensorDataset(torch.arange(10.)), batch_size=3, shuffle=True,
                        drop_last=True, pin_memory=torch.cuda.is_available(),
                        num_workers=args.workers, prefetch_factor=2 if args.workers else None,
                        persistent_workers=bool(args.workers))
    seen = [b[0] for b in loader]
    print(len(loader), len(seen), [tuple(b.shape) for b in seen])

    model = nn.Linear(2, 1)
    def fresh(lr=0.1, **kw):
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9, **kw)
    opt = fresh()
    print('cosine', lrs(opt, CosineAnnealingLR(opt, T_max=4, eta_min=0.01), 6))
    opt = fresh()
    print('restarts', lrs(opt, CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2), 8))
    opt = fresh()
    print('onecycle', lrs(opt, OneCycleLR(opt, max_lr=1.0, total_steps=6), 6))
    opt = fresh()
    warm = LinearLR(opt, start_factor=0.25, total_iters=2)
    cos = CosineAnnealingLR(opt, T_max=3)
    print('sequential', lrs(opt, SequentialLR(opt, [warm, cos], milestones=[2]), 6))
    opt = fresh()
    print('lambda', lrs(opt, LambdaLR(opt, lambda e: 1.0 / (e + 1)), 4))
    opt = fresh()
    print('multistep', lrs(opt, MultiStepLR(opt, milestones=[1, 3], gamma=0.5), 5))
    opt = fresh()
    print('exponential', lrs(opt, ExponentialLR(opt, gamma=0.9), 3))
    opt = fresh()
    print('poly', lrs(opt, PolynomialLR(opt, total_iters=4, power=2.0), 5))
    opt = fresh()
    print('cyclic', lrs(opt, CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=2), 5))
    opt = fresh()
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=0, factor=0.5)
    for m in [1.0, 1.0, 0.5, 0.6, 0.7]:
        sched.step(m)
    print('plateau', opt.param_groups[0]['lr'], sched.get_last_lr(), sched.num_bad_epochs)
    sd = OneCycleLR(fresh(), max_lr=1.0, total_steps=4).state_dict()
    print(CosineAnnealingLR(fresh(), T_max=2).state_dict()['T_max'], sd['last_epoch'],
          sd['total_steps'], sd['base_lrs'], sd['_last_lr'])

    scaler = torch.amp.GradScaler('cpu', init_scale=2.0 ** 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, bad in enumerate([False, True, False]):
        opt.zero_grad()
        with torch.autocast(device_type='cpu', dtype=torch.bfloat16):
            out = model(torch.ones(4, 2))
            loss = out.float().pow(2).mean()
        print('autocast', out.dtype, loss.dtype, torch.is_autocast_enabled('cpu'),
              torch.get_autocast_dtype('cpu'))
        scaler.scale(loss).backward()
        if bad:
            model.weight.grad.fill_(float('inf'))
        scaler.step(opt)
        scaler.update()
        print('scale', scaler.get_scale(), scaler.state_dict()['_growth_tracker'])


if __name__ == '__main__':
    main()
