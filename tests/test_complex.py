"""Complex tensors in captured graphs (issues 21, 23): differential tests against eager.

A complex value is a graph value (complex64/complex128); every call that reads or makes one
is an ATen extern (dynamo_hook/ops_complex.c, torchc/_complex_ops.py), and the real values
around it are ordinary graph values, fused and compiled. Each test here checks eager's
values, dtype, shape and strides, and that the frame was captured whole (one graph, no
break): a silent fallback fails it. Gradients through complex ops are left to eager with a
reason (checked: eager's gradients, the reason in explain)."""
import functools

import pytest
import torch

import torchc

from conftest import assert_same, explain_of

G = functools.partial(torch.Generator().manual_seed)
XR = torch.randn(4, 6, generator=G(1))
XC = torch.randn(4, 4, dtype=torch.complex64, generator=G(2))
XC128 = torch.randn(3, 5, dtype=torch.complex128, generator=G(3))
CGLOB = torch.randn(4, dtype=torch.complex64, generator=G(4))

# name: (function, inputs)
CASES = {
    # complex inputs
    "c_add": (lambda x: x + 1, (XC,)),
    "c_mul_complex_scalar": (lambda x: x * (1 + 2j), (XC,)),
    "c_abs_sum": (lambda x: x.abs().sum(), (XC,)),
    "c_abs_then_real_ops": (lambda x: torch.tanh(x.abs() * 2 + 1).sum(-1), (XC,)),
    "c_real_imag": (lambda x: x.imag + x.real * 2, (XC,)),
    "c_real_returned": (lambda x: x.real, (XC,)),
    "c_imag_returned": (lambda x: x.imag, (XC,)),
    "c_conj_plus": (lambda x: x.conj() + 0, (XC,)),
    "c_mH_matmul": (lambda x: x.mH @ x, (XC,)),
    "c_mT_T_H": (lambda x: x.mT + x.T - x.H, (XC,)),
    "c_matrix_exp": (lambda x: torch.linalg.matrix_exp(x), (XC,)),
    "c_view_as_real": (lambda x: torch.view_as_real(x) * 2, (XC,)),
    "c_angle": (lambda x: x.angle(), (XC,)),
    "c_sum_dim": (lambda x: x.sum(0), (XC,)),
    "c_exp": (lambda x: torch.exp(x), (XC,)),
    "c_index": (lambda x: x[1:, ::2] * 2, (XC,)),
    "c_eq": (lambda x: (x == x.conj()).float().sum(), (XC,)),
    "c_neg": (lambda x: -x, (XC,)),
    "c_is_complex_branch": (lambda x: x * 2 if x.is_complex() else x * 3, (XC,)),
    "c_is_floating_point": (lambda x: x * 2 if x.is_floating_point() else x * 3, (XC,)),
    "c_to_own_device": (lambda x: x.to(x.device) * 2 + x.to("cpu") - x.to(device="cpu", dtype=torch.complex128),
                        (XC,)),
    "c_shape_dtype": (lambda x: x.new_zeros(x.shape[0], dtype=x.dtype) + x.size(1), (XC,)),
    "c_unbind": (lambda x: x.unbind(0)[1] * 2 + x.unbind(1)[0], (XC,)),
    "c_chunk_split": (lambda x: x.chunk(2, -1)[0] + x.split(2, 1)[1], (XC,)),
    "c_eig_values": (lambda x: torch.linalg.eig(x)[0].abs().sort().values, (XC,)),
    "c_stack_cat": (lambda x: torch.cat([torch.stack([x, x * 1j]).sum(0), x.conj()], 0).real, (XC,)),
    "c_iterate_rows": (lambda x: sum(r.abs() for r in x), (XC,)),
    "c_einsum": (lambda x: torch.einsum("ij,kj->ik", x, x.conj()), (XC,)),
    "c_where": (lambda x: torch.where(x.real > 0, x, torch.zeros_like(x)), (XC,)),
    "c128_ops": (lambda x: (x * 3 - 1j).abs() ** 2, (XC128,)),
    "c_times_real": (lambda x, y: (x * y[:, :4]).real, (XC, XR)),
    "c_global": (lambda x: (x[:, :4] * CGLOB).imag, (XR,)),
    # real inputs, complex inside
    "r_times_complex_scalar": (lambda x: x * (1 + 2j), (XR,)),
    "r_exp_1j_real": (lambda x: torch.exp(1j * x).real, (XR,)),
    "r_plus_1j_abs": (lambda x: (x + 1j).abs(), (XR,)),
    "r_to_complex": (lambda x: x.to(torch.complex64) * 2, (XR,)),
    "r_to_dtype_kw": (lambda x: x.to(dtype=torch.complex64).real, (XR,)),
    "r_type_complex": (lambda x: x.type(torch.complex64) + 1, (XR,)),
    "r_cdouble": (lambda x: x.double().to(torch.complex128) + 1, (XR,)),
    "r_torch_complex": (lambda x: torch.complex(x, x * 2).abs(), (XR,)),
    "r_polar": (lambda x: torch.polar(x.abs(), x).imag, (XR,)),
    "r_view_as_complex": (lambda x: torch.view_as_complex(x.reshape(4, 3, 2)).abs(), (XR,)),
    "r_fft": (lambda x: torch.fft.fft(x).abs(), (XR,)),
    "r_rfft_ifft": (lambda x: torch.fft.ifft(torch.fft.rfft(x, dim=0)).real.sum(), (XR,)),
    "r_fftn_real": (lambda x: torch.fft.fftn(x.reshape(2, 2, 6), dim=(1, 2)).real, (XR,)),
    "r_zeros_complex": (lambda x: torch.zeros(4, 6, dtype=torch.complex64) + x, (XR,)),
    "r_ones_like_complex": (lambda x: torch.ones_like(x, dtype=torch.complex64) * x, (XR,)),
    "r_zeros_complex_device": (lambda x: torch.zeros(6, dtype=torch.complex64, device=x.device) + x, (XR,)),
    "r_full_complex": (lambda x: torch.full((6,), 1 + 1j) * x, (XR,)),
    "r_complex_matrix_exp": (lambda x: torch.linalg.matrix_exp((x[:, :4] - x[:, :4].T).to(torch.complex64) * 1j),
                             (XR,)),
}


