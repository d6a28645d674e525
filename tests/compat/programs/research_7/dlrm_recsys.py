"""Recommendation models the way facebookresearch/dlrm and NCF/BPR repositories write them:
DLRM's bottom MLP, sparse features through ``nn.EmbeddingBag(mode="sum", sparse=True)`` with
offsets (and ``per_sample_weights``), the dot interaction via ``torch.bmm`` and a strictly
lower-triangular index, the top MLP with a sigmoid, ``BCELoss`` and plain SGD over sparse
gradients; then matrix factorisation with BPR loss on sampled negatives, neural
collaborative filtering (GMF + MLP), and HR@K / NDCG@K from ``topk`` over a leave-one-out
test set."""
import argparse
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser(description="Train Deep Learning Recommendation Model (DLRM)")
parser.add_argument("--arch-sparse-feature-size", type=int, default=4)
parser.add_argument("--arch-embedding-size", type=str, default="10-7-12")
parser.add_argument("--arch-mlp-bot", type=str, default="5-8-4")
parser.add_argument("--arch-mlp-top", type=str, default="8-4-1")
parser.add_argument("--arch-interaction-op", type=str, default="dot")
parser.add_argument("--arch-interaction-itself", action="store_true", default=False)
parser.add_argument("--mini-batch-size", type=int, default=16)
parser.add_argument("--num-batches", type=int, default=8)
parser.add_argument("--learning-rate", type=float, default=0.1)
parser.add_argument("--numpy-rand-seed", type=int, default=123)
parser.add_argument("--print-freq", type=int, default=4)
args = parser.parse_args()

np.random.seed(args.numpy_rand_seed)
torch.manual_seed(args.numpy_rand_seed)
torch.set_printoptions(precision=6)


class DLRM_Net(nn.Module):
    def create_mlp(self, ln, sigmoid_layer):
        layers = nn.ModuleList()
        for i in range(0, ln.size - 1):
            n, m = ln[i], ln[i + 1]
            LL = nn.Linear(int(n), int(m), bias=True)
            mean = 0.0
            std_dev = np.sqrt(2 / (m + n))
            W = np.random.normal(mean, std_dev, size=(m, n)).astype(np.float32)
            std_dev = np.sqrt(1 / m)
            bt = np.random.normal(mean, std_dev, size=m).astype(np.float32)
            LL.weight.data = torch.tensor(W, requires_grad=True)
            LL.bias.data = torch.tensor(bt, requires_grad=True)
            layers.append(LL)
            layers.append(nn.Sigmoid() if i == sigmoid_layer else nn.ReLU())
        return torch.nn.Sequential(*layers)

    def create_emb(self, m, ln):
        emb_l = nn.ModuleList()
        for i in range(0, ln.size):
            n = ln[i]
            EE = nn.EmbeddingBag(n, m, mode="sum", sparse=True)
            W = np.random.uniform(low=-np.sqrt(1 / n), high=np.sqrt(1 / n),
                                  size=(n, m)).astype(np.float32)
            EE.weight.data = torch.tensor(W, requires_grad=True)
            emb_l.append(EE)
        return emb_l

    def __init__(self, m_spa, ln_emb, ln_bot, ln_top, arch_interaction_op,
                 arch_interaction_itself=False, sigmoid_bot=-1, sigmoid_top=-1):
        super().__init__()
        self.arch_interaction_op = arch_interaction_op
        self.arch_interaction_itself = arch_interaction_itself
        self.emb_l = self.create_emb(m_spa, ln_emb)
        self.bot_l = self.create_mlp(ln_bot, sigmoid_bot)
        self.top_l = self.create_mlp(ln_top, sigmoid_top)
        self.loss_fn = torch.nn.BCELoss(reduction="mean")

    def apply_emb(self, lS_o, lS_i, emb_l, per_sample_weights=None):
        ly = []
        for k, sparse_index_group_batch in enumerate(lS_i):
            sparse_offset_group_batch = lS_o[k]
            psw = None if per_sample_weights is None else per_sample_weights[k]
            V = emb_l[k](sparse_index_group_batch, sparse_offset_group_batch,
                         per_sample_weights=psw)
            ly.append(V)
        return ly

    def interact_features(self, x, ly):
        if self.arch_interaction_op == "dot":
            (batch_size, d) = x.shape
            T = torch.cat([x] + ly, dim=1).view((batch_size, -1, d))
            Z = torch.bmm(T, torch.transpose(T, 1, 2))
            _, ni, nj = Z.shape
            offset = 1 if self.arch_interaction_itself else 0
            li = torch.tensor([i for i in range(ni) for j in range(i + offset)])
            lj = torch.tensor([j for i in range(nj) for j in range(i + offset)])
            Zflat = Z[:, li, lj]
            R = torch.cat([x] + [Zflat], dim=1)
        elif self.arch_interaction_op == "cat":
            R = torch.cat([x] + ly, dim=1)
        else:
            sys.exit("ERROR: --arch-interaction-op=" + self.arch_interaction_op
                     + " is not supported")
        return R

    def forward(self, dense_x, lS_o, lS_i, per_sample_weights=None):
        x = self.bot_l(dense_x)
        ly = self.apply_emb(lS_o, lS_i, self.emb_l, per_sample_weights)
        z = self.interact_features(x, ly)
        return self.top_l(z)


