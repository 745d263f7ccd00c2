"""Python versions of C-implemented library callables, inlined by the frame hook where the
traced code calls the original (dynamo_hook/ops_table.c: sym_call looks the callable up in
POLYFILLS; like Dynamo's polyfills). Each one does what the original does for finite inputs;
iterators come back as generators, which the tracer runs to completion when called (an
infinite one fails the trace at the step limit and eager runs). Only the eager semantics that
the traced program can observe matter: results, order of calls, exceptions (an exception fails
the trace, eager then raises it).

Not here: functools.partial (a tracked value in C, SYM_PARTIAL), anything with a side effect
on state the caller sees (those are the tracer's own: list/dict methods, setattr).
"""
import functools
import itertools
import operator

_MISSING = ("torchc", "missing")  # a constant the tracer holds as itself (`is` exact)


# ---- itertools ---------------------------------------------------------------------------

def chain(*iterables):
    for it in iterables:
        for x in it:
            yield x


def chain_from_iterable(iterables):
    for it in iterables:
        for x in it:
            yield x


def zip_longest(*iterables, fillvalue=None):
    # tuples, not lists: the tracer refuses list updates inside a generator (it runs them to
    # completion; eager might stop early)
    seqs = ()
    n = 0
    for it in iterables:
        t = tuple(it)
        seqs = seqs + (t,)
        if len(t) > n:
            n = len(t)
    for i in range(n):
        row = ()
        for t in seqs:
            row = row + ((t[i] if i < len(t) else fillvalue),)
        yield row


def product(*iterables, repeat=1):
    pools = ()
    for _ in range(repeat):
        for p in iterables:
            pools = pools + (tuple(p),)
    result = ((),)
    for pool in pools:
        nxt = ()
        for r in result:
            for y in pool:
                nxt = nxt + (r + (y,),)
        result = nxt
    for r in result:
        yield r


def islice(iterable, *args):
    if len(args) == 1:
        start, stop, step = None, args[0], None
    elif len(args) == 2:
        start, stop, step = args[0], args[1], None
    else:
        start, stop, step = args[0], args[1], args[2]
    if start is None:
        start = 0
    if step is None:
        step = 1
    nxt = start
    i = 0
    if stop is not None and stop <= 0:
        return
    # as CPython's islice: never takes an item past `stop` from the iterable (it may be
    # shared, or infinite)
    for x in iterable:
        if i == nxt:
            yield x
            nxt = nxt + step
        i = i + 1
        if stop is not None and i >= stop:
            return


def enumerate_lazy(iterable, start):
    """enumerate(gen, start) where gen is a generator the tracer holds: stepped lazily
    (dynamo_hook/ops_builtins.c; an infinite one is fine)"""
    n = start
    for x in iterable:
        yield (n, x)
        n = n + 1


def zip_lazy(*iterables):
    """zip(...) with a generator among its arguments (the others given as tuples of their
    items): a round takes one item of each in argument order and ends the zip at the first
    that has none, as eager's zip, so a generator before the shortest one is stepped once
    more and one after it is not"""
    i = 0
    while True:
        row = ()
        for it in iterables:
            if isinstance(it, tuple):
                if i >= len(it):
                    return
                row = row + (it[i],)
            else:
                x = next(it, _MISSING)
                if x is _MISSING:
                    return
                row = row + (x,)
        yield row
        i = i + 1


def accumulate(iterable, func=None, *, initial=None):
    total = initial
    first = initial is None
    if not first:
        yield total
    for x in iterable:
        if first:
            total = x
            first = False
        elif func is None:
            total = total + x
        else:
            total = func(total, x)
        yield total


def repeat(obj, times=_MISSING):
    if times is _MISSING:
        while True:
            yield obj
    for _ in range(times):
        yield obj


def count(start=0, step=1):
    n = start
    while True:
        yield n
        n += step


def cycle(iterable):
    saved = []
    for x in iterable:
        yield x
        saved.append(x)
    while saved:
        for x in saved:
            yield x


def permutations(iterable, r=None):
    pool = tuple(iterable)
    n = len(pool)
    r = n if r is None else r
    if r > n:
        return
    for idx in product(range(n), repeat=r):
        if len(set(idx)) == r:
            yield tuple(pool[i] for i in idx)


def combinations_with_replacement(iterable, r):
    pool = tuple(iterable)
    n = len(pool)
    for idx in product(range(n), repeat=r):
        if sorted(idx) == list(idx):
            yield tuple(pool[i] for i in idx)


def filterfalse(predicate, iterable):
    for x in iterable:
        if not (bool(x) if predicate is None else predicate(x)):
            yield x


def starmap(function, iterable):
    for args in iterable:
        yield function(*args)


def compress(data, selectors):
    for d, s in zip(data, selectors):
        if s:
            yield d


def takewhile(predicate, iterable):
    for x in iterable:
        if not predicate(x):
            return
        yield x


def dropwhile(predicate, iterable):
    dropping = True
    for x in iterable:
        if dropping and predicate(x):
            continue
        dropping = False
        yield x


def pairwise(iterable):
    first = True
    prev = None
    for x in iterable:
        if not first:
            yield (prev, x)
        first = False
        prev = x


def combinations(iterable, r):
    pool = tuple(iterable)
    n = len(pool)
    idx = ()
    if r <= n:
        idx = ((),)
        for _ in range(r):
            nxt = ()
            for c in idx:
                lo = c[-1] + 1 if len(c) > 0 else 0
                for i in range(lo, n):
                    nxt = nxt + (c + (i,),)
            idx = nxt
    for c in idx:
        row = ()
        for i in c:
            row = row + (pool[i],)
        yield row


