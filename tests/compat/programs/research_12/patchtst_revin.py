"""Long-horizon forecasting as yuqinie98/PatchTST and the Time-Series-Library write it: an
``argparse`` config turned into a ``SimpleNamespace``, a sliding-window ``Dataset`` over
a ``StandardScaler``-normalised multivariate series split by borders into train/val/test,
``RevIN`` (instance normalisation with affine parameters and ``denorm``), patching by
``ReplicationPad1d`` and ``Tensor.unfold``, channel independence by folding variables into
the batch, a Transformer encoder with a learned positional table and ```LayerNorm`` (or ``BatchNorm1d`` in a
``Transpose`` wrapper), a flatten head, ``EarlyStopping`` on validation loss with a saved
checkpoint, the ``adjust_learning_rate`` type3 schedule, and MSE/MAE test metrics."""
import argparse
import os
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

fix_seed = 2021
np.random.seed(fix_seed)
torch.manual_seed(fix_seed)

parser = argparse.ArgumentParser(description="PatchTST")
parser.add_argument("--seq_len", type=int, default=32)
parser.add_argument("--pred_len", type=int, default=8)
parser.add_argument("--patch_len", type=int, default=8)
parser.add_argument("--stride", type=int, default=4)
parser.add_argument("--d_model", type=int, default=16)
parser.add_argument("--n_heads", type=int, default=2)
parser.add_argument("--e_layers", type=int, default=2)
parser.add_argument("--d_ff", type=int, default=32)
parser.add_argument("--batch_size", type=int, default=16)
parser.add_argument("--learning_rate", type=float, default=3e-3)
parser.add_argument("--train_epochs", type=int, default=4)
parser.add_argument("--patience", type=int, default=2)
parser.add_argument("--lradj", type=str, default="type3")
# (PatchTST's default is BatchNorm; under it the biases just before each norm get gradients
# that are rounding noise, which Adam scales to full steps: LayerNorm keeps this comparable)
parser.add_argument("--norm", type=str, default="LayerNorm")
args = SimpleNamespace(**vars(parser.parse_args()))
print("Args in experiment:", args)


class StandardScaler:
    def fit(self, data):
        self.mean, self.std = data.mean(0), data.std(0)

    def transform(self, data):
        return (data - self.mean) / self.std

    def inverse_transform(self, data):
        return data * self.std + self.mean


t = np.arange(400)
raw = np.stack([np.sin(2 * np.pi * t / 24) + 0.01 * t, np.cos(2 * np.pi * t / 12) * 2 + 5,
                np.sin(2 * np.pi * t / 48) * np.cos(2 * np.pi * t / 8)], 1) + 0.1 * np.random.randn(400, 3)


class Dataset_Custom(Dataset):
    def __init__(self, flag, size):
        self.seq_len, self.pred_len = size
        type_map = {"train": 0, "val": 1, "test": 2}
        border1s = [0, 280 - self.seq_len, 340 - self.seq_len]
        border2s = [280, 340, 400]
        self.scaler = StandardScaler()
        self.scaler.fit(raw[:border2s[0]])
        data = self.scaler.transform(raw)
        b1, b2 = border1s[type_map[flag]], border2s[type_map[flag]]
        self.data_x = self.data_y = data[b1:b2].astype(np.float32)

    def __getitem__(self, index):
        s_end = index + self.seq_len
        return self.data_x[index:s_end], self.data_y[s_end:s_end + self.pred_len]

    def __len__(self):
        return len(self.data_x) - self.seq_len - self.pred_len + 1


def data_provider(args, flag):
    shuffle_flag, drop_last = (False, False) if flag == "test" else (True, True)
    data_set = Dataset_Custom(flag, [args.seq_len, args.pred_len])
    print(flag, len(data_set))
    return data_set, DataLoader(data_set, batch_size=args.batch_size, shuffle=shuffle_flag,
                                num_workers=0, drop_last=drop_last)


class RevIN(nn.Module):
    def __init__(self, num_features, eps=1e-5, affine=True, subtract_last=False):
        super().__init__()
        self.num_features, self.eps, self.affine, self.subtract_last = num_features, eps, affine, subtract_last
        if self.affine:
            self.affine_weight = nn.Parameter(torch.ones(self.num_features))
            self.affine_bias = nn.Parameter(torch.zeros(self.num_features))

    def forward(self, x, mode):
        if mode == "norm":
            dim2reduce = tuple(range(1, x.ndim - 1))
            self.mean = torch.mean(x, dim=dim2reduce, keepdim=True).detach()
            self.stdev = torch.sqrt(torch.var(x, dim=dim2reduce, keepdim=True, unbiased=False) + self.eps).detach()
            x = (x - self.mean) / self.stdev
            if self.affine:
                x = x * self.affine_weight + self.affine_bias
            return x
        if mode == "denorm":
            if self.affine:
                x = (x - self.affine_bias) / (self.affine_weight + self.eps * self.eps)
            return x * self.stdev + self.mean
        raise NotImplementedError


class Transpose(nn.Module):
    def __init__(self, *dims, contiguous=False):
        super().__init__()
        self.dims, self.contiguous = dims, contiguous

    def forward(self, x):
        return x.transpose(*self.dims).contiguous() if self.contiguous else x.transpose(*self.dims)


class TSTEncoderLayer(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, norm="BatchNorm"):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        if "batch" in norm.lower():
            self.norm_attn = nn.Sequential(Transpose(1, 2), nn.BatchNorm1d(d_model), Transpose(1, 2))
            self.norm_ffn = nn.Sequential(Transpose(1, 2), nn.BatchNorm1d(d_model), Transpose(1, 2))
        else:
            self.norm_attn, self.norm_ffn = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, src):
        src = self.norm_attn(src + self.self_attn(src, src, src)[0])
        return self.norm_ffn(src + self.ff(src))


