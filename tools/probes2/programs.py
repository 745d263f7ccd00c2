"""Small whole programs as users write them."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from probe2 import scenario


@scenario
def accuracy_metrics(C, R):
    def metrics(logits, y, k=3):
        pred = logits.argmax(-1)
        acc = (pred == y).float().mean()
        topk = logits.topk(k, -1).indices
        topk_acc = (topk == y[:, None]).any(-1).float().mean()
        conf = torch.zeros(logits.shape[-1], logits.shape[-1], dtype=torch.long)
        conf.index_put_((y, pred), torch.ones_like(y), accumulate=True)
        prec = conf.diag() / conf.sum(0).clamp(min=1)
        return {"acc": acc.item(), "top": topk_acc, "conf": conf, "prec": prec}
    g = C(metrics)
    logits = torch.randn(20, 5)
    y = torch.randint(0, 5, (20,))
    R(g(logits, y))
    R(g(logits, y, k=1))


@scenario
def greedy_decode_loop(C, R):
    emb = nn.Embedding(11, 6)
    cell = nn.GRUCell(6, 6)
    out = nn.Linear(6, 11)

    @torch.no_grad()
    def decode(h, steps, eos=0):
        tok = torch.full((h.shape[0],), 1, dtype=torch.long)
        toks = []
        done = torch.zeros(h.shape[0], dtype=torch.bool)
        for _ in range(steps):
            h = cell(emb(tok), h)
            tok = out(h).argmax(-1)
            tok = tok.masked_fill(done, eos)
            done |= tok == eos
            toks.append(tok)
            if bool(done.all()):
                break
        return torch.stack(toks, 1)
    g = C(decode)
    R(g(torch.randn(3, 6), 6))


@scenario
def topk_top_p_sampling(C, R):
    def sample(logits, temperature=0.8, top_k=5, top_p=0.9):
        logits = logits / temperature
        v, _ = torch.topk(logits, top_k)
        logits = logits.masked_fill(logits < v[..., -1:], float("-inf"))
        probs = logits.softmax(-1)
        sp, si = probs.sort(-1, descending=True)
        cum = sp.cumsum(-1)
        remove = cum - sp > top_p
        sp = sp.masked_fill(remove, 0.0)
        sp = sp / sp.sum(-1, keepdim=True)
        torch.manual_seed(7)
        choice = torch.multinomial(sp, 1)
        return si.gather(-1, choice), sp
    g = C(sample)
    R(g(torch.randn(4, 12)))


@scenario
def image_augment(C, R):
    def aug(img, flip, crop):
        if flip:
            img = img.flip(-1)
        c = crop
        img = img[..., c:-c or None, c:-c or None]
        img = F.interpolate(img, size=(8, 8), mode="bilinear", align_corners=False)
        mean = torch.tensor([0.5, 0.4, 0.3]).view(1, 3, 1, 1)
        return ((img - mean) / 0.25).clamp(-3, 3)
    g = C(aug)
    x = torch.rand(2, 3, 12, 12)
    R(g(x, True, 2))
    R(g(x, False, 1))
    R(g(x, True, 0))


@scenario
def conv_net_train(C, R):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 6, 3, padding=1)
            self.bn = nn.BatchNorm2d(6)
            self.c2 = nn.Conv2d(6, 8, 3, stride=2)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.bn(self.c1(x))), 2)
            x = F.relu(self.c2(x))
            return self.fc(self.pool(x).flatten(1))
    net = Net()
    m = C(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    x = torch.randn(4, 3, 16, 16)
    y = torch.tensor([0, 1, 2, 3])
    for _ in range(2):
        loss = F.cross_entropy(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        R(loss)
    R(net)
    net.eval()
    R(m(x))


@scenario
def vae_reparam(C, R):
    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(6, 8)
            self.dec = nn.Linear(2, 6)

        def forward(self, x, eps):
            mu, logvar = self.enc(x).chunk(2, -1)[0][:, :2], self.enc(x)[:, 4:6]
            z = mu + eps * torch.exp(0.5 * logvar)
            rec = torch.sigmoid(self.dec(z))
            kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
            return F.binary_cross_entropy(rec, x, reduction="sum") + kld
    vae = VAE()
    m = C(vae)
    x = torch.rand(5, 6)
    l = m(x, torch.randn(5, 2))
    l.backward()
    R(l)
    R(vae)


@scenario
def attention_from_scratch(C, R):
    def attn(q, k, v, mask=None, causal=False):
        d = q.shape[-1]
        s = q @ k.transpose(-2, -1) / math.sqrt(d)
        if causal:
            L, S = s.shape[-2:]
            s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
        if mask is not None:
            s = s + mask
        p = s.softmax(-1)
        return p @ v, F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal and mask is None)
    g = C(attn)
    q, k, v = torch.randn(2, 2, 5, 4), torch.randn(2, 2, 5, 4), torch.randn(2, 2, 5, 4)
    R(g(q, k, v))
    R(g(q, k, v, causal=True))
    R(g(q, k, v, mask=torch.randn(5, 5)))


@scenario
def running_stats_class(C, R):
    class Running:
        def __init__(self):
            self.n = 0
            self.mean = torch.zeros(3)

        def update(self, x):
            self.n += x.shape[0]
            self.mean += (x.sum(0) - x.shape[0] * self.mean) / self.n
            return self.mean
    rs = Running()
    upd = C(rs.update)
    for i in range(3):
        R(upd(torch.randn(i + 2, 3)))
    R(rs.n)
    R(rs.mean)


@scenario
def positional_encoding_cache(C, R):
    class PE(nn.Module):
        def __init__(self, d, maxlen=50):
            super().__init__()
            pos = torch.arange(maxlen).unsqueeze(1)
            div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
            pe = torch.zeros(maxlen, d)
            pe[:, 0::2] = torch.sin(pos * div)
            pe[:, 1::2] = torch.cos(pos * div)
            self.register_buffer("pe", pe, persistent=False)

        def forward(self, x):
            return x + self.pe[: x.size(1)]
    m = C(PE(6))
    for L in (3, 7, 3, 11):
        R(m(torch.randn(2, L, 6)))


@scenario
def one_hot_and_embedding_bag(C, R):
    def f(idx, w):
        oh = F.one_hot(idx, 6)
        return oh, oh.float() @ w, F.embedding(idx, w, padding_idx=0), F.embedding_bag(idx.view(2, -1), w, mode="mean")
    g = C(f)
    R(g(torch.tensor([0, 3, 5, 1, 2, 0]), torch.randn(6, 3)))


@scenario
def cumulative_and_scan_like(C, R):
    def f(x):
        return x.cumsum(1), x.cumprod(1), torch.logcumsumexp(x, 1), x.cummax(1), torch.diff(x, dim=1), x.cumsum(0, dtype=torch.float64)
    g = C(f)
    R(g(torch.randn(3, 5)))


@scenario
def einsum_and_bmm(C, R):
    def f(a, b, c):
        return torch.einsum("bij,bjk->bik", a, b), torch.einsum("bii->b", a), torch.einsum("i,j->ij", c, c), torch.bmm(a, b).sum(), torch.einsum("...j,j", a, c)
    g = C(f)
    R(g(torch.randn(2, 3, 3), torch.randn(2, 3, 4), torch.randn(3)))


@scenario
def norms_and_normalize(C, R):
    def f(x):
        return (F.normalize(x, dim=-1), x.norm(dim=-1), torch.linalg.vector_norm(x, 1, -1), x.norm(p="fro"),
                F.layer_norm(x, x.shape[-1:]), F.group_norm(x.unsqueeze(-1), 2), F.rms_norm(x, (x.shape[-1],)) if hasattr(F, "rms_norm") else x,
                F.instance_norm(x.unsqueeze(0)), F.local_response_norm(x.unsqueeze(0), 2))
    g = C(f)
    R(g(torch.randn(4, 6)))


@scenario
def pad_unfold_fold(C, R):
    def f(x):
        p = F.pad(x, (1, 2, 0, 1), mode="constant", value=-1.0)
        r = F.pad(x, (1, 1, 1, 1), mode="reflect")
        rp = F.pad(x, (2, 0, 2, 0), mode="replicate")
        u = F.unfold(x, 2, stride=1)
        fo = F.fold(u, x.shape[-2:], 2)
        ps = F.pixel_shuffle(x.repeat(1, 4, 1, 1), 2)
        return p, r, rp, u, fo, ps, x.unfold(-1, 2, 1)
    g = C(f)
    R(g(torch.randn(1, 2, 4, 5)))


@scenario
def masked_mean_pooling(C, R):
    def pool(h, mask):
        m = mask.unsqueeze(-1).to(h.dtype)
        s = (h * m).sum(1)
        n = m.sum(1).clamp(min=1e-9)
        mx = h.masked_fill(~mask.unsqueeze(-1), -1e4).max(1).values
        return s / n, mx
    g = C(pool)
    h = torch.randn(3, 5, 4)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 0]], dtype=torch.bool)
    R(g(h, mask))
    R(g(h.half(), mask))


@scenario
def kmeans_step(C, R):
    def step(x, cent):
        d = torch.cdist(x, cent)
        a = d.argmin(1)
        new = torch.zeros_like(cent).index_add_(0, a, x)
        cnt = torch.bincount(a, minlength=cent.shape[0]).clamp(min=1).unsqueeze(1)
        return new / cnt, a
    g = C(step)
    x = torch.randn(30, 2)
    c = x[:3].clone()
    for _ in range(3):
        c, a = g(x, c)
        R((c, a))
