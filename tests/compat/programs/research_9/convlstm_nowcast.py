"""Precipitation-nowcasting style video prediction the way ndrplz/ConvLSTM_pytorch and the
moving-MNIST repositories write it: a ``ConvLSTMCell`` whose four gates come from one conv
over ``torch.cat([input, h_cur], dim=1)`` split by ``torch.split``, a multi-layer
``ConvLSTM`` with ``batch_first`` and per-layer kernel sizes checked by
``_check_kernel_size_consistency``/``_extend_for_multilayer``, ``init_hidden`` from the
weight's device, ``return_all_layers``, an encoder-forecaster with teacher forcing off,
synthetic moving squares made by ``torch.roll``, SSIM-free metrics (MSE, MAE, CSI at a
threshold), ``ReduceLROnPlateau`` and ``nn.utils.clip_grad_norm_``."""
import torch
import torch.nn as nn

torch.manual_seed(0)


class ConvLSTMCell(nn.Module):
    def __init__(self, input_dim, hidden_dim, kernel_size, bias):
        super(ConvLSTMCell, self).__init__()
        self.input_dim, self.hidden_dim = input_dim, hidden_dim
        self.kernel_size = kernel_size
        self.padding = kernel_size[0] // 2, kernel_size[1] // 2
        self.bias = bias
        self.conv = nn.Conv2d(in_channels=self.input_dim + self.hidden_dim,
                              out_channels=4 * self.hidden_dim, kernel_size=self.kernel_size,
                              padding=self.padding, bias=self.bias)

    def forward(self, input_tensor, cur_state):
        h_cur, c_cur = cur_state
        combined = torch.cat([input_tensor, h_cur], dim=1)
        combined_conv = self.conv(combined)
        cc_i, cc_f, cc_o, cc_g = torch.split(combined_conv, self.hidden_dim, dim=1)
        i = torch.sigmoid(cc_i)
        f = torch.sigmoid(cc_f)
        o = torch.sigmoid(cc_o)
        g = torch.tanh(cc_g)
        c_next = f * c_cur + i * g
        h_next = o * torch.tanh(c_next)
        return h_next, c_next

    def init_hidden(self, batch_size, image_size):
        height, width = image_size
        return (torch.zeros(batch_size, self.hidden_dim, height, width, device=self.conv.weight.device),
                torch.zeros(batch_size, self.hidden_dim, height, width, device=self.conv.weight.device))