# ---- functools ---------------------------------------------------------------------------

def reduce(function, iterable, *initial):
    # *initial, not a sentinel default: `initial is sentinel` on a tensor is not traced
    first = len(initial) == 0
    value = None if first else initial[0]
    for x in iterable:
        if first:
            value = x
            first = False
        else:
            value = function(value, x)
    if first:
        raise TypeError("reduce() of empty iterable with no initial value")
    return value


def _identity(f):
    return f


def wraps(wrapped, assigned=functools.WRAPPER_ASSIGNMENTS, updated=functools.WRAPPER_UPDATES):
    # on a function made inside the traced frame (the only kind the tracer calls this on
    # without an eager graph break): metadata it never reads; a made function cannot leave
    # the frame (the trace fails), so nothing observes the difference
    return _identity


# ---- operator ----------------------------------------------------------------------------

# the getters are functools.partial objects of plain functions (no closures): the tracer
# calls a partial made in the trace like the function itself

def _getitem1(item, obj):
    return obj[item]


def _getitems(items, obj):
    row = ()
    for i in items:
        row = row + (obj[i],)
    return row


def _resolve(name, obj):
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _getattrs(names, obj):
    row = ()
    for n in names:
        row = row + (_resolve(n, obj),)
    return row


def _call_method(name, args, kwargs, obj):
    return getattr(obj, name)(*args, **kwargs)


def itemgetter(item, *items):
    if len(items) == 0:
        return functools.partial(_getitem1, item)
    return functools.partial(_getitems, (item,) + items)


def attrgetter(attr, *attrs):
    if len(attrs) == 0:
        return functools.partial(_resolve, attr)
    return functools.partial(_getattrs, (attr,) + attrs)


def methodcaller(name, *args, **kwargs):
    return functools.partial(_call_method, name, args, kwargs)


def dict_fromkeys(iterable, value=None):
    d = {}
    for k in iterable:
        d[k] = value
    return d


POLYFILLS = {
    dict.fromkeys: dict_fromkeys,  # bound to dict only: OrderedDict.fromkeys is another method
    itertools.chain: chain,
    itertools.chain.from_iterable: chain_from_iterable,
    itertools.zip_longest: zip_longest,
    itertools.product: product,
    itertools.islice: islice,
    itertools.accumulate: accumulate,
    itertools.repeat: repeat,
    itertools.starmap: starmap,
    itertools.compress: compress,
    itertools.takewhile: takewhile,
    itertools.dropwhile: dropwhile,
    itertools.combinations: combinations,
    itertools.count: count,
    itertools.cycle: cycle,
    itertools.permutations: permutations,
    itertools.combinations_with_replacement: combinations_with_replacement,
    itertools.filterfalse: filterfalse,
    functools.reduce: reduce,
    functools.wraps: wraps,
    operator.itemgetter: itemgetter,
    operator.attrgetter: attrgetter,
    operator.methodcaller: methodcaller,
    operator.add: lambda a, b: a + b,
    operator.sub: lambda a, b: a - b,
    operator.mul: lambda a, b: a * b,
    operator.truediv: lambda a, b: a / b,
    operator.floordiv: lambda a, b: a // b,
    operator.mod: lambda a, b: a % b,
    operator.pow: lambda a, b: a ** b,
    operator.matmul: lambda a, b: a @ b,
    operator.and_: lambda a, b: a & b,
    operator.or_: lambda a, b: a | b,
    operator.xor: lambda a, b: a ^ b,
    operator.lshift: lambda a, b: a << b,
    operator.rshift: lambda a, b: a >> b,
    operator.neg: lambda a: -a,
    operator.pos: lambda a: +a,
    operator.invert: lambda a: ~a,
    operator.inv: lambda a: ~a,
    operator.abs: lambda a: abs(a),
    operator.not_: lambda a: not a,
    operator.truth: lambda a: bool(a),
    operator.eq: lambda a, b: a == b,
    operator.ne: lambda a, b: a != b,
    operator.lt: lambda a, b: a < b,
    operator.le: lambda a, b: a <= b,
    operator.gt: lambda a, b: a > b,
    operator.ge: lambda a, b: a >= b,
    operator.is_: lambda a, b: a is b,
    operator.is_not: lambda a, b: a is not b,
    operator.contains: lambda a, b: b in a,
    operator.getitem: lambda a, b: a[b],
    operator.concat: lambda a, b: a + b,
    operator.index: lambda a: a if type(a) is int else a.__index__(),
}
if hasattr(itertools, "pairwise"):
    POLYFILLS[itertools.pairwise] = pairwise


def _setitem(a, b, c):
    a[b] = c


def _delitem(a, b):
    del a[b]


def _iadd(a, b):
    a += b
    return a


def _imul(a, b):
    a *= b
    return a


POLYFILLS[operator.setitem] = _setitem
POLYFILLS[operator.delitem] = _delitem
POLYFILLS[operator.iadd] = _iadd
POLYFILLS[operator.imul] = _imul


# ---- recurrent cells (torch._VF.gru_cell & co, nn.GRUCell / LSTMCell / RNNCell) ----------
# ATen's CPU cells written out in its order of operations (aten/src/ATen/native/RNN.cpp:
# at::linear of the input and of the hidden state, gates from unsafe_chunk, in-place
# activations), so the compiled values and gradients are eager's up to rounding. Shapes
# eager checks are left to eager: anything but 2-D operands raises here, which fails the
# trace (the frame runs eagerly and raises eager's error).

