"""Torch ops that real models call and torchc's graphs had no op for, written as Python over
ops the graph has (registered in torchc/_polyfills.py's POLYFILLS: the frame hook inlines
them where the traced code calls the original, torch.X or Tensor.X). Each one follows ATen's
own implementation step by step (the same operations in the same order, so values round as
eager's do) and its result's dtype, shape and strides are eager's; gradients come from the
operations used, arranged to be eager's where ATen's formula differs (noted per op).

What a polyfill does not cover it hands to the original (an `out=`, an unusual argument, a
shape eager rejects): that call is traced as written, which breaks the graph there with the
usual reason, and eager runs it (and raises where eager raises).

Not here: ops whose result depends on ATen's internal order beyond values, e.g. the index
kthvalue / median(dim) return among equal values (their quickselect's, not a sort's): those
are graph externs running ATen's own selection (dynamo_hook/ops_reduce.c sym_h_select); the
median/nanmedian polyfills hand them the dim= calls.
"""
import importlib

import torch

_VF = torch._C._VariableFunctions
_T = torch.Tensor
_Tensor = torch.Tensor

_diag = _VF.diag
_diag_embed = _VF.diag_embed
_diagflat = _VF.diagflat
_cosine_similarity = _VF.cosine_similarity
_take = _VF.take
_atleast = (None, _VF.atleast_1d, _VF.atleast_2d, _VF.atleast_3d)
_searchsorted = _VF.searchsorted
_median = _VF.median
_nanmedian = _VF.nanmedian
_cdist = _VF.cdist
_tensordot = _VF.tensordot
_kron = _VF.kron
_logspace = _VF.logspace


# ---- diagonals ------------------------------------------------------------------------------

def _embed(v, k):
    """(..., n) -> (..., m, m), m = n + |k|: v on diagonal k of the last two dims, zeros
    elsewhere (a fresh contiguous tensor, as ATen's zeros + diagonal().copy_())"""
    n = v.shape[-1]
    a = k if k >= 0 else -k
    m = n + a
    vp = v
    if a > 0:
        vp = torch.cat([v, v.new_zeros(v.shape[:-1] + (a,))], -1)
    i = torch.arange(m, device=v.device)
    mask = (i.unsqueeze(0) - i.unsqueeze(1)) == k  # [r, c]: c - r == k
    src = vp.unsqueeze(-1) if k >= 0 else vp.unsqueeze(-2)  # v[r] (k >= 0) or v[c]
    return torch.where(mask, src, v.new_zeros(())).contiguous()


def diag(input, diagonal=0, *, out=None):
    if out is not None or not isinstance(input, _Tensor) or not isinstance(diagonal, int) or \
            input.dim() not in (1, 2):
        return _diag(input, diagonal) if out is None else _diag(input, diagonal, out=out)
    if input.dim() == 1:
        return _embed(input, diagonal)
    return torch.diagonal(input, diagonal).clone(memory_format=torch.contiguous_format)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    if not isinstance(input, _Tensor) or not isinstance(offset, int) or not isinstance(dim1, int) or \
            not isinstance(dim2, int):
        return _diag_embed(input, offset, dim1, dim2)
    nd = input.dim() + 1
    if input.dim() == 0 or not (-nd <= dim1 < nd and -nd <= dim2 < nd):
        return _diag_embed(input, offset, dim1, dim2)
    d1 = dim1 % nd
    d2 = dim2 % nd
    if d1 == d2:
        return _diag_embed(input, offset, dim1, dim2)  # eager raises
    r = _embed(input, offset)
    if d1 == nd - 2 and d2 == nd - 1:
        return r
    return torch.movedim(r, (nd - 2, nd - 1), (d1, d2)).contiguous()


def diagflat(input, offset=0):
    if not isinstance(input, _Tensor) or not isinstance(offset, int):
        return _diagflat(input, offset)
    return _embed(input.reshape(-1), offset)


# ---- F.cosine_similarity ---------------------------------------------------------------------
# ATen (Distance.cpp): integer operands cast to the common dtype, both expanded, each divided
# by its norm over dim (clamped to eps in place under no_grad: the gradient is the norm's,
# unclamped), the products summed over dim.

def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    if not isinstance(x1, _Tensor) or not isinstance(x2, _Tensor) or not isinstance(dim, int) or \
            not isinstance(eps, (int, float)) or x1.is_complex() or x2.is_complex() or \
            torch.is_autocast_enabled(x1.device.type):  # autocast's float32 op: eager's own casts
        return _cosine_similarity(x1, x2, dim, eps)
    ct = torch.result_type(x1, x2)
    if not ct.is_floating_point:
        return _cosine_similarity(x1, x2, dim, eps)  # eager raises
    if not x1.is_floating_point():
        x1 = x1.to(ct)
    if not x2.is_floating_point():
        x2 = x2.to(ct)
    x1, x2 = torch.broadcast_tensors(x1, x2)
    n1 = torch.linalg.vector_norm(x1, 2, dim, True)
    n2 = torch.linalg.vector_norm(x2, 2, dim, True)
    if n1.requires_grad:
        d1 = n1.detach()
        n1 = (n1 - d1) + d1.clamp_min(eps)  # the clamped value, the norm's gradient
    else:
        n1 = n1.clamp_min(eps)
    if n2.requires_grad:
        d2 = n2.detach()
        n2 = (n2 - d2) + d2.clamp_min(eps)
    else:
        n2 = n2.clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


# ---- take, atleast_nd ------------------------------------------------------------------------

def take(input, index, *, out=None):
    if out is not None or not isinstance(input, _Tensor) or not isinstance(index, _Tensor) or \
            index.dtype != torch.int64:
        return _take(input, index) if out is None else _take(input, index, out=out)
    return input.reshape(-1)[index.reshape(-1)].reshape(index.shape)


