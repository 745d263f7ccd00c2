"""Recompilation with changing shapes, dtypes, requires_grad, strides, layouts of inputs."""
import torch
import torch.nn as nn

from probe2 import scenario


@scenario
def strides_change_between_calls(C, R):
    g = C(lambda x: x * 2 + x.sum(0, keepdim=True))
    x = torch.arange(12.0).reshape(3, 4)
    R(g(x))
    R(g(x.t().contiguous().t()))
    R(g(x[:, ::2]))
    R(g(x.t()))


@scenario
def output_strides_follow_input_layout(C, R):
    g = C(lambda x: x.relu() + 1)
    x = torch.randn(2, 3, 4, 5)
    R(g(x))
    R(g(x.to(memory_format=torch.channels_last)))
    R(g(x.permute(3, 1, 0, 2)))


@scenario
def dtype_cycle(C, R):
    g = C(lambda x: (x * 3 - 1).abs().sum())
    for dt in (torch.float32, torch.float64, torch.int32, torch.float16, torch.int64, torch.float32, torch.uint8):
        R(g(torch.arange(5).to(dt)))


@scenario
def requires_grad_cycle(C, R):
    g = C(lambda x: (x * x).sum())
    a = torch.randn(3)
    R(g(a))
    b = torch.randn(3, requires_grad=True)
    y = g(b)
    R(y)
    y.backward()
    R(b)
    R(g(a))
    R(g(a).requires_grad)


@scenario
def rank_changes(C, R):
    g = C(lambda x: x.sum(-1) + x.mean())
    for shape in ((3,), (2, 3), (1, 1, 3), (), (4, 0)):
        R.call(g, torch.ones(shape))


@scenario
def size_zero_and_one_transitions(C, R):
    g = C(lambda x, y: x @ y + 1)
    for n in (3, 1, 0, 2, 1):
        R(g(torch.ones(n, 2), torch.ones(2, n)))


@scenario
def broadcast_pattern_changes(C, R):
    g = C(lambda a, b: a * b - a)
    R(g(torch.ones(3, 4), torch.ones(4)))
    R(g(torch.ones(3, 4), torch.ones(3, 1)))
    R(g(torch.ones(1, 4), torch.ones(3, 1)))
    R(g(torch.ones(3, 4), torch.ones(())))
    R.call(g, torch.ones(3, 4), torch.ones(3))


@scenario
def many_shapes_hit_limit(C, R):
    g = C(lambda x: x.cumsum(0) * 2)
    for n in range(1, 14):
        R(g(torch.ones(n)))


@scenario
def scalar_vs_tensor_arg(C, R):
    g = C(lambda x, s: x + s)
    x = torch.ones(2)
    R(g(x, 1))
    R(g(x, 1.5))
    R(g(x, torch.tensor(2.0)))
    R(g(x, torch.tensor(3)))
    R(g(x, True))
    R(g(x, torch.tensor([4.0, 5.0])))


@scenario
def python_int_changes_shape(C, R):
    g = C(lambda x, n: x.repeat(n, 1).sum(0) * n)
    x = torch.ones(3)
    for n in (1, 2, 3, 2, 0):
        R(g(x, n))


@scenario
def none_vs_tensor_optional(C, R):
    def f(x, mask=None):
        if mask is not None:
            x = x.masked_fill(mask, 0)
        return x.softmax(-1)
    g = C(f)
    x = torch.randn(2, 3)
    R(g(x))
    R(g(x, torch.tensor([[True, False, False], [False, False, True]])))
    R(g(x, None))


@scenario
def module_dtype_and_input_dtype(C, R):
    m = nn.Linear(3, 2)
    mc = C(m)
    x = torch.randn(4, 3)
    R(mc(x))
    m.double()
    R.call(mc, x)
    R(mc(x.double()))
    m.float()
    R(mc(x))


@scenario
def train_eval_toggle_repeatedly(C, R):
    m = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5), nn.BatchNorm1d(3))
    mc = C(m)
    x = torch.randn(4, 3)
    for mode in (False, True, False, True, False):
        m.train(mode)
        torch.manual_seed(1)
        R(mc(x))
    R(m)


@scenario
def int_input_value_used_as_shape(C, R):
    g = C(lambda x: torch.zeros(int(x.sum())) + 1)
    R(g(torch.tensor([1, 2])))
    R(g(torch.tensor([0, 0])))
    R(g(torch.tensor([5, 0])))


@scenario
def dtype_argument_changes(C, R):
    g = C(lambda x, dt: x.to(dt) * 2)
    x = torch.tensor([1.7, -2.2])
    for dt in (torch.float64, torch.int32, torch.bool, torch.float16, torch.float32):
        R(g(x, dt))


@scenario
def contiguous_then_sliced_input(C, R):
    g = C(lambda x: x.view(-1))
    x = torch.arange(6.0).reshape(2, 3)
    R(g(x))
    R.call(g, x.t())
    R.call(g, x[:, :2])


@scenario
def grad_mode_and_inference_mode(C, R):
    g = C(lambda x, w: x * w)
    w = torch.randn(3, requires_grad=True)
    x = torch.randn(3)
    R(g(x, w))
    with torch.no_grad():
        R(g(x, w))
    with torch.inference_mode():
        r = g(x, w)
        R(r)
        R(r.is_inference())
    R(g(x, w))


@scenario
def inference_tensor_passed_outside(C, R):
    with torch.inference_mode():
        x = torch.ones(3)
    g = C(lambda a: a * 2)
    r = g(x)
    R(r)
    R(r.is_inference())
    R.call(lambda: C(lambda a: a.add_(1))(x))


@scenario
def sparse_then_dense_input(C, R):
    g = C(lambda x: x * 2)
    d = torch.tensor([[0.0, 1.0], [2.0, 0.0]])
    R(g(d))
    R(g(d.to_sparse()))
    R(g(d))