import math  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as _F  # noqa: E402


def _cell_check(input, hx):
    if not (isinstance(input, torch.Tensor) and isinstance(hx, torch.Tensor) and input.dim() == 2 and hx.dim() == 2):
        raise RuntimeError("torchc: recurrent cell operands other than 2-D tensors are left to eager")


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _cell_check(input, hx)
    ir, ii, inn = _F.linear(input, w_ih, b_ih).chunk(3, 1)
    hr, hi, hn = _F.linear(hx, w_hh, b_hh).chunk(3, 1)
    reset = (hr + ir).sigmoid()
    inp = (hi + ii).sigmoid()
    new = (inn + hn * reset).tanh()
    return (hx - new) * inp + new


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    h, c = hx
    _cell_check(input, h)
    _cell_check(input, c)
    i, f, g, o = (_F.linear(h, w_hh, b_hh) + _F.linear(input, w_ih, b_ih)).chunk(4, 1)
    cy = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * cy.tanh(), cy


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _cell_check(input, hx)
    return (_F.linear(hx, w_hh, b_hh) + _F.linear(input, w_ih, b_ih)).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _cell_check(input, hx)
    return (_F.linear(hx, w_hh, b_hh) + _F.linear(input, w_ih, b_ih)).relu()


# ---- whole recurrent layers (torch._VF.gru / lstm / rnn_tanh / rnn_relu: nn.GRU, nn.LSTM, nn.RNN)
# ATen's CPU implementation (RNN.cpp _rnn_impl_with_concat, apply_layer_stack, FullLayer,
# ReversedFullLayer, FullBidirectionalLayer) unrolled over the time steps: per layer and
# direction the input projection of all steps at once (at::linear of the whole sequence, then
# unbind), per step the hidden projection and the gates as in the cells above, the step
# outputs stacked (a reversed direction runs from the last step and its outputs are put back
# in order), both directions concatenated on the last dim, dropout between layers in training
# (at::dropout(x, p, true)). batch_first transposes the input and the output (a view, as
# ATen's transpose_). Gradients are those of the operations used (the backward of eager's
# cuDNN/oneDNN kernels computes the same ones up to rounding).
# Left to eager with a reason (left_to_eager: a graph break at the call, eager runs it): a
# packed sequence (batch_sizes: per-step batch sizes that are data), operands that are not
# 3-D/2-D tensors of one floating dtype, no time steps (eager raises), and more unrolled cell
# steps (time steps x layers x directions) than config rnn_unroll_steps.

_VF_C = torch._C._VariableFunctions


def left_to_eager(reason):
    """a polyfill's marker: the tracer stops here with `reason` (a graph break where the
    polyfilled call was made; eager runs that call). Never runs (polyfills run traced only)."""
    raise RuntimeError("torchc: " + reason)


def rnn_unroll_steps():
    """torchc.config.rnn_unroll_steps (the tracer answers it as a constant)"""
    from torchc import config
    return config.rnn_unroll_steps


def _lstm_step(xw, hid, p):
    hx, cx = hid
    i, f, g, o = (_F.linear(hx, p[1], p[3]) + xw).chunk(4, 1)
    cy = f.sigmoid() * cx + i.sigmoid() * g.tanh()
    hy = o.sigmoid() * cy.tanh()
    if p[4] is not None:
        hy = torch.matmul(hy, p[4].t())
    return hy, cy


def _gru_step(xw, hx, p):
    ir, ii, inn = xw.chunk(3, 1)
    hr, hi, hn = _F.linear(hx, p[1], p[3]).chunk(3, 1)
    reset = (hr + ir).sigmoid()
    inp = (hi + ii).sigmoid()
    new = (inn + hn * reset).tanh()
    return (hx - new) * inp + new


def _tanh_step(xw, hx, p):
    return (_F.linear(hx, p[1], p[3]) + xw).tanh()


def _relu_step(xw, hx, p):
    return (_F.linear(hx, p[1], p[3]) + xw).relu()


def _rnn_layer(x, hid, p, step, lstm, reverse):
    """one direction of one layer over x [T, B, I]: (outputs [T, B, H], final hidden)"""
    xs = _F.linear(x, p[0], p[2]).unbind(0)
    n = len(xs)
    outs = []
    for k in range(n):
        hid = step(xs[n - 1 - k] if reverse else xs[k], hid, p)
        outs.append(hid[0] if lstm else hid)
    if reverse:
        outs.reverse()
    return torch.stack(outs, 0), hid