def _at_least(x, n):
    d = x.dim()
    if d >= n:
        return x
    if d == 0:
        return x.reshape((1,) * n)
    if n == 2 or d == 2:  # (k,) -> (1, k); (a, b) -> (a, b, 1)
        return x.unsqueeze(0) if n == 2 else x.unsqueeze(-1)
    return x.unsqueeze(0).unsqueeze(-1)  # (k,) -> (1, k, 1)


def _atleast_all(tensors, n, orig):
    if isinstance(tensors, _Tensor):
        return _at_least(tensors, n)
    if not isinstance(tensors, (list, tuple)):
        return orig(tensors)
    r = []
    for x in tensors:
        if not isinstance(x, _Tensor):
            return orig(tensors)
        r.append(_at_least(x, n))
    return tuple(r)


def atleast_1d(tensors):
    return _atleast_all(tensors, 1, _atleast[1])


def atleast_2d(tensors):
    return _atleast_all(tensors, 2, _atleast[2])


def atleast_3d(tensors):
    return _atleast_all(tensors, 3, _atleast[3])


# ---- searchsorted -----------------------------------------------------------------------------
# Eager's binary search along the last dim: lo moves past mid while !(b[mid] >= x) (right:
# !(b[mid] > x)), else hi comes down to mid; a 1-d sequence is bucketize's.

def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    s = sorted_sequence
    ok = out is None and sorter is None and isinstance(s, _Tensor) and s.dim() >= 1 and \
        isinstance(out_int32, bool) and isinstance(right, bool) and side in (None, "left", "right") and \
        not (side == "left" and right) and s.dtype != torch.bool and s.shape[-1] <= 1024
    if ok and isinstance(input, _Tensor):
        ok = input.dtype != torch.bool and (s.dim() == 1 or (input.dim() == s.dim() and input.shape[:-1] == s.shape[:-1]))
    elif ok:
        ok = isinstance(input, (int, float)) and not isinstance(input, bool) and s.dim() == 1
    if not ok:
        return _searchsorted(s, input, out_int32=out_int32, right=right, side=side, sorter=sorter, out=out)
    if side == "right":
        right = True
    x = input
    if not isinstance(x, _Tensor):  # a number: compared in the sequence's dtype, as eager's wrapped scalar
        x = torch.tensor(x, dtype=torch.float64 if isinstance(x, float) else torch.int64, device=s.device)
    if s.dim() == 1:
        return torch.bucketize(x, s, out_int32=out_int32, right=right)
    n = s.shape[-1]
    lo = torch.zeros(x.shape, dtype=torch.int64, device=x.device)
    hi = lo + n
    span = n
    while span > 0:   # eager's binary search, step by step (a count differs with NaN or unsorted rows)
        on = lo < hi
        mid = lo + (hi - lo) // 2
        b = torch.gather(s, -1, mid.clamp(max=n - 1))
        past = ~(b > x) if right else ~(b >= x)
        lo = torch.where(on & past, mid + 1, lo)
        hi = torch.where(on & ~past, mid, hi)
        span >>= 1
    return lo.to(torch.int32) if out_int32 else lo


# ---- median / nanmedian of all elements --------------------------------------------------------
# The lower median of the sorted values (NaN sorts last: median is NaN if any is, nanmedian
# counts the others). The gradient is spread evenly over the elements equal to the result
# (ATen's evenly_distribute_backward), not sent to the one a sort picked.

def _spread(input, r):
    if not input.requires_grad:
        return r
    f = input.reshape(-1)
    mask = (f == r) | (torch.isnan(f) & torch.isnan(r))
    w = mask / mask.sum()
    return r.detach() + (torch.where(mask, f - f.detach(), 0.0) * w).sum()


