"""Ops that used to break the graph (issues 21 and 22): hardshrink, softshrink, celu, threshold,
channel_shuffle, instance_norm, embedding_bag, take_along_dim, nanmean, the shift operators,
index_put(_) and put_ are captured and lowered, with their gradients from the one backward-rule
table. Differential against eager: values, dtype and shape (sizes 0, 1, odd, non-contiguous,
broadcast), and float64 gradients where the op is differentiable. Every check asserts the call
was captured whole (one graph, no break, nothing left to eager), so a fallback fails it."""
import pytest
import torch
import torch.nn.functional as F

import torchc
from conftest import assert_same, captured_whole


def _clone(a):
    return a.clone() if isinstance(a, torch.Tensor) else a


def _whole(fn, *args, rtol=None, atol=None):
    """fn(*args) captured whole and equal to eager's (args cloned for each: in-place ops)"""
    torchc.reset()
    ex = torchc.explain(fn)(*[_clone(a) for a in args])
    assert captured_whole(ex), ex.break_reasons
    want = fn(*[_clone(a) for a in args])
    got = torchc.compile(fn)(*[_clone(a) for a in args])
    assert_same(got, want, rtol, atol)
    return got


def _grads(fn, *args, wrt=(0,), rtol=1e-7, atol=1e-7):
    """fn's float64 gradients of args[wrt] through the compiled forward and backward (one
    graph each) equal eager's; also the forward values"""
    def prep():
        return [a.detach().clone().requires_grad_(i in wrt) if isinstance(a, torch.Tensor) else a
                for i, a in enumerate(args)]
    torchc.reset()
    ex = torchc.explain(fn)(*prep())
    assert captured_whole(ex), ex.break_reasons
    assert ex.backward_graph_count == 1, str(ex)
    outs = []
    for f in (fn, torchc.compile(fn)):
        a = prep()
        y = f(*a)
        ys = y if isinstance(y, tuple) else (y,)
        gen = torch.Generator().manual_seed(1)
        loss = sum((t * torch.randn(t.shape, generator=gen, dtype=t.dtype)).sum() for t in ys if t.is_floating_point())
        loss.backward()
        outs.append((y, [a[i].grad for i in wrt]))
    (y1, g1), (y2, g2) = outs
    assert_same(y2, y1, rtol, atol)
    for a, b in zip(g2, g1):
        if b is None:
            assert a is None or not a.any()
        else:
            assert_same(a, b, rtol, atol)


def _noncontig(*shape, dtype=torch.float32):
    base = torch.randn(*shape[:-1], shape[-1] * 2, dtype=dtype)
    return base[..., ::2]


SHAPES = [(0,), (1,), (7,), (3, 5), (2, 0, 3)]


# ---- hardshrink, softshrink, celu, threshold ----------------------------------------------

ACTS = {
    "hardshrink": lambda x: F.hardshrink(x, 0.5),
    "hardshrink_method": lambda x: x.hardshrink(0.25) * 2,
    "softshrink": lambda x: F.softshrink(x, 0.5),
    "softshrink_default": lambda x: F.softshrink(x),
    "celu": lambda x: F.celu(x, 1.5),
    "celu_module": torch.nn.CELU(0.7),
    "threshold": lambda x: F.threshold(x, 0.1, 20.0),
    "threshold_module": torch.nn.Threshold(-0.3, -2.0),
}


def _special(dtype):
    return torch.tensor([float("nan"), -0.5, 0.5, -0.7, 0.7, float("inf"), -float("inf"), -0.0, 0.1, 0.25, -0.3],
                        dtype=dtype)


@pytest.mark.parametrize("name", sorted(ACTS))
@pytest.mark.parametrize("shape", [(0,), (1,), (3, 5)])
def test_act_values(name, shape):
    _whole(ACTS[name], torch.randn(shape))


@pytest.mark.parametrize("name", sorted(ACTS))
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_act_dtypes_and_specials(name, dtype):
    _whole(ACTS[name], _special(dtype))
    _whole(ACTS[name], _noncontig(4, 5, dtype=dtype))