def _rnn_full(step, lstm, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
              batch_first, orig):
    """ATen's _rnn_impl_with_concat; orig: the original, for what is left to eager"""
    if not isinstance(input, torch.Tensor):  # (data, batch_sizes, hx, params, ...): a packed sequence
        return orig(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    if isinstance(hx, torch.Tensor) and not lstm and hx.dim() == 1 and hx.dtype == torch.int64 or \
            lstm and isinstance(hx, torch.Tensor):
        left_to_eager("recurrent layer over a packed sequence (its per-step batch sizes are data) left to eager")
    hs = tuple(hx) if lstm else (hx,)
    ts = (input,) + hs + tuple(params)
    dt = input.dtype
    if input.dim() != 3 or not dt.is_floating_point or any(
            not isinstance(w, torch.Tensor) or w.dtype != dt or w.device != input.device for w in ts) or \
            any(h.dim() != 3 for h in hs):
        left_to_eager("recurrent layer with operands that are not 3-D tensors of one floating dtype and device left to eager")
    if torch.is_autocast_enabled(input.device.type):
        left_to_eager("recurrent layer under autocast left to eager (eager casts the whole layer's operands)")
    dirs = 2 if bidirectional else 1
    x = input.transpose(0, 1) if batch_first else input
    T = x.shape[0]
    if T == 0:
        left_to_eager("recurrent layer over a sequence of no steps left to eager (eager raises)")
    limit = rnn_unroll_steps()
    if T * num_layers * dirs > limit:
        left_to_eager("recurrent layer of %d cell steps (time steps x layers x directions), more than "
                      "torchc.config.rnn_unroll_steps (%d), left to eager" % (T * num_layers * dirs, limit))
    proj = lstm and hs[0].shape[2] != hs[1].shape[2]
    size = 2 + (2 if has_biases else 0) + (1 if proj else 0)
    if len(params) != size * num_layers * dirs or hs[0].shape[0] != num_layers * dirs:
        left_to_eager("recurrent layer with unexpected parameters left to eager")
    groups = []
    for k in range(num_layers * dirs):
        g = params[k * size:(k + 1) * size]
        b_ih = g[2] if has_biases else None
        b_hh = g[3] if has_biases else None
        w_hr = g[size - 1] if proj else None
        groups.append((g[0], g[1], b_ih, b_hh, w_hr))
    if lstm:
        hids = list(zip(hs[0].unbind(0), hs[1].unbind(0)))
    else:
        hids = list(hs[0].unbind(0))
    finals = []
    for layer in range(num_layers):
        k = layer * dirs
        out, h = _rnn_layer(x, hids[k], groups[k], step, lstm, False)
        finals.append(h)
        if bidirectional:
            rout, rh = _rnn_layer(x, hids[k + 1], groups[k + 1], step, lstm, True)
            finals.append(rh)
            out = torch.cat([out, rout], out.dim() - 1)
        x = out
        if dropout != 0 and train and layer < num_layers - 1:
            x = torch.dropout(x, dropout, True)
    if batch_first:
        x = x.transpose(0, 1)
    if lstm:
        return x, torch.stack([h[0] for h in finals], 0), torch.stack([h[1] for h in finals], 0)
    return x, torch.stack(finals, 0)


def _rnn_polyfill(step, lstm, orig):
    def layer(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        return _rnn_full(step, lstm, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                         batch_first, orig)
    return layer


gru = _rnn_polyfill(_gru_step, False, _VF_C.gru)
lstm = _rnn_polyfill(_lstm_step, True, _VF_C.lstm)
rnn_tanh = _rnn_polyfill(_tanh_step, False, _VF_C.rnn_tanh)
rnn_relu = _rnn_polyfill(_relu_step, False, _VF_C.rnn_relu)


# ---- nn.MultiheadAttention / nn.TransformerEncoderLayer inference fast paths ---------------
# torch._native_multi_head_attention and torch._transformer_encoder_layer_fwd (eval, no grad,
# batch_first self-attention) without a mask and without weights are graph ops of their own
# (dynamo_hook/ops_extern.c: scaled_dot_product_attention inside). With a mask or with
# need_weights=True ATen runs its math path (transformers/attention.cpp
# native_multi_head_attention_cpu), written out here in its order: the input projection
# without bias, bias added and q scaled by 1/sqrt(head dim) (_transform_bias_rescale_qkv),
# q @ k^T, a masked softmax (a float mask is made boolean, nonzero masked: mask_type 1 a
# [B, L] key padding mask, 0 an [L, L] one, 2 one of the scores' shape), @ v, heads merged,
# the output projection; weights averaged over heads (sum / heads) or per head. A row with
# every key masked is NaN, as eager's. Anything else is handed to the original.

_native_mha = torch._native_multi_head_attention
_encoder_layer_fwd = torch._transformer_encoder_layer_fwd


def _mha_mask(mask, mask_type, B, H, L):
    """the boolean mask broadcast to the scores [B, H, L, L], or None (left to the original)"""
    if mask.dtype != torch.bool:
        mask = mask.to(torch.bool)
    if mask.dim() == 2 and mask_type == 1 and tuple(mask.shape) == (B, L):
        return mask.view(B, 1, 1, L)
    if mask.dim() == 2 and mask_type == 0 and tuple(mask.shape) == (L, L):
        return mask.view(1, 1, L, L)
    if mask.dim() == 4 and (mask_type == 2 or mask_type is None) and tuple(mask.shape) == (B, H, L, L):
        return mask
    return None


def native_multi_head_attention(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight,
                                proj_bias, mask=None, need_weights=True, average_attn_weights=True,
                                mask_type=None):
    args = (query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias, mask,
            need_weights, average_attn_weights, mask_type)
    if mask is None and not need_weights:
        return _native_mha(*args)  # a graph op of its own
    if not (isinstance(query, torch.Tensor) and query is key and key is value and query.dim() == 3 and
            query.shape[2] == embed_dim and num_head > 0 and embed_dim % num_head == 0 and
            query.numel() > 0 and (mask is None or isinstance(mask, torch.Tensor))):
        return _native_mha(*args)
    B, L = query.shape[0], query.shape[1]
    H = num_head
    dh = embed_dim // H
    m = None
    if mask is not None:
        m = _mha_mask(mask, mask_type, B, H, L)
        if m is None:
            return _native_mha(*args)
    qkv = torch.matmul(query, qkv_weight.t())
    q, k, v = (qkv + qkv_bias).chunk(3, -1)
    q = q * (1.0 / math.sqrt(dh))
    q = q.view(B, L, H, dh).transpose(1, 2)
    k = k.view(B, L, H, dh).transpose(1, 2)
    v = v.view(B, L, H, dh).transpose(1, 2)
    s = torch.matmul(q, k.transpose(-1, -2))
    if m is not None:
        s = s.masked_fill(m, float("-inf"))
    s = s.softmax(-1)
    ctx = torch.matmul(s, v).transpose(1, 2).reshape(B, L, embed_dim)
    out = _F.linear(ctx, proj_weight, proj_bias)
    if not need_weights:
        return out, None
    if average_attn_weights:
        return out, s.sum(1) / H
    return out, s


def transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias,
                                  use_gelu, norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2,
                                  norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None,
                                  mask_type=None):
    """ATen's transformer_encoder_layer_forward with a mask (without one: a graph op)"""
    args = (src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu, norm_first,
            eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1, ffn_bias_1,
            ffn_weight_2, ffn_bias_2, mask, mask_type)
    if mask is None or not isinstance(src, torch.Tensor) or src.dim() != 3 or src.numel() == 0:
        return _encoder_layer_fwd(*args)
    x = src
    if norm_first:
        x = _F.layer_norm(x, (embed_dim,), norm_weight_1, norm_bias_1, eps)
    x = _native_mha(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, mask, False,
                    True, mask_type)[0]
    x = x + src
    if not norm_first:
        x = _F.layer_norm(x, (embed_dim,), norm_weight_1, norm_bias_1, eps)
    res = x
    if norm_first:
        x = _F.layer_norm(x, (embed_dim,), norm_weight_2, norm_bias_2, eps)
    x = _F.linear(x, ffn_weight_1, ffn_bias_1)
    x = _F.gelu(x) if use_gelu else _F.relu(x)
    x = _F.linear(x, ffn_weight_2, ffn_bias_2) + res
    if not norm_first:
        x = _F.layer_norm(x, (embed_dim,), norm_weight_2, norm_bias_2, eps)
    return x


# code whose torch.compiler.is_compiling() chooses another computation than eager's: where it
# is asked there, the trace stops (the frame, or the call into it, runs in eager) with the reason
COMPILING_QUERY_TO_EAGER = {
    # in eval with a key padding mask and no autograd, eager runs the layers on a nested tensor
    # made from the mask and pads the result with zeros; torch skips that path while compiling
    # (the layers' math path leaves other values in the padded rows)
    torch.nn.TransformerEncoder.forward.__code__:
        "nn.TransformerEncoder with a key padding mask: eager's nested-tensor path zeroes the padded "
        "rows (torch skips it while compiling)",
}


POLYFILLS[_native_mha] = native_multi_head_attention
POLYFILLS[_encoder_layer_fwd] = transformer_encoder_layer_fwd


def _register_cells():
    for name, fn in (("gru_cell", gru_cell), ("lstm_cell", lstm_cell), ("rnn_tanh_cell", rnn_tanh_cell),
                     ("rnn_relu_cell", rnn_relu_cell), ("gru", gru), ("lstm", lstm), ("rnn_tanh", rnn_tanh),
                     ("rnn_relu", rnn_relu)):
        POLYFILLS[getattr(torch._C._VariableFunctions, name)] = fn


_register_cells()


# ---- torch.optim.Optimizer.zero_grad ------------------------------------------------------
# torch wraps it in torch._disable_dynamo (a DisableContext wrapper: a graph break for torchc
# too), though it only resets .grad. Written out as torch's loop (optim/optimizer.py) so a
# training step keeps its optimizer update and the reset in one graph: p.grad = None (an
# attribute write replayed after the graph), or zero_() of each gradient in place (the
# foreach form's _foreach_zero_ writes the same zeros). What the loop can't show is left to
# torch's own zero_grad, called from here: that call is a break and runs eagerly (the
# profiler recording the step, an optimizer not yet patched, sparse gradients, gradients
# that require grad).

_optimizer_zero_grad = torch.optim.Optimizer.zero_grad


def optimizer_zero_grad(self, set_to_none=True):
    if torch.autograd.profiler._is_profiler_enabled or not hasattr(self, "_zero_grad_profile_name"):
        return _optimizer_zero_grad(self, set_to_none)
    if not set_to_none:
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is not None and (g.requires_grad or g.is_sparse):
                    return _optimizer_zero_grad(self, set_to_none)
    for group in self.param_groups:
        for p in group["params"]:
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.zero_()


POLYFILLS[_optimizer_zero_grad] = optimizer_zero_grad


# ---- GradScaler's two ATen ops (torch.amp.GradScaler.unscale_ / update) --------------------
# ATen's CPU/CUDA kernels written as graph ops, so a step's inf check and scale update stay in
# its graphs. _amp_foreach_non_finite_check_and_unscale_: found_inf becomes 1.0 when a
# gradient holds an inf or NaN (never reset to 0), every gradient is multiplied by inv_scale
# in place (computed in float for 16-bit gradients, as the kernel's opmath). _amp_update_scale_:
# after an inf the scale is multiplied by backoff_factor and the tracker reset; otherwise the
# tracker counts, and at growth_interval the scale is multiplied by growth_factor when the
# product is finite (the kernel multiplies the float scale by the double factor and rounds
# once: done in float64 here) and the tracker reset.

def amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    for g in grads:
        found_inf.copy_(torch.where(torch.isfinite(g).all(), found_inf, 1.0))
        g.mul_(inv_scale)


def amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    inf = found_inf != 0
    successful = growth_tracker + 1
    grow = torch.logical_and(torch.logical_not(inf), successful == growth_interval)
    grown = (scale.double() * growth_factor).float()
    backed = (scale.double() * backoff_factor).float()
    new_scale = torch.where(inf, backed, torch.where(torch.logical_and(grow, torch.isfinite(grown)), grown, scale))
    new_tracker = torch.where(torch.logical_or(inf, grow), torch.zeros_like(successful), successful)
    scale.copy_(new_scale)
    growth_tracker.copy_(new_tracker)
    return scale


POLYFILLS[torch._amp_foreach_non_finite_check_and_unscale_] = amp_foreach_non_finite_check_and_unscale_
POLYFILLS[torch._amp_update_scale_] = amp_update_scale_


# ---- torch._C._group_tensors_by_device_and_dtype (torch.utils._foreach_utils: clip_grad_norm_,
# the foreach optimizers) -------------------------------------------------------------------
# One group (every tensor of the first list on one device with one dtype, the common case):
# {(device, dtype): ([each list copied], indices or [])}. Several groups come back in the
# C++ map's order, and anything eager checks (an empty first list, lists of other lengths)
# raises there: both are left to the original, whose call breaks the graph.

_group_tensors = torch._C._group_tensors_by_device_and_dtype


def group_tensors_by_device_and_dtype(tensorlistlist, with_indices=False):
    first = tensorlistlist[0]
    if len(first) == 0:
        return _group_tensors(tensorlistlist, with_indices)
    device = first[0].device
    dtype = first[0].dtype
    for t in first:
        if not isinstance(t, torch.Tensor) or t.device != device or t.dtype != dtype:
            return _group_tensors(tensorlistlist, with_indices)
    lists = []
    for tl in tensorlistlist:
        if len(tl) != len(first):
            return _group_tensors(tensorlistlist, with_indices)
        lists.append(list(tl))
    return {(device, dtype): (lists, list(range(len(first))) if with_indices else [])}


POLYFILLS[_group_tensors] = group_tensors_by_device_and_dtype


# ---- torch._foreach_mul_ / _foreach_norm / _foreach_clamp_min_ / _max_ (clip_grad_*_) -------
# The CPU foreach ops run the per-tensor op on each tensor (ATen's slow path); CUDA's fused
# kernels compute in the same opmath and differ at most in a norm's summation order.
# Lists of other lengths, and forms not written here, go to the original (a break).

_foreach_mul_ = torch._foreach_mul_
_foreach_norm = torch._foreach_norm


def foreach_mul_(self, other):
    if isinstance(other, (list, tuple)):
        if len(other) != len(self):
            return _foreach_mul_(self, other)
        for t, o in zip(self, other):
            t.mul_(o)
        return None
    for t in self:
        t.mul_(other)
    return None


def foreach_norm(self, ord=2, dtype=None):
    out = []
    for t in self:
        out.append(torch.linalg.vector_norm(t, ord, dtype=dtype))
    return out


_foreach_clamp_min_ = torch._foreach_clamp_min_
_foreach_clamp_max_ = torch._foreach_clamp_max_


def foreach_clamp_min_(self, other):  # clip_grad_value_
    if isinstance(other, (list, tuple)):
        return _foreach_clamp_min_(self, other)
    for t in self:
        t.clamp_min_(other)
    return None


def foreach_clamp_max_(self, other):
    if isinstance(other, (list, tuple)):
        return _foreach_clamp_max_(self, other)
    for t in self:
        t.clamp_max_(other)
    return None


POLYFILLS[_foreach_mul_] = foreach_mul_
POLYFILLS[_foreach_norm] = foreach_norm
POLYFILLS[_foreach_clamp_min_] = foreach_clamp_min_
POLYFILLS[_foreach_clamp_max_] = foreach_clamp_max_


# ---- dataclasses.asdict / astuple ----------------------------------------------------------
# The library's own recurse through id()-keyed memo dicts in copy.deepcopy for every leaf
# value; here the leaves the trace holds by value (None, bool, int, float, str, bytes, and
# other immutable constants) come back as themselves, as deepcopy returns them; anything
# else goes through copy.deepcopy as in eager (tensors: the tracer's own rules, or a break).

import copy as _copy
import dataclasses as _dataclasses

_ATOMIC = (type(None), bool, int, float, complex, str, bytes)


def _dc_inner(obj, factory, as_dict):
    if isinstance(obj, type):
        return _copy.deepcopy(obj)
    if hasattr(type(obj), "__dataclass_fields__"):
        vals = [(f.name, _dc_inner(getattr(obj, f.name), factory, as_dict)) for f in _dataclasses.fields(obj)]
        return factory(vals) if as_dict else factory([v for _, v in vals])
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*[_dc_inner(v, factory, as_dict) for v in obj])
    if isinstance(obj, (list, tuple)):
        return type(obj)([_dc_inner(v, factory, as_dict) for v in obj])
    if isinstance(obj, dict):
        return type(obj)([(_dc_inner(k, factory, as_dict), _dc_inner(v, factory, as_dict)) for k, v in obj.items()])
    if type(obj) in _ATOMIC:
        return obj
    return _copy.deepcopy(obj)


