"""torchc.scan on CUDA: a recurrence h_t = f(h_{t-1} @ W + g(x_t, constants)) as one persistent kernel.

The scan's body was captured and compiled by torchc (the probe, torchc/_scan.py); its graph text
(inductor_c/graph/print.c) is read here. A body qualifies when (reasons in `why`, shown by
torchc._scan.last_lowering and torchc.explain(...).scan_lowerings):
  - it runs forward only (no gradient is needed: the backward through time is not generated);
  - its carry is one float32 tensor [N, n] with n <= 1024 (one thread per hidden column);
  - every node is pointwise (float32, from _UNARY/_BINARY/where/scalars), a view of a graph
    input (permute, expand, reshape of a dense view, slice), or a matrix product (mm, addmm,
    linear, 2-D matmul) whose right operand is a view of a loop constant [K, n] and whose left
    operand is the carry (at most one such product: the recurrent one; none is a pointwise
    recurrence, e.g. n = 1 where the product was captured as a multiply) or a view of an x
    slice or a constant (computed per element by a loop over K: input projections);
  - the carry is read only as itself ([N, n], or broadcast from it), and every result is
    [N, n] float32.
The kernel is LLVM IR written here from the graph (the pointwise tail is the body's own ops,
so any such f works) and compiled by torchc's NVPTX back end (_C._ir_to_ptx: O3 + NVPTX, the
code generator's pipeline); it is loaded through the CUDA driver and launched once per scan on
torch's current stream:
  one CTA per R batch rows (W in shared memory: R = 1 while N <= the SMs, else 2 or 4; W from
  L2: R = 4, 2 at 1024 threads), one thread per column i;
  W (the recurrent product's right operand, any strides) in shared memory, as ws[j][i], when
  n * n floats and the state fit the opt-in limit (n <= ~236), else read from global memory
  (L2); the state h in shared memory, double-buffered (one barrier a step);
  for t in 0 .. T-1: acc[r] = sum_j hs[t % 2][r][j] * W[j][i]; the body's pointwise ops give
  the next carry and the results at (r, i); the results go to their [T, N, n] stacks.
The body is compiled specialized to the call's shapes (torchc/_scan.py _compiled(static=True));
kernels are kept per IR text (PTX) and device (the loaded module), for the process.
Transcendentals: exp by range reduction around ex2.approx (a few ulp), tanh / sigmoid / silu /
expm1 from it, log via lg2.approx; tests/test_scan_persistent.py runs this IR on the CPU too.
"""
import ctypes
import hashlib
import re
import threading

import torch

__all__ = ["plan", "NotPersistent"]

MAX_HIDDEN = 1024
SMEM_OPTIN = 227 * 1024  # sm_90's opt-in dynamic shared memory per CTA (sm_80: 163 KB)
_SMEM_BY_SM = {80: 163 * 1024, 86: 99 * 1024, 89: 99 * 1024, 90: 227 * 1024}


class NotPersistent(Exception):
    """The body does not qualify: the reason."""


# ---- graph text -----------------------------------------------------------------------------
_LINE = re.compile(r"^%(\d+) = (\w+)(.*?) : (\w+)\[([^\]]*)\](.*)$")


class _Node:
    __slots__ = ("id", "op", "args", "ext", "attrs", "dtype", "sizes", "strides", "num", "index")

    def __init__(self):
        self.args, self.attrs, self.ext, self.strides, self.num, self.index = [], {}, None, None, None, None


def parse_graph(text):
    """(nodes, outputs, output attributes) of ic_graph_to_string's text."""
    nodes, outs, oattr = [], [], []
    for ln in text.splitlines():
        if ln.startswith("output "):
            m = re.match(r"output (\d+) = %(\d+)(.*)$", ln)
            outs.append(int(m.group(2)))
            oattr.append(m.group(3).strip())
            continue
        m = _LINE.match(ln)
        if not m:
            raise NotPersistent(f"unparsed graph line: {ln!r}")
        n = _Node()
        n.id, n.op, rest, n.dtype = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        n.sizes = [int(s) for s in m.group(5).split(",") if s.strip()]
        tail = m.group(6)
        if "sym=" in tail:
            raise NotPersistent("a dynamic-shape body")
        sm = re.search(r"strides=\[([^\]]*)\]", tail)
        if sm:
            n.strides = [int(s) for s in sm.group(1).split(",") if s.strip()]
        toks = rest.split()
        if n.op == "input":
            n.index = int(toks[0])
        elif n.op == "scalar":
            n.num = float(toks[0])
        else:
            for tk in toks:
                if tk.startswith("%"):
                    n.args.append(int(tk[1:]))
                elif "=" in tk:
                    k, v = tk.split("=", 1)
                    n.attrs[k] = [int(x) for x in v.strip("[]").split(",") if x] if v.startswith("[") else v
                elif n.op == "extern" and n.ext is None:
                    n.ext = tk
                else:
                    n.attrs[tk] = True
        if n.id != len(nodes):
            raise NotPersistent("graph values out of order")
        nodes.append(n)
    return nodes, outs, oattr


def _dense_strides(sizes):
    st, acc = [], 1
    for s in reversed(sizes):
        st.append(acc)
        acc *= s
    return st[::-1]


# ---- values of the body ----------------------------------------------------------------------
class _View:
    """A strided view of graph input `inp` (element offset, sizes, strides)."""

    def __init__(self, inp, off, sizes, strides):
        self.inp, self.off, self.sizes, self.strides = inp, off, list(sizes), list(strides)


_UNARY = {"neg", "abs", "exp", "log", "sqrt", "rsqrt", "reciprocal", "sigmoid", "tanh", "relu",
          "sign", "silu", "exp2", "log2", "floor", "ceil", "trunc", "expm1", "log1p",
          "logical_not", "isnan"}
