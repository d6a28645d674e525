"""Everyday tensor idioms whose printed form matters: formatting and set_printoptions, complex/bfloat16/half printing, long tensors, sort/unique/bucketize/histc/nonzero, default dtype, new_* constructors, Subset/ConcatDataset, left padding, RNG state, deterministic switches, torch.testing.assert_close failures, finfo/iinfo, dtype promotion of operators."""
import numpy as np
import torch
torch.manual_seed(0)
t = torch.tensor([1.23456, 2.5, float('nan'), float('inf')])
print(t, f"{torch.tensor(3.14159):.2f}", "{:.3f}".format(torch.tensor(2.0)))
torch.set_printoptions(precision=2, sci_mode=False); print(torch.tensor([1e-5, 123456.789]), torch.randn(2, 3).shape)
torch.set_printoptions(profile="default")
print(torch.tensor([1 + 2j, 3 - 1j]), torch.tensor([1.5, 2.25], dtype=torch.bfloat16), torch.tensor([1.5], dtype=torch.float16).tolist())
print(torch.arange(2000.).reshape(2, 1000))
print(torch.tensor([[True, False]]), torch.tensor([], dtype=torch.int64), torch.zeros(0, 3))
v, i = torch.sort(torch.tensor([3, 1, 2, 1]), stable=True); print(v, i)
print(torch.unique(torch.tensor([3, 1, 2, 1, 3]), return_counts=True, return_inverse=True))
print(torch.bucketize(torch.tensor([0.1, 0.5, 0.9]), torch.tensor([0.25, 0.75])), torch.histc(torch.tensor([1., 2., 1.]), bins=4, min=0, max=3))
print(torch.nan_to_num(t), torch.where(t > 2), torch.nonzero(torch.tensor([0, 1, 1]), as_tuple=True), torch.nonzero(torch.tensor([[0, 1], [1, 0]])))
torch.set_default_dtype(torch.float64); print(torch.tensor([1.0]).dtype, torch.get_default_dtype(), torch.ones(1).dtype); torch.set_default_dtype(torch.float32)
x = torch.ones(2); print(x.new_tensor([1, 2]).dtype, x.new_zeros(3), x.new_full((2,), 7), torch.from_numpy(np.array([1, 2], dtype=np.float16)).dtype)
print(torch.as_strided(torch.arange(6), (2, 2), (1, 2)))
from torch.utils.data import Subset, ConcatDataset, TensorDataset
ds = TensorDataset(torch.arange(10)); print(len(Subset(ds, [1, 2, 3])), len(ConcatDataset([ds, ds])), ConcatDataset([ds, ds])[12])
from torch.nn.utils.rnn import pad_sequence, unpad_sequence
pp = pad_sequence([torch.ones(2), torch.ones(3)], batch_first=True, padding_value=-1, padding_side='left'); print(pp, [u.shape for u in unpad_sequence(pp, torch.tensor([2, 3]), batch_first=True)])
s = torch.get_rng_state(); a = torch.rand(2); torch.set_rng_state(s); b = torch.rand(2); print(torch.equal(a, b))
with torch.random.fork_rng(): torch.rand(3)
g = torch.Generator().manual_seed(1); print(torch.randint(0, 10, (3,), generator=g).shape, g.initial_seed())
torch.use_deterministic_algorithms(True); print(torch.are_deterministic_algorithms_enabled()); torch.use_deterministic_algorithms(False)
try:
    torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.1]))
except AssertionError as e:
    print(str(e))
try:
    torch.testing.assert_close(torch.tensor([1, 2]), torch.tensor([1.0, 2.0]))
except AssertionError as e:
    print(str(e))
print(torch.finfo(torch.float32).eps, torch.iinfo(torch.int8).max, torch.finfo(torch.bfloat16))
print(torch.tensor(5).item(), torch.tensor([1, 2]).sum().item(), torch.tensor(2.5).int(), torch.tensor([0.5]).bool())
x = torch.randn(3, requires_grad=True); print(x.detach().numpy().dtype, x.shape == (3,), x.size() == torch.Size([3]), list(x.shape), tuple(x.size()))
try:
    x.numpy()
except RuntimeError as e:
    print(e)
print(torch.Size([2, 3]).numel(), torch.Size([2, 3]) + (4,), repr(torch.Size([])))
print(torch.tensor([[1, 2], [3, 4]]).T.contiguous().is_contiguous(), torch.tensor([[1, 2], [3, 4]]).t().stride())
print(torch.full((2,), 3).dtype, torch.full((2,), 3.).dtype, torch.full((2,), True).dtype, torch.arange(0, 1, 0.25), torch.linspace(0, 1, 3), torch.logspace(0, 2, 3))
print(torch.tensor([1, 2, 3]) / 2, torch.tensor([1, 2, 3]) // 2, torch.tensor([-3]) % 2, torch.tensor([1, 2]) ** 2, 2 ** torch.tensor([1, 2]), torch.tensor([1, 2]) * 1.5)
print(torch.tensor([True]) + torch.tensor([True]), torch.tensor([1], dtype=torch.uint8) - 2, torch.tensor([1.], dtype=torch.float16) + torch.tensor([1.]))