def median(input, dim=None, keepdim=False, *, out=None):
    if dim is not None or out is not None or not isinstance(input, _Tensor) or input.numel() == 0 or \
            input.is_complex() or input.dtype == torch.bool:
        if dim is None and out is None:
            return _median(input)
        return _median(input, dim, keepdim) if out is None else _median(input, dim, keepdim, out=out)
    f = input.reshape(-1)
    s = torch.sort(f).values
    r = s[(f.numel() - 1) // 2]
    if input.is_floating_point():
        r = torch.where(torch.isnan(s[-1]), s[-1], r)
    return _spread(input, r)


def nanmedian(input, dim=None, keepdim=False, *, out=None):
    if dim is not None or out is not None or not isinstance(input, _Tensor) or input.numel() == 0 or \
            input.is_complex() or input.dtype == torch.bool:
        if dim is None and out is None:
            return _nanmedian(input)
        return _nanmedian(input, dim, keepdim) if out is None else _nanmedian(input, dim, keepdim, out=out)
    if not input.is_floating_point():
        return median(input)
    f = input.reshape(-1)
    s = torch.sort(f).values
    k = ((~torch.isnan(f)).sum() - 1).div(2, rounding_mode="floor").clamp_min(0)
    return _spread(input, s.gather(0, k.reshape(1)).reshape(()))


# ---- quantile / nanquantile -------------------------------------------------------------------
# ATen's quantile_compute (Sorting.cpp) step by step, for a Python float q: the sorted values
# (NaN last), ranks q * (n - 1) in the input's dtype (nanquantile: q * (non-NaN count - 1),
# at least 0; quantile: the last index where a NaN is, so the result is NaN), rounded per the
# interpolation, the values gathered below (and above, then lerp'd). A tensor q (its range is
# checked on values), a 0-d input with a dim and anything unusual go to the original.

_quantile = _VF.quantile
_nanquantile = _VF.nanquantile
_QMODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_plain(input, q, dim, keepdim, interpolation, out):
    return out is None and isinstance(input, _Tensor) and type(q) in (float, int) and 0 <= q <= 1 and \
        input.dtype in (torch.float32, torch.float64) and input.numel() > 0 and \
        isinstance(keepdim, bool) and interpolation in _QMODES and \
        (dim is None or (type(dim) is int and input.dim() > 0 and -input.dim() <= dim < input.dim()))


def _quantile_compute(input, q, dim, keepdim, interpolation, ignore_nan):
    if dim is None:
        s = torch.sort(input.reshape(-1)).values
        rest = (1,) * input.dim() if keepdim else ()
    else:
        dim = dim % input.dim()
        s = torch.sort(input, dim).values.movedim(dim, -1)
        rest = tuple(1 if i == dim else n for i, n in enumerate(input.shape) if keepdim or i != dim)
    n = s.shape[-1]
    s = s.reshape(rest + (n,))
    qt = torch.full((), q, dtype=input.dtype, device=input.device)
    nan = torch.isnan(s)
    if ignore_nan:
        ranks = qt * ((~nan).sum(-1, keepdim=True) - 1)
        ranks = ranks.masked_fill(ranks < 0, 0)
    else:
        ranks = torch.where(nan.any(-1, keepdim=True), float(n - 1), qt * (n - 1))
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    below = ranks.long()
    r = s.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        w = torch.full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below
        r = torch.lerp(r, s.gather(-1, ranks.ceil().long()), w)
    return r.squeeze(-1)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    if not _quantile_plain(input, q, dim, keepdim, interpolation, out):
        if out is None:
            return _quantile(input, q, dim, keepdim, interpolation=interpolation)
        return _quantile(input, q, dim, keepdim, interpolation=interpolation, out=out)
    return _quantile_compute(input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    if not _quantile_plain(input, q, dim, keepdim, interpolation, out):
        if out is None:
            return _nanquantile(input, q, dim, keepdim, interpolation=interpolation)
        return _nanquantile(input, q, dim, keepdim, interpolation=interpolation, out=out)
    return _quantile_compute(input, q, dim, keepdim, interpolation, True)


# ---- associative_scan (torch._higher_order_ops, combine_mode="generic") -------------------------
# torch's generic_associative_scan step by step over xs moved to dim 0 (flipped for reverse): the
# recursive odd/even pairing, combine_fn applied through torch.vmap as eager applies it (so the
# same operations combine the same elements, in the same order). xs a tensor or a flat tuple/list
# of tensors; the "pointwise" mode (a compiled CUDA kernel) and other pytrees go to the original.

_associative_scan = importlib.import_module("torch._higher_order_ops.associative_scan").associative_scan


def _interleave0(a, b):
    """a[0], b[0], a[1], b[1], ... along dim 0 (a one longer than b, or as long)"""
    short = a.shape[0] == b.shape[0] + 1
    if short:
        b = torch.cat([b, torch.zeros_like(a[:1])])
    r = torch.stack([a, b], dim=1).flatten(0, 1)
    return r[:a.shape[0] + b.shape[0] - 1] if short else r


def _assoc_scan0(op, elems):
    n = elems[0].shape[0]
    if n < 2:
        return elems
    odd = _assoc_scan0(op, op(*[e[0:-1:2] for e in elems], *[e[1::2] for e in elems]))
    if n == 2:  # eager maps combine_fn over 0 elements; their empty results give way to e[0:1]
        even = [e[2:] for e in elems]
    elif n % 2 == 0:
        even = op(*[e[0:-1] for e in odd], *[e[2::2] for e in elems])
    else:
        even = op(*odd, *[e[2::2] for e in elems])
    even = [torch.cat([e[0:1], r], dim=0) if r.numel() > 0 and e.shape[0] > 0 else r if r.numel() > 0 else e[0:1]
            for e, r in zip(elems, even)]
    return [_interleave0(e, o) for e, o in zip(even, odd)]


def associative_scan(combine_fn, xs, dim, reverse=False, combine_mode="pointwise"):
    one = isinstance(xs, _Tensor)
    leaves = [xs] if one else list(xs) if type(xs) in (tuple, list) else []
    nd = leaves[0].ndim if leaves and isinstance(leaves[0], _Tensor) else 0
    if combine_mode != "generic" or not leaves or not callable(combine_fn) or type(dim) is not int or \
            type(reverse) is not bool or not all(isinstance(x, _Tensor) and x.ndim == nd for x in leaves) or \
            not -nd <= dim < nd or any(x.shape[dim] == 0 or x.is_sparse for x in leaves):
        return _associative_scan(combine_fn, xs, dim, reverse, combine_mode)
    dim = dim % nd
    leaves = [torch.movedim(x, dim, 0) for x in leaves]
    if reverse:
        leaves = [torch.flip(x, [0]) for x in leaves]
    mapped = torch.vmap(combine_fn, in_dims=0, out_dims=0)
    k = len(leaves)

    def op(*args):
        lhs, rhs = (args[0], args[k]) if one else (type(xs)(args[:k]), type(xs)(args[k:]))
        r = mapped(lhs, rhs)
        return [r] if isinstance(r, _Tensor) else list(r)

    out = _assoc_scan0(op, leaves)
    if reverse:
        out = [o.flip([0]) for o in out]
    out = [torch.movedim(o, 0, dim) for o in out]
    return out[0] if one else type(xs)(out)


# ---- cdist ------------------------------------------------------------------------------------
# ATen (Distance.cpp): p = 2 by matrix products when asked (compute_mode 1) or when either
# operand has more than 25 rows (mode None/0): [-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T clamped
# at 0, square-rooted; otherwise each distance from the differences (p = 1: their absolute
# sum). Batch dims broadcast. A zero distance has a zero gradient (ATen's backward).

def _sqrt0(s):
    z = s <= 0
    return torch.where(z, 0.0, torch.where(z, 1.0, s).sqrt())


def cdist(x1, x2, p=2.0, compute_mode=None):
    ok = isinstance(x1, _Tensor) and isinstance(x2, _Tensor) and isinstance(p, (int, float)) and \
        (p == 2 or p == 1) and compute_mode in (None, 0, 1, 2) and x1.dim() >= 2 and x2.dim() >= 2 and \
        x1.is_floating_point() and x1.dtype == x2.dtype and x1.shape[-1] == x2.shape[-1] and \
        x1.numel() > 0 and x2.numel() > 0 and not torch.is_autocast_enabled(x1.device.type) and \
        (x1.dtype in (torch.float32, torch.float64) or x1.device.type != "cpu")
    # (under autocast eager runs all of cdist in float32: left to it; eager's CPU kernel has no
    # 16-bit version: it raises)
    if not ok:
        return _cdist(x1, x2, p, compute_mode)
    r1 = x1.shape[-2]
    r2 = x2.shape[-2]
    c = x1.shape[-1]
    s1 = x1.shape[:-2]
    s2 = x2.shape[:-2]
    n = max(len(s1), len(s2))
    bl = []
    nb = 1
    for i in range(n):
        u = s1[i - n + len(s1)] if i - n + len(s1) >= 0 else 1
        v = s2[i - n + len(s2)] if i - n + len(s2) >= 0 else 1
        if u != v and u != 1 and v != 1:
            return _cdist(x1, x2, p, compute_mode)  # eager raises
        bl.append(v if u == 1 else u)
        nb = nb * bl[i]
    batch = tuple(bl)
    a = x1.expand(batch + (r1, c)).reshape(nb, r1, c)
    b = x2.expand(batch + (r2, c)).reshape(nb, r2, c)
    mode = 0 if compute_mode is None else compute_mode
    if p == 2 and (mode == 1 or (mode == 0 and (r1 > 25 or r2 > 25))):
        an = a.pow(2).sum(-1, True)
        bn = b.pow(2).sum(-1, True)
        a_ = torch.cat([a.mul(-2), an, torch.ones_like(an)], -1)
        b_ = torch.cat([b, torch.ones_like(bn), bn], -1)
        d = _sqrt0(a_.matmul(b_.mT))
    else:
        diff = a.unsqueeze(-2) - b.unsqueeze(-3)
        if p == 1:
            d = diff.abs().sum(-1)
        else:
            d = _sqrt0(diff.pow(2).sum(-1))
    return d.reshape(batch + (r1, r2))


# ---- tensordot, kron --------------------------------------------------------------------------

def tensordot(a, b, dims_a, dims_b, out=None):
    ok = out is None and isinstance(a, _Tensor) and isinstance(b, _Tensor) and a.dtype == b.dtype and \
        len(dims_a) == len(dims_b)
    na = a.dim() if ok else 0
    nb = b.dim() if ok else 0
    da = []
    db = []
    for i in range(len(dims_a) if ok else 0):
        x = dims_a[i]
        y = dims_b[i]
        if not (isinstance(x, int) and isinstance(y, int) and -na <= x < max(na, 1) and -nb <= y < max(nb, 1)):
            ok = False
            break
        da.append(x % na if na else 0)
        db.append(y % nb if nb else 0)
    for i in range(len(da) if ok else 0):
        for j in range(i):
            if da[i] == da[j] or db[i] == db[j]:
                ok = False  # eager raises
    if ok and (na == 0 or nb == 0):
        ok = False
    if not ok:
        return _tensordot(a, b, dims_a, dims_b) if out is None else _tensordot(a, b, dims_a, dims_b, out=out)
    t1 = a
    t2 = b
    csize = 1
    for i in range(len(da)):
        s1 = a.shape[da[i]]
        s2 = b.shape[db[i]]
        if s2 == 1:  # broadcast: summed right away
            t1 = t1.sum(da[i], True, dtype=t1.dtype)
        elif s1 == 1:
            t2 = t2.sum(db[i], True, dtype=t2.dtype)
        elif s1 != s2:
            return _tensordot(a, b, dims_a, dims_b)  # eager raises
        else:
            csize = csize * s1
    p1 = []
    p2 = []
    rs = []
    size1 = 1
    size2 = 1
    for i in range(na):
        if i not in da:
            p1.append(i)
            size1 = size1 * t1.shape[i]
            rs.append(t1.shape[i])
    p1 = p1 + da
    p2 = p2 + db
    for i in range(nb):
        if i not in db:
            p2.append(i)
            size2 = size2 * t2.shape[i]
            rs.append(t2.shape[i])
    t1 = t1.permute(p1).reshape(size1, csize)
    t2 = t2.permute(p2).reshape(csize, size2)
    return torch.mm(t1, t2).reshape(rs)


def kron(input, other, *, out=None):
    if out is not None or not isinstance(input, _Tensor) or not isinstance(other, _Tensor):
        return _kron(input, other) if out is None else _kron(input, other, out=out)
    nd = max(input.dim(), other.dim())
    pa = nd - input.dim()
    pb = nd - other.dim()
    ra = []
    rb = []
    rr = []
    for i in range(nd):
        sa = input.shape[i - pa] if i >= pa else 1
        sb = other.shape[i - pb] if i >= pb else 1
        ra.append(sa)
        ra.append(1)
        rb.append(1)
        rb.append(sb)
        rr.append(sa * sb)
    # views, as ATen's _unsafe_view: the product's layout follows its operands', and eager
    # raises where it can't be viewed as the result
    return (input.view(ra) * other.view(rb)).view(rr)


# ---- logspace ----------------------------------------------------------------------------------
# A floating result: base ** (eager's linspace positions in float64), rounded once (ATen's
# kernel computes the exponent and the power in double for these dtypes).

def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             pin_memory=False, requires_grad=False):
    dt = torch.get_default_dtype() if dtype is None else dtype
    num = (int, float)
    if out is not None or requires_grad or layout is not None or pin_memory or \
            not isinstance(start, num) or not isinstance(end, num) or not isinstance(base, num) or \
            isinstance(start, bool) or isinstance(end, bool) or not isinstance(steps, int) or steps < 0 or \
            dt not in (torch.float32, torch.float64):
        return _logspace(start, end, steps, base, out=out, dtype=dtype, layout=layout, device=device,
                         pin_memory=pin_memory, requires_grad=requires_grad)
    lin = torch.linspace(start, end, steps, dtype=torch.float64, device=device)
    return torch.pow(float(base), lin).to(dt)


# ---- small ops: trace, dot, inner, pairwise_distance, dist, frac, heaviside, rot90, aminmax,
# fill_diagonal_, tril_indices / triu_indices (each as ATen writes it) ----------------------------

_trace = _VF.trace
_dot = _VF.dot
_inner = _VF.inner
_pairwise_distance = _VF.pairwise_distance
_dist = _VF.dist
_frac = _VF.frac
_heaviside = _VF.heaviside
_rot90 = _VF.rot90
_I64 = 1 << 63  # an int argument outside int64: eager's own op raises converting it
_aminmax = _VF.aminmax
_fill_diagonal_ = _T.fill_diagonal_
_tril_indices = _VF.tril_indices
_triu_indices = _VF.triu_indices


def trace(input):
    if not isinstance(input, _Tensor) or input.dim() != 2 or input.dtype == torch.bool:
        return _trace(input)
    return torch.diagonal(input).sum()


def dot(input, tensor, *, out=None):  # matmul of two vectors is ATen's dot
    if out is not None or not isinstance(input, _Tensor) or not isinstance(tensor, _Tensor) or \
            input.dim() != 1 or tensor.dim() != 1 or input.dtype != tensor.dtype or \
            input.shape[0] != tensor.shape[0] or not input.is_floating_point():
        return _dot(input, tensor) if out is None else _dot(input, tensor, out=out)
    return torch.matmul(input, tensor)


def inner(input, other, *, out=None):
    if out is not None or not isinstance(input, _Tensor) or not isinstance(other, _Tensor):
        return _inner(input, other) if out is None else _inner(input, other, out=out)
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        return _inner(input, other)  # eager raises
    return torch.tensordot(input, other, ([-1], [-1]))


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    if not isinstance(x1, _Tensor) or not isinstance(x2, _Tensor) or not isinstance(p, (int, float)) or \
            not isinstance(eps, (int, float)) or not isinstance(keepdim, bool) or \
            max(x1.dim(), x2.dim()) == 0:
        return _pairwise_distance(x1, x2, p, eps, keepdim)
    return torch.norm(x1 - x2 + eps, p, max(x1.dim(), x2.dim()) - 1, keepdim)


def dist(input, other, p=2):
    if not isinstance(input, _Tensor) or not isinstance(other, _Tensor) or not isinstance(p, (int, float)) or \
            torch.is_autocast_enabled(input.device.type):  # autocast's float32 op
        return _dist(input, other, p)
    return torch.norm(input - other, p)


def frac(input, *, out=None):
    if out is not None or not isinstance(input, _Tensor) or not input.is_floating_point():
        return _frac(input) if out is None else _frac(input, out=out)
    return input - torch.trunc(input)


def heaviside(input, values, *, out=None):
    if out is not None or not isinstance(input, _Tensor) or not isinstance(values, _Tensor) or \
            input.dtype != values.dtype or input.dtype == torch.bool or input.is_complex():
        return _heaviside(input, values) if out is None else _heaviside(input, values, out=out)
    return torch.where(input == 0, values, (input > 0).to(input.dtype))


def rot90(input, k=1, dims=(0, 1)):
    ok = isinstance(input, _Tensor) and isinstance(k, int) and -_I64 <= k < _I64 and \
        isinstance(dims, (list, tuple)) and len(dims) == 2 and input.dim() >= 2
    if ok:
        n = input.dim()
        d0 = dims[0]
        d1 = dims[1]
        ok = isinstance(d0, int) and isinstance(d1, int) and -n <= d0 < n and -n <= d1 < n and d0 % n != d1 % n
    if not ok:
        return _rot90(input, k, dims)
    k = k % 4
    if k == 1:
        return input.flip([d1]).transpose(d0, d1)
    if k == 2:
        return input.flip([d0, d1])
    if k == 3:
        return input.flip([d0]).transpose(d0, d1)
    return input.clone(memory_format=torch.contiguous_format)


def aminmax(input, *, dim=None, keepdim=False, out=None):
    if out is not None or not isinstance(input, _Tensor) or (dim is None and keepdim) or \
            input.numel() == 0 or input.dtype == torch.bool or input.is_complex():
        return _aminmax(input, dim=dim, keepdim=keepdim) if out is None else \
            _aminmax(input, dim=dim, keepdim=keepdim, out=out)
    if dim is None:
        return torch.return_types.aminmax((torch.amin(input), torch.amax(input)))
    return torch.return_types.aminmax((torch.amin(input, dim, keepdim), torch.amax(input, dim, keepdim)))


def fill_diagonal_(self, fill_value, wrap=False):
    """2-d: the elements (i, i), or with wrap on a matrix taller than wide + 1 every (cols + 1)-th
    element in order (ATen's), set in place"""
    if not isinstance(self, _Tensor) or self.dim() != 2 or not isinstance(fill_value, (int, float)) or \
            not isinstance(wrap, bool):
        return _fill_diagonal_(self, fill_value, wrap)
    n = self.shape[0]
    m = self.shape[1]
    i = torch.arange(n, device=self.device).unsqueeze(1)
    j = torch.arange(m, device=self.device).unsqueeze(0)
    if wrap and n > m + 1:
        mask = (i * m + j) % (m + 1) == 0
    else:
        mask = i == j
    return self.masked_fill_(mask, fill_value)


def _tri_indices(row, col, offset, lower, dtype, orig, device):
    ok = isinstance(row, int) and isinstance(col, int) and isinstance(offset, int) and row >= 0 and col >= 0 and \
        -_I64 <= offset < _I64 and row * col <= 4096 and dtype in (torch.int64, torch.int32)
    if not ok:
        return orig(row, col, offset, dtype=dtype, device=device)
    rs = []
    cs = []
    for r in range(row):
        for c in range(col):
            if (c - r <= offset) if lower else (c - r >= offset):
                rs.append(r)
                cs.append(c)
    if len(rs) == 0:
        return torch.zeros((2, 0), dtype=dtype, device=device)
    return torch.tensor([rs, cs], dtype=dtype, device=device)


def tril_indices(row, col, offset=0, *, dtype=torch.int64, device=None, layout=None, pin_memory=False):
    if layout is not None or pin_memory:
        return _tril_indices(row, col, offset, dtype=dtype, device=device, layout=layout, pin_memory=pin_memory)
    return _tri_indices(row, col, offset, True, dtype, _tril_indices, device)


def triu_indices(row, col, offset=0, *, dtype=torch.int64, device=None, layout=None, pin_memory=False):
    if layout is not None or pin_memory:
        return _triu_indices(row, col, offset, dtype=dtype, device=device, layout=layout, pin_memory=pin_memory)
    return _tri_indices(row, col, offset, False, dtype, _triu_indices, device)


# ---- block_diag, cartesian_prod, cross, vander, diagonal_scatter, multi_dot, cummax/cummin ------

_block_diag = _VF.block_diag
_cartesian_prod = _VF.cartesian_prod
_cross = _VF.cross
_linalg_cross = torch._C._linalg.linalg_cross
_linalg_vander = torch._C._linalg.linalg_vander
_diagonal_scatter = _VF.diagonal_scatter
_multi_dot = torch._C._linalg.linalg_multi_dot
_cummax = _VF.cummax
_cummin = _VF.cummin


def block_diag(*tensors):
    """ATen: 0-d -> (1, 1), 1-d -> (1, n); the blocks on the diagonal of a fresh zero matrix of
    the promoted dtype"""
    if len(tensors) == 0 or not all(isinstance(t, _Tensor) and t.dim() <= 2 for t in tensors) or \
            len(set(t.device for t in tensors)) != 1:
        return _block_diag(tensors)
    bs = [t.reshape(1, 1) if t.dim() == 0 else (t.unsqueeze(0) if t.dim() == 1 else t) for t in tensors]
    dt = bs[0].dtype
    for b in bs[1:]:  # all 2-d: result_type is promote_types
        dt = torch.result_type(b.new_empty((1,), dtype=dt), b)
    cols = sum(b.shape[1] for b in bs)
    rows = []
    left = 0
    for b in bs:
        r = b.shape[0]
        c = b.shape[1]
        parts = []
        if left > 0:
            parts.append(b.new_zeros((r, left), dtype=dt))
        parts.append(b.to(dt))
        if cols - left - c > 0:
            parts.append(b.new_zeros((r, cols - left - c), dtype=dt))
        rows.append(parts[0] if len(parts) == 1 else torch.cat(parts, 1))
        left += c
    return torch.cat(rows, 0).contiguous()


def _block_diag_seq(tensors):
    return block_diag(*tensors) if isinstance(tensors, (list, tuple)) else _block_diag(tensors)


def cartesian_prod(*tensors):
    """ATen: one tensor is returned as is; else meshgrid (ij) of the 1-d tensors (one dtype),
    each flattened, stacked on dim 1"""
    if len(tensors) == 0 or not all(isinstance(t, _Tensor) and t.dim() == 1 for t in tensors) or \
            len(set(t.dtype for t in tensors)) != 1 or len(set(t.device for t in tensors)) != 1:
        return _cartesian_prod(tensors)
    if len(tensors) == 1:
        return tensors[0]
    full = tuple(t.shape[0] for t in tensors)
    n = len(tensors)
    cols = []
    for i, t in enumerate(tensors):
        shape = [1] * n
        shape[i] = full[i]
        cols.append(t.reshape(shape).expand(full).reshape(-1))
    return torch.stack(cols, 1)


def _cartesian_prod_seq(tensors):
    return cartesian_prod(*tensors) if isinstance(tensors, (list, tuple)) else _cartesian_prod(tensors)


def _cross3(a, b, dim):
    """ATen's cross kernel: r0 = a1 b2 - a2 b1, r1 = a2 b0 - a0 b2, r2 = a0 b1 - a1 b0, a fresh
    contiguous tensor of the broadcast shape"""
    a, b = torch.broadcast_tensors(a, b)
    a0 = a.narrow(dim, 0, 1)
    a1 = a.narrow(dim, 1, 1)
    a2 = a.narrow(dim, 2, 1)
    b0 = b.narrow(dim, 0, 1)
    b1 = b.narrow(dim, 1, 1)
    b2 = b.narrow(dim, 2, 1)
    return torch.cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim).contiguous()