def _same_strides(got, want):
    if isinstance(want, torch.Tensor):
        assert got.stride() == want.stride(), (got.stride(), want.stride())


def _check_whole(f, *args):
    e = explain_of(f, *args)
    assert e.graph_count == 1 and e.graph_break_count == 0, (e.graph_count, e.break_reasons)
    return e


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_op_compiles_whole_and_matches_eager(name):
    f, xs = CASES[name]
    want = f(*[x.clone() for x in xs])
    cf = torchc.compile(f)
    for _ in range(2):  # the first call (capture) and a cached one
        got = cf(*[x.clone() for x in xs])
        assert_same(got, want)
        _same_strides(got, want)
    _check_whole(f, *xs)


@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 0, 2), (1, 1), (5, 3)])
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_edge_shapes(shape, dtype):
    x = torch.randn(shape, dtype=dtype, generator=G(5))

    def f(x):
        return (x * (2 - 1j)).abs() + x.real, torch.view_as_real(x.conj() * x)

    got = torchc.compile(f)(x)
    want = f(x)
    assert_same(got, want)
    for g, w in zip(got, want):
        _same_strides(g, w)
    _check_whole(f, x)


def test_complex_non_contiguous_and_broadcast_inputs():
    x = torch.randn(5, 4, dtype=torch.complex64, generator=G(6)).T  # transposed
    y = torch.randn(4, 1, dtype=torch.complex64, generator=G(7))  # broadcast
    z = torch.randn(8, 5, dtype=torch.complex64, generator=G(8))[::2]  # strided rows

    def f(x, y, z):
        return (x * y + z).abs(), x @ z.T.conj()

    got = torchc.compile(f)(x, y, z)
    want = f(x, y, z)
    assert_same(got, want)
    _check_whole(f, x, y, z)


