"""TabNet the way dreamquark-ai/pytorch-tabnet writes it: sparsemax and 1.5-entmax as
``torch.autograd.Function`` subclasses (sort, cumsum, ``gather`` of the threshold,
``ctx.save_for_backward`` and a hand-written backward), ghost batch normalisation over
``chunk``-ed virtual batches, GLU blocks with shared and step-dependent layers, attentive
transformers with a relaxation prior and the sparsity regulariser, feature importances
from the masks; training logged through ``torch.utils.tensorboard.SummaryWriter`` and the
event file read back with TensorBoard's ``EventAccumulator``; ``gradcheck`` on both
Functions in double precision."""
import glob
import os
import shutil

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Function
from torch.utils.tensorboard import SummaryWriter

torch.manual_seed(0)
np.random.seed(0)


def _make_ix_like(input, dim=0):
    d = input.size(dim)
    rho = torch.arange(1, d + 1, device=input.device, dtype=input.dtype)
    view = [1] * input.dim()
    view[0] = -1
    return rho.view(view).transpose(0, dim)


class SparsemaxFunction(Function):
    @staticmethod
    def forward(ctx, input, dim=-1):
        ctx.dim = dim
        max_val, _ = input.max(dim=dim, keepdim=True)
        input = input - max_val
        tau, supp_size = SparsemaxFunction._threshold_and_support(input, dim=dim)
        output = torch.clamp(input - tau, min=0)
        ctx.save_for_backward(supp_size, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        supp_size, output = ctx.saved_tensors
        dim = ctx.dim
        grad_input = grad_output.clone()
        grad_input[output == 0] = 0
        v_hat = grad_input.sum(dim=dim) / supp_size.to(output.dtype).squeeze()
        v_hat = v_hat.unsqueeze(dim)
        grad_input = torch.where(output != 0, grad_input - v_hat, grad_input)
        return grad_input, None

    @staticmethod
    def _threshold_and_support(input, dim=-1):
        input_srt, _ = torch.sort(input, descending=True, dim=dim)
        input_cumsum = input_srt.cumsum(dim) - 1
        rhos = _make_ix_like(input, dim)
        support = rhos * input_srt > input_cumsum
        support_size = support.sum(dim=dim).unsqueeze(dim)
        tau = input_cumsum.gather(dim, support_size - 1)
        tau /= support_size.to(input.dtype)
        return tau, support_size


sparsemax = SparsemaxFunction.apply


class Entmax15Function(Function):
    @staticmethod
    def forward(ctx, input, dim=-1):
        ctx.dim = dim
        max_val, _ = input.max(dim=dim, keepdim=True)
        input = (input - max_val) / 2
        tau_star, _ = Entmax15Function._threshold_and_support(input, dim)
        output = torch.clamp(input - tau_star, min=0) ** 2
        ctx.save_for_backward(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        Y, = ctx.saved_tensors
        gppr = Y.sqrt()
        dX = grad_output * gppr
        q = dX.sum(ctx.dim) / gppr.sum(ctx.dim)
        q = q.unsqueeze(ctx.dim)
        dX -= q * gppr
        return dX, None

    @staticmethod
    def _threshold_and_support(input, dim=-1):
        Xsrt, _ = torch.sort(input, descending=True, dim=dim)
        rho = _make_ix_like(input, dim)
        mean = Xsrt.cumsum(dim) / rho
        mean_sq = (Xsrt ** 2).cumsum(dim) / rho
        ss = rho * (mean_sq - mean ** 2)
        delta = (1 - ss) / rho
        delta_nz = torch.clamp(delta, 0)
        tau = mean - torch.sqrt(delta_nz)
        support_size = (tau <= Xsrt).sum(dim).unsqueeze(dim)
        tau_star = tau.gather(dim, support_size - 1)
        return tau_star, support_size


entmax15 = Entmax15Function.apply


class Sparsemax(nn.Module):
    def __init__(self, dim=-1):
        self.dim = dim
        super().__init__()

    def forward(self, input):
        return sparsemax(input, self.dim)


class Entmax15(nn.Module):
    def __init__(self, dim=-1):
        self.dim = dim
        super().__init__()

    def forward(self, input):
        return entmax15(input, self.dim)


def initialize_non_glu(module, input_dim, output_dim):
    gain_value = np.sqrt((input_dim + output_dim) / np.sqrt(4 * input_dim))
    torch.nn.init.xavier_normal_(module.weight, gain=gain_value)


def initialize_glu(module, input_dim, output_dim):
    gain_value = np.sqrt((input_dim + output_dim) / np.sqrt(input_dim))
    torch.nn.init.xavier_normal_(module.weight, gain=gain_value)


class GBN(nn.Module):
    def __init__(self, input_dim, virtual_batch_size=128, momentum=0.01):
        super().__init__()
        self.input_dim = input_dim
        self.virtual_batch_size = virtual_batch_size
        self.bn = nn.BatchNorm1d(self.input_dim, momentum=momentum)

    def forward(self, x):
        chunks = x.chunk(int(np.ceil(x.shape[0] / self.virtual_batch_size)), 0)
        res = [self.bn(x_) for x_ in chunks]
        return torch.cat(res, dim=0)


class GLU_Layer(nn.Module):
    def __init__(self, input_dim, output_dim, fc=None, virtual_batch_size=128, momentum=0.02):
        super().__init__()
        self.output_dim = output_dim
        self.fc = fc if fc else nn.Linear(input_dim, 2 * output_dim, bias=False)
        initialize_glu(self.fc, input_dim, 2 * output_dim)
        self.bn = GBN(2 * output_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)

    def forward(self, x):
        x = self.bn(self.fc(x))
        return torch.mul(x[:, : self.output_dim], torch.sigmoid(x[:, self.output_dim:]))


class GLU_Block(nn.Module):
    def __init__(self, input_dim, output_dim, n_glu=2, first=False, shared_layers=None,
                 virtual_batch_size=128, momentum=0.02):
        super().__init__()
        self.first, self.shared_layers, self.n_glu = first, shared_layers, n_glu
        self.glu_layers = nn.ModuleList()
        params = {"virtual_batch_size": virtual_batch_size, "momentum": momentum}
        fc = shared_layers[0] if shared_layers else None
        self.glu_layers.append(GLU_Layer(input_dim, output_dim, fc=fc, **params))
        for glu_id in range(1, self.n_glu):
            fc = shared_layers[glu_id] if shared_layers else None
            self.glu_layers.append(GLU_Layer(output_dim, output_dim, fc=fc, **params))

    def forward(self, x):
        scale = torch.sqrt(torch.FloatTensor([0.5]).to(x.device))
        if self.first:
            x = self.glu_layers[0](x)
            layers_left = range(1, self.n_glu)
        else:
            layers_left = range(self.n_glu)
        for glu_id in layers_left:
            x = torch.add(x, self.glu_layers[glu_id](x))
            x = x * scale
        return x


class FeatTransformer(nn.Module):
    def __init__(self, input_dim, output_dim, shared_layers, n_glu_independent,
                 virtual_batch_size=128, momentum=0.02):
        super().__init__()
        params = {"n_glu": 2, "virtual_batch_size": virtual_batch_size, "momentum": momentum}
        self.shared = GLU_Block(input_dim, output_dim, first=True,
                                shared_layers=shared_layers, **params)
        spec_input_dim = output_dim
        params["n_glu"] = n_glu_independent
        self.specifics = GLU_Block(spec_input_dim, output_dim, first=False, **params)

    def forward(self, x):
        return self.specifics(self.shared(x))


class AttentiveTransformer(nn.Module):
    def __init__(self, input_dim, group_dim, virtual_batch_size=128, momentum=0.02,
                 mask_type="sparsemax"):
        super().__init__()
        self.fc = nn.Linear(input_dim, group_dim, bias=False)
        initialize_non_glu(self.fc, input_dim, group_dim)
        self.bn = GBN(group_dim, virtual_batch_size=virtual_batch_size, momentum=momentum)
        if mask_type == "sparsemax":
            self.selector = Sparsemax(dim=-1)
        elif mask_type == "entmax":
            self.selector = Entmax15(dim=-1)
        else:
            raise NotImplementedError("Please choose either sparsemax" + "or entmax as masktype")

    def forward(self, priors, processed_feat):
        x = self.bn(self.fc(processed_feat))
        x = torch.mul(x, priors)
        return self.selector(x)


class TabNetEncoder(nn.Module):
    def __init__(self, input_dim, output_dim, n_d=8, n_a=8, n_steps=3, gamma=1.3,
                 n_independent=2, n_shared=2, epsilon=1e-15, virtual_batch_size=128,
                 momentum=0.02, mask_type="sparsemax"):
        super().__init__()
        self.input_dim, self.n_d, self.n_a = input_dim, n_d, n_a
        self.n_steps, self.gamma, self.epsilon = n_steps, gamma, epsilon
        self.initial_bn = nn.BatchNorm1d(self.input_dim, momentum=0.01)
        shared_feat_transform = nn.ModuleList()
        for i in range(n_shared):
            if i == 0:
                shared_feat_transform.append(nn.Linear(self.input_dim, 2 * (n_d + n_a),
                                                       bias=False))
            else:
                shared_feat_transform.append(nn.Linear(n_d + n_a, 2 * (n_d + n_a), bias=False))
        self.initial_splitter = FeatTransformer(self.input_dim, n_d + n_a,
                                                shared_feat_transform, n_independent,
                                                virtual_batch_size, momentum)
        self.feat_transformers = nn.ModuleList()
        self.att_transformers = nn.ModuleList()
        for step in range(n_steps):
            self.feat_transformers.append(FeatTransformer(
                self.input_dim, n_d + n_a, shared_feat_transform, n_independent,
                virtual_batch_size, momentum))
            self.att_transformers.append(AttentiveTransformer(
                n_a, self.input_dim, virtual_batch_size, momentum, mask_type))

    def forward(self, x, prior=None):
        x = self.initial_bn(x)
        bs = x.shape[0]
        if prior is None:
            prior = torch.ones((bs, self.input_dim)).to(x.device)
        M_loss = 0
        att = self.initial_splitter(x)[:, self.n_d:]
        steps_output = []
        for step in range(self.n_steps):
            M = self.att_transformers[step](prior, att)
            M_loss += torch.mean(torch.sum(torch.mul(M, torch.log(M + self.epsilon)), dim=1))
            prior = torch.mul(self.gamma - M, prior)
            masked_x = torch.mul(M, x)
            out = self.feat_transformers[step](masked_x)
            d = nn.ReLU()(out[:, : self.n_d])
            steps_output.append(d)
            att = out[:, self.n_d:]
        M_loss /= self.n_steps
        return steps_output, M_loss

    def forward_masks(self, x):
        x = self.initial_bn(x)
        bs = x.shape[0]
        prior = torch.ones((bs, self.input_dim)).to(x.device)
        M_explain = torch.zeros(x.shape).to(x.device)
        att = self.initial_splitter(x)[:, self.n_d:]
        masks = {}
        for step in range(self.n_steps):
            M = self.att_transformers[step](prior, att)
            masks[step] = M
            prior = torch.mul(self.gamma - M, prior)
            masked_x = torch.mul(M, x)
            out = self.feat_transformers[step](masked_x)
            d = nn.ReLU()(out[:, : self.n_d])
            step_importance = torch.sum(d, dim=1)
            M_explain += torch.mul(M, step_importance.unsqueeze(dim=1))
            att = out[:, self.n_d:]
        return M_explain, masks


class TabNet(nn.Module):
    def __init__(self, input_dim, output_dim, **kwargs):
        super().__init__()
        self.encoder = TabNetEncoder(input_dim, output_dim, **kwargs)
        self.final_mapping = nn.Linear(self.encoder.n_d, output_dim, bias=False)
        initialize_non_glu(self.final_mapping, self.encoder.n_d, output_dim)

    def forward(self, x):
        steps_output, M_loss = self.encoder(x)
        res = torch.sum(torch.stack(steps_output, dim=0), dim=0)
        return self.final_mapping(res), M_loss


z = torch.tensor([[1.0, 0.5, -0.2, 2.0], [0.1, 0.1, 0.1, 0.1]])
print("sparsemax", sparsemax(z, -1).tolist())
print("entmax15 ", [[round(v, 6) for v in r] for r in entmax15(z, -1).tolist()])
zd = torch.randn(3, 5, dtype=torch.double, requires_grad=True)
print("gradcheck sparsemax", torch.autograd.gradcheck(lambda t: sparsemax(t, -1), (zd,)),
      "entmax15", torch.autograd.gradcheck(lambda t: entmax15(t, 1), (zd,)))

# tabular data: the label depends on features 0 and 3 only
n, d = 96, 6
X = torch.randn(n, d).double()  # double: sparsemax's support flips on float32 rounding
y = ((X[:, 0] > 0) ^ (X[:, 3] > 0.5)).long()
log_dir = "runs/tabnet"
shutil.rmtree("runs", ignore_errors=True)
writer = SummaryWriter(log_dir=log_dir)
for mask_type in ("sparsemax", "entmax"):
    torch.manual_seed(1)
    model = TabNet(d, 2, n_d=4, n_a=4, n_steps=2, virtual_batch_size=32,
                   mask_type=mask_type).double()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.9)
    for epoch in range(10):
        model.train()
        perm = torch.randperm(n)
        for i in range(0, n, 32):
            idx = perm[i:i + 32]
            logits, M_loss = model(X[idx])
            loss = F.cross_entropy(logits, y[idx]) - 1e-3 * M_loss
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        scheduler.step()
        writer.add_scalar(f"{mask_type}/loss", loss.item(), epoch)
        writer.add_scalar(f"{mask_type}/lr", scheduler.get_last_lr()[0], epoch)
    model.eval()
    with torch.no_grad():
        logits, _ = model(X)
        acc = (logits.argmax(1) == y).float().mean().item()
        M_explain, masks = model.encoder.forward_masks(X)
    importance = M_explain.sum(0)
    importance = importance / importance.sum()
    writer.add_histogram(f"{mask_type}/importance", importance, 0)
    sparsity = (masks[0] == 0).float().mean().item()
    print(f"{mask_type}: loss {loss.item():.6f} acc {acc:.4f} mask zeros {sparsity:.4f}")
    print("  importances", [f"{v:.5f}" for v in importance.tolist()])
writer.add_text("note", "tabnet run", 0)
writer.flush()
writer.close()

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa

files = glob.glob(os.path.join(log_dir, "events.out.tfevents.*"))
print("event files", len(files))
acc = EventAccumulator(log_dir)
acc.Reload()
tags = acc.Tags()
print("scalars", sorted(tags["scalars"]), "histograms", sorted(tags["histograms"]))
events = acc.Scalars("sparsemax/loss")
print("logged steps", [e.step for e in events], "last", f"{events[-1].value:.6f}")
print("lr values", [round(e.value, 6) for e in acc.Scalars("entmax/lr")][:6])
shutil.rmtree("runs")