def dataclasses_asdict(obj, *, dict_factory=dict):
    if not hasattr(type(obj), "__dataclass_fields__") or isinstance(obj, type):
        raise TypeError("asdict() should be called on dataclass instances")
    return _dc_inner(obj, dict_factory, True)


def dataclasses_astuple(obj, *, tuple_factory=tuple):
    if not hasattr(type(obj), "__dataclass_fields__") or isinstance(obj, type):
        raise TypeError("astuple() should be called on dataclass instances")
    return _dc_inner(obj, tuple_factory, False)


POLYFILLS[_dataclasses.asdict] = dataclasses_asdict
POLYFILLS[_dataclasses.astuple] = dataclasses_astuple

# ---- calls of objects, by type -----------------------------------------------------------

CALLS = {}  # type -> function(obj, *args, **kwargs); functools.partial is obj_func.c's own


# ---- torch ops written over the graph's ops (torchc/_polyfill_ops.py) ---------------------
from torchc import _polyfill_ops  # noqa: E402

_polyfill_ops.register(POLYFILLS)

# ---- torch.utils._pytree.tree_leaves over plain containers -------------------------------
# The original consults pytree's registry (a dict keyed by types, which the tracer does not
# model); over tuples, lists, dicts (values in insertion order), None and tensor/number leaves
# its answer is fixed. Anything
# else (a registered node type, an unknown leaf, is_leaf) goes to the original, traced as
# written (which breaks there).
import torch.utils._pytree as _pytree  # noqa: E402

