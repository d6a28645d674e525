"""Every optimizer a script reaches for, stepped with a closure and inspected through state_dict (Adafactor, NAdam decoupled, RAdam, Rprop, ASGD, Adamax, Adagrad, centered RMSprop, LBFGS with strong Wolfe, Nesterov SGD, SparseAdam, Muon), add_param_group, a checkpoint resumed into a new optimizer, old spectral_norm, clip_grad_norm_ with foreach / error_if_nonfinite."""
import torch, io
import torch.nn as nn
torch.manual_seed(0)
def run(make, steps=3, sparse=False):
    torch.manual_seed(0)
    m = nn.Embedding(5, 3, sparse=True) if sparse else nn.Linear(3, 2)
    opt = make(m.parameters())
    for _ in range(steps):
        def closure():
            opt.zero_grad(); out = m(torch.tensor([1, 2])) if sparse else m(torch.ones(4, 3)); loss = (out ** 2).sum(); loss.backward(); return loss
        opt.step(closure)
    sd = opt.state_dict()
    return type(opt).__name__, sorted(sd['state'][0].keys()) if sd['state'] else [], sorted(k for k in sd['param_groups'][0].keys() if k != 'params')
for make in [lambda p: torch.optim.Adafactor(p, lr=0.01), lambda p: torch.optim.NAdam(p, decoupled_weight_decay=True, weight_decay=0.1), lambda p: torch.optim.RAdam(p),
             lambda p: torch.optim.Rprop(p), lambda p: torch.optim.ASGD(p), lambda p: torch.optim.Adamax(p), lambda p: torch.optim.Adagrad(p, lr_decay=0.1),
             lambda p: torch.optim.RMSprop(p, momentum=0.9, centered=True), lambda p: torch.optim.LBFGS(p, line_search_fn="strong_wolfe"), lambda p: torch.optim.SGD(p, lr=0.1, nesterov=True, momentum=0.9, foreach=False)]:
    print(run(make))
print(run(lambda p: torch.optim.SparseAdam(p), sparse=True))
m = nn.Linear(4, 4, bias=False); mu = torch.optim.Muon([m.weight], lr=0.02); (m(torch.ones(2, 4)) ** 2).sum().backward(); mu.step(); print(sorted(mu.state_dict()['param_groups'][0].keys()))
opt = torch.optim.Adam(nn.Linear(2, 2).parameters(), lr=0.1); opt.add_param_group({'params': [nn.Parameter(torch.ones(1))], 'lr': 0.01}); print([g['lr'] for g in opt.param_groups], len(opt.param_groups[1]))
net = nn.Linear(2, 2); opt = torch.optim.AdamW(net.parameters()); net(torch.ones(1, 2)).sum().backward(); opt.step()
buf = io.BytesIO(); torch.save({'model': net.state_dict(), 'optimizer': opt.state_dict(), 'epoch': 3}, buf); buf.seek(0)
ck = torch.load(buf); net2 = nn.Linear(2, 2); opt2 = torch.optim.AdamW(net2.parameters()); net2.load_state_dict(ck['model']); opt2.load_state_dict(ck['optimizer'])
print(ck['epoch'], opt2.state_dict()['state'][0]['step'], opt2.param_groups[0]['betas'])
print(opt2)
old = nn.utils.spectral_norm(nn.Linear(3, 3)); print(sorted(n for n, _ in old.named_parameters()), sorted(n for n, _ in old.named_buffers()))
ps = list(nn.Linear(3, 3).parameters()); [p.grad for p in ps]
for p in ps: p.grad = torch.ones_like(p) * 10
print(round(float(nn.utils.clip_grad_norm_(ps, 1.0, foreach=True)), 4), round(float(nn.utils.get_total_norm([p.grad for p in ps])), 4))
try:
    for p in ps: p.grad = torch.full_like(p, float('nan'))
    nn.utils.clip_grad_norm_(ps, 1.0, error_if_nonfinite=True)
except RuntimeError as e:
    print(str(e)[:90])