def _cross_ok(a, b, dim):
    if not isinstance(a, _Tensor) or not isinstance(b, _Tensor) or not isinstance(dim, int) or \
            a.dtype != b.dtype or a.dim() != b.dim() or a.dim() == 0 or a.dtype == torch.bool or \
            a.device != b.device:
        return False
    n = a.dim()
    if not -n <= dim < n:
        return False
    for i in range(n):  # the shapes broadcast (same number of dims)
        if a.shape[i] != b.shape[i] and a.shape[i] != 1 and b.shape[i] != 1:
            return False
    return a.shape[dim] == 3 and b.shape[dim] == 3


def linalg_cross(input, other, *, dim=-1, out=None):
    if out is not None or not _cross_ok(input, other, dim):
        return _linalg_cross(input, other, dim=dim) if out is None else \
            _linalg_cross(input, other, dim=dim, out=out)
    return _cross3(input, other, dim % input.dim())


def cross(input, other, dim=None, *, out=None):
    # dim=None: eager's deprecated search for a dim of size 3 (with its warning): left to eager
    if out is not None or dim is None or not _cross_ok(input, other, dim):
        return _cross(input, other, dim) if out is None else _cross(input, other, dim, out=out)
    return _cross3(input, other, dim % input.dim())


def _vander(x, n):
    """ATen (linalg_vander): integers and bool as int64; ones, then the cumulative product of x
    repeated n - 1 times, on a new last dim"""
    if not x.is_floating_point() and not x.is_complex():
        x = x.to(torch.int64)
    ones = torch.ones(tuple(x.shape) + (1,), dtype=x.dtype, device=x.device)
    if n == 1:
        return ones
    xs = x.unsqueeze(-1)
    if not x.requires_grad:
        return torch.cat([ones, xs.expand(tuple(x.shape) + (n - 1,)).cumprod(-1)], -1)
    ps = [ones, xs]  # the graph has no cumprod backward: the same products, one at a time
    for _ in range(n - 2):
        ps.append(ps[-1] * xs)
    return torch.cat(ps, -1)