@pytest.mark.parametrize("name", sorted(ACTS))
def test_act_grads_f64(name):
    x = torch.cat([_special(torch.float64)[1:], torch.randn(10, dtype=torch.float64)]).reshape(4, 5)
    _grads(ACTS[name], x.t())


def test_act_inplace():
    def f(x):
        y = x * 1
        F.celu(y, 2.0, inplace=True)
        F.threshold(y, 0.2, -1.0, inplace=True)
        return y
    _whole(f, torch.randn(3, 4))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int8, torch.uint8])
@pytest.mark.parametrize("th,val", [(1, 20), (0.5, 2.5), (-0.5, 2), (-1.7, -2.9), (-1, 2), (2, -1)])
def test_threshold_ints(dtype, th, val):
    if dtype == torch.uint8 and (th, val) in ((-0.5, 2), (-1.7, -2.9)):
        pytest.skip("a negative fraction into uint8 overflows (test_act_eager_errors)")
    x = torch.randint(-5, 6, (11,)).to(dtype)
    _whole(lambda x: F.threshold(x, th, val), x)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_threshold_half_compares_in_float(dtype):
    # 0.1 in half precision lies just below 0.1: eager compares in float (not in half)
    x = torch.full((3,), 0.1, dtype=dtype)
    _whole(lambda x: F.threshold(x, 0.09997, 5.0), x)
    _whole(lambda x: F.hardshrink(x, 0.09997), x)  # hardshrink: lambd in x's dtype


@pytest.mark.allow_fallback
@pytest.mark.parametrize("call", [
    lambda x: F.softshrink(x, -1.0),
    lambda x: F.celu(x, 0.0),
    lambda x: F.hardshrink(x.long()),
    lambda x: F.threshold(x.to(torch.uint8), 300, 1),
    lambda x: F.threshold(x.half(), 0.5, 1e6),
    lambda x: F.threshold(x.to(torch.uint8), -0.5, 1),
])
def test_act_eager_errors(call):
    x = torch.randn(4)
    with pytest.raises((RuntimeError, NotImplementedError)) as want:
        call(x)
    with pytest.raises(type(want.value)):
        torchc.compile(call)(x * 1)


# ---- channel_shuffle / nn.ChannelShuffle -------------------------------------------------

@pytest.mark.parametrize("shape,g", [((2, 6, 3, 4), 2), ((2, 6, 3, 4), 3), ((1, 4, 3, 2, 2), 4), ((0, 6, 3), 2),
                                     ((2, 6, 0), 3), ((3, 5, 1), 1), ((1, 1, 1), 1)])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "strided"])
def test_channel_shuffle(shape, g, layout):
    x = torch.randn(shape)
    if layout == "channels_last":
        if x.dim() != 4:
            pytest.skip("channels_last needs 4 dims")
        x = x.contiguous(memory_format=torch.channels_last)
    elif layout == "strided":
        x = _noncontig(*shape)
    got = _whole(lambda x: F.channel_shuffle(x, g), x)
    assert got.stride() == F.channel_shuffle(x, g).stride()


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.float16])
def test_channel_shuffle_module_dtypes(dtype):
    _whole(torch.nn.ChannelShuffle(2), (torch.randn(2, 4, 3) * 3).to(dtype))


def test_channel_shuffle_grads_f64():
    _grads(lambda x: F.channel_shuffle(x * 2, 3), torch.randn(2, 6, 5, dtype=torch.float64).transpose(0, 2).transpose(0, 2))
    _grads(lambda x: F.channel_shuffle(x, 2).sin(), _noncontig(2, 4, 3, dtype=torch.float64))


@pytest.mark.allow_fallback
@pytest.mark.parametrize("shape,g", [((2, 6, 3), 4), ((2, 6, 3), 0), ((2, 6), 2)])
def test_channel_shuffle_eager_errors(shape, g):
    x = torch.randn(shape)
    with pytest.raises(RuntimeError):
        F.channel_shuffle(x, g)
    with pytest.raises(RuntimeError):
        torchc.compile(lambda x: F.channel_shuffle(x * 1, g))(x)


