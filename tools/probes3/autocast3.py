"""torch.autocast (cpu, bf16) regions around and inside the compiled function."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from probe2 import scenario

AC = dict(rtol=2e-2, atol=2e-2)


@scenario(**AC)
def autocast_around_linear(C, R):
    m = nn.Linear(8, 4)
    mc = C(m)
    x = torch.randn(3, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = mc(x)
    R(y)
    R(mc(x))


@scenario(**AC)
def autocast_inside(C, R):
    def f(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = x @ w
            z = y.softmax(-1)
        return y, z, z.float() + 1
    g = C(f)
    R(g(torch.randn(4, 5), torch.randn(5, 3)))


@scenario(**AC)
def autocast_disabled_inside_enabled(C, R):
    def f(x, w):
        a = x @ w
        with torch.autocast("cpu", enabled=False):
            b = x.float() @ w.float()
        return a, b
    g = C(f)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        R(g(torch.randn(4, 5), torch.randn(5, 3)))


@scenario(**AC)
def autocast_toggle_between_calls(C, R):
    g = C(lambda x, w: F.linear(x, w).relu())
    x, w = torch.randn(2, 3), torch.randn(4, 3)
    R(g(x, w))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        R(g(x, w))
    R(g(x, w))
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=False):
        R(g(x, w))


@scenario(**AC)
def autocast_fp32_ops_stay_fp32(C, R):
    def f(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return x.exp(), x.sum(), F.log_softmax(x, -1), x.pow(2), torch.mm(x, x.t())
    R(C(f)(torch.randn(3, 3)))


@scenario(**AC)
def autocast_training_backward(C, R):
    m = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
    mc = C(m)
    x = torch.randn(5, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = mc(x)
        loss = out.float().pow(2).mean()
    loss.backward()
    R(out)
    R(loss)
    R(m)


@scenario(**AC)
def autocast_decorator_function(C, R):
    @torch.autocast("cpu", dtype=torch.bfloat16)
    def f(x, w):
        return torch.matmul(x, w) + 1
    R(C(f)(torch.randn(2, 3), torch.randn(3, 2)))


@scenario(**AC)
def autocast_conv_and_bmm(C, R):
    conv = nn.Conv2d(2, 3, 3, padding=1)

    def f(x, a, b):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return conv(x), torch.bmm(a, b), torch.baddbmm(torch.zeros(2, 3, 3), a, b)
    R(C(f)(torch.randn(1, 2, 5, 5), torch.randn(2, 3, 4), torch.randn(2, 4, 3)))


@scenario(**AC)
def autocast_mixed_input_dtypes(C, R):
    def f(a, b):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return a @ b, a + b.t()[: a.shape[0], : a.shape[1]].double()
    R(C(f)(torch.randn(3, 4, dtype=torch.float64), torch.randn(4, 3)))


@scenario(**AC)
def autocast_is_enabled_query(C, R):
    def f(x):
        if torch.is_autocast_enabled("cpu"):
            return x * 2
        return x - 1
    g = C(f)
    x = torch.randn(3)
    R(g(x))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        R(g(x))
    R(g(x))


@scenario(**AC)
def autocast_float16_cpu(C, R):
    def f(x, w):
        with torch.autocast("cpu", dtype=torch.float16):
            return x @ w
    R(C(f)(torch.randn(3, 4), torch.randn(4, 2)))


@scenario(**AC)
def autocast_scaled_dot_attention(C, R):
    def f(q, k, v):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    R(C(f)(torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8)))


@scenario(**AC)
def autocast_nested_regions(C, R):
    def f(x, w):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            a = x @ w
            with torch.autocast("cpu", enabled=False):
                b = a.float() @ w.t()
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    c = b @ w
        return a, b, c
    R(C(f)(torch.randn(3, 3), torch.randn(3, 3)))


@scenario(**AC)
def autocast_layernorm_embedding(C, R):
    emb = nn.Embedding(10, 6)
    ln = nn.LayerNorm(6)
    lin = nn.Linear(6, 6)

    def f(t):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = lin(emb(t))
            return ln(h), h
    R(C(f)(torch.tensor([[1, 2, 3], [4, 5, 9]])))