def linalg_vander(x, *, N=None):
    if not isinstance(x, _Tensor) or x.dim() == 0 or not (N is None or (isinstance(N, int) and N > 1)) or \
            (N is None and x.shape[-1] <= 1):
        return _linalg_vander(x, N=N)
    return _vander(x, x.shape[-1] if N is None else N)


def vander(x, N=None, increasing=False):
    """torch.vander: 1-d, N defaults to len(x); the powers decreasing unless increasing"""
    if not isinstance(x, _Tensor) or x.dim() != 1 or not (N is None or (isinstance(N, int) and N > 1)) or \
            not isinstance(increasing, bool) or (N is None and x.shape[0] <= 1) or \
            (x.requires_grad and torch.is_grad_enabled()):  # eager's backward raises (an in-place op)
        return _vander_orig(x, N, increasing)
    r = _vander(x, x.shape[0] if N is None else N)
    return r if increasing else r.flip(-1)


_vander_orig = _VF.vander


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """ATen: input cloned (its strides kept), src copied onto the diagonal; here a mask of the
    diagonal's positions selects src placed there, the result laid out as the clone's"""
    ok = isinstance(input, _Tensor) and isinstance(src, _Tensor) and isinstance(offset, int) and \
        isinstance(dim1, int) and isinstance(dim2, int) and input.dim() >= 2 and \
        input.dtype == src.dtype and input.device == src.device and input.is_contiguous()
    if ok:
        n = input.dim()
        ok = -n <= dim1 < n and -n <= dim2 < n and dim1 % n != dim2 % n
    if ok:
        d1 = dim1 % n
        d2 = dim2 % n
        dshape = torch.diagonal(input, offset, d1, d2).shape
        ok = tuple(src.shape) == tuple(dshape)
    if not ok:
        return _diagonal_scatter(input, src, offset, dim1, dim2)
    r = input.shape[d1]
    c = input.shape[d2]
    i = torch.arange(r, device=input.device).unsqueeze(1)
    j = torch.arange(c, device=input.device).unsqueeze(0)
    mask = (j - i) == offset  # (r, c)
    # src (..., m) -> (..., r, c) with src[..., min(i, j - offset)] at the diagonal's positions
    m = src.shape[-1]
    if m == 0:
        return input.clone()
    k = torch.clamp((i if offset >= 0 else j).expand(r, c), 0, m - 1)  # the diagonal's index there
    s = src.index_select(-1, k.reshape(-1)).reshape(tuple(src.shape[:-1]) + (r, c))
    s = torch.movedim(s, (n - 2, n - 1), (d1, d2))
    mask = torch.movedim(mask.reshape((1,) * (n - 2) + (r, c)), (n - 2, n - 1), (d1, d2))
    return torch.where(mask, s, input).contiguous()