_PLAIN_LEAVES = (int, float, bool, str, complex, torch.dtype, torch.device)
_NONE_IS_LEAF = _pytree.tree_leaves(None) == [None]  # a leaf in torch 2.13, a node in some others


def _plain_leaves(x, out):
    tp = type(x)
    if tp is tuple or tp is list:
        for item in x:
            if not _plain_leaves(item, out):
                return False
        return True
    if tp is dict:
        for item in x.values():
            if not _plain_leaves(item, out):
                return False
        return True
    if x is None:
        if _NONE_IS_LEAF:
            out.append(x)
        return True
    if isinstance(x, torch.Tensor) or tp in _PLAIN_LEAVES:
        out.append(x)
        return True
    return False


def _tree_leaves(tree, is_leaf=None):
    if is_leaf is None:
        out = []
        if _plain_leaves(tree, out):
            return out
    return _pytree.tree_leaves(tree, is_leaf=is_leaf)


POLYFILLS[_pytree.tree_leaves] = _tree_leaves


# ---- torch.utils._pytree.tree_map over plain containers ----------------------------------
# Over tuples, lists and dicts (nested, with tensor/number/None leaves) the original's answer
# is fixed by the containers themselves: the function mapped over the leaves, the containers
# rebuilt (dicts in insertion order), the other trees read up to the first one's structure
# (a leaf of the first takes the others' subtree there whole). The structure is checked
# before any call (the mapped function runs once per leaf, in the original's order); anything
# else (a registered node type, a named tuple, is_leaf, mismatched structures that the
# original rejects) goes to the original, traced as written.