# ---- instance_norm / nn.InstanceNorm1d/2d/3d ----------------------------------------------

@pytest.mark.parametrize("shape", [(2, 3, 5), (1, 4, 3, 3), (3, 2, 2, 3, 2), (0, 3, 4), (2, 3, 0)])
@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm_functional(shape, affine):
    C = shape[1]
    if affine and shape[0] == 0:
        pytest.skip("eager raises IndexError (weight.repeat(0)): left to eager")
    w, b = (torch.randn(C), torch.randn(C)) if affine else (None, None)
    _whole(lambda x: F.instance_norm(x, weight=w, bias=b, eps=1e-3), torch.randn(shape) * 3 + 1)


def test_instance_norm_noncontiguous_and_channels_last():
    x = torch.randn(2, 3, 4, 5)
    got = _whole(lambda x: F.instance_norm(x), x.contiguous(memory_format=torch.channels_last))
    assert got.is_contiguous()
    _whole(lambda x: F.instance_norm(x), _noncontig(2, 3, 4, 5))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_instance_norm_dtypes(dtype):
    x = torch.randn(2, 3, 6).to(dtype)
    tol = dict(rtol=1e-2, atol=1e-2) if dtype in (torch.float16, torch.bfloat16) else {}
    _whole(lambda x: F.instance_norm(x), x, **tol)
    w = torch.randn(3, dtype=dtype)
    _whole(lambda x: F.instance_norm(x, weight=w, bias=w), x, **tol)


@pytest.mark.parametrize("cls,shape", [(torch.nn.InstanceNorm1d, (2, 3, 5)), (torch.nn.InstanceNorm2d, (3, 4, 3)),
                                       (torch.nn.InstanceNorm3d, (1, 3, 2, 3, 2))])
@pytest.mark.parametrize("affine,track,training", [(False, False, True), (True, False, False), (True, True, True),
                                                    (False, True, False)])
def test_instance_norm_modules(cls, shape, affine, track, training):
    torch.manual_seed(0)
    m1 = cls(3, affine=affine, track_running_stats=track, momentum=0.3)
    if affine:
        with torch.no_grad():
            m1.weight.uniform_(0.5, 1.5)
            m1.bias.uniform_(-1, 1)
    if track:
        m1.running_mean.uniform_(-1, 1)
        m1.running_var.uniform_(0.5, 2)
    m2 = type(m1)(3, affine=affine, track_running_stats=track, momentum=0.3)
    m2.load_state_dict(m1.state_dict())
    m1.train(training)
    m2.train(training)
    x = torch.randn(shape) * 2 + 0.5
    with torch.no_grad():
        torchc.reset()
        ex = torchc.explain(m2)(x)
        assert captured_whole(ex), ex.break_reasons
        m2.load_state_dict(m1.state_dict())
        want = m1(x)
        got = torchc.compile(m2)(x)
    assert_same(got, want)
    for k, v in m1.state_dict().items():
        assert_same(m2.state_dict()[k], v)


@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm_grads_f64(affine):
    x = torch.randn(2, 3, 5, dtype=torch.float64).transpose(1, 2).contiguous().transpose(1, 2)
    w, b = torch.rand(3, dtype=torch.float64) + 0.5, torch.randn(3, dtype=torch.float64)
    rm, rv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    if affine:
        _grads(lambda x, w, b, rm, rv: F.instance_norm(x, rm, rv, w, b, use_input_stats=True), x, w, b, rm, rv,
               wrt=(0, 1, 2))
    else:
        _grads(lambda x: F.instance_norm(x) * x, x)
    # eval with running statistics
    _grads(lambda x, w, b, rm, rv: F.instance_norm(x, rm, rv, w, b, use_input_stats=False), x, w, b, rm, rv,
           wrt=(0, 1, 2))