@pytest.mark.parametrize("view", ["view_as_real", "real", "mH", "getitem"])
def test_complex_views_returned_are_eagers_views(view):
    """A view returned (of an input) is rebuilt on the real input, as eager's view is."""
    f = {"view_as_real": lambda x: torch.view_as_real(x), "real": lambda x: x.real,
         "mH": lambda x: x.mH, "getitem": lambda x: x[1:, :2]}[view]
    x = XC.clone()
    got, want = torchc.compile(f)(x), f(x)
    assert_same(got, want)
    assert got.stride() == want.stride() and got.storage_offset() == want.storage_offset()
    assert got.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()  # shares x's data
    _check_whole(f, x)


def test_complex_output_aliasing_an_input_is_a_fresh_tensor():
    """view_as_real(x) is a view in eager and a copy here: values and strides as eager's; an
    in-place update through it is left to eager (eager's update reaches x)."""
    x = XC.clone()

    def f(x):
        r = torch.view_as_real(x)
        return r * 1

    assert_same(torchc.compile(f)(x), f(x))
    _check_whole(f, x)


@pytest.mark.allow_fallback
def test_complex_in_place_updates_are_left_to_eager_with_a_reason():
    def f(x):
        r = torch.view_as_real(x)
        r.mul_(2)  # writes x in eager
        return x.abs()

    def g(x):
        x.mul_(1j)
        return x.real

    def h(x):
        x.real.add_(1)
        return x * 1

    for fn in (f, g, h):
        a, b = XC.clone(), XC.clone()
        got = torchc.compile(fn)(a)
        want = fn(b)
        assert_same(got, want)
        assert_same(a, b)  # the input updated as eager updates it
    e = explain_of(g, XC.clone())
    assert any("complex" in str(r) for r in e.break_reasons), e.break_reasons


def test_real_neighbours_still_fuse_into_kernels():
    """One graph: the complex part is ATen externs, the real part compiled kernels (fused):
    a real chain after .abs() counts as ops of the graph, not as externs."""
    def f(x, w):
        h = torch.fft.fft(x).abs()  # externs
        return torch.nn.functional.layer_norm(torch.tanh(h * w + 1), (6,)).relu()  # kernels

    w = torch.randn(6, generator=G(9))
    e = _check_whole(f, XR, w)
    assert e.op_count > 0, str(e)
    assert_same(torchc.compile(f)(XR, w), f(XR, w))