class PatchTST(nn.Module):
    def __init__(self, c_in, cfg):
        super().__init__()
        self.revin_layer = RevIN(c_in)
        self.patch_len, self.stride = cfg.patch_len, cfg.stride
        patch_num = int((cfg.seq_len - cfg.patch_len) / cfg.stride + 1) + 1
        self.padding_patch_layer = nn.ReplicationPad1d((0, cfg.stride))
        self.W_P = nn.Linear(cfg.patch_len, cfg.d_model)
        self.W_pos = nn.Parameter(torch.empty(patch_num, cfg.d_model).uniform_(-0.02, 0.02))
        self.layers = nn.ModuleList([TSTEncoderLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.norm) for _ in range(cfg.e_layers)])
        self.head = nn.Sequential(nn.Flatten(start_dim=-2), nn.Linear(cfg.d_model * patch_num, cfg.pred_len))

    def forward(self, x):                                   # x: [bs, seq_len, nvars]
        x = self.revin_layer(x, "norm").permute(0, 2, 1)    # [bs, nvars, seq_len]
        x = self.padding_patch_layer(x)
        x = x.unfold(dimension=-1, size=self.patch_len, step=self.stride)   # [bs, nvars, patch_num, patch_len]
        bs, n_vars = x.shape[:2]
        u = self.W_P(x)
        u = torch.reshape(u, (u.shape[0] * u.shape[1], u.shape[2], u.shape[3])) + self.W_pos
        for layer in self.layers:
            u = layer(u)
        z = torch.reshape(u, (-1, n_vars, u.shape[-2], u.shape[-1])).permute(0, 1, 3, 2)
        z = self.head(z.transpose(-1, -2))                  # [bs, nvars, pred_len]
        return self.revin_layer(z.permute(0, 2, 1), "denorm")


class EarlyStopping:
    def __init__(self, patience=7, delta=0):
        self.patience, self.counter, self.best_score, self.early_stop = patience, 0, None, False
        self.val_loss_min, self.delta = np.inf, delta

    def __call__(self, val_loss, model, path):
        score = -val_loss
        if self.best_score is None or score >= self.best_score + self.delta:
            print(f"Validation loss decreased ({self.val_loss_min:.6f} --> {val_loss:.6f}).  Saving model ...")
            self.best_score, self.val_loss_min, self.counter = score, val_loss, 0
            torch.save(model.state_dict(), path + "/" + "checkpoint.pth")
        else:
            self.counter += 1
            print(f"EarlyStopping counter: {self.counter} out of {self.patience}")
            if self.counter >= self.patience:
                self.early_stop = True


def adjust_learning_rate(optimizer, epoch, args):
    if args.lradj == "type3":
        lr = args.learning_rate if epoch < 3 else args.learning_rate * (0.9 ** ((epoch - 3) // 1))
    else:
        lr = args.learning_rate * (0.5 ** ((epoch - 1) // 1))
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    print(f"Updating learning rate to {lr:.6f}")


def vali(model, loader, criterion):
    total = []
    model.eval()
    with torch.no_grad():
        for batch_x, batch_y in loader:
            total.append(criterion(model(batch_x), batch_y).item())
    model.train()
    return np.average(total)


train_data, train_loader = data_provider(args, "train")
vali_data, vali_loader = data_provider(args, "val")
test_data, test_loader = data_provider(args, "test")
x0, y0 = train_data[0]
print("window", x0.shape, y0.shape, "unfold", tuple(torch.arange(10.).unfold(0, 4, 3).shape))
model = PatchTST(3, args)
optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate)
criterion = nn.MSELoss()
path = os.path.join("./checkpoints", "patchtst_custom")
os.makedirs(path, exist_ok=True)
early_stopping = EarlyStopping(patience=args.patience)
for epoch in range(args.train_epochs):
    train_loss = []
    for batch_x, batch_y in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(batch_x), batch_y)
        train_loss.append(loss.item())
        loss.backward()
        optimizer.step()
    vali_loss, test_loss = vali(model, vali_loader, criterion), vali(model, test_loader, criterion)
    print(f"Epoch: {epoch + 1} | Train Loss: {np.average(train_loss):.7f} Vali Loss: {vali_loss:.7f} "
          f"Test Loss: {test_loss:.7f}")
    early_stopping(vali_loss, model, path)
    if early_stopping.early_stop:
        print("Early stopping")
        break
    adjust_learning_rate(optimizer, epoch + 1, args)

model.load_state_dict(torch.load(path + "/checkpoint.pth"))
preds, trues = [], []
model.eval()
with torch.no_grad():
    for batch_x, batch_y in test_loader:
        preds.append(model(batch_x).numpy())
        trues.append(batch_y.numpy())
preds, trues = np.concatenate(preds), np.concatenate(trues)
mse, mae = np.mean((preds - trues) ** 2), np.mean(np.abs(preds - trues))
print(f"mse:{mse:.6f}, mae:{mae:.6f}, shape {preds.shape}")
print("revin affine", model.revin_layer.affine_weight.data.tolist())
bn_layer = TSTEncoderLayer(args.d_model, args.n_heads, args.d_ff, "BatchNorm")
print(bn_layer.norm_attn)
bn_layer(torch.randn(6, 5, args.d_model))
bn_layer.eval()
print("batch-norm layer in eval", bn_layer(torch.randn(2, 5, args.d_model)).std().item())
print("first forecast (original scale)", test_data.scaler.inverse_transform(preds[0])[:2].round(4).tolist())
