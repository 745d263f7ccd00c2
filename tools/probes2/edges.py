"""Round 2 of probes: aliasing, metadata mutation, global state, scalar edge semantics."""
import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from probe2 import scenario


@scenario
def return_input_identity_and_alias(C, R):
    def f(x, y):
        return x, y[0], x.view(-1), y
    g = C(f)
    x, y = torch.randn(2, 2), torch.randn(3, 2)
    a, b, c, d = g(x, y)
    R((a is x, d is y, b._base is y, c._base is x))
    b.add_(100)
    c.mul_(2)
    R(x)
    R(y)


@scenario
def same_output_twice(C, R):
    def f(x):
        y = x * 2
        return y, y, {"k": y}
    g = C(f)
    a, b, d = g(torch.ones(3))
    R(a is b)
    R(d["k"] is a)
    a.add_(1)
    R(b)


@scenario
def output_is_view_of_intermediate(C, R):
    def f(x):
        y = x + 1
        return y, y[1:], y.t()
    g = C(f)
    y, v, t = g(torch.zeros(3, 3))
    v.fill_(7)
    R(y)
    R(t)
    R(t._base is y or t._base is y._base)


@scenario
def inputs_aliasing_each_other(C, R):
    def f(a, b):
        a.add_(1)
        return b * 2
    g = C(f)
    x = torch.zeros(4)
    R(g(x, x))
    R(g(x, x[1:]))
    R(g(x[:2], x[1:3]))
    R(x)


@scenario
def metadata_inplace_on_input(C, R):
    def f(x, y, z):
        x.unsqueeze_(0)
        y.t_()
        z.squeeze_()
        return x.shape, y.stride(), z.shape
    g = C(f)
    x, y, z = torch.randn(3), torch.randn(2, 3), torch.randn(1, 4, 1)
    R(g(x, y, z))
    R((x, y, z))


@scenario
def resize_and_data_assign(C, R):
    def f(x, y):
        x.data = y * 2
        return x + 1
    g = C(f)
    x = torch.zeros(3)
    R(g(x, torch.ones(3)))
    R(x)

    def h(x):
        x.resize_(2, 2)
        x.fill_(1)
        return x.sum()
    x = torch.zeros(4)
    R(C(h)(x))
    R(x)


@scenario
def list_and_dict_arg_mutation(C, R):
    def f(xs, d):
        xs.append(xs[0] * 2)
        xs[0] = xs[0] + 1
        last = xs.pop(1) if len(xs) > 2 else None
        d["new"] = xs[-1].sum()
        del d["old"]
        d.setdefault("cnt", 0)
        d["cnt"] += 1
        return len(xs), last
    g = C(f)
    xs = [torch.ones(2), torch.zeros(2), torch.full((2,), 3.0)]
    d = {"old": 1}
    R(g(xs, d))
    R(xs)
    R(d)


@scenario
def module_attr_set_in_forward(C, R):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.history = []
            self.last = None
            self.steps = 0

        def forward(self, x):
            y = self.lin(x)
            self.last = y.detach()
            self.history.append(y.shape[0])
            self.steps += 1
            self.new_attr = self.steps * 2
            return y
    mod = M()
    m = C(mod)
    for n in (2, 3):
        R(m(torch.randn(n, 3)))
    R((mod.last, mod.history, mod.steps, mod.new_attr))


@scenario
def set_grad_enabled_call_leaks(C, R):
    def f(x):
        torch.set_grad_enabled(False)
        y = x * 2
        return y
    g = C(f)
    x = torch.randn(2, requires_grad=True)
    try:
        y = g(x)
        R((y, y.requires_grad, torch.is_grad_enabled()))
    finally:
        torch.set_grad_enabled(True)


@scenario
def default_dtype_changes(C, R):
    def f(x):
        return torch.zeros(3) + x, torch.tensor([1.5]), torch.arange(0.0, 2.0), torch.ones(2).dtype, x * 1.5
    g = C(f)
    R(g(torch.ones(3, dtype=torch.float16)))
    torch.set_default_dtype(torch.float64)
    try:
        R(g(torch.ones(3, dtype=torch.float16)))
        R(g(torch.ones(3, dtype=torch.int32)))
    finally:
        torch.set_default_dtype(torch.float32)
    R(g(torch.ones(3, dtype=torch.int32)))


@scenario
def warnings_inside(C, R):
    def f(x):
        if x.shape[0] > 2:
            warnings.warn("big input", UserWarning)
        return x + 1
    g = C(f)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        R(g(torch.ones(3)))
        R(g(torch.ones(1)))
    R([str(x.message) for x in w if "big" in str(x.message)])


@scenario
def generator_function_compiled(C, R):
    def gen(x):
        for i in range(3):
            yield x * i
    g = C(gen)
    R(list(g(torch.ones(2))))


@scenario
def returns_lambda_closure(C, R):
    def f(x):
        s = x.sum()
        return lambda y: y * s, s
    g = C(f)
    fn, s = g(torch.ones(3))
    R(fn(torch.ones(2)))
    R(s)