_BINARY = {"add", "sub", "mul", "div", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge",
           "logical_and", "logical_or"}
_BOOL_OUT = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_not", "isnan"}


class Analysis:
    """What the kernel is made of: graph nodes classified, the recurrent product, the stores."""

    def __init__(self, text, kinds, carry_shape):
        self.nodes, self.outs, self.oattr = parse_graph(text)
        self.kinds = kinds  # per graph input: ("c", i) carry, ("x", i) x slice, ("k", i) constant
        self.N, self.n = carry_shape
        self.val = {}       # node id -> _View, or "pw" / "mm" / "scalar" / "carry"
        self.rec_mm = None  # the recurrent product's node
        self.x_mms = []
        self.inputs_used = set()
        for nd in self.nodes:
            self.val[nd.id] = self._classify(nd)

    def _bshape_ok(self, sizes):
        """broadcastable to [N, n] (right-aligned)"""
        if len(sizes) > 2 and any(s != 1 for s in sizes[:-2]):
            return False
        tail = ([1, 1] + list(sizes))[-2:]
        return tail[0] in (1, self.N) and tail[1] in (1, self.n)

    def _classify(self, nd):
        v = self.val
        if nd.op == "input":
            kind = self.kinds[nd.index]
            if nd.dtype not in ("f32", "bool", "i64", "i32") and kind[0] != "c":
                raise NotPersistent(f"input {nd.index} is {nd.dtype} (float32 only)")
            if kind[0] == "c":
                if nd.sizes != [self.N, self.n] or nd.dtype != "f32":
                    raise NotPersistent("the carry is not float32 [N, n]")
                return "carry"
            strides = nd.strides if nd.strides is not None else _dense_strides(nd.sizes)
            return _View(nd.index, 0, nd.sizes, strides)
        if nd.op == "scalar":
            return "scalar"
        if nd.op in ("permute", "expand", "reshape", "slice"):
            src = v[nd.args[0]]
            if src == "carry":
                if nd.op in ("expand", "reshape") and nd.sizes == [self.N, self.n]:
                    return "carry"
                raise NotPersistent(f"the carry is read through a {nd.op} (only as itself)")
            if not isinstance(src, _View):
                raise NotPersistent(f"a {nd.op} of a computed value")
            return self._view(nd, src)
        if nd.op == "extern":
            return self._extern(nd)
        if nd.op == "cast":
            if nd.dtype != "f32":
                raise NotPersistent(f"a cast to {nd.dtype}")
            self._pw_args(nd)
            return "pw"
        if nd.op in _UNARY or nd.op in _BINARY or nd.op == "where":
            want_bool = nd.op in _BOOL_OUT
            if nd.dtype != ("bool" if want_bool else "f32"):
                raise NotPersistent(f"{nd.op} of dtype {nd.dtype} (float32 values only)")
            self._pw_args(nd)
            return "pw"
        raise NotPersistent(f"op {nd.op} is not pointwise, a view or a matrix product")

    def _pw_args(self, nd):
        if not self._bshape_ok(nd.sizes):
            raise NotPersistent(f"%{nd.id} {nd.op} of shape {nd.sizes} is not broadcast to the carry's [N, n]")
        for a in nd.args:
            va = self.val[a]
            if isinstance(va, _View):
                if not self._bshape_ok(va.sizes):
                    raise NotPersistent(f"operand %{a} of shape {va.sizes} is not broadcast to [N, n]")
                self.inputs_used.add(va.inp)

    def _view(self, nd, src):
        if nd.op == "permute":
            p = nd.attrs["perm"]
            return _View(src.inp, src.off, [src.sizes[d] for d in p], [src.strides[d] for d in p])
        if nd.op == "expand":
            k = len(nd.sizes) - len(src.sizes)
            st = [0] * k + [0 if (s == 1 and t != 1) else st_
                            for s, t, st_ in zip(src.sizes, nd.sizes[k:], src.strides)]
            return _View(src.inp, src.off, nd.sizes, st)
        if nd.op == "slice":
            d, start, step = int(nd.attrs["dim"]), int(nd.attrs["start"]), int(nd.attrs["step"])
            st = list(src.strides)
            off = src.off + start * st[d]
            st[d] *= step
            return _View(src.inp, off, nd.sizes, st)
        # reshape: size-1 dims added / dropped, or a dense source
        a = [(s, t) for s, t in zip(src.sizes, src.strides) if s != 1]
        b = [s for s in nd.sizes if s != 1]
        if [s for s, _ in a] == b:
            it = iter([t for _, t in a])
            return _View(src.inp, src.off, nd.sizes, [0 if s == 1 else next(it) for s in nd.sizes])
        if src.strides == _dense_strides(src.sizes):
            return _View(src.inp, src.off, nd.sizes, _dense_strides(nd.sizes))
        raise NotPersistent("a reshape of a strided input view")

    def _extern(self, nd):
        name = nd.ext
        if nd.attrs.get("dropped"):
            raise NotPersistent(f"extern {name} with dropped operands")
        beta, alpha = float(nd.attrs.get("beta", 1)), float(nd.attrs.get("alpha", 1))
        if name in ("mm", "matmul") and len(nd.args) == 2:
            a, b, bias = nd.args[0], nd.args[1], None
        elif name == "addmm":
            bias, a, b = nd.args
        elif name == "linear":
            a, w = nd.args[0], nd.args[1]
            bias = nd.args[2] if len(nd.args) > 2 else None
            wv = self.val[w]
            if not isinstance(wv, _View) or len(wv.sizes) != 2:
                raise NotPersistent("linear's weight is not a view of an input")
            b = ("T", wv)
        else:
            raise NotPersistent(f"extern {name} (only mm, addmm, linear, 2-D matmul)")
        bv = b[1] if isinstance(b, tuple) else self.val[b]
        if isinstance(b, tuple):
            bv = _View(bv.inp, bv.off, bv.sizes[::-1], bv.strides[::-1])
        if not isinstance(bv, _View) or self.kinds[bv.inp][0] != "k" or len(bv.sizes) != 2 or bv.sizes[1] != self.n:
            raise NotPersistent(f"{name}'s right operand is not a loop constant [K, n]")
        if nd.sizes != [self.N, self.n] or nd.dtype != "f32":
            raise NotPersistent(f"{name} of shape {nd.sizes} {nd.dtype} (float32 [N, n] only)")
        av = self.val[a]
        if bias is not None:
            bvb = self.val[bias]
            if not (bvb in ("pw", "scalar", "carry") or isinstance(bvb, _View) and self._bshape_ok(bvb.sizes)):
                raise NotPersistent(f"{name}'s bias is not broadcast to [N, n]")
        self.inputs_used.add(bv.inp)
        info = {"node": nd, "b": bv, "bias": bias, "beta": beta, "alpha": alpha}
        if av == "carry":
            if self.rec_mm is not None:
                raise NotPersistent("two products of the carry")
            if bv.sizes[0] != self.n:
                raise NotPersistent("the recurrent matrix is not [n, n]")
            self.rec_mm = info
        elif isinstance(av, _View) and self.kinds[av.inp][0] in ("x", "k") and len(av.sizes) == 2 and \
                av.sizes[0] in (1, self.N) and av.sizes[1] == bv.sizes[0]:
            info["a"] = av
            self.inputs_used.add(av.inp)
            self.x_mms.append(info)
        else:
            raise NotPersistent(f"{name}'s left operand is neither the carry nor a view of an x slice "
                                "or constant")
        return ("mm", info)

    def check_outputs(self, out_ids):
        for o in out_ids:
            if self.oattr[o]:
                raise NotPersistent(f"graph output {o} has layout attributes ({self.oattr[o]})")
            nd = self.nodes[self.outs[o]]
            v = self.val[nd.id]
            if not (v == "pw" or isinstance(v, tuple)) or nd.sizes != [self.N, self.n] or nd.dtype != "f32":
                raise NotPersistent(f"graph output {o} is not a computed float32 [N, n] value")


