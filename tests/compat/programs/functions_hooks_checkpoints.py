"""Odds and ends from real scripts: custom autograd.Function + gradcheck, hooks, nn.init on fixed
generators, torch.save of mixed checkpoints with numpy/optimizer, set_num_threads, no_grad
decorators on generators, inference_mode, backends queries, register_buffer persistent flags."""
import io, os, random, tempfile, warnings
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Function, gradcheck

torch.set_num_threads(1)
print(torch.get_num_threads(), torch.backends.mkldnn.is_available() in (True, False), torch.backends.openmp.is_available() in (True, False))
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = True
torch.set_float32_matmul_precision('highest')
torch.use_deterministic_algorithms(False)
print(torch.backends.cpu.get_cpu_capability() != '', torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.get_float32_matmul_precision())
print(torch.cuda.is_available(), torch.cuda.device_count(), torch.version.cuda, torch.backends.mps.is_built() in (True, False))
print(torch.accelerator.is_available() if hasattr(torch, 'accelerator') else None, torch.are_deterministic_algorithms_enabled())
torch.use_deterministic_algorithms(True, warn_only=True)
print(torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
torch.use_deterministic_algorithms(False)
g = torch.manual_seed(0)
print(type(g).__name__, torch.initial_seed(), torch.pi, torch.e, torch.inf, torch.nan != torch.nan, torch.newaxis)

class MyReLU(Function):
    @staticmethod
    def forward(ctx, input, alpha=1.0):
        ctx.save_for_backward(input)
        ctx.alpha = alpha
        return input.clamp(min=0) * alpha
    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input * ctx.alpha, None

x = torch.tensor([-1.0, 0.5, 2.0], dtype=torch.double, requires_grad=True)
y = MyReLU.apply(x, 2.0)
y.sum().backward()
print(y, x.grad, y.grad_fn.__class__.__name__, gradcheck(lambda t: MyReLU.apply(t, 3.0), (x,)))

class Sq(Function):
    @staticmethod
    def forward(x):
        return x ** 2
    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return 2 * x * g
print(torch.autograd.grad(Sq.apply(x).sum(), x)[0], torch.func.grad(lambda t: Sq.apply(t).sum())(x.detach()))

net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
for m in net.modules():
    if isinstance(m, nn.Linear):
        nn.init.constant_(m.weight, 0.1)
        nn.init.zeros_(m.bias)
feats = {}
def hook(mod, inp, out):
    feats['relu'] = out.detach()
h = net[1].register_forward_hook(hook)
pre = net[0].register_forward_pre_hook(lambda m, inp: (inp[0] * 2,))
gh = []
net[2].register_full_backward_hook(lambda m, gi, go: gh.append((gi[0].shape, go[0].shape)))
out = net(torch.ones(2, 3, requires_grad=True))
out.sum().backward()
print(feats['relu'], out, gh)
h.remove(); pre.remove()
print(net(torch.ones(1, 3)))
t = torch.ones(2, requires_grad=True)
t.register_hook(lambda g: g * 10)
(t * 3).sum().backward()
print(t.grad)

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer('running', torch.zeros(2))
        self.register_buffer('tmp', torch.ones(1), persistent=False)
        self.w = nn.Parameter(torch.ones(2))
m = M()
print(list(m.state_dict().keys()), [n for n, _ in m.named_buffers()])
opt = torch.optim.Adam(m.parameters(), lr=0.1)
m.w.sum().backward(); opt.step()
ckpt = {'epoch': 3, 'model': m.state_dict(), 'opt': opt.state_dict(), 'arr': np.arange(3), 'rng': torch.get_rng_state(),
        'py': random.getstate()[0], 'np_rng': np.random.get_state()[0], 'best': 0.5, 'cfg': {'lr': 0.1, 'layers': [1, 2]}}
with tempfile.TemporaryDirectory() as d:
    p = os.path.join(d, 'ckpt.pth.tar')
    torch.save(ckpt, p)
    try:
        torch.load(p)
    except Exception as e:
        print(type(e).__name__, 'numpy' in str(e))
    c2 = torch.load(p, weights_only=False, map_location=lambda storage, loc: storage)
    print(sorted(c2.keys()), c2['arr'], c2['opt']['state'][0]['step'], c2['opt']['param_groups'][0]['lr'], c2['rng'].dtype, c2['rng'].shape == torch.get_rng_state().shape)
    with torch.serialization.safe_globals([np._core.multiarray._reconstruct, np.ndarray, np.dtype, type(np.dtype('int64'))]):
        try:
            c3 = torch.load(p)
            print('safe ok', c3['arr'])
        except Exception as e:
            print(type(e).__name__)
    torch.save(m.state_dict(), p, _use_new_zipfile_serialization=False)
    print(torch.load(p, map_location='cpu')['running'], torch.load(p, map_location=torch.device('cpu'), mmap=False)['w'])
    m2 = M(); m2.load_state_dict(torch.load(p, map_location={'cuda:0': 'cpu'})); print(m2.w)

@torch.no_grad
def gen():
    for i in range(2):
        yield (torch.ones(1, requires_grad=True) * 2).requires_grad
print(list(gen()))
@torch.inference_mode()
def inf(x):
    return x * 2
r = inf(torch.ones(2, requires_grad=True))
print(r.requires_grad, r.is_inference(), torch.is_inference_mode_enabled(), torch.is_grad_enabled())
with torch.set_grad_enabled(False):
    print(torch.is_grad_enabled())
@torch.enable_grad
def eg():
    return torch.is_grad_enabled()
with torch.no_grad():
    print(eg())
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter('always')
    F.softmax(torch.ones(2))
    print([x.category.__name__ for x in w])