@scenario
def float32_scalar_overflow_semantics(C, R):
    def f(x, h):
        return x * 1e40, x / 1e-50, x * 1e-50, x + 1e39, h * 70000, h * 1e-8, h / 1e-6, h + 65504, x - 3.4028235e38 * 2
    g = C(f)
    R(g(torch.tensor([0.0, 1.0, -2.0, 1e-30]), torch.tensor([0.0, 1000.0, 1e-3, 1.0], dtype=torch.float16)))


@scenario
def bf16_scalar_semantics(C, R):
    def f(b):
        return b * 1.001, b + 0.001, b * 3.3e38 * 10, b / 3, (b * 0.1).sum(), b.exp(), b * b + 0.1
    g = C(f)
    R(g(torch.tensor([1.0, 256.0, 3.0, -0.5], dtype=torch.bfloat16)))


@scenario(exact=True)
def int64_large_values(C, R):
    def f(x):
        return x + 1, x * 2, x // 3, x.float().long(), x.max(), x.sum(), (x - 1) % 7, x >> 3, x << 1, x & 0xFF, x ^ -1
    g = C(f)
    R(g(torch.tensor([2**62 + 1, -2**62 - 3, 2**53 + 1, 9007199254740993])))


@scenario
def int_tensor_raise_parity(C, R):
    R.call(C(lambda a: a // torch.zeros_like(a)), torch.tensor([1, 2]))
    R.call(C(lambda a: a % torch.zeros_like(a)), torch.tensor([1, 2]))
    R.call(C(lambda a: a ** -1), torch.tensor([1, 2]))
    R.call(C(lambda a: torch.pow(a, torch.tensor(-2))), torch.tensor([1, 2]))
    R.call(C(lambda a: a - a), torch.tensor([True, False]))
    R.call(C(lambda a: -a), torch.tensor([True, False]))
    R.call(C(lambda a: a.mean()), torch.tensor([1, 2]))
    R.call(C(lambda a: a.sqrt()), torch.tensor([1, 4]))
    R.call(C(lambda a: a // 2.5), torch.tensor([5, 7]))
    R.call(C(lambda a: a.float() // 0), torch.tensor([5, -7, 0]))
    R.call(C(lambda a: a.float() % 0), torch.tensor([5, -7, 0]))
    R.call(C(lambda a: torch.fmod(a, 0)), torch.tensor([5, -7]))
    R.call(C(lambda a: torch.remainder(a.float(), -0.0)), torch.tensor([5, -7]))
    R.call(C(lambda a: a.abs()), torch.tensor([-128, 5], dtype=torch.int8))
    R.call(C(lambda a: a.sum()), torch.tensor([100, 100], dtype=torch.int8))
    R.call(C(lambda a: a.prod()), torch.tensor([True, True]))
    R.call(C(lambda a: a.cumsum(0)), torch.tensor([True, True]))
    R.call(C(lambda a: torch.clamp(a, 0.5, 2.5)), torch.tensor([0, 1, 3]))
    R.call(C(lambda a: torch.clamp(a, max=torch.tensor(2.5))), torch.tensor([0, 1, 3]))
    R.call(C(lambda a: a.clamp(min=2, max=1)), torch.tensor([0.0, 1.5, 3.0]))
    R.call(C(lambda a: a / 0), torch.tensor([1, 0, -1]))
    R.call(C(lambda a: a.true_divide(2)), torch.tensor([1, 3]))
    R.call(C(lambda a: a.bitwise_not()), torch.tensor([1.0]))
    R.call(C(lambda a: a << 70), torch.tensor([1, 3]))
    R.call(C(lambda a: a >> 70), torch.tensor([-1, 3]))
    R.call(C(lambda a: a.to(torch.uint8) - 1), torch.tensor([0, 3]))
    R.call(C(lambda a: torch.tensor(2**31 - 1, dtype=torch.int32) + a), torch.tensor([1], dtype=torch.int32))


@scenario
def builtin_python_ops_on_tensors(C, R):
    def f(x):
        a = abs(x)
        n = len(x)
        s = sum(x)
        r = round(float(x[0]), 2)
        fl = math.floor(x[1])
        mx = max(x[0], x[1])
        dv = divmod(x, 2)
        i = int(x[2])
        b = bool(x[0] > 0)
        return a, n, s, r, fl, mx, dv, i, b, x.shape == (3,), x.size() == torch.Size([3]), x.shape + (1,), -x.shape[0] // 2
    g = C(f)
    R(g(torch.tensor([1.234, -2.5, 3.9])))


@scenario
def iterate_tensor_rows(C, R):
    def f(x):
        out = []
        for i, row in enumerate(x):
            out.append(row * i)
        for a, b in zip(x, x.flip(0)):
            out.append(a - b)
        return torch.stack(out), [r.sum() for r in x.T]
    g = C(f)
    R(g(torch.randn(3, 2)))


@scenario
def setitem_patterns(C, R):
    def f(x, idx, y):
        x = x.clone()
        x[x > 0] += 1
        x[idx] *= 2
        x[:, [0, 2]] = y
        x[0, ...] = 5
        x[-1] = x[0]
        x[1:3, 1:] -= x[:2, :2]
        x[torch.tensor([True, False, True, False])] = 0.5
        return x
    g = C(f)
    R(g(torch.randn(4, 3), torch.tensor([1, 3]), torch.randn(4, 2)))


@scenario
def setitem_on_input_written_back(C, R):
    def f(x, i):
        x[i] = x[i] * 10
        x[:, 0] = -1
        return x.sum()
    g = C(f)
    x = torch.arange(12.0).view(3, 4)
    R(g(x, 1))
    R(g(x, 2))
    R(x)


@scenario
def tensor_methods_misc(C, R):
    def f(x):
        return (x.mT, x.new_ones(2, dtype=torch.int8), x.type(torch.int32), x.type_as(torch.ones(1, dtype=torch.float64)), x.element_size(),
                x.is_contiguous(), x.dim(), x.ndim, x.nelement(), x.is_floating_point(), x.is_complex(), x.storage_offset(),
                x.clamp_min(0).log1p(), x.lerp(torch.zeros_like(x), 0.3), x.addcmul(x, x, value=0.5), x.hypot(x), x.logaddexp(x),
                x.frac(), x.xlogy(2), torch.special.expit(x), torch.special.entr(x.abs()), x.sinc(), x.deg2rad(), x.heaviside(torch.tensor(0.5)),
                x.square(), x.float_power(2), x.copysign(-1), x.nextafter(torch.ones(1)), x.signbit(), x.logit(eps=1e-6))
    g = C(f)
    R(g(torch.tensor([[0.5, -1.5, 0.0], [2.0, 3.0, -0.0]])))


@scenario
def sum_dtype_and_keepdim(C, R):
    def f(x):
        return (x.sum(dtype=torch.float64), x.sum((0, 1), keepdim=True), x.mean(-1, dtype=torch.float64), x.to(torch.int16).sum(),
                x.bool().sum(0), x.half().sum(), x.std(0, correction=0), x.var(dim=None), torch.var_mean(x, 1), torch.std_mean(x, unbiased=True),
                x.amax((0, 1)), x.max(), x.min(1, keepdim=True), x.aminmax(), x.logsumexp((0, 1)), x.count_nonzero(0), x.nansum(), x.median(),
                x.median(1), x.mode(1), x.kthvalue(2, 1), x.quantile(0.3), torch.all(x > -5, 1), x.argmax(1, keepdim=True))
    g = C(f)
    R(g(torch.tensor([[1.0, 5.0, 3.0], [2.0, 2.0, -1.0]])))


@scenario
def factory_kwargs_requires_grad_out(C, R):
    def f(x):
        a = torch.arange(3.0, requires_grad=True)
        b = torch.zeros(3, requires_grad=True)
        c = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        d = torch.full((3,), 2.0, requires_grad=True)
        e = torch.ones_like(x, requires_grad=True)
        f_ = torch.linspace(0, 1, 3, requires_grad=True)
        g_ = torch.eye(3, requires_grad=True)[0]
        h = torch.empty(3).fill_(1).requires_grad_()
        r = torch.randn(3, requires_grad=True)
        return [v.requires_grad for v in (a, b, c, d, e, f_, g_, h, r)], a, b, c, d, e, f_, g_, h, (x * a * b * c * d * e * f_ * g_ * h).sum()
    g = C(f)
    out = g(torch.ones(3))
    R(out[:-1])
    R(out[-1])
    for v in out[1:-1]:
        R(v.is_leaf)


@scenario
def factory_out_args(C, R):
    def f(buf, ibuf):
        torch.arange(4, out=ibuf)
        torch.zeros(2, 2, out=buf)
        torch.ones(3, out=buf[0, :1].view(1).expand(1)) if False else None
        torch.linspace(0, 1, 4, out=buf.view(-1))
        torch.full((2, 2), 3.0, out=buf) if False else None
        return buf, ibuf
    g = C(f)
    buf = torch.empty(2, 2)
    ibuf = torch.empty(4, dtype=torch.long)
    R(g(buf, ibuf))
    R((buf, ibuf))


@scenario
def arange_dtypes(C, R):
    def f(n):
        return (torch.arange(n), torch.arange(0.5, n), torch.arange(n, dtype=torch.float16), torch.arange(1, n, 2, dtype=torch.int8),
                torch.arange(n * 1.0), torch.arange(0, 1, 0.1), torch.arange(-n, n, 0.7), torch.arange(n, 0, -1), torch.arange(True, 3))
    g = C(f)
    R(g(5))
    torch.set_default_dtype(torch.float64)
    try:
        R(g(5))
    finally:
        torch.set_default_dtype(torch.float32)