def generate_random_input_batch(n, ln_emb, m_den, num_indices_per_lookup=3):
    Xt = torch.tensor(np.random.rand(n, m_den).astype(np.float32))
    lS_emb_offsets, lS_emb_indices = [], []
    for size in ln_emb:
        lS_batch_offsets, lS_batch_indices, offset = [], [], 0
        for _ in range(n):
            sparse_group_size = np.int64(max(1, np.round(np.random.random()
                                                         * min(size, num_indices_per_lookup))))
            r = np.random.random(sparse_group_size)
            sparse_group = np.unique(np.round(r * (size - 1)).astype(np.int64))
            lS_batch_offsets += [offset]
            lS_batch_indices += sparse_group.tolist()
            offset += sparse_group.size
        lS_emb_offsets.append(torch.tensor(lS_batch_offsets))
        lS_emb_indices.append(torch.tensor(lS_batch_indices))
    T = torch.tensor(np.round(np.random.rand(n, 1).astype(np.float32)))
    return Xt, lS_emb_offsets, lS_emb_indices, T


ln_emb = np.fromstring(args.arch_embedding_size, dtype=int, sep="-")
ln_bot = np.fromstring(args.arch_mlp_bot, dtype=int, sep="-")
m_spa = args.arch_sparse_feature_size
num_fea = ln_emb.size + 1
num_int = (num_fea * (num_fea - 1)) // 2 + ln_bot[-1]
arch_mlp_top_adjusted = str(num_int) + "-" + args.arch_mlp_top.split("-", 1)[1]
ln_top = np.fromstring(arch_mlp_top_adjusted, dtype=int, sep="-")
print("mlp top arch " + str(ln_top.size - 1) + " layers, with input to output dimensions:")
print(ln_top)
dlrm = DLRM_Net(m_spa, ln_emb, ln_bot, ln_top, arch_interaction_op=args.arch_interaction_op,
                arch_interaction_itself=args.arch_interaction_itself,
                sigmoid_bot=-1, sigmoid_top=ln_top.size - 2)
optimizer = torch.optim.SGD(dlrm.parameters(), lr=args.learning_rate)
batches = [generate_random_input_batch(args.mini_batch_size, ln_emb, ln_bot[0])
           for _ in range(args.num_batches)]
total_loss, total_accu, total_samp = 0.0, 0, 0
for j, (X, lS_o, lS_i, T) in enumerate(batches):
    Z = dlrm(X, lS_o, lS_i)
    E = dlrm.loss_fn(Z, T)
    optimizer.zero_grad()
    E.backward()
    optimizer.step()
    S, Tn = Z.detach().cpu().numpy(), T.detach().cpu().numpy()
    total_accu += np.sum((np.round(S, 0) == Tn).astype(np.uint8))
    total_loss += E.detach().cpu().numpy() * args.mini_batch_size
    total_samp += args.mini_batch_size
    if (j + 1) % args.print_freq == 0:
        print("Finished training it {}/{}, loss {:.6f}, accuracy {:3.3f} %".format(
            j + 1, args.num_batches, total_loss / total_samp, total_accu / total_samp * 100))
        total_loss, total_accu, total_samp = 0.0, 0, 0
grad = dlrm.emb_l[0].weight.grad
print("embedding grad layout", grad.layout, "nnz rows", grad.coalesce().indices().shape[1])
X, lS_o, lS_i, T = batches[0]
with torch.no_grad():
    print("scores", dlrm(X[:4], [o[:4] for o in lS_o], lS_i).squeeze(1))
    w = [torch.rand(len(i)) for i in lS_i]
    weighted = dlrm(X, lS_o, lS_i, per_sample_weights=w)
print(f"weighted mean score {weighted.mean().item():.6f}")
bag = F.embedding_bag(torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.arange(20.0).view(10, 2),
                      torch.tensor([0, 4]), mode="max")
print("F.embedding_bag max", bag.tolist(),
      "mean", F.embedding_bag(torch.tensor([[1, 2], [3, 4]]), torch.arange(20.0).view(10, 2),
                              mode="mean").tolist())

# BPR matrix factorisation and NCF on implicit feedback
n_users, n_items = 30, 40
user_pref = torch.randn(n_users, 3)
item_feat = torch.randn(n_items, 3)
affinity = user_pref @ item_feat.T
interactions = (affinity > 1.0)
test_items = torch.tensor([int(torch.nonzero(row)[0]) if row.any() else 0
                           for row in interactions])