# ---- LLVM IR -----------------------------------------------------------------------------------
def _f(x):
    """an LLVM float constant (a double's hex of the float32 value)"""
    import struct
    d = struct.unpack("<f", struct.pack("<f", x))[0]
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", d))[0]


class _IR:
    def __init__(self):
        self.lines, self.k = [], 0

    def tmp(self):
        self.k += 1
        return f"%v{self.k}"

    def op(self, text):
        r = self.tmp()
        self.lines.append(f"  {r} = {text}")
        return r

    def raw(self, text):
        self.lines.append(text)

    def label(self, name):
        self.lines.append(f"{name}:")


_DECLS = """
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare void @llvm.nvvm.barrier0()
declare float @llvm.fma.f32(float, float, float)
declare float @llvm.fabs.f32(float)
declare float @llvm.floor.f32(float)
declare float @llvm.ceil.f32(float)
declare float @llvm.trunc.f32(float)
declare float @llvm.sqrt.f32(float)
declare float @llvm.nvvm.ex2.approx.f(float)
declare float @llvm.nvvm.lg2.approx.f(float)
declare float @llvm.minnum.f32(float, float)
declare float @llvm.maxnum.f32(float, float)
declare float @llvm.roundeven.f32(float)
"""


class _Emit:
    """The pointwise ops of the body at element (row, col) as IR (memoized per element)."""

    def __init__(self, A, ir, ptrs, x_stride0, t64, row, col, rloc, acc, hs_cur):
        self.A, self.ir, self.ptrs, self.xs0, self.t64 = A, ir, ptrs, x_stride0, t64
        self.row, self.col, self.rloc, self.acc, self.hs_cur = row, col, rloc, acc, hs_cur
        self.memo = {}

    def addr(self, view, idx):
        """element address of view at per-dim indices idx (i64 values or ints)"""
        ir = self.ir
        off = ir.op(f"add i64 0, {view.off}")
        kind = self.A.kinds[view.inp]
        if kind[0] == "x":
            off = ir.op(f"add i64 {off}, " + ir.op(f"mul i64 {self.t64}, {self.xs0[kind[1]]}"))
        for d, (i, st) in enumerate(zip(idx, view.strides)):
            if st and view.sizes[d] != 1:
                off = ir.op(f"add i64 {off}, " + ir.op(f"mul i64 {i}, {st}"))
        return ir.op(f"getelementptr float, ptr addrspace(1) {self.ptrs[view.inp]}, i64 {off}")

    def load_bcast(self, view, dtype):
        sizes = view.sizes
        nd = len(sizes)
        idx = []
        for d in range(nd):
            k = d - nd  # -2 row, -1 col
            idx.append(self.row if k == -2 else self.col if k == -1 else 0)
        p = self.addr(view, idx)
        ty = {"f32": "float", "bool": "i8", "i32": "i32", "i64": "i64"}[dtype]
        if dtype == "f32":
            return self.ir.op(f"load float, ptr addrspace(1) {p}, align 4")
        x = self.ir.op(f"load {ty}, ptr addrspace(1) {p}")
        if dtype == "bool":
            return self.ir.op(f"icmp ne i8 {x}, 0")
        raise NotPersistent(f"an integer input ({dtype}) read pointwise")

    def value(self, vid):
        if vid in self.memo:
            return self.memo[vid]
        A, ir = self.A, self.ir
        nd, v = A.nodes[vid], A.val[vid]
        if v == "scalar":
            r = ("true" if nd.num else "false") if nd.dtype == "bool" else _f(nd.num)
        elif v == "carry":
            r = self.hs_cur(self.rloc, self.col)
        elif isinstance(v, _View):
            r = self.load_bcast(v, nd.dtype)
        elif isinstance(v, tuple):
            r = self.product(v[1])
        else:
            r = self.pointwise(nd, [self.value(a) for a in nd.args], [A.nodes[a].dtype for a in nd.args])
        self.memo[vid] = r
        return r

    def product(self, info):
        ir = self.ir
        if info is self.A.rec_mm:
            s = self.acc
        else:  # sum_k a[row, k] * b[k, col], K from the graph (an input projection)
            av, bv = info["a"], info["b"]
            K = bv.sizes[0]
            s = _f(0.0)
            for k in range(K) if K <= 16 else ():
                x = self.load_elem(av, [self.row if av.sizes[0] != 1 else 0, k])
                w = self.load_elem(bv, [k, self.col])
                s = ir.op(f"call float @llvm.fma.f32(float {x}, float {w}, float {s})")
            if K > 16:
                s = self.k_loop(av, bv, K)
        if info["alpha"] != 1:
            s = ir.op(f"fmul float {s}, {_f(info['alpha'])}")
        if info["bias"] is not None:
            bb = self.value(info["bias"])
            if info["beta"] != 1:
                bb = ir.op(f"fmul float {bb}, {_f(info['beta'])}")
            s = ir.op(f"fadd float {bb}, {s}")
        return s

    def load_elem(self, view, idx):
        p = self.addr(view, [i if isinstance(i, str) else str(i) for i in idx])
        return self.ir.op(f"load float, ptr addrspace(1) {p}, align 4")

    def k_loop(self, av, bv, K):
        ir = self.ir
        pre = ir.tmp()[1:]
        head, body, done = f"k{pre}", f"kb{pre}", f"kd{pre}"
        ir.raw(f"  br label %{head}_e")
        ir.label(f"{head}_e")
        ir.raw(f"  br label %{body}")
        ir.label(body)
        k, s = ir.tmp(), ir.tmp()
        ir.raw(f"  {k} = phi i64 [0, %{head}_e], [{k}n, %{body}]")
        ir.raw(f"  {s} = phi float [{_f(0.0)}, %{head}_e], [{s}n, %{body}]")
        x = self.load_elem(av, [self.row if av.sizes[0] != 1 else 0, k])
        w = self.load_elem(bv, [k, self.col])
        ir.raw(f"  {s}n = call float @llvm.fma.f32(float {x}, float {w}, float {s})")
        ir.raw(f"  {k}n = add i64 {k}, 1")
        c = ir.op(f"icmp eq i64 {k}n, {K}")
        ir.raw(f"  br i1 {c}, label %{done}, label %{body}")
        ir.label(done)
        return f"{s}n"

    def exp(self, x):
        """exp(x) = 2^k ex2(r log2 e), k = round(x log2 e), r = x - k ln 2 (two-part ln 2): the
        approximate ex2 only on |r log2 e| <= 0.5 (a few ulp in all); 2^k as two exact powers
        (k clamped to +-150: overflow to inf, underflow through the denormals to 0); NaN kept"""
        ir = self.ir
        y = ir.op(f"fmul float {x}, {_f(1.4426950408889634)}")
        kf = ir.op(f"call float @llvm.roundeven.f32(float {y})")
        kf = ir.op(f"call float @llvm.maxnum.f32(float {kf}, float {_f(-150.0)})")
        kf = ir.op(f"call float @llvm.minnum.f32(float {kf}, float {_f(150.0)})")
        nk = ir.op(f"fneg float {kf}")
        r = ir.op(f"call float @llvm.fma.f32(float {nk}, float {_f(0.693145751953125)}, float {x})")
        r = ir.op(f"call float @llvm.fma.f32(float {nk}, float {_f(1.4286068203094173e-06)}, float {r})")
        p = ir.op(f"call float @llvm.nvvm.ex2.approx.f(float " + ir.op(f"fmul float {r}, {_f(1.4426950408889634)}") + ")")
        k = ir.op(f"fptosi float {kf} to i32")
        k1 = ir.op(f"ashr i32 {k}, 1")
        k2 = ir.op(f"sub i32 {k}, {k1}")
        s1 = ir.op("bitcast i32 " + ir.op("shl i32 " + ir.op(f"add i32 {k1}, 127") + ", 23") + " to float")
        s2 = ir.op("bitcast i32 " + ir.op("shl i32 " + ir.op(f"add i32 {k2}, 127") + ", 23") + " to float")
        e = ir.op(f"fmul float " + ir.op(f"fmul float {p}, {s1}") + f", {s2}")
        u = ir.op(f"fcmp uno float {x}, {x}")
        return ir.op(f"select i1 {u}, float {x}, float {e}")

    def pointwise(self, nd, a, dts):
        ir, op = self.ir, nd.op
        F = "float"
        if op == "cast":
            if dts[0] == "bool":
                return ir.op(f"uitofp i1 {a[0]} to float")
            if dts[0] == "f32" or self.A.val[nd.args[0]] == "scalar":  # (scalars: float constants)
                return a[0]
            raise NotPersistent(f"a cast from {dts[0]}")
        for i, d in enumerate(dts[:len(a)]):  # weak scalars / bools used as floats
            if op not in ("where", "logical_and", "logical_or", "logical_not") and d == "bool":
                a[i] = ir.op(f"uitofp i1 {a[i]} to float")
        b = {"add": "fadd", "sub": "fsub", "mul": "fmul", "div": "fdiv"}
        if op in b:
            return ir.op(f"{b[op]} {F} {a[0]}, {a[1]}")
        cmp = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
        if op in cmp:
            return ir.op(f"fcmp {cmp[op]} {F} {a[0]}, {a[1]}")
        if op in ("maximum", "minimum"):  # NaN-propagating
            m = ir.op(f"call float @llvm.{'maxnum' if op == 'maximum' else 'minnum'}.f32(float {a[0]}, float {a[1]})")
            u = ir.op(f"fcmp uno float {a[0]}, {a[1]}")
            s = ir.op(f"fadd float {a[0]}, {a[1]}")
            return ir.op(f"select i1 {u}, float {s}, float {m}")
        if op == "logical_and":
            return ir.op(f"and i1 {a[0]}, {a[1]}")
        if op == "logical_or":
            return ir.op(f"or i1 {a[0]}, {a[1]}")
        if op == "logical_not":
            return ir.op(f"xor i1 {a[0]}, true")
        if op == "where":
            c = a[0]
            vals = []
            for x, d in zip(a[1:], dts[1:]):
                vals.append(ir.op(f"uitofp i1 {x} to float") if d == "bool" else x)
            return ir.op(f"select i1 {c}, float {vals[0]}, float {vals[1]}")
        x = a[0]
        if op == "neg":
            return ir.op(f"fneg float {x}")
        if op == "abs":
            return ir.op(f"call float @llvm.fabs.f32(float {x})")
        if op in ("floor", "ceil", "trunc"):
            return ir.op(f"call float @llvm.{op}.f32(float {x})")
        if op == "sqrt":
            return ir.op(f"call float @llvm.sqrt.f32(float {x})")
        if op == "rsqrt":
            s = ir.op(f"call float @llvm.sqrt.f32(float {x})")
            return ir.op(f"fdiv float {_f(1.0)}, {s}")
        if op == "reciprocal":
            return ir.op(f"fdiv float {_f(1.0)}, {x}")
        if op == "isnan":
            return ir.op(f"fcmp uno float {x}, {x}")
        if op == "relu":  # NaN stays NaN
            c = ir.op(f"fcmp olt float {x}, {_f(0.0)}")
            return ir.op(f"select i1 {c}, float {_f(0.0)}, float {x}")
        if op == "sign":  # 1, -1, 0 (of ±0), NaN
            p = ir.op(f"fcmp ogt float {x}, {_f(0.0)}")
            n = ir.op(f"fcmp olt float {x}, {_f(0.0)}")
            s = ir.op(f"select i1 {n}, float {_f(-1.0)}, float {x}")
            z = ir.op(f"fmul float {s}, {_f(0.0)}")
            s2 = ir.op(f"select i1 {n}, float {_f(-1.0)}, float {z}")
            return ir.op(f"select i1 {p}, float {_f(1.0)}, float {s2}")
        if op == "exp":
            return self.exp(x)
        if op == "exp2":
            return ir.op(f"call float @llvm.nvvm.ex2.approx.f(float {x})")
        if op == "expm1":  # small |x|: x + x^2/2 + x^3/6 (+ x^4/24), else exp(x) - 1
            ax = ir.op(f"call float @llvm.fabs.f32(float {x})")
            small = ir.op(f"fcmp olt float {ax}, {_f(0.03125)}")
            e = self.exp(x)
            em = ir.op(f"fsub float {e}, {_f(1.0)}")
            p = ir.op(f"call float @llvm.fma.f32(float {x}, float {_f(1 / 24)}, float {_f(1 / 6)})")
            p = ir.op(f"call float @llvm.fma.f32(float {x}, float {p}, float {_f(0.5)})")
            p = ir.op(f"fmul float {p}, {x}")
            p = ir.op(f"call float @llvm.fma.f32(float {p}, float {x}, float {x})")
            return ir.op(f"select i1 {small}, float {p}, float {em}")
        if op in ("log", "log2", "log1p"):
            y = x if op != "log1p" else ir.op(f"fadd float {x}, {_f(1.0)}")
            l2 = ir.op(f"call float @llvm.nvvm.lg2.approx.f(float {y})")
            return l2 if op == "log2" else ir.op(f"fmul float {l2}, {_f(0.6931471805599453)}")
        if op == "sigmoid":
            e = self.exp(ir.op(f"fneg float {x}"))
            d = ir.op(f"fadd float {e}, {_f(1.0)}")
            return ir.op(f"fdiv float {_f(1.0)}, {d}")
        if op == "silu":
            e = self.exp(ir.op(f"fneg float {x}"))
            d = ir.op(f"fadd float {e}, {_f(1.0)}")
            return ir.op(f"fdiv float {x}, {d}")
        if op == "tanh":
            # |x| < 0.625: an odd polynomial (Cephes tanhf's coefficients); else
            # sign(x) (1 - 2 / (exp(2|x|) + 1)); NaN stays NaN
            ax = ir.op(f"call float @llvm.fabs.f32(float {x})")
            z = ir.op(f"fmul float {x}, {x}")
            p = _f(-5.70498872745e-3)
            for c in (2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1):
                p = ir.op(f"call float @llvm.fma.f32(float {p}, float {z}, float {_f(c)})")
            p = ir.op(f"fmul float {p}, {z}")
            small = ir.op(f"call float @llvm.fma.f32(float {p}, float {x}, float {x})")
            e = self.exp(ir.op(f"fmul float {ax}, {_f(2.0)}"))
            d = ir.op(f"fadd float {e}, {_f(1.0)}")
            q = ir.op(f"fdiv float {_f(2.0)}, {d}")
            big = ir.op(f"fsub float {_f(1.0)}, {q}")
            neg = ir.op(f"fcmp olt float {x}, {_f(0.0)}")
            nb = ir.op(f"fneg float {big}")
            sb = ir.op(f"select i1 {neg}, float {nb}, float {big}")
            c = ir.op(f"fcmp olt float {ax}, {_f(0.625)}")
            r = ir.op(f"select i1 {c}, float {small}, float {sb}")
            u = ir.op(f"fcmp uno float {x}, {x}")
            return ir.op(f"select i1 {u}, float {x}, float {r}")
        raise NotPersistent(f"op {op} has no persistent-kernel form")