def _plain_node(x):
    tp = type(x)
    return tp is tuple or tp is list or tp is dict


def _plain_match(x, rests):
    tp = type(x)
    if tp is tuple or tp is list:
        for r in rests:
            if type(r) is not tp or len(r) != len(x):
                return False
        for i in range(len(x)):
            if not _plain_match(x[i], [r[i] for r in rests]):
                return False
        return True
    if tp is dict:
        for r in rests:
            if type(r) is not dict or len(r) != len(x):
                return False
            for k in x:
                if k not in r:
                    return False
        for k in x:
            if not _plain_match(x[k], [r[k] for r in rests]):
                return False
        return True
    if x is None:
        return _NONE_IS_LEAF or all(r is None for r in rests)
    return isinstance(x, torch.Tensor) or tp in _PLAIN_LEAVES


def _plain_map(func, x, rests):
    tp = type(x)
    if tp is tuple or tp is list:
        out = [_plain_map(func, x[i], [r[i] for r in rests]) for i in range(len(x))]
        return tuple(out) if tp is tuple else out
    if tp is dict:
        return {k: _plain_map(func, x[k], [r[k] for r in rests]) for k in x}
    if x is None and not _NONE_IS_LEAF:
        return None
    return func(x, *rests)


def _tree_map(func, tree, *rests, is_leaf=None):
    if is_leaf is None and _plain_match(tree, list(rests)):
        return _plain_map(func, tree, list(rests))
    return _pytree.tree_map(func, tree, *rests, is_leaf=is_leaf)


POLYFILLS[_pytree.tree_map] = _tree_map


# ---- torch.utils.checkpoint.checkpoint -----------------------------------------------------
# Behind torch._disable_dynamo (a break), though what it computes is the function's own
# result: the function is traced inline, inside recompute_region, whose values the backward
# recomputes rather than reads saved (dynamo_hook/sym_call.c marks them, graph/partition.c
# cuts at what the region reads), as eager's checkpoint saves only its inputs. Random draws
# in the region are drawn once and saved: the same values eager's recompute draws again from
# the generator state it restored (preserve_rng_state). Gradients are eager's. A context_fn
# (selective checkpointing) is honoured for the region's matmul/conv/attention (_sac_policy).
# Left to the original (a break; eager runs it): use_reentrant unset (eager warns), debug,
# preserve_rng_state=False (eager's recompute draws new numbers), and in the reentrant form
# keyword arguments (eager raises), tensors inside containers or no tensor argument that
# requires grad (eager's gradients then do not reach what the function reads). A region that
# updates a tensor in place or writes an attribute fails the trace (sym_call.c).