def test_instance_norm_training_module_grads_f64():
    torch.manual_seed(0)
    m = torch.nn.InstanceNorm2d(3, affine=True).double()
    x = torch.randn(2, 3, 3, 4, dtype=torch.float64, requires_grad=True)
    want = m(x)
    want.square().sum().backward()
    gw, gx = m.weight.grad.clone(), x.grad.clone()
    m.zero_grad()
    x.grad = None
    torchc.reset()
    got = torchc.compile(m)(x)
    got.square().sum().backward()
    assert_same(got.detach(), want.detach(), 1e-7, 1e-7)
    assert_same(m.weight.grad, gw, 1e-7, 1e-7)
    assert_same(x.grad, gx, 1e-7, 1e-7)


@pytest.mark.allow_fallback
def test_instance_norm_eager_errors():
    for call in (lambda x: F.instance_norm(x[..., :1]), lambda x: F.instance_norm(x, use_input_stats=False)):
        x = torch.randn(2, 3, 4)
        with pytest.raises((ValueError, RuntimeError)) as e:
            call(x)
        with pytest.raises(type(e.value)):
            torchc.compile(call)(x)


# ---- embedding_bag / nn.EmbeddingBag ------------------------------------------------------

@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("case", ["2d", "2d_pad", "2d_psw", "2d_empty_batch", "1d", "1d_last", "1d_pad", "1d_psw",
                                  "1d_empty_input", "1d_int32"])
def test_embedding_bag(mode, case):
    w = torch.randn(10, 3)
    kw = {}
    if case.startswith("2d"):
        idx = torch.randint(0, 10, (4, 3) if case != "2d_empty_batch" else (0, 3))
        args = (idx, w)
    else:
        idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 4]) if case != "1d_empty_input" else torch.zeros(0, dtype=torch.long)
        offs = torch.tensor([0, 2, 2, 6]) if case != "1d_empty_input" else torch.tensor([0, 0])
        if case == "1d_last":
            offs = torch.tensor([0, 2, 2, 6, 8])
            kw["include_last_offset"] = True
        if case == "1d_int32":
            idx, offs = idx.int(), offs.int()
        args = (idx, w, offs)
    if case.endswith("pad"):
        kw["padding_idx"] = 4
        if case == "2d_pad":
            args[0][1] = 4  # a bag of padding only
    if case.endswith("psw"):
        if mode != "sum":
            pytest.skip("per_sample_weights: mode sum only")
        kw["per_sample_weights"] = torch.randn(args[0].shape)
    _whole(lambda *a: F.embedding_bag(*a, mode=mode, **kw), *args)


def test_embedding_bag_module_and_noncontiguous_weight():
    m = torch.nn.EmbeddingBag(7, 5, mode="sum")
    _whole(m, torch.randint(0, 7, (3, 4)))
    _whole(m, torch.tensor([1, 6, 0, 3]), torch.tensor([0, 1, 3]))
    w = torch.randn(5, 14)[:, ::2].t()  # (7, 5), strided
    _whole(lambda i, w: F.embedding_bag(i, w, mode="max"), torch.randint(0, 7, (3, 2)), w)
    _whole(lambda i, w: F.embedding_bag(i, w.double(), mode="mean"), torch.randint(0, 7, (1, 1)), w)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_grads_f64(mode):
    w = torch.randn(8, 3, dtype=torch.float64)
    idx = torch.tensor([[1, 2, 1], [7, 0, 3]])
    _grads(lambda i, w: F.embedding_bag(i, w, mode=mode, padding_idx=3), idx, w, wrt=(1,))
    if mode == "sum":
        psw = torch.randn(2, 3, dtype=torch.float64)
        _grads(lambda i, w, s: F.embedding_bag(i, w, mode="sum", per_sample_weights=s), idx, w, psw, wrt=(1, 2))
    if mode != "max":
        _grads(lambda i, w, o: F.embedding_bag(i, w, o, mode=mode), idx.flatten(), w, torch.tensor([0, 1, 1, 4]),
               wrt=(1,))