class Kernel:
    """One generated kernel: its IR and launch shape."""

    def __init__(self, A, cout, yout, x_stride0, nsm, sm):
        self.A = A
        N, n = A.N, A.n
        self.threads = max(32, (n + 31) // 32 * 32)
        R = 1 if N <= nsm else (2 if N <= 2 * nsm or self.threads > 512 else 4)
        self.R = min(R, N)
        self.np = (n + 3) & ~3
        self.ctas = (N + self.R - 1) // self.R
        hs_bytes = 2 * self.R * self.np * 4
        w_bytes = n * self.np * 4
        limit = _SMEM_BY_SM.get(sm, 99 * 1024 if sm < 90 else SMEM_OPTIN)
        self.has_mv = A.rec_mm is not None  # else a pointwise recurrence (e.g. n = 1: h * w)
        self.w_smem = self.has_mv and w_bytes + hs_bytes <= limit
        if self.has_mv and not self.w_smem:
            # W from L2: a CTA's step streams all of W whatever its rows, so each value serves
            # up to 4 rows (2 at 1024 threads: registers) and fewer SMs are busy for it
            self.R = min(N, 4 if self.threads <= 512 else 2)
            self.ctas = (N + self.R - 1) // self.R
            hs_bytes = 2 * self.R * self.np * 4
        self.smem = hs_bytes + (w_bytes if self.w_smem else 0)
        self.cout, self.yout = cout, yout
        self.ninputs = len(A.kinds)
        self.ir = self._build(x_stride0)
        self.key = hashlib.sha256(self.ir.encode()).hexdigest()

    def describe(self):
        where = ("W in shared memory" if self.w_smem else
                 "W in global memory (L2; n*n floats exceed the shared memory)" if self.has_mv else
                 "no matrix product of the carry (a pointwise recurrence)")
        why = ("the CUDA body is a product of the carry with a constant plus pointwise ops" if self.has_mv else
               "the CUDA body is pointwise in the carry")
        return (f"persistent kernel ({why}): one launch for all steps, {self.ctas} CTAs x {self.threads} threads, "
                f"{self.R} batch row(s) a CTA, {where}, {self.smem} B shared")

    def _build(self, xs0):
        A = self.A
        N, n, R, np_ = A.N, A.n, self.R, self.np
        ir = _IR()
        outs = sorted(set(self.yout))
        # params: h0, every graph input (carry's unused), the ys' stacks [T, N, n], the final carry, T
        params = ["ptr addrspace(1) %h0"] + [f"ptr addrspace(1) noalias %in{i}" for i in range(self.ninputs)]
        params += [f"ptr addrspace(1) noalias %y{m}" for m in range(len(outs))] + ["ptr addrspace(1) noalias %hT", "i32 %T"]
        ptrs = {i: f"%in{i}" for i in range(self.ninputs)}
        ir.raw("define void @torchc_scan_persist(" + ", ".join(params) + ") {")
        ir.label("entry")
        tid = ir.op("call i32 @llvm.nvvm.read.ptx.sreg.tid.x()")
        bid = ir.op("call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()")
        tid64 = ir.op(f"zext i32 {tid} to i64")
        bid64 = ir.op(f"zext i32 {bid} to i64")
        colok = ir.op(f"icmp ult i64 {tid64}, {n}")
        col = ir.op(f"select i1 {colok}, i64 {tid64}, i64 {n - 1}")
        r0 = ir.op(f"mul i64 {bid64}, {R}")
        rows, rowok = [], []
        for r in range(R):
            rr = ir.op(f"add i64 {r0}, {r}")
            ok = ir.op(f"icmp ult i64 {rr}, {N}")
            rowok.append(ir.op(f"and i1 {ok}, {colok}"))
            rows.append(ir.op(f"select i1 {ok}, i64 {rr}, i64 {N - 1}"))
        hs_base = n * np_ if self.w_smem else 0

        def hs_ptr(buf, r, c):  # buf: i64 value 0/1
            o = ir.op(f"mul i64 {buf}, {R * np_}")
            o = ir.op(f"add i64 {o}, {hs_base + r * np_}")
            o = ir.op(f"add i64 {o}, {c}")
            return ir.op(f"getelementptr float, ptr addrspace(3) @smem, i64 {o}")
        W = A.rec_mm["b"] if self.has_mv else None
        if self.w_smem:  # ws[j][i] = W[j, i] (any strides), loaded once
            ir.raw("  br label %wl")
            ir.label("wl")
            e = ir.tmp()
            ir.raw(f"  {e} = phi i64 [{tid64}, %entry], [{e}n, %wst]")
            j = ir.op(f"udiv i64 {e}, {n}")
            i = ir.op(f"urem i64 {e}, {n}")
            o = ir.op(f"mul i64 {j}, {W.strides[0]}")
            o = ir.op(f"add i64 {o}, " + ir.op(f"mul i64 {i}, {W.strides[1]}"))
            o = ir.op(f"add i64 {o}, {W.off}")
            src = ir.op(f"getelementptr float, ptr addrspace(1) {ptrs[W.inp]}, i64 {o}")
            inb = ir.op(f"icmp ult i64 {e}, {n * n}")
            ir.raw(f"  br i1 {inb}, label %wst, label %wend")  # (threads past n*n: none to load)
            ir.label("wst")
            w = ir.op(f"load float, ptr addrspace(1) {src}, align 4")
            do = ir.op(f"add i64 " + ir.op(f"mul i64 {j}, {np_}") + f", {i}")
            dst = ir.op(f"getelementptr float, ptr addrspace(3) @smem, i64 {do}")
            ir.raw(f"  store float {w}, ptr addrspace(3) {dst}, align 4")
            ir.raw(f"  {e}n = add i64 {e}, {self.threads}")
            c = ir.op(f"icmp ult i64 {e}n, {n * n}")
            ir.raw(f"  br i1 {c}, label %wl, label %wend")
            ir.label("wend")
        # the state: hs[0][r][col] = h0[row r, col]
        for r in range(R):
            o = ir.op(f"add i64 " + ir.op(f"mul i64 {rows[r]}, {n}") + f", {col}")
            p = ir.op(f"getelementptr float, ptr addrspace(1) %h0, i64 {o}")
            h = ir.op(f"load float, ptr addrspace(1) {p}, align 4")
            ir.raw(f"  store float {h}, ptr addrspace(3) {hs_ptr(0, r, col)}, align 4")
        ir.raw("  call void @llvm.nvvm.barrier0()")
        ir.raw("  %T64 = zext i32 %T to i64")
        ir.raw("  %any = icmp ugt i64 %T64, 0")
        ir.raw("  br i1 %any, label %step, label %fin")
        # ---- the step loop
        ir.label("step")
        t = "%t"
        ir.raw(f"  %t = phi i64 [0, %wend_h], [%tn, %stepend]")
        cur = ir.op("and i64 %t, 1")
        nxt = ir.op("xor i64 " + cur + ", 1")
        # matvec: acc[r] = sum_j hs[cur][r][j] * W[j][col]: j by 4 (hs[cur][r][j .. j+3] one
        # 16-byte shared load, a broadcast; two accumulators), then the n % 4 last j
        def w_at(j):
            if self.w_smem:
                o = ir.op(f"add i64 " + ir.op(f"mul i64 {j}, {np_}") + f", {col}")
                wp = ir.op(f"getelementptr float, ptr addrspace(3) @smem, i64 {o}")
                return ir.op(f"load float, ptr addrspace(3) {wp}, align 4")
            o = ir.op(f"mul i64 {j}, {W.strides[0]}")
            o = ir.op(f"add i64 {o}, " + ir.op(f"mul i64 {col}, {W.strides[1]}"))
            o = ir.op(f"add i64 {o}, {W.off}")
            wp = ir.op(f"getelementptr float, ptr addrspace(1) {ptrs[W.inp]}, i64 {o}")
            return ir.op(f"load float, ptr addrspace(1) {wp}, align 4")
        n_mv = n if self.has_mv else 0
        n4 = n_mv // 4 * 4
        accs = [_f(0.0)] * R
        if n4:
            ir.raw("  br label %mv")
            ir.label("mv")
            ir.raw("  %j = phi i64 [0, %step], [%jn, %mv]")
            for r in range(R):
                for q in (0, 1):
                    ir.raw(f"  %a{q}_{r} = phi float [{_f(0.0)}, %step], [%a{q}_{r}n, %mv]")
            ws = [w_at(ir.op(f"add i64 %j, {q}")) for q in range(4)]
            for r in range(R):
                hp = hs_ptr(cur, r, "%j")
                hv = ir.op(f"load <4 x float>, ptr addrspace(3) {hp}, align 16")
                a = [f"%a0_{r}", f"%a1_{r}"]
                for q in range(4):
                    hq = ir.op(f"extractelement <4 x float> {hv}, i32 {q}")
                    dst = f"%a{q % 2}_{r}n" if q >= 2 else ir.tmp()
                    ir.raw(f"  {dst} = call float @llvm.fma.f32(float {hq}, float {ws[q]}, float {a[q % 2]})")
                    a[q % 2] = dst
            ir.raw("  %jn = add i64 %j, 4")
            c = ir.op(f"icmp eq i64 %jn, {n4}")
            ir.raw(f"  br i1 {c}, label %mvt, label %mv")
            ir.label("mvt")
            accs = [ir.op(f"fadd float %a0_{r}n, %a1_{r}n") for r in range(R)]
        for j in range(n4, n_mv):
            w = w_at(str(j))
            for r in range(R):
                h = ir.op(f"load float, ptr addrspace(3) {hs_ptr(cur, r, j)}, align 4")
                accs[r] = ir.op(f"call float @llvm.fma.f32(float {h}, float {w}, float {accs[r]})")
        ir.raw("  br label %pw")
        ir.label("pw")
        for r in range(R):
            em = _Emit(A, ir, ptrs, xs0, t, rows[r], col, r, accs[r],
                       lambda rl, cc: ir.op(f"load float, ptr addrspace(3) {hs_ptr(cur, rl, cc)}, align 4"))
            vals = {j: em.value(A.outs[j]) for j in set(self.yout) | {self.cout}}
            hnext = vals[self.cout]
            blk = ir.tmp()[1:]
            ir.raw(f"  br i1 {rowok[r]}, label %st{blk}, label %sk{blk}")
            ir.label(f"st{blk}")
            base = ir.op(f"mul i64 {t}, {N * n}")
            o = ir.op(f"add i64 {base}, " + ir.op(f"add i64 " + ir.op(f"mul i64 {rows[r]}, {n}") + f", {col}"))
            for m, j in enumerate(outs):
                p = ir.op(f"getelementptr float, ptr addrspace(1) %y{m}, i64 {o}")
                ir.raw(f"  store float {vals[j]}, ptr addrspace(1) {p}, align 4")
            ir.raw(f"  store float {hnext}, ptr addrspace(3) {hs_ptr(nxt, r, col)}, align 4")
            ir.raw(f"  br label %sk{blk}")
            ir.label(f"sk{blk}")
        ir.raw("  br label %stepend")
        ir.label("stepend")
        ir.raw("  call void @llvm.nvvm.barrier0()")
        ir.raw("  %tn = add i64 %t, 1")
        c = ir.op("icmp eq i64 %tn, %T64")
        ir.raw(f"  br i1 {c}, label %fin, label %step")
        ir.label("fin")
        # the final carry: hs[T % 2][r][col] (this thread's own column: no barrier needed)
        last = ir.op("and i64 %T64, 1")
        for r in range(R):
            blk = ir.tmp()[1:]
            ir.raw(f"  br i1 {rowok[r]}, label %f{blk}, label %fs{blk}")
            ir.label(f"f{blk}")
            h = ir.op(f"load float, ptr addrspace(3) {hs_ptr(last, r, col)}, align 4")
            o = ir.op(f"add i64 " + ir.op(f"mul i64 {rows[r]}, {n}") + f", {col}")
            p = ir.op(f"getelementptr float, ptr addrspace(1) %hT, i64 {o}")
            ir.raw(f"  store float {h}, ptr addrspace(1) {p}, align 4")
            ir.raw(f"  br label %fs{blk}")
            ir.label(f"fs{blk}")
        ir.raw("  ret void")
        ir.raw("}")
        body = "\n".join(ir.lines)
        # the block that enters the step loop: after the W load (or the entry)
        body = body.replace("%wend_h", "%wend" if self.w_smem else "%entry")
        head = ("@smem = external addrspace(3) global [0 x float], align 16\n" + _DECLS +
                "\n!nvvm.annotations = !{!0, !1}\n!0 = !{ptr @torchc_scan_persist, !\"kernel\", i32 1}\n"
                f"!1 = !{{ptr @torchc_scan_persist, !\"maxntidx\", i32 {self.threads}}}\n")
        return head + body + "\n"


# ---- plan / run -------------------------------------------------------------------------------
_lock = threading.Lock()
_ptx_cache = {}   # kernel key -> PTX
_func_cache = {}  # (kernel key, device) -> (module, function)
_cu = None


def ptx_of(kernel, sm):
    from . import _C
    key = (kernel.key, sm)
    with _lock:
        p = _ptx_cache.get(key)
    if p is None:
        p = _C._ir_to_ptx(kernel.ir, sm)
        with _lock:
            _ptx_cache[key] = p
    return p


def plan(graph_text, kinds, carry_shape, cout, yout, x_stride0, nsm=132, sm=90):
    """A Kernel for the body's graph, or NotPersistent with the reason."""
    if graph_text is None:
        raise NotPersistent("no graph text")
    N, n = carry_shape
    if n > MAX_HIDDEN:
        raise NotPersistent(f"hidden size {n} > {MAX_HIDDEN} (one thread a column)")
    A = Analysis(graph_text, kinds, carry_shape)
    A.check_outputs([cout] + list(yout))
    return Kernel(A, cout, list(yout), x_stride0, nsm, sm)


def _check(rc, what):
    if rc != 0:
        name = ctypes.c_char_p()
        _cu.cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError(f"torchc.scan persistent kernel: {what}: CUDA error {rc} "
                           f"({name.value.decode() if name.value else '?'})")


def load(kernel, device):
    """The kernel's PTX made, its module loaded on device (raises on failure)."""
    with torch.cuda.device(device):
        _function(kernel, device)


def _function(kernel, device):
    global _cu
    key = (kernel.key, device.index)
    with _lock:
        f = _func_cache.get(key)
    if f is not None:
        return f
    if _cu is None:
        _cu = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    _check(_cu.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    if not ctx.value:  # torch's primary context of the device, made current on this thread
        d = ctypes.c_int()
        _check(_cu.cuDeviceGet(ctypes.byref(d), device.index), "cuDeviceGet")
        _check(_cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), d), "cuDevicePrimaryCtxRetain")
        _check(_cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    major, minor = torch.cuda.get_device_capability(device)
    ptx = ptx_of(kernel, major * 10 + minor).encode() + b"\0"
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    _check(_cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx)), "cuModuleLoadData")
    _check(_cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"torchc_scan_persist"), "cuModuleGetFunction")
    if kernel.smem > 48 * 1024:  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        _check(_cu.cuFuncSetAttribute(fn, 8, ctypes.c_int(kernel.smem)), "cuFuncSetAttribute")
    with _lock:
        _func_cache[key] = fn
    return fn