import torch.utils.checkpoint as _ckpt_mod

_checkpoint = _ckpt_mod.checkpoint
_CKPT_OPTIONS = ("use_reentrant", "context_fn", "determinism_check", "debug", "early_stop", "preserve_rng_state")


def recompute_region(function, args, kwargs, context_fn=None):
    return function(*args, **kwargs)


def checkpoint(function, *args, **kwargs):
    use_reentrant = kwargs.get("use_reentrant", None)
    if (use_reentrant is None or kwargs.get("debug", False) is not False
            or kwargs.get("preserve_rng_state", True) is not True or (use_reentrant and "context_fn" in kwargs)):
        return _checkpoint(function, *args, **kwargs)
    rest = {}
    for k in kwargs:
        if k not in _CKPT_OPTIONS:
            rest[k] = kwargs[k]
    if use_reentrant:
        if rest:
            return _checkpoint(function, *args, **kwargs)
        any_grad = False
        for a in args:
            if isinstance(a, torch.Tensor):
                if a.requires_grad:
                    any_grad = True
            elif not (a is None or isinstance(a, (bool, int, float, str))):
                return _checkpoint(function, *args, **kwargs)
        if not any_grad:
            return _checkpoint(function, *args, **kwargs)
    if "context_fn" in kwargs:
        return recompute_region(function, args, rest, kwargs["context_fn"])
    return recompute_region(function, args, rest)


# Selective checkpointing (context_fn=partial(create_selective_checkpoint_contexts, policy)):
# called for real while the region is traced (dynamo_hook/sym_call.c checkpoint_policy), as
# torch.compile calls the policy while it traces. items: one (extern kind, on CUDA, metas) per
# matmul / conv / attention extern of the region in forward order, metas the operands' and
# then the result's (sizes, strides, dtype). The policy is asked about the ATen op eager
# dispatches for each (meta tensors of the operands' shapes as its arguments); a value it
# saves (MUST_SAVE / PREFER_SAVE, or True) is saved by the forward, the rest is recomputed.
# Pointwise ops and reductions are not asked about: they are recomputed (what a list of ops
# gives them unless it names them). Returns a list of bools, or a str: why the call runs
# eagerly instead.
def _sac_ops(kind, cuda, metas):
    aten = torch.ops.aten
    ins = metas[:-1]
    if kind in ("mm", "bmm", "addmm", "baddbmm"):
        return [getattr(aten, kind).default]
    if kind == "conv":
        return [aten.convolution.default]
    if kind == "matmul":
        da, db = len(ins[0][0]), len(ins[1][0])
        if da == 1 and db == 1:
            return [aten.dot.default]
        if db == 1:
            return [aten.mv.default]
        return [aten.mm.default] if db == 2 else [aten.bmm.default]
    if kind == "linear":
        x = ins[0]
        if len(x[0]) == 1:
            return [aten.mv.default] if len(ins) < 3 else [aten.addmv.default]
        if len(ins) >= 3 and (len(x[0]) == 2 or (len(x[0]) == 3 and _contiguous(x))):
            return [aten.addmm.default]
        return [aten.mm.default]
    if kind == "sdpa":
        if not cuda:
            return [aten._scaled_dot_product_flash_attention_for_cpu.default]
        return [getattr(aten, n).default for n in ("_scaled_dot_product_flash_attention",
                                                    "_scaled_dot_product_efficient_attention",
                                                    "_scaled_dot_product_cudnn_attention") if hasattr(aten, n)]
    return []


def _contiguous(m):
    sizes, strides, _ = m
    expect = 1
    for n, s in reversed(list(zip(sizes, strides))):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def _sac_policy(context_fn, items):
    import contextlib
    if context_fn is _ckpt_mod.noop_context_fn:
        return [False] * len(items)
    try:
        ctxs = context_fn()
    except Exception as e:  # eager raises it again
        return f"torch.utils.checkpoint's context_fn raised {type(e).__name__}"
    if not (isinstance(ctxs, tuple) and len(ctxs) == 2):
        return "torch.utils.checkpoint's context_fn did not return two contexts"
    fwd, rec = ctxs
    if isinstance(fwd, contextlib.nullcontext) and isinstance(rec, contextlib.nullcontext):
        return [False] * len(items)  # a plain checkpoint
    if type(fwd) is not _ckpt_mod._CachingTorchDispatchMode:
        return ("a torch.utils.checkpoint context_fn whose contexts are not create_selective_checkpoint_contexts's "
                f"({type(fwd).__name__})")
    policy = fwd.policy_fn
    P = _ckpt_mod.CheckpointPolicy
    out = []
    try:
        for kind, cuda, metas in items:
            args = [torch.empty_strided(sz, st, dtype=dt, device="meta") for sz, st, dt in metas]
            res = args.pop()
            try:
                ctx = _ckpt_mod.SelectiveCheckpointContext(is_recompute=False, op_output=res)
            except TypeError:  # an older torch's: no op_output
                ctx = _ckpt_mod.SelectiveCheckpointContext(is_recompute=False)
            save = False
            for op in _sac_ops(kind, cuda, metas):
                p = policy(ctx, op, *args)
                if isinstance(p, bool):
                    p = P.MUST_SAVE if p else P.PREFER_RECOMPUTE
                save = save or p in (P.MUST_SAVE, P.PREFER_SAVE)
            out.append(save)
    except Exception as e:
        return f"torch.utils.checkpoint's selective policy raised {type(e).__name__} on meta tensors"
    return out


POLYFILLS[_checkpoint] = checkpoint