@pytest.mark.allow_fallback
@pytest.mark.parametrize("offs", [[1, 4], [0, 5, 3], [0, 9]])
def test_embedding_bag_bad_offsets_raise(offs):
    w, idx = torch.randn(10, 3), torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    f = lambda i, w, o: F.embedding_bag(i, w, o)
    with pytest.raises(RuntimeError):
        f(idx, w, torch.tensor(offs))
    cf = torchc.compile(f)
    cf(idx, w, torch.tensor([0, 3]))  # compiled; then the bad offsets rerun eagerly and raise
    with pytest.raises(RuntimeError):
        cf(idx, w, torch.tensor(offs))


@pytest.mark.allow_fallback
def test_embedding_bag_bad_index_raises():
    w = torch.randn(10, 3)
    f = lambda i, w: F.embedding_bag(i * 1, w)
    cf = torchc.compile(f)
    cf(torch.tensor([[1, 2]]), w)
    for bad in ([[1, 10]], [[1, -1]]):
        with pytest.raises(RuntimeError):
            f(torch.tensor(bad), w)
        with pytest.raises(RuntimeError):
            cf(torch.tensor(bad), w)


# ---- take_along_dim ----------------------------------------------------------------------

@pytest.mark.parametrize("xs,is_,dim", [((3, 4), (3, 2), 1), ((3, 4), (5, 1), 0), ((3, 1, 5), (1, 4, 2), 2),
                                        ((3, 4), (3, 0), 1), ((0, 4), (0, 2), 1), ((5,), (7,), 0), ((3, 4), (6,), None),
                                        ((2, 3, 4), (2, 3, 4), -1)])
def test_take_along_dim(xs, is_, dim):
    x = torch.randn(xs)
    bound = x.numel() if dim is None else xs[dim]
    idx = torch.randint(0, max(bound, 1), is_)
    f = (lambda x, i: torch.take_along_dim(x, i, dim)) if dim is not None else (lambda x, i: torch.take_along_dim(x, i))
    _whole(f, x, idx)
    if x.numel():
        xt = x.transpose(0, -1).contiguous().transpose(0, -1)  # strided unless 1-D
        if dim is None and not xt.is_contiguous():
            xt = x[:, ::1]
        _whole(lambda x, i: x.take_along_dim(i, dim=dim) * 2, xt, idx)


def test_take_along_dim_argsort_and_grads_f64():
    x = torch.randn(4, 5, dtype=torch.float64)
    _whole(lambda x: torch.take_along_dim(x, x.argsort(1), 1), x)
    _grads(lambda x, i: torch.take_along_dim(x, i, 1), x[:, ::2], torch.tensor([[0, 0], [2, 1], [1, 1], [0, 2]]))
    _grads(lambda x, i: torch.take_along_dim(x.sin(), i), x, torch.tensor([3, 3, 19]))


@pytest.mark.allow_fallback
def test_take_along_dim_out_of_range_runs_eagerly():
    x = torch.randn(3, 4)
    f = lambda x, i: torch.take_along_dim(x, i + 0, 1)
    cf = torchc.compile(f)
    assert_same(cf(x, torch.tensor([[1], [2], [3]])), f(x, torch.tensor([[1], [2], [3]])))
    bad = torch.tensor([[1], [2], [4]])
    try:
        want = f(x, bad)
    except Exception as e:
        with pytest.raises(type(e)):
            cf(x, bad)
    else:
        assert_same(cf(x, bad), want)


# ---- nanmean -----------------------------------------------------------------------------

def _with_nans(shape, dtype=torch.float32):
    x = torch.randn(shape).to(dtype)
    return x.masked_fill(torch.rand(shape) < 0.3, float("nan"))


@pytest.mark.parametrize("shape", [(0,), (7,), (3, 5), (4, 3, 2)])
@pytest.mark.parametrize("args", [(), (0,), (-1, True), ((0, -1),)])
def test_nanmean(shape, args):
    if args and len(shape) < 2 and args[0] == (0, -1):
        pytest.skip("two dims reduced of a 1-d tensor")
    _whole(lambda x: torch.nanmean(x, *args), _with_nans(shape))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_nanmean_dtypes(dtype):
    x = _with_nans((5, 6), dtype)
    x[1] = float("nan")  # a row of NaN only: NaN
    tol = dict(rtol=1e-2, atol=1e-2) if dtype in (torch.float16, torch.bfloat16) else {}
    _whole(lambda x: x.nanmean(1), x, **tol)
    _whole(lambda x: torch.nanmean(x, 0, dtype=torch.float64), x)
    _whole(lambda x: x.nanmean(), x.t(), **tol)


