"""RNNs, losses, optimizers, autograd."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from probe2 import scenario


@scenario(rtol=1e-5, atol=1e-5)
def lstm_classifier_train(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(20, 8)
            self.rnn = nn.LSTM(8, 6, num_layers=2, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(12, 3)

        def forward(self, tok):
            h, (hn, cn) = self.rnn(self.emb(tok))
            return self.fc(h[:, -1]), hn.shape
    mod = M()
    m = C(mod)
    opt = torch.optim.Adam(mod.parameters(), lr=1e-2)
    tok = torch.randint(0, 20, (4, 7))
    y = torch.tensor([0, 1, 2, 1])
    for _ in range(3):
        logits, hs = m(tok)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        R(loss)
        R(hs)
    R(mod)


@scenario(rtol=1e-5, atol=1e-5)
def gru_with_initial_state(C, R):
    gru = nn.GRU(4, 5, batch_first=False)
    m = C(gru)
    x = torch.randn(6, 2, 4)
    h0 = torch.randn(1, 2, 5)
    out, hn = m(x, h0)
    R(out)
    R(hn)
    (out.sum() + hn.sum()).backward()
    R(gru)
    out2, hn2 = m(x)
    R(out2)


@scenario(rtol=1e-5, atol=1e-5)
def lstmcell_loop(C, R):
    cell = nn.LSTMCell(3, 4)

    def run(xs):
        h = torch.zeros(xs.shape[1], 4)
        c = torch.zeros(xs.shape[1], 4)
        outs = []
        for t in range(xs.shape[0]):
            h, c = cell(xs[t], (h, c))
            outs.append(h)
        return torch.stack(outs)
    g = C(run)
    xs = torch.randn(5, 2, 3)
    out = g(xs)
    R(out)
    out.pow(2).mean().backward()
    R(cell)


@scenario(rtol=1e-5, atol=1e-6)
def many_losses(C, R):
    def f(x, t, tc, w):
        return dict(
            mse=F.mse_loss(x, t), l1=F.l1_loss(x, t, reduction="sum"), huber=F.huber_loss(x, t, delta=0.5),
            sl1=F.smooth_l1_loss(x, t, beta=0.3), bce=F.binary_cross_entropy(x.sigmoid(), t.sigmoid()),
            bcel=F.binary_cross_entropy_with_logits(x, (t > 0).float(), pos_weight=torch.ones(x.shape[-1]) * 2),
            ce=F.cross_entropy(x, tc, weight=w, ignore_index=1), nll=F.nll_loss(x.log_softmax(-1), tc, reduction="none"),
            kl=F.kl_div(x.log_softmax(-1), t.softmax(-1), reduction="batchmean"),
            kll=F.kl_div(x.log_softmax(-1), t.log_softmax(-1), reduction="sum", log_target=True),
            cos=F.cosine_embedding_loss(x, t, torch.ones(x.shape[0])), margin=F.margin_ranking_loss(x[:, 0], t[:, 0], torch.sign(t[:, 1])),
            mlm=F.multilabel_soft_margin_loss(x, (t > 0).float()), poisson=F.poisson_nll_loss(x, t.abs()),
            gauss=F.gaussian_nll_loss(x, t, torch.ones_like(x)), triplet=F.triplet_margin_loss(x, t, t.flip(0)),
            soft=F.soft_margin_loss(x, torch.sign(t)), hinge=F.hinge_embedding_loss(x, torch.sign(t)),
            ce_prob=F.cross_entropy(x, t.softmax(-1), label_smoothing=0.1),
        )
    g = C(f)
    x = torch.randn(6, 5, requires_grad=True)
    t = torch.randn(6, 5)
    tc = torch.tensor([0, 1, 4, 3, 1, 2])
    w = torch.rand(5)
    out = g(x, t, tc, w)
    R(out)
    sum(v.sum() for v in out.values()).backward()
    R(x.grad)


@scenario(rtol=1e-5, atol=1e-6)
def loss_modules_reduction(C, R):
    crit = nn.CrossEntropyLoss(reduction="none", label_smoothing=0.05)
    crit2 = nn.NLLLoss(ignore_index=-100)
    c = C(crit)
    c2 = C(crit2)
    x = torch.randn(3, 4, 5, requires_grad=True)   # (N, C, d)
    t = torch.randint(0, 4, (3, 5))
    t[0, 0] = -100
    R(c2(x.log_softmax(1), t))
    t[0, 0] = 2
    l = c(x, t)
    R(l)
    l.mean().backward()
    R(x.grad)


@scenario(rtol=1e-5, atol=1e-6)
def optimizers_steps(C, R):
    for opt_cls, kw in ((torch.optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2)),
                        (torch.optim.AdamW, dict(lr=1e-2, weight_decay=0.1, amsgrad=True)),
                        (torch.optim.RMSprop, dict(lr=1e-2, momentum=0.5)),
                        (torch.optim.Adagrad, dict(lr=0.1)),
                        (torch.optim.Adam, dict(lr=1e-2, maximize=True))):
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        m = C(net)
        opt = opt_cls(net.parameters(), **kw)
        sched = torch.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)
        x, y = torch.randn(16, 4), torch.randn(16, 1)
        for _ in range(3):
            opt.zero_grad(set_to_none=False)
            loss = F.mse_loss(m(x), y)
            loss.backward()
            opt.step()
            sched.step()
            R(loss)
        R(net)
        R(opt.state_dict()["state"])


@scenario(rtol=1e-5, atol=1e-6)
def compiled_train_step_function(C, R):
    net = nn.Sequential(nn.Linear(3, 5), nn.SiLU(), nn.Linear(5, 2))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        return loss.detach()
    s = C(step)
    x, y = torch.randn(8, 3), torch.randint(0, 2, (8,))
    for _ in range(3):
        R(s(x, y))
    R(net)


@scenario(rtol=1e-5, atol=1e-6)
def grad_accumulation(C, R):
    net = nn.Linear(3, 2)
    m = C(net)
    for i in range(3):
        loss = m(torch.randn(4, 3)).pow(2).mean() / 3
        loss.backward()
    R(net)
    for p in net.parameters():
        p.grad = None
    m(torch.ones(1, 3)).sum().backward()
    R(net)


@scenario(rtol=1e-5, atol=1e-6)
def autograd_grad_create_graph(C, R):
    def f(x, w):
        y = torch.tanh(x @ w).sum()
        (gx,) = torch.autograd.grad(y, x, create_graph=True)
        return y, gx, gx.pow(2).sum()
    g = C(f)
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, 2, requires_grad=True)
    y, gx, pen = g(x, w)
    R((y, gx, pen))
    pen.backward()
    R(w.grad)
    R(x.grad)


@scenario(rtol=1e-5, atol=1e-6)
def grad_of_compiled_outside(C, R):
    def f(x, w):
        return (x.sin() * w).sum(-1)
    g = C(f)
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(4, requires_grad=True)
    out = g(x, w)
    gx, gw = torch.autograd.grad(out.sum(), (x, w), retain_graph=True)
    R((out, gx, gw))
    gx2 = torch.autograd.grad(out[0], x, allow_unused=True)[0]
    R(gx2)
    out.backward(torch.ones(3) * 2)
    R(x.grad)


@scenario(rtol=1e-5, atol=1e-6)
def detach_and_stop_grad(C, R):
    def f(x):
        a = x * 2
        b = a.detach() * x
        c = x.data * 3
        with torch.no_grad():
            d = x * 5
        return (a + b + c + d).sum(), b.requires_grad, c.requires_grad, d.requires_grad
    g = C(f)
    x = torch.randn(3, requires_grad=True)
    out = g(x)
    R(out)
    out[0].backward()
    R(x.grad)


@scenario(rtol=1e-5, atol=1e-6)
def custom_autograd_function(C, R):
    class Clip(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, lo):
            ctx.save_for_backward(x)
            ctx.lo = lo
            return x.clamp(min=lo)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (x > ctx.lo).float() + 0.1 * g, None

    def f(x):
        return Clip.apply(x * 2, 0.0).sum()
    g = C(f)
    x = torch.randn(5, requires_grad=True)
    l = g(x)
    l.backward()
    R(l)
    R(x.grad)


@scenario(rtol=1e-5, atol=1e-6)
def inplace_on_leaf_raises_and_on_nonleaf(C, R):
    def f(x):
        y = x * 1
        y.add_(1)
        y[0] = 0
        return y.sum()
    g = C(f)
    x = torch.randn(3, requires_grad=True)
    l = g(x)
    l.backward()
    R(x.grad)

    def h(x):
        x.add_(1)
        return x
    R.call(C(h), torch.randn(3, requires_grad=True))


@scenario(rtol=1e-5, atol=1e-6)
def clip_grad_norm_and_amp_scaler_like(C, R):
    net = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
    m = C(net)
    x = torch.randn(5, 4) * 10
    loss = m(x).pow(2).sum()
    loss.backward()
    n = nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    R(n)
    R(net)
    nn.utils.clip_grad_value_(net.parameters(), 0.01)
    R(net)


@scenario(rtol=1e-5, atol=1e-6)
def ema_update_no_grad(C, R):
    net = nn.Linear(3, 3)
    ema = nn.Linear(3, 3)

    @torch.no_grad()
    def update(decay):
        for pe, p in zip(ema.parameters(), net.parameters()):
            pe.mul_(decay).add_(p, alpha=1 - decay)
    u = C(update)
    u(0.9)
    u(0.5)
    R(ema)


@scenario(rtol=1e-5, atol=1e-6)
def rnn_packed_sequence(C, R):
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    rnn = nn.GRU(3, 4, batch_first=True)

    def f(x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, h = rnn(packed)
        out, lens = pad_packed_sequence(out, batch_first=True)
        return out, h, lens
    g = C(f)
    x = torch.randn(3, 5, 3)
    R(g(x, torch.tensor([5, 2, 3])))


@scenario(rtol=1e-5, atol=1e-6)
def transformer_encoder_layer(C, R):
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    m = C(layer)
    x = torch.randn(2, 5, 8)
    mask = torch.tensor([[False] * 5, [False, False, False, True, True]])
    y = m(x, src_key_padding_mask=mask)
    R(y)
    y.sum().backward()
    R(layer)
    layer.eval()
    with torch.no_grad():
        R(m(x, src_key_padding_mask=mask))


@scenario(rtol=1e-5, atol=1e-6)
def multihead_attention(C, R):
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    m = C(mha)
    q = torch.randn(2, 4, 8)
    k = torch.randn(2, 6, 8)
    out, w = m(q, k, k, need_weights=True)
    R(out)
    R(w)
    out2, w2 = m(q, k, k, need_weights=False, attn_mask=torch.ones(4, 6, dtype=torch.bool).triu(1))
    R(out2)
    R(w2)