def _chain_order(dims):
    """ATen's matrix_chain_order: the cheapest parenthesisation of matrices dims[i] x dims[i+1]"""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j] = q
                    split[i][j] = k
    return split


def _chain(ts, split, i, j):
    if i == j:
        return ts[i]
    k = split[i][j]
    return torch.mm(_chain(ts, split, i, k), _chain(ts, split, k + 1, j))


def multi_dot(tensors, *, out=None):
    ok = out is None and isinstance(tensors, (list, tuple)) and len(tensors) >= 2 and \
        all(isinstance(t, _Tensor) for t in tensors)
    if ok:
        n = len(tensors)
        ok = tensors[0].dim() in (1, 2) and tensors[-1].dim() in (1, 2) and \
            all(t.dim() == 2 for t in tensors[1:-1]) and len(set(t.dtype for t in tensors)) == 1 and \
            len(set(t.device for t in tensors)) == 1 and \
            (tensors[0].is_floating_point() or tensors[0].is_complex())
    if ok:
        ts = list(tensors)
        if ts[0].dim() == 1:
            ts[0] = ts[0].unsqueeze(0)
        if ts[-1].dim() == 1:
            ts[-1] = ts[-1].unsqueeze(-1)
        ok = all(ts[i].shape[1] == ts[i + 1].shape[0] for i in range(n - 1))
    if not ok:
        return _multi_dot(tensors) if out is None else _multi_dot(tensors, out=out)
    if n == 2:
        r = torch.mm(ts[0], ts[1])
    elif n == 3:
        a = ts[0].shape[0]
        b = ts[1].shape[0]
        c = ts[2].shape[0]
        d = ts[2].shape[1]
        if a * c * (b + d) > b * d * (a + c):
            r = torch.mm(ts[0], torch.mm(ts[1], ts[2]))
        else:
            r = torch.mm(torch.mm(ts[0], ts[1]), ts[2])
    else:
        dims = [t.shape[0] for t in ts] + [ts[-1].shape[1]]
        r = _chain(ts, _chain_order(dims), 0, n - 1)
    if tensors[0].dim() == 1 and tensors[-1].dim() == 1:
        return r.reshape(())
    if tensors[0].dim() == 1:
        return r.squeeze(0)
    if tensors[-1].dim() == 1:
        return r.squeeze(-1)
    return r


