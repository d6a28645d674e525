"""Time-series forecasting with an LSTM and a sliding-window Dataset, as blog posts and
Kaggle notebooks write it (DataLoader workers, ReduceLROnPlateau, early stopping)."""
import argparse
import copy
import math

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, Subset, get_worker_info


class SlidingWindow(Dataset):
    def __init__(self, series, window, horizon=1):
        self.series = torch.as_tensor(series, dtype=torch.float32)
        self.window = window
        self.horizon = horizon

    def __len__(self):
        return len(self.series) - self.window - self.horizon + 1

    def __getitem__(self, i):
        x = self.series[i:i + self.window].unsqueeze(-1)
        y = self.series[i + self.window:i + self.window + self.horizon]
        info = get_worker_info()
        wid = -1 if info is None else info.id
        return x, y, wid


class LSTMForecaster(nn.Module):
    def __init__(self, hidden=16, layers=1, horizon=1):
        super().__init__()
        self.lstm = nn.LSTM(input_size=1, hidden_size=hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, horizon)

    def forward(self, x):
        out, (h_n, c_n) = self.lstm(x)
        return self.head(out[:, -1, :])


def seed_worker(worker_id):
    worker_seed = torch.initial_seed() % 2 ** 32
    np.random.seed(worker_seed)


def evaluate(model, loader, loss_fn):
    model.eval()
    total, n = 0.0, 0
    with torch.no_grad():
        for x, y, _ in loader:
            total += loss_fn(model(x), y).item() * len(x)
            n += len(x)
    return total / n


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--n', type=int, default=240)
    p.add_argument('--window', type=int, default=12)
    p.add_argument('--epochs', type=int, default=6)
    p.add_argument('--workers', type=int, default=2)
    args = p.parse_args()

    torch.manual_seed(0)
    t = np.arange(args.n, dtype=np.float64)
    series = np.sin(2 * math.pi * t / 24) + 0.1 * np.cos(2 * math.pi * t / 7)
    mean, std = series[:int(0.8 * args.n)].mean(), series[:int(0.8 * args.n)].std()
    series = (series - mean) / std

    ds = SlidingWindow(series, args.window)
    split = int(0.8 * len(ds))
    train_ds, val_ds = Subset(ds, range(split)), Subset(ds, range(split, len(ds)))
    x0, y0, w0 = ds[0]
    print('dataset', len(ds), tuple(x0.shape), tuple(y0.shape), x0.dtype, w0)

    g = torch.Generator()
    g.manual_seed(0)
    train_loader = DataLoader(train_ds, batch_size=32, shuffle=True, num_workers=args.workers,
                              worker_init_fn=seed_worker, generator=g,
                              persistent_workers=args.workers > 0)
    val_loader = DataLoader(val_ds, batch_size=64, shuffle=False, num_workers=0)

    model = LSTMForecaster()
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode='min', factor=0.5,
                                                           patience=1)
    best, best_state, bad = float('inf'), None, 0
    first_val = evaluate(model, val_loader, loss_fn)
    workers_seen = set()
    for epoch in range(args.epochs):
        model.train()
        for x, y, wid in train_loader:
            workers_seen.update(wid.tolist())
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            nn.utils.clip_grad_value_(model.parameters(), 1.0)
            optimizer.step()
        val = evaluate(model, val_loader, loss_fn)
        scheduler.step(val)
        if val < best:
            best, best_state, bad = val, copy.deepcopy(model.state_dict()), 0
        else:
            bad += 1
            if bad >= 3:
                break
    print('workers used:', sorted(workers_seen))
    print('validation improved:', best < first_val, 'lr list:',
          type(scheduler.get_last_lr()).__name__)
    model.load_state_dict(best_state)
    model.eval()
    window = torch.tensor(series[-args.window:], dtype=torch.float32).view(1, -1, 1)
    preds = []
    with torch.no_grad():
        for _ in range(5):
            nxt = model(window)
            preds.append(nxt.item())
            window = torch.cat([window[:, 1:, :], nxt.view(1, 1, 1)], dim=1)
    print('forecast', len(preds), all(math.isfinite(v) for v in preds), window.shape)
    print(model)
    print({k: list(v.shape) for k, v in model.state_dict().items()})


if __name__ == '__main__':
    main()