def test_nanmean_grads_f64():
    _grads(lambda x: torch.nanmean(x, 1), _with_nans((4, 5), torch.float64).t())


@pytest.mark.allow_fallback
def test_nanmean_int_raises():
    x = torch.tensor([1, 2])
    with pytest.raises(RuntimeError):
        torch.nanmean(x)
    with pytest.raises(RuntimeError):
        torchc.compile(lambda x: torch.nanmean(x * 1))(x)


@pytest.mark.allow_fallback
def test_take_along_dim_no_dim_of_strided_raises():
    x = torch.randn(4, 3).t()
    f = lambda x, i: torch.take_along_dim(x, i)
    with pytest.raises(RuntimeError):
        f(x, torch.tensor([1]))
    with pytest.raises(RuntimeError):
        torchc.compile(f)(x, torch.tensor([1]))


# ---- shifts: >> / << / torch.bitwise_left_shift / bitwise_right_shift ---------------------

INTS = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]


def _shift_operands(dtype, n=12):
    a = torch.tensor([-100, -1, 0, 1, 100, 7, -128, 127, 3, 5, -7, 64][:n]).to(dtype)
    bits = torch.iinfo(dtype).bits
    b = torch.tensor([0, 1, 3, bits - 1, bits, bits + 5, -1, -2, 2, 7, 1, 4][:n]).to(dtype)
    return a, b


@pytest.mark.parametrize("dtype", INTS)
def test_shift_tensor_tensor(dtype):
    a, b = _shift_operands(dtype)
    _whole(lambda a, b: (a << b, a >> b), a, b)
    _whole(lambda a, b: (torch.bitwise_left_shift(a, b), a.bitwise_right_shift(b)), a, b)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8])
@pytest.mark.parametrize("k", [0, 3, 8, 63, 64, -1])
def test_shift_by_int(dtype, k):
    a, _ = _shift_operands(dtype)
    _whole(lambda a: (a >> k, a << k), a)


def test_shift_promotion_broadcast_and_edges():
    a = torch.randint(-1000, 1000, (3, 1, 4), dtype=torch.int32)
    b = torch.randint(0, 12, (5, 1), dtype=torch.int64)
    _whole(lambda a, b: (a << b, b >> a.abs() % 70), a, b)  # int32 op int64 -> int64
    _whole(lambda a: (5 >> a.abs(), 3 << (a.abs() % 9)), a)  # int op tensor
    _whole(lambda a: (a >> 1, a << 2), torch.zeros(0, 3, dtype=torch.int64))
    _whole(lambda a: a[:, ::2] >> 3, torch.randint(-99, 99, (4, 6)))  # non-contiguous
    _whole(lambda a: torch.tensor(1) << a, torch.randint(0, 5, (7,)))
    _whole(lambda a: a.bool() << 1, torch.randint(0, 2, (7,)))  # bool tensor, int: int64


def test_shift_inplace():
    def f(a, b):
        c = a * 1
        c <<= 2
        c >>= b
        c.bitwise_left_shift_(1)
        return c
    _whole(f, torch.randint(-50, 50, (6,)), torch.randint(0, 4, (6,)))


@pytest.mark.no_compile  # the frame is left to eager whole (eager raises in it)
@pytest.mark.parametrize("call", [lambda a: a.float() << 1, lambda a: a >> 1.5, lambda a: a.bool() >> a.bool()])
def test_shift_eager_errors(call):
    a = torch.tensor([1, 2])
    with pytest.raises((RuntimeError, NotImplementedError, TypeError)) as e:
        call(a)
    with pytest.raises(type(e.value)):
        torchc.compile(lambda a: call(a + 0))(a)