train_mask = interactions.clone()
train_mask[torch.arange(n_users), test_items] = False
pos_u, pos_i = torch.nonzero(train_mask, as_tuple=True)
print("interactions", int(interactions.sum()), "train", len(pos_u))


class BPRMF(nn.Module):
    def __init__(self, n_users, n_items, dim):
        super().__init__()
        self.user = nn.Embedding(n_users, dim)
        self.item = nn.Embedding(n_items, dim)
        nn.init.normal_(self.user.weight, std=0.1)
        nn.init.normal_(self.item.weight, std=0.1)

    def forward(self, u, i, j):
        pu = self.user(u)
        x_ui = (pu * self.item(i)).sum(dim=1)
        x_uj = (pu * self.item(j)).sum(dim=1)
        loss = -F.logsigmoid(x_ui - x_uj).mean()
        reg = pu.norm(dim=1).pow(2).mean() + self.item(i).norm(dim=1).pow(2).mean()
        return loss, reg

    def scores(self):
        return self.user.weight @ self.item.weight.T


class NCF(nn.Module):
    def __init__(self, n_users, n_items, factor_num=4, num_layers=2):
        super().__init__()
        self.embed_user_GMF = nn.Embedding(n_users, factor_num)
        self.embed_item_GMF = nn.Embedding(n_items, factor_num)
        mlp_dim = factor_num * (2 ** (num_layers - 1))
        self.embed_user_MLP = nn.Embedding(n_users, mlp_dim)
        self.embed_item_MLP = nn.Embedding(n_items, mlp_dim)
        MLP_modules = []
        for i in range(num_layers):
            input_size = factor_num * (2 ** (num_layers - i))
            MLP_modules.append(nn.Dropout(p=0.0))
            MLP_modules.append(nn.Linear(input_size, input_size // 2))
            MLP_modules.append(nn.ReLU())
        self.MLP_layers = nn.Sequential(*MLP_modules)
        self.predict_layer = nn.Linear(factor_num * 2, 1)
        nn.init.normal_(self.embed_user_GMF.weight, std=0.01)
        nn.init.normal_(self.embed_user_MLP.weight, std=0.01)
        nn.init.normal_(self.embed_item_GMF.weight, std=0.01)
        nn.init.normal_(self.embed_item_MLP.weight, std=0.01)
        for m in self.MLP_layers:
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
        nn.init.kaiming_uniform_(self.predict_layer.weight, a=1, nonlinearity="sigmoid")
        for m in self.modules():
            if isinstance(m, nn.Linear) and m.bias is not None:
                m.bias.data.zero_()

    def forward(self, user, item):
        output_GMF = self.embed_user_GMF(user) * self.embed_item_GMF(item)
        interaction = torch.cat((self.embed_user_MLP(user), self.embed_item_MLP(item)), -1)
        output_MLP = self.MLP_layers(interaction)
        return self.predict_layer(torch.cat((output_GMF, output_MLP), -1)).view(-1)


def hit_ndcg(scores, k=5):
    scores = scores.masked_fill(train_mask, -float("inf"))
    _, topk = torch.topk(scores, k, dim=1)
    hits = (topk == test_items.unsqueeze(1))
    hr = hits.any(1).float().mean().item()
    ranks = hits.float().argmax(1)
    ndcg = torch.where(hits.any(1), 1.0 / torch.log2(ranks.float() + 2), torch.zeros(n_users))
    return hr, ndcg.mean().item()


mf = BPRMF(n_users, n_items, 6)
opt = torch.optim.Adam(mf.parameters(), lr=0.05)
for epoch in range(8):
    neg = torch.randint(0, n_items, (len(pos_u),))
    loss, reg = mf(pos_u, pos_i, neg)
    opt.zero_grad()
    (loss + 1e-3 * reg).backward()
    opt.step()
hr, ndcg = hit_ndcg(mf.scores().detach())
print(f"BPR loss {loss.item():.6f} HR@5 {hr:.4f} NDCG@5 {ndcg:.6f}")

ncf = NCF(n_users, n_items)
opt = torch.optim.Adam(ncf.parameters(), lr=0.01)
loss_function = nn.BCEWithLogitsLoss()
for epoch in range(8):
    neg_i = torch.randint(0, n_items, (len(pos_u) * 2,))
    users = torch.cat([pos_u, pos_u.repeat(2)])
    items = torch.cat([pos_i, neg_i])
    labels = torch.cat([torch.ones(len(pos_u)), torch.zeros(len(neg_i))])
    ncf.zero_grad()
    loss = loss_function(ncf(users, items), labels)
    loss.backward()
    opt.step()
with torch.no_grad():
    all_scores = ncf(torch.arange(n_users).repeat_interleave(n_items),
                     torch.arange(n_items).repeat(n_users)).view(n_users, n_items)
hr, ndcg = hit_ndcg(all_scores)
print(f"NCF loss {loss.item():.6f} HR@5 {hr:.4f} NDCG@5 {ndcg:.6f}")