class ConvLSTM(nn.Module):
    def __init__(self, input_dim, hidden_dim, kernel_size, num_layers, batch_first=False, bias=True,
                 return_all_layers=False):
        super(ConvLSTM, self).__init__()
        self._check_kernel_size_consistency(kernel_size)
        kernel_size = self._extend_for_multilayer(kernel_size, num_layers)
        hidden_dim = self._extend_for_multilayer(hidden_dim, num_layers)
        if not len(kernel_size) == len(hidden_dim) == num_layers:
            raise ValueError("Inconsistent list length.")
        self.input_dim, self.hidden_dim, self.kernel_size = input_dim, hidden_dim, kernel_size
        self.num_layers, self.batch_first, self.bias = num_layers, batch_first, bias
        self.return_all_layers = return_all_layers
        cell_list = []
        for i in range(0, self.num_layers):
            cur_input_dim = self.input_dim if i == 0 else self.hidden_dim[i - 1]
            cell_list.append(ConvLSTMCell(input_dim=cur_input_dim, hidden_dim=self.hidden_dim[i],
                                          kernel_size=self.kernel_size[i], bias=self.bias))
        self.cell_list = nn.ModuleList(cell_list)

    def forward(self, input_tensor, hidden_state=None):
        if not self.batch_first:
            input_tensor = input_tensor.permute(1, 0, 2, 3, 4)
        b, _, _, h, w = input_tensor.size()
        if hidden_state is not None:
            raise NotImplementedError()
        hidden_state = self._init_hidden(batch_size=b, image_size=(h, w))
        layer_output_list, last_state_list = [], []
        seq_len = input_tensor.size(1)
        cur_layer_input = input_tensor
        for layer_idx in range(self.num_layers):
            h, c = hidden_state[layer_idx]
            output_inner = []
            for t in range(seq_len):
                h, c = self.cell_list[layer_idx](input_tensor=cur_layer_input[:, t, :, :, :], cur_state=[h, c])
                output_inner.append(h)
            layer_output = torch.stack(output_inner, dim=1)
            cur_layer_input = layer_output
            layer_output_list.append(layer_output)
            last_state_list.append([h, c])
        if not self.return_all_layers:
            layer_output_list = layer_output_list[-1:]
            last_state_list = last_state_list[-1:]
        return layer_output_list, last_state_list

    def _init_hidden(self, batch_size, image_size):
        return [self.cell_list[i].init_hidden(batch_size, image_size) for i in range(self.num_layers)]

    @staticmethod
    def _check_kernel_size_consistency(kernel_size):
        if not (isinstance(kernel_size, tuple) or
                (isinstance(kernel_size, list) and all([isinstance(elem, tuple) for elem in kernel_size]))):
            raise ValueError("`kernel_size` must be tuple or list of tuples")

    @staticmethod
    def _extend_for_multilayer(param, num_layers):
        if not isinstance(param, list):
            param = [param] * num_layers
        return param


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = ConvLSTM(1, [8, 8], [(3, 3), (3, 3)], 2, batch_first=True, return_all_layers=True)
        self.decoder_cells = nn.ModuleList([ConvLSTMCell(1, 8, (3, 3), True), ConvLSTMCell(8, 8, (3, 3), True)])
        self.head = nn.Conv2d(8, 1, 1)

    def forward(self, x, future=3):
        _, states = self.encoder(x)
        frame, outputs = x[:, -1], []
        for _ in range(future):
            h0, c0 = self.decoder_cells[0](frame, states[0])
            h1, c1 = self.decoder_cells[1](h0, states[1])
            states = [[h0, c0], [h1, c1]]
            frame = torch.sigmoid(self.head(h1))
            outputs.append(frame)
        return torch.stack(outputs, 1)


def moving_squares(n, steps, g):
    frames = torch.zeros(n, steps, 1, 12, 12)
    for i in range(n):
        r, c = torch.randint(0, 8, (2,), generator=g).tolist()
        dr, dc = torch.randint(-1, 2, (2,), generator=g).tolist()
        img = torch.zeros(1, 12, 12)
        img[:, r:r + 3, c:c + 3] = 1.0
        for t in range(steps):
            frames[i, t] = torch.roll(img, shifts=(dr * t, dc * t), dims=(1, 2))
    return frames


try:
    ConvLSTM(1, 8, 3, 1)
except ValueError as e:
    print("ValueError:", e)
x = torch.rand(1, 2, 3, 6, 6)  # (t, b, c, h, w): batch_first=False
layer_outputs, last_states = ConvLSTM(3, [4, 5], (3, 3), 2, return_all_layers=True)(x)
print([tuple(o.shape) for o in layer_outputs], [tuple(s[1].shape) for s in last_states])
g = torch.Generator().manual_seed(1)
data = moving_squares(8, 7, g)
model = Forecaster()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
crit = nn.MSELoss()
for epoch in range(5):
    pred = model(data[:, :4])
    loss = crit(pred, data[:, 4:])
    opt.zero_grad()
    loss.backward()
    total_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    opt.step()
    sched.step(loss.item())
    print(f"epoch {epoch} mse {loss.item():.5f} grad-norm {total_norm.item():.5f} lr {opt.param_groups[0]['lr']:.5f}")
with torch.no_grad():
    pred = model(data[:, :4])
    target = data[:, 4:]
    hits = ((pred > 0.3) & (target > 0.5)).sum()
    misses = ((pred <= 0.3) & (target > 0.5)).sum()
    false_alarms = ((pred > 0.3) & (target <= 0.5)).sum()
    csi = hits.float() / (hits + misses + false_alarms).clamp(min=1).float()
print(f"mae {(pred - target).abs().mean().item():.5f} csi {csi.item():.5f}", tuple(pred.shape))