def _cum_extreme(x, dim, is_max, orig, name):
    """ATen's scan: index i replaces the running one where x[i] is NaN, or the running value is
    not NaN and x[i] >= it (<= for the minimum): ties and NaNs take the last occurrence. Here a
    scan in log2(n) steps over (value, index) pairs with that (associative) choice; the values
    are x gathered at the indices (so the gradient is eager's, scattered to them)"""
    if not isinstance(x, _Tensor) or not isinstance(dim, int) or x.dtype == torch.bool or x.is_complex():
        return orig(x, dim)
    n = max(x.dim(), 1)
    if not -n <= dim < n:
        return orig(x, dim)
    if x.dim() == 0:
        return getattr(torch.return_types, name)((x.clone(), torch.zeros((), dtype=torch.int64, device=x.device)))
    dim = dim % n
    L = x.shape[dim]
    shape = [1] * n
    shape[dim] = L
    idx = torch.arange(L, device=x.device).reshape(shape).expand(x.shape).contiguous()
    v = x.detach().contiguous()
    fl = x.is_floating_point()
    k = 1
    while k < L:
        pv = v.narrow(dim, 0, L - k)
        pi = idx.narrow(dim, 0, L - k)
        cv = v.narrow(dim, k, L - k)
        ci = idx.narrow(dim, k, L - k)
        take = (cv >= pv) if is_max else (cv <= pv)
        if fl:
            take = torch.isnan(cv) | (take & ~torch.isnan(pv))
        v = torch.cat([v.narrow(dim, 0, k), torch.where(take, cv, pv)], dim)
        idx = torch.cat([idx.narrow(dim, 0, k), torch.where(take, ci, pi)], dim)
        k *= 2
    idx = idx.contiguous()
    return getattr(torch.return_types, name)((torch.gather(x, dim, idx), idx))