# ---- llama4's rotary embeddings, as transformers writes them ---------------------------------
class Llama4StyleRotary(torch.nn.Module):
    def __init__(self, head_dim=8, theta=500000.0, scaling=1.0):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.attention_scaling = scaling

    def forward(self, x, position_ids):
        freqs = position_ids[..., None].float() * self.inv_freq.to(device=x.device, dtype=torch.float)
        freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
        return freqs_cis * self.attention_scaling


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    xq_out = torch.view_as_real(xq_ * freqs_cis[:, :, None, :]).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis[:, :, None, :]).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class RotaryAttentionBlock(torch.nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads, self.hd = heads, dim // heads
        self.q = torch.nn.Linear(dim, dim, bias=False)
        self.k = torch.nn.Linear(dim, dim, bias=False)
        self.v = torch.nn.Linear(dim, dim, bias=False)
        self.o = torch.nn.Linear(dim, dim, bias=False)
        self.rope = Llama4StyleRotary(self.hd, scaling=0.9)

    def forward(self, x, position_ids):
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, self.hd)
        k = self.k(x).view(b, s, self.heads, self.hd)
        v = self.v(x).view(b, s, self.heads, self.hd)
        with torch.autocast(device_type="cpu", enabled=False):
            freqs_cis = self.rope(x, position_ids)
        q, k = apply_rotary_emb(q, k, freqs_cis)
        a = torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                             is_causal=True)
        return self.o(a.transpose(1, 2).reshape(b, s, -1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_llama4_rotary_block_compiles_whole(dtype):
    torch.manual_seed(0)
    m = RotaryAttentionBlock().to(dtype).eval()
    x = torch.randn(2, 5, 32, dtype=dtype)
    pos = torch.arange(5)[None].expand(2, 5)
    with torch.no_grad():
        want = m(x, pos)
        got = torchc.compile(m)(x, pos)
        tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else {}
        assert_same(got, want, **tol)
        _check_whole(m, x, pos)


# ---- FNet's Fourier mixing ---------------------------------------------------------------------
class FNetStyleBlock(torch.nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.fourier_transform = functools.partial(torch.fft.fftn, dim=(1, 2))
        self.ln1 = torch.nn.LayerNorm(dim)
        self.ff = torch.nn.Sequential(torch.nn.Linear(dim, 2 * dim), torch.nn.GELU(), torch.nn.Linear(2 * dim, dim))
        self.ln2 = torch.nn.LayerNorm(dim)

    def forward(self, h):
        mixed = self.fourier_transform(h).real
        h = self.ln1(h + mixed)
        return self.ln2(h + self.ff(h))


def test_fnet_fourier_block_compiles_whole():
    torch.manual_seed(0)
    m = FNetStyleBlock().eval()
    h = torch.randn(2, 7, 16)
    with torch.no_grad():
        assert_same(torchc.compile(m)(h), m(h))
        _check_whole(m, h)


# ---- unitary parametrization: skew-Hermitian -> matrix_exp ------------------------------------
def _unitary(A):
    X = A.triu(1)
    X = X - X.mH + torch.diag_embed(1j * A.diagonal(dim1=-2, dim2=-1).imag)
    return torch.linalg.matrix_exp(X)


def test_unitary_parametrization_forward_compiles_whole():
    A = torch.randn(6, 6, dtype=torch.complex64, generator=G(10))
    x = torch.randn(3, 6, dtype=torch.complex64, generator=G(11))

    def f(A, x):
        U = _unitary(A)
        return (x @ U.mT).abs(), U

    with torch.no_grad():
        got = torchc.compile(f)(A, x)
        want = f(A, x)
        assert_same(got, want)
        U = got[1].to(torch.complex128)
        assert (U.mH @ U - torch.eye(6)).abs().max() < 1e-5
        _check_whole(f, A, x)


def test_unitary_parametrization_backward_compiles_and_matches_eager():
    """Gradients through complex ops are compiled (inductor_c/graph/vjp_extern.c vjp_custom:
    ATen's derivative of each complex extern, conjugate Wirtinger convention): one graph, no
    break, one backward graph, and eager's gradients; the real part compiles with it."""
    A0 = torch.randn(6, 6, dtype=torch.complex64, generator=G(12))
    w0 = torch.randn(6, generator=G(13))
    x = torch.randn(3, 6, dtype=torch.complex64, generator=G(14))

    def f(A, w, x):
        s = torch.tanh(w * 2)
        U = _unitary(A)
        return ((x @ U.mT).abs() * s).sum()

    A, w = A0.clone().requires_grad_(), w0.clone().requires_grad_()
    got = torchc.compile(f)(A, w, x)
    gA, gw = torch.autograd.grad(got, (A, w))
    A2, w2 = A0.clone().requires_grad_(), w0.clone().requires_grad_()
    want = f(A2, w2, x)
    wA, ww = torch.autograd.grad(want, (A2, w2))
    assert_same(got, want)
    assert_same(gA, wA, rtol=1e-4, atol=1e-5)
    assert_same(gw, ww, rtol=1e-4, atol=1e-5)
    e = explain_of(f, A, w, x)
    assert e.graph_count == 1 and e.graph_break_count == 0 and e.backward_graph_count == 1, str(e)


def test_complex_input_requiring_grad_compiles_its_backward():
    A0 = torch.randn(4, 4, dtype=torch.complex64, generator=G(15))

    def f(A):
        return (A * A.conj()).real.sum()

    A = A0.clone().requires_grad_()
    got = torchc.compile(f)(A)
    (g,) = torch.autograd.grad(got, A)
    A2 = A0.clone().requires_grad_()
    (w,) = torch.autograd.grad(f(A2), A2)
    assert_same(g, w)
    e = explain_of(f, A)
    assert e.graph_count == 1 and e.graph_break_count == 0 and e.backward_graph_count == 1, str(e)