# ---- index_put(_) / put(_) ------------------------------------------------------------------

@pytest.mark.parametrize("acc", [False, True])
@pytest.mark.parametrize("case", ["one", "two", "broadcast", "negative", "scalar_value", "dups", "empty_index",
                                  "int32", "noncontig", "all_dims"])
def test_index_put(acc, case):
    x = torch.randn(5, 4, 3)
    i0 = torch.tensor([0, 2, 4])
    idx, v = (i0,), torch.randn(3, 4, 3)
    if case == "two":
        idx, v = (i0, torch.tensor([1, 3, 0])), torch.randn(3, 3)
    elif case == "broadcast":
        idx, v = (torch.tensor([[0], [4]]), torch.tensor([1, 2, 3])), torch.randn(3)
    elif case == "negative":
        idx, v = (torch.tensor([-1, -5, 2]),), torch.randn(4, 1)
    elif case == "scalar_value":
        v = torch.tensor(2.5)
    elif case == "dups":
        idx = (torch.tensor([1, 1, 3, 1]),)
        v = torch.randn(4, 4, 3) if acc else torch.full((4, 4, 3), 7.0)  # duplicates write one value
    elif case == "empty_index":
        idx, v = (torch.zeros(0, dtype=torch.long),), torch.randn(0, 4, 3)
    elif case == "int32":
        idx = (i0.int(),)
    elif case == "noncontig":
        x = x.transpose(0, 1).contiguous().transpose(0, 1)
        idx, v = (i0, torch.tensor([1, 3, 0])), torch.randn(3)[:, None].expand(3, 3)
    elif case == "all_dims":
        idx, v = (i0, torch.tensor([1, 3, 0]), torch.tensor([2, 0, 1])), torch.randn(3)
    got = _whole(lambda x, v: torch.index_put(x, idx, v, accumulate=acc), x, v)
    assert got.stride() == torch.index_put(x, idx, v, accumulate=acc).stride()
    _whole(lambda x, v: x.index_put(idx, v, acc), x, v)

    def inplace(x, v):
        y = x * 1
        r = y.index_put_(idx, v, accumulate=acc)
        return y, r is y

    _whole(inplace, x, v)


def test_index_put_inplace_on_input_and_dtypes():
    def f(x, i, v):
        x.index_put_((i,), v, accumulate=True)
        return x.sum()

    x = torch.zeros(6, dtype=torch.int64)
    i, v = torch.tensor([1, 1, 5]), torch.tensor([3, 4, 5])
    x1, x2 = x.clone(), x.clone()
    torchc.reset()
    ex = torchc.explain(f)(x.clone(), i, v)
    assert captured_whole(ex), ex.break_reasons
    assert_same(torchc.compile(f)(x1, i, v), f(x2, i, v))
    assert_same(x1, x2)
    _whole(lambda x, i: x.index_put((i,), torch.tensor(True)), torch.zeros(4, dtype=torch.bool), torch.tensor([2]))


def test_index_put_grads_f64():
    x, v = torch.randn(5, 3, dtype=torch.float64), torch.randn(3, 3, dtype=torch.float64)
    i = torch.tensor([0, 3, 0])
    _grads(lambda x, v: torch.index_put(x, (i,), v, accumulate=True), x, v, wrt=(0, 1))
    _grads(lambda x, v: torch.index_put(x.sin(), (torch.tensor([4, 1]), torch.tensor([2, 0])), v[0, :2]) * 2, x, v,
           wrt=(0, 1))


@pytest.mark.allow_fallback
def test_index_put_out_of_range_raises():
    x, v = torch.zeros(3, 4), torch.tensor(1.0)
    f = lambda x, i, v: torch.index_put(x * 1, (i,), v)
    cf = torchc.compile(f)
    assert_same(cf(x, torch.tensor([2, -3]), v), f(x, torch.tensor([2, -3]), v))
    for bad in ([3], [-4]):
        with pytest.raises(IndexError):
            f(x, torch.tensor(bad), v)
        with pytest.raises(IndexError):
            cf(x, torch.tensor(bad), v)


