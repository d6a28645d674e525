"""What training scripts set up around the model on a CPU machine: distributed and thread queries, matmul precision, nanoGPT-style autocast context, disabled GradScaler/autocast for CUDA with their warnings, sdpa_kernel, MultiheadAttention weights, torch.compile with dynamo settings, IterableDataset sharded over workers, default_collate of namedtuples and dicts, a padding collate_fn, WeightedRandomSampler."""
import os, math, warnings
from contextlib import nullcontext
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import IterableDataset, DataLoader, WeightedRandomSampler, default_collate, get_worker_info
from collections import namedtuple
torch.manual_seed(0)
print(dist.is_initialized(), int(os.environ.get('RANK', -1)) != -1)  # (is_available: True only with ember's distributed extra)
torch.set_num_threads(1); print(torch.get_num_threads())
torch.set_float32_matmul_precision('high'); print(torch.get_float32_matmul_precision())
torch.backends.cuda.matmul.allow_tf32 = True; torch.backends.cudnn.allow_tf32 = True
device_type = 'cpu'; ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}['bfloat16']
ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    scaler = torch.cuda.amp.GradScaler(enabled=False)
    print([str(x.category.__name__) for x in w])
scaler2 = torch.amp.GradScaler('cuda', enabled=False)
print(scaler.is_enabled(), scaler2.is_enabled())
with torch.autocast(device_type='cuda', dtype=torch.float16, enabled=False):
    print(torch.ones(2).dtype)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    with torch.cuda.amp.autocast(enabled=False):
        pass
    print([x.category.__name__ for x in w])
q = k = v = torch.randn(1, 2, 4, 8)
from torch.nn.attention import sdpa_kernel, SDPBackend
with sdpa_kernel(SDPBackend.MATH):
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
print(y.shape, hasattr(torch.nn.functional, 'scaled_dot_product_attention'))
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    with torch.backends.cuda.sdp_kernel(enable_flash=False):
        pass
    print([x.category.__name__ for x in w])
mha = nn.MultiheadAttention(8, 2, batch_first=True); o, wts = mha(torch.randn(2, 3, 8), torch.randn(2, 3, 8), torch.randn(2, 3, 8)); print(o.shape, wts.shape)
o, wts = mha(torch.randn(2, 3, 8), torch.randn(2, 3, 8), torch.randn(2, 3, 8), need_weights=True, average_attn_weights=False); print(wts.shape)
o, wts = mha(torch.randn(2, 3, 8), torch.randn(2, 3, 8), torch.randn(2, 3, 8), need_weights=False); print(wts)
import torch._dynamo
torch._dynamo.config.suppress_errors = True
model = torch.compile(nn.Linear(2, 2), fullgraph=False, dynamic=True); print(model(torch.ones(1, 2)).shape, type(model).__name__)
print(model._orig_mod.__class__.__name__, list(model.state_dict().keys()))
torch._dynamo.reset()
class Stream(IterableDataset):
    def __init__(self, start, end): super().__init__(); self.start, self.end = start, end
    def __iter__(self):
        info = get_worker_info()
        if info is None: lo, hi = self.start, self.end
        else:
            per = int(math.ceil((self.end - self.start) / float(info.num_workers))); wid = info.id
            lo = self.start + wid * per; hi = min(lo + per, self.end)
        return iter(range(lo, hi))
ds = Stream(3, 7)
print(list(DataLoader(ds, num_workers=0)))
print(sorted(int(x) for x in DataLoader(ds, num_workers=2)))
Point = namedtuple('Point', ['x', 'y'])
print(default_collate([Point(1, 2.0), Point(3, 4.0)]), default_collate([{'a': torch.ones(2), 'b': 'x'}, {'a': torch.zeros(2), 'b': 'y'}]))
def collate_fn(batch):
    xs, ys = zip(*batch); return torch.nn.utils.rnn.pad_sequence(xs, batch_first=True), torch.tensor(ys)
dl = DataLoader([(torch.ones(i + 1), i) for i in range(4)], batch_size=2, collate_fn=collate_fn, drop_last=True); print([b[0].shape for b in dl], len(dl))
s = WeightedRandomSampler([0.1, 0.9, 0.0], num_samples=5, replacement=True, generator=torch.Generator().manual_seed(0)); print(len(list(s)), 2 not in list(s))
if __name__ == '__main__':
    print(mp.get_start_method(allow_none=True) in (None, 'fork', 'spawn', 'forkserver'), mp.cpu_count() > 0)