def cummax(input, dim, *, out=None):
    if out is not None:
        return _cummax(input, dim, out=out)
    return _cum_extreme(input, dim, True, _cummax, "cummax")


def cummin(input, dim, *, out=None):
    if out is not None:
        return _cummin(input, dim, out=out)
    return _cum_extreme(input, dim, False, _cummin, "cummin")


_logcumsumexp = _VF.logcumsumexp


def _log_add_exp(x, y):
    """ATen's _log_add_exp_helper: max + log1p(exp(min - max)); NaN in y wins; both the same
    infinity: x"""
    ny = torch.isnan(y)
    big = torch.where(ny | (y > x), y, x)
    small = torch.where(ny | (y > x), x, y)
    same_inf = (small == big) & ~torch.isfinite(small)
    r = big + torch.log1p(torch.exp(torch.where(same_inf, torch.zeros_like(small), small - big)))
    return torch.where(same_inf, x, r)


def logcumsumexp(input, dim, *, out=None):
    """a scan in log2(n) steps with ATen's log-add-exp step (eager's is sequential: the values
    agree to rounding, not bit for bit)"""
    if out is not None or not isinstance(input, _Tensor) or not isinstance(dim, int) or \
            input.dtype not in (torch.float32, torch.float64):
        return _logcumsumexp(input, dim) if out is None else _logcumsumexp(input, dim, out=out)
    n = max(input.dim(), 1)
    if not -n <= dim < n:
        return _logcumsumexp(input, dim)
    if input.dim() == 0:
        return input.clone()
    dim = dim % n
    L = input.shape[dim]
    v = input.contiguous()
    k = 1
    while k < L:
        v = torch.cat([v.narrow(dim, 0, k), _log_add_exp(v.narrow(dim, k, L - k), v.narrow(dim, 0, L - k))], dim)
        k *= 2
    return v.contiguous()


# ---- prelu --------------------------------------------------------------------------------
_prelu = _VF.prelu


def prelu(input, weight):
    """ATen's _prelu_kernel: x > 0 ? x : w * x, the weight broadcast over dim 1 (one value:
    over everything). Gradients through where/mul are eager's (grad, w * grad; x * grad summed)."""
    if not isinstance(input, _Tensor) or not isinstance(weight, _Tensor) or \
            input.dtype != weight.dtype or not input.dtype.is_floating_point or weight.dim() > 1:
        return _prelu(input, weight)
    n = weight.numel()
    if n == 1:
        w = weight.reshape(())
    elif input.dim() >= 2 and input.shape[1] == n:
        w = weight.reshape((n,) + (1,) * (input.dim() - 2))
    else:
        return _prelu(input, weight)  # eager raises
    return torch.where(input > 0, input, w * input)


def register(polyfills):
    """adds these to POLYFILLS: the torch.X function and the Tensor.X method where there is one"""
    pairs = (
        ("diag", diag), ("diag_embed", diag_embed), ("diagflat", diagflat),
        ("cosine_similarity", cosine_similarity), ("take", take),
        ("atleast_1d", atleast_1d), ("atleast_2d", atleast_2d), ("atleast_3d", atleast_3d),
        ("searchsorted", searchsorted), ("median", median), ("nanmedian", nanmedian),
        ("quantile", quantile), ("nanquantile", nanquantile),
        ("cdist", cdist), ("tensordot", tensordot), ("kron", kron), ("logspace", logspace),
        ("trace", trace), ("dot", dot), ("inner", inner), ("pairwise_distance", pairwise_distance),
        ("dist", dist), ("frac", frac), ("heaviside", heaviside), ("rot90", rot90), ("aminmax", aminmax),
        ("fill_diagonal_", fill_diagonal_), ("tril_indices", tril_indices), ("triu_indices", triu_indices),
        ("cross", cross), ("vander", vander),
        ("diagonal_scatter", diagonal_scatter), ("cummax", cummax), ("cummin", cummin),
        ("logcumsumexp", logcumsumexp),
        ("prelu", prelu),
    )
    for name, fn in pairs:
        f = getattr(_VF, name, None)
        if f is not None:
            polyfills[f] = fn
        m = getattr(_T, name, None)
        if m is not None and name not in ("searchsorted", "cdist", "tensordot", "logspace",
                                          "cosine_similarity", "atleast_1d", "atleast_2d",
                                          "atleast_3d", "pairwise_distance", "tril_indices",
                                          "triu_indices", "block_diag", "cartesian_prod", "vander"):
            polyfills[m] = fn
    polyfills[torch.functional.block_diag] = block_diag  # Python wrappers over _VF.X(tensors)
    polyfills[_associative_scan] = associative_scan
    polyfills[_block_diag] = _block_diag_seq
    polyfills[torch.functional.cartesian_prod] = cartesian_prod
    polyfills[_cartesian_prod] = _cartesian_prod_seq
    polyfills[_linalg_cross] = linalg_cross
    polyfills[_linalg_vander] = linalg_vander
    polyfills[_multi_dot] = multi_dot
