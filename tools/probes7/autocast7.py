"""torch.autocast on the CPU (bf16, and f16) around a range of ops."""
import torch
import torch.nn.functional as F

from probe2 import scenario


@scenario(rtol=1e-3, atol=1e-3)
def autocast_op_sweep(C, R):
    a = torch.arange(12.0).reshape(3, 4).sin()
    b = torch.arange(20.0).reshape(4, 5).cos()
    img = torch.arange(72.0).reshape(1, 2, 6, 6).sin()
    w = torch.arange(18.0).reshape(1, 2, 3, 3).cos()
    fns = [lambda: a @ b, lambda: torch.mm(a, b) + 1, lambda: torch.addmm(torch.ones(5), a, b), lambda: torch.bmm(a[None], b[None]),
           lambda: F.linear(a, b.T), lambda: F.conv2d(img, w), lambda: (a @ b).softmax(-1), lambda: (a @ b).log_softmax(0),
           lambda: (a @ b).sum(), lambda: (a @ b).cumsum(0), lambda: F.layer_norm(a @ b, (5,)), lambda: (a @ b).exp(),
           lambda: torch.cat([a @ b, torch.ones(1, 5)]), lambda: torch.stack([a @ b, (a @ b).double()]),
           lambda: (a @ b) + torch.ones(5, dtype=torch.float64), lambda: torch.addcmul(a @ b, a @ b, torch.ones(5)),
           lambda: F.mse_loss(a @ b, torch.zeros(3, 5)), lambda: F.cross_entropy(a @ b, torch.tensor([0, 4, 2])),
           lambda: torch.einsum("ij,jk->ik", a, b), lambda: torch.matmul(a, b).norm(), lambda: F.group_norm(img, 2),
           lambda: F.interpolate(img, scale_factor=2, mode="bilinear"), lambda: F.max_pool2d(F.conv2d(img, w), 2),
           lambda: F.scaled_dot_product_attention(a[None], a[None], a[None]), lambda: (a @ b).to(torch.float32),
           lambda: torch.baddbmm(torch.zeros(1, 3, 5), a[None], b[None]), lambda: F.batch_norm(img, torch.zeros(2), torch.ones(2)),
           lambda: torch.prod(a @ b, 1), lambda: (a @ b).topk(2), lambda: torch.where(a @ b > 0, a @ b, 0.0)]
    for dt in (torch.bfloat16, torch.float16):
        for fn in fns:
            def body(fn=fn, dt=dt):
                with torch.autocast("cpu", dtype=dt):
                    return fn()
            import torchc
            torchc.reset()   # one code object for every body: no recompile limit
            R.call(C(body))


@scenario(rtol=1e-3, atol=1e-3)
def autocast_training(C, R):
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 3)
    x = torch.randn(5, 4)
    def step(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = lin(x).relu()
            loss = y.float().pow(2).mean()
        loss.backward()
        return loss, y.dtype
    g = C(step)
    R(g(x))
    R([p.grad for p in lin.parameters()])
    def step2(x):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=False):
            return lin(x)
    R(C(step2)(x))
