"""torch library features users reach for: side-effecting modules, fast paths, distributions."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from probe2 import scenario


@scenario
def embedding_max_norm_renorms_weight(C, R):
    emb = nn.Embedding(6, 4, max_norm=1.0)
    with torch.no_grad():
        emb.weight.mul_(3)
    m = C(emb)
    idx = torch.tensor([[0, 2], [2, 5]])
    R(m(idx))
    R(emb.weight)


@scenario
def spectral_norm_hook(C, R):
    lin = nn.utils.spectral_norm(nn.Linear(5, 4))
    m = C(lin)
    x = torch.randn(3, 5)
    for _ in range(2):
        y = m(x)
        R(y)
    R(lin.weight_u)
    y.sum().backward()
    R(lin.weight_orig.grad)
    lin.eval()
    R(m(x))


@scenario
def spectral_norm_parametrization(C, R):
    lin = nn.utils.parametrizations.spectral_norm(nn.Linear(5, 4))
    m = C(lin)
    x = torch.randn(3, 5)
    for _ in range(2):
        R(m(x))
    R(lin.parametrizations.weight[0]._u)


@scenario
def prune_mask_hook(C, R):
    import torch.nn.utils.prune as prune
    lin = nn.Linear(4, 4)
    prune.l1_unstructured(lin, "weight", amount=0.5)
    m = C(lin)
    x = torch.randn(2, 4)
    y = m(x)
    R(y)
    y.sum().backward()
    R(lin.weight_orig.grad)
    prune.remove(lin, "weight")
    R(m(x))


@scenario
def transformer_encoder_eval_fastpath(C, R):
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True)
    # mask_check=False: with it on, the library asks torch.compiler.is_compiling() (True under
    # torchc as under torch.compile) and takes the path that leaves padded rows unzeroed
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=True, mask_check=False)
    enc.eval()
    m = C(enc)
    x = torch.randn(2, 5, 8)
    mask = torch.tensor([[False] * 5, [False, False, True, True, True]])
    with torch.no_grad():
        R(m(x, src_key_padding_mask=mask))
        R(m(x))
    R(m(x, src_key_padding_mask=mask))


@scenario
def transformer_decoder_causal(C, R):
    model = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, batch_first=True)
    m = C(model)
    src, tgt = torch.randn(2, 4, 8), torch.randn(2, 3, 8)
    tmask = nn.Transformer.generate_square_subsequent_mask(3)
    y = m(src, tgt, tgt_mask=tmask, tgt_is_causal=True)
    R(y)
    y.sum().backward()
    R(model.decoder.layers[0].linear1.weight.grad)


@scenario
def mha_eval_fastpath(C, R):
    mha = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    m = C(mha)
    x = torch.randn(2, 4, 8)
    kpm = torch.tensor([[False, False, False, True], [False] * 4])
    with torch.no_grad():
        R(m(x, x, x, need_weights=False, key_padding_mask=kpm))
        R(m(x, x, x, average_attn_weights=False))


@scenario
def distributions_usage(C, R):
    from torch.distributions import Normal, Categorical, Bernoulli, kl_divergence

    def f(mu, logstd, logits, x):
        d = Normal(mu, logstd.exp())
        c = Categorical(logits=logits)
        b = Bernoulli(logits=mu)
        torch.manual_seed(3)
        z = d.rsample()
        return d.log_prob(x).sum(-1), d.entropy(), c.log_prob(torch.tensor([0, 2])), c.entropy(), c.probs, b.log_prob((x > 0).float()), kl_divergence(d, Normal(0.0, 1.0)).sum(), z
    g = C(f)
    mu = torch.randn(2, 3, requires_grad=True)
    out = g(mu, torch.zeros(2, 3), torch.randn(2, 4), torch.randn(2, 3))
    R(out)
    out[0].sum().backward()
    R(mu.grad)


@scenario
def vmap_inside(C, R):
    def f(x, w):
        return torch.vmap(lambda r: (r * w).sum())(x), torch.func.grad(lambda a: (a * a).sum())(w)
    g = C(f)
    R(g(torch.randn(3, 4), torch.randn(4)))


@scenario
def checkpoint_training(C, R):
    from torch.utils.checkpoint import checkpoint
    blk = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 4))

    def f(x):
        return checkpoint(blk, x, use_reentrant=False).pow(2).mean()
    g = C(f)
    x = torch.randn(3, 4, requires_grad=True)
    l = g(x)
    l.backward()
    R(l)
    R(x.grad)
    R(blk)


@scenario(rtol=2e-2, atol=2e-2)
def autocast_cpu_bf16(C, R):
    net = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    m = C(net)
    x = torch.randn(4, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = m(x)
        R(y)
        l = F.cross_entropy(y, torch.tensor([0, 1, 0, 1]))
        R(l)
    l.backward()
    R(net[0].weight.grad.dtype)


@scenario
def module_to_double_and_half_after_compile(C, R):
    net = nn.Sequential(nn.Linear(3, 3), nn.LayerNorm(3))
    m = C(net)
    R(m(torch.randn(2, 3)))
    net.double()
    R(m(torch.randn(2, 3, dtype=torch.float64)))
    net.to(torch.bfloat16)
    R(m(torch.randn(2, 3, dtype=torch.bfloat16)))
    R.call(m, torch.randn(2, 3))


@scenario
def freeze_layers_after_compile(C, R):
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    m = C(net)
    x = torch.randn(5, 3)
    m(x).sum().backward()
    R(net)
    net.zero_grad()
    net[0].requires_grad_(False)
    m(x).sum().backward()
    R(net)


@scenario
def global_module_hooks(C, R):
    seen = []
    h = nn.modules.module.register_module_forward_hook(lambda mod, i, o: seen.append(type(mod).__name__))
    try:
        net = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
        m = C(net)
        R(m(torch.randn(1, 2)))
    finally:
        h.remove()
    R([s for s in seen if s != "OptimizedModule"])  # the wrapper is a Module, as torch.compile's


@scenario
def forward_hook_with_kwargs(C, R):
    class M(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale
    mod = M()
    mod.register_forward_pre_hook(lambda m, a, kw: (a, {**kw, "scale": kw.get("scale", 1.0) * 10}), with_kwargs=True)
    mod.register_forward_hook(lambda m, a, kw, out: out + kw["scale"], with_kwargs=True)
    m = C(mod)
    R(m(torch.ones(2), scale=2.0))
    R(m(torch.ones(2)))


@scenario
def state_dict_hooks_and_load(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(3))
            self.register_buffer("b", torch.zeros(3))

        def forward(self, x):
            return x * self.w + self.b
    a, b = M(), M()
    ma, mb = C(a), C(b)
    with torch.no_grad():
        a.w.mul_(5)
        a.b.add_(2)
    x = torch.randn(3)
    R(mb(x))
    mb.load_state_dict(ma.state_dict())
    R(mb(x))
    R(b.load_state_dict(a.state_dict(), strict=False))


@scenario
def interpolate_modes(C, R):
    def f(x):
        return (F.interpolate(x, scale_factor=2, mode="nearest"), F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True),
                F.interpolate(x, size=(3, 3), mode="bicubic", align_corners=False), F.interpolate(x, scale_factor=0.5, mode="area"),
                F.interpolate(x, size=(6, 6), mode="nearest-exact"), F.interpolate(x, size=(2, 3), mode="bilinear", antialias=True),
                F.adaptive_max_pool2d(x, (2, 3)), F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), F.max_pool2d(x, 2, return_indices=True),
                F.lp_pool2d(x, 2, 2))
    g = C(f)
    R(g(torch.randn(1, 2, 4, 6)))


@scenario
def grid_sample_affine(C, R):
    def f(x, theta):
        grid = F.affine_grid(theta, x.shape, align_corners=False)
        return F.grid_sample(x, grid, align_corners=False), F.grid_sample(x, grid, mode="nearest", padding_mode="border", align_corners=True)
    g = C(f)
    R(g(torch.randn(2, 3, 5, 5), torch.randn(2, 2, 3) * 0.5))


@scenario
def data_dependent_shapes(C, R):
    def f(x):
        u, inv, cnt = torch.unique(x, return_inverse=True, return_counts=True)
        nz = x.nonzero()
        ms = x[x > 1]
        return u, inv, cnt, nz, ms, torch.masked_select(x, x < 2), x.argwhere(), torch.unique_consecutive(x)
    g = C(f)
    R(g(torch.tensor([3, 1, 1, 2, 3, 0])))


@scenario
def search_and_grids(C, R):
    def f(a, v):
        return (torch.searchsorted(a, v), torch.searchsorted(a, v, right=True), torch.bucketize(v, a), torch.meshgrid(a, v, indexing="ij"),
                torch.tril_indices(3, 3), torch.cartesian_prod(a[:2], v[:2]), torch.histc(v, 4, 0, 4), torch.combinations(a[:3]))
    g = C(f)
    R(g(torch.tensor([0.0, 1.0, 2.0, 3.0]), torch.tensor([0.5, 1.0, 3.5, -1.0])))


@scenario
def tensor_subclass_and_parameter(C, R):
    class Tagged(torch.Tensor):
        pass

    def f(x, p):
        return x * 2 + p, type(x * 2).__name__
    g = C(f)
    x = torch.randn(3).as_subclass(Tagged)
    out = g(x, nn.Parameter(torch.ones(3)))
    R((type(out[0]).__name__, out[1]))
    R(out[0].as_subclass(torch.Tensor))


@scenario
def numpy_interop(C, R):
    import numpy as np

    def f(x):
        a = x.numpy()
        b = torch.from_numpy(np.ascontiguousarray(a[::-1])) * 2
        return b + x, float(np.sum(a))
    g = C(f)
    R(g(torch.arange(4.0)))


@scenario
def linalg_ops(C, R):
    def f(a, b):
        return (torch.linalg.solve(a, b), torch.linalg.inv(a), torch.linalg.det(a), torch.linalg.cholesky(a @ a.mT + torch.eye(3)),
                torch.linalg.qr(a).R.abs(), torch.linalg.svdvals(a), torch.linalg.matrix_norm(a), torch.linalg.eigvalsh(a + a.mT),
                torch.trace(a), torch.outer(b[:, 0], b[:, 0]), torch.kron(a[:2, :2], a[:2, :2]), torch.cross(a, b.expand(3, 3), dim=-1),
                torch.linalg.lstsq(a, b).solution, torch.logdet(a @ a.mT + torch.eye(3)), torch.matrix_power(a, 3), torch.linalg.pinv(a))
    g = C(f)
    torch.manual_seed(1)
    R(g(torch.randn(3, 3) + 3 * torch.eye(3), torch.randn(3, 1)))


@scenario
def amp_grad_scaler_cpu(C, R):
    net = nn.Linear(4, 2)
    m = C(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=4.0)
    x = torch.randn(3, 4)
    for _ in range(2):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = m(x).float().pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    R(net)
    R(scaler.get_scale())