def buffers(kernel, c0, inputs, T):
    """(h0, ys stacks in kernel parameter order, hT, kernel pointer arguments but T) of a call"""
    N, n = kernel.A.N, kernel.A.n
    h0 = c0.contiguous()
    ys = [torch.empty((T, N, n), dtype=torch.float32, device=c0.device) for _ in sorted(set(kernel.yout))]
    hT = torch.empty((N, n), dtype=torch.float32, device=c0.device)
    ptrs = [h0.data_ptr()] + [x.data_ptr() if x is not None else 0 for x in inputs]
    ptrs += [y.data_ptr() for y in ys] + [hT.data_ptr()]
    return h0, ys, hT, ptrs


def results(kernel, ys, hT):
    """(final carry, the results' stacks in the body's order)"""
    outs = sorted(set(kernel.yout))
    return hT, [ys[outs.index(j)] for j in kernel.yout]


def run(kernel, c0, inputs, T):
    """(final carry, [ys stacks]) of the scan: inputs per graph input (the carry's is ignored),
    x inputs as the stacked [T, ...] tensors."""
    dev = c0.device
    with torch.cuda.device(dev):
        fn = _function(kernel, dev)
        h0, ys, hT, ptrs = buffers(kernel, c0, inputs, T)
        vals = [ctypes.c_void_p(p) for p in ptrs] + [ctypes.c_int(T)]
        params = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in vals])
        stream = ctypes.c_void_p(torch.cuda.current_stream(dev).cuda_stream)
        _check(_cu.cuLaunchKernel(fn, kernel.ctas, 1, 1, kernel.threads, 1, 1, kernel.smem, stream,
                                  params, None), "cuLaunchKernel")
    return results(kernel, ys, hT)