@pytest.mark.parametrize("acc", [False, True])
@pytest.mark.parametrize("xs,ish", [((3, 4), (5,)), ((3, 4), (2, 2)), ((7,), (0,)), ((2, 0, 3), (0,)), ((1,), (3,))])
def test_put(acc, xs, ish):
    x = torch.randn(xs)
    n = x.numel()
    idx = torch.randint(-n, n, ish) if n else torch.zeros(ish, dtype=torch.long)
    src = torch.randn(ish)
    _whole(lambda x, i, s: x.put(i, s, accumulate=acc), x, idx, src)
    _whole(lambda x, i, s: torch.put(x, i, s, acc), x, idx, src)

    def inplace(x, i, s):
        y = x * 1
        y.put_(i, s, accumulate=acc)
        return y

    _whole(inplace, x, idx, src)
    if x.dim() == 2:
        _whole(inplace, x.t(), idx, src)  # flat positions of the transposed view (row-major)


def test_put_grads_f64():
    x, s = torch.randn(3, 4, dtype=torch.float64), torch.randn(2, 2, dtype=torch.float64)
    _grads(lambda x, s: x.put(torch.tensor([[0, -1], [5, 0]]), s, accumulate=True), x, s, wrt=(0, 1))
    _grads(lambda x, s: x.t().put(torch.tensor([[1, 2], [5, 7]]), s), x, s, wrt=(0, 1))


@pytest.mark.allow_fallback
def test_put_errors():
    x = torch.zeros(3, 4)
    f = lambda x, i, s: (x * 1).put_(i, s)
    cf = torchc.compile(f)
    assert_same(cf(x, torch.tensor([11]), torch.tensor([1.0])), f(x, torch.tensor([11]), torch.tensor([1.0])))
    for i, s in (([12], [1.0]), ([-13], [1.0]), ([1, 2], [1.0])):
        with pytest.raises(IndexError):
            f(x, torch.tensor(i), torch.tensor(s))
        with pytest.raises(IndexError):
            cf(x, torch.tensor(i), torch.tensor(s))


# ---- CUDA (skipped without a GPU): the same ops on the device ------------------------------

CUDA_CASES = {
    "acts": (lambda x: F.hardshrink(x) + F.softshrink(x) + F.celu(x, 0.5) + F.threshold(x, 0.1, 2.0), lambda d: (torch.randn(33, 7, device=d),)),
    "acts_half": (lambda x: (F.softshrink(x), F.celu(x), F.threshold(x, 0.1, 2.0)), lambda d: (torch.randn(9, 5, device=d).half(),)),
    "channel_shuffle": (lambda x: F.channel_shuffle(x, 3), lambda d: (torch.randn(2, 6, 5, 4, device=d),)),
    "instance_norm": (lambda x, w: F.instance_norm(x, weight=w, bias=w), lambda d: (torch.randn(2, 3, 17, device=d), torch.randn(3, device=d))),
    "embedding_bag_2d": (lambda i, w: F.embedding_bag(i, w, mode="max", padding_idx=1), lambda d: (torch.randint(0, 9, (4, 3), device=d), torch.randn(9, 5, device=d))),
    "take_along_dim": (lambda x, i: torch.take_along_dim(x, i, 1), lambda d: (torch.randn(4, 6, device=d), torch.randint(0, 6, (4, 3), device=d))),
    "nanmean": (lambda x: torch.nanmean(x.masked_fill(x > 1, float("nan")), 1), lambda d: (torch.randn(5, 7, device=d),)),
    "shifts": (lambda a, b: (a << b, a >> b, a.to(torch.uint8) >> 3, a.to(torch.int8) << 9), lambda d: _shift_operands(torch.int32)),
}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", sorted(CUDA_CASES))
def test_cuda(name):
    fn, mk = CUDA_CASES[name]
    args = [a.cuda() for a in mk("cuda")]
    _whole(fn, *args, **(dict(rtol=1e-2, atol=1e-2) if name == "acts_half" else {}))
