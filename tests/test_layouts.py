"""torchc.layouts: the Python view of the linear-layout library.

Every operation is checked against brute-force evaluation in Python over all hardware
indices of random layouts, against layouts published by Triton / the PTX ISA, and the
shared-memory bank counter against a simulator written here.
"""
import itertools
import pickle
import random

import pytest

from torchc import layouts as L
from torchc.layouts import LinearLayout

pytestmark = pytest.mark.needs_no_compiler  # a library of the compiler, used without compiling

# ---- brute-force helpers -------------------------------------------------------------------


def bits(n):
    return n.bit_length() - 1


def ref_apply(layout, ins):
    """XOR of the bases of the set input bits, straight from .bases."""
    outs = [0] * len(layout.out_dims)
    for name, bases in layout.bases.items():
        v = ins.get(name, 0)
        for i, b in enumerate(bases):
            if v >> i & 1:
                outs = [o ^ x for o, x in zip(outs, b)]
    return {n: o for (n, _), o in zip(layout.out_dims, outs)}


def all_inputs(layout):
    dims = layout.in_dims
    for combo in itertools.product(*[range(s) for _, s in dims]):
        yield dict(zip([n for n, _ in dims], combo))


def image(layout):
    return {tuple(sorted(layout.apply(x).items())) for x in all_inputs(layout)}


def rand_layout(rng, in_names=("register", "lane", "warp"), out_names=("dim0", "dim1"), max_in=3, max_out=3,
                unit=False):
    out_dims = [(n, 1 << rng.randint(0, max_out)) for n in out_names]
    bases = {}
    for n in in_names:
        k = rng.randint(0, max_in)
        lst = []
        for _ in range(k):
            if unit:
                d = rng.randrange(len(out_dims))
                b = [0] * len(out_dims)
                if out_dims[d][1] > 1 and rng.random() > 0.15:
                    b[d] = 1 << rng.randrange(bits(out_dims[d][1]))
            else:
                b = [rng.randrange(s) for _, s in out_dims]
            lst.append(b)
        bases[n] = lst
    return LinearLayout(bases, out_dims)


# ---- construction, printing, errors ---------------------------------------------------------


def test_construct_and_repr():
    acc = LinearLayout({"register": [(0, 1), (8, 0)], "lane": [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]},
                       ["dim0", "dim1"])
    assert acc.in_dims == [("register", 4), ("lane", 32)]
    assert acc.out_dims == [("dim0", 16), ("dim1", 8)]
    r = repr(acc)
    assert r.startswith("LinearLayout(") and "register: [(0, 1), (8, 0)]" in r and "dim0: 16, dim1: 8" in r
    assert acc(register=1, lane=5) == {"dim0": 1, "dim1": 3}
    assert acc.apply({"register": 2}) == {"dim0": 8, "dim1": 0}
    one = LinearLayout({"offset": [1, 2, 4]})
    assert one.out_dims == [("dim0", 8)] and one.bases == {"offset": [(1,), (2,), (4,)]}
    sized = LinearLayout([("x", [1])], {"y": 4})
    assert sized.out_dims == [("y", 4)]
    assert pickle.loads(pickle.dumps(acc)) == acc
    assert hash(pickle.loads(pickle.dumps(acc))) == hash(acc)
    assert acc != one
    t = acc.table()
    assert " T0:0  T0:1  T1:0  T1:1" in t and "T31:2 T31:3" in t


@pytest.mark.parametrize("bad, exc", [
    (lambda: L.identity(6, "lane", "dim0"), ValueError),
    (lambda: L.identity(0, "lane", "dim0"), ValueError),
    (lambda: L.identity(-4, "lane", "dim0"), (ValueError, OverflowError)),
    (lambda: L.identity(4, "bad name", "dim0"), ValueError),
    (lambda: L.identity(4.0, "lane", "dim0"), TypeError),
    (lambda: L.identity(4, 3, "dim0"), TypeError),
    (lambda: LinearLayout({"x": [[1, 2], [1]]}), ValueError),
    (lambda: LinearLayout({"x": [5]}, {"dim0": 4}), ValueError),
    (lambda: LinearLayout({"x": [1]}, {"dim0": 3}), ValueError),
    (lambda: LinearLayout({"x": [-1]}), ValueError),
    (lambda: LinearLayout({"x": ["a"]}), TypeError),
    (lambda: LinearLayout({3: [1]}), TypeError),
    (lambda: LinearLayout({"x": [1] * 65}), ValueError),
    (lambda: L.identity(4, "lane", "dim0").apply(warp=1), ValueError),
    (lambda: L.identity(4, "lane", "dim0").apply(lane=4), ValueError),
    (lambda: L.identity(4, "lane", "dim0").apply(lane="x"), TypeError),
    (lambda: L.identity(4, "lane", "dim0").compose(5), TypeError),
    (lambda: L.identity(4, "lane", "dim0").compose(L.identity(4, "x", "y")), ValueError),
    (lambda: L.identity(4, "lane", "dim0") * 3, TypeError),
    (lambda: L.blocked([12], [1], [4], [4]), ValueError),
    (lambda: L.blocked([16, 16], [1], [4], [4]), ValueError),
    (lambda: L.blocked([16], [1], [4], [4], order=[1]), ValueError),
    (lambda: L.blocked("ab", [1], [4], [4]), TypeError),
    (lambda: L.mma_accumulator([16, 8, 2], [1, 1]), ValueError),
    (lambda: L.nvmma_shared([8, 32], 16, 128), ValueError),
    (lambda: L.shared_swizzled([32, 32], vec=3), ValueError),
    (lambda: L.plan_conversion(L.blocked([16], [1], [4], [4]), L.blocked([32], [1], [4], [4])), ValueError),
    (lambda: L.plan_conversion(L.blocked([16], [1], [4], [4]), L.blocked([16], [1], [4], [4]), 12), ValueError),
    (lambda: L.identity(4, "a", "b").invert_and_compose(L.zeros(4, "c", "b", 4)), ValueError),
    (lambda: L.zeros(4, "a", "b", 4).invert(), ValueError),
])
def test_bad_input_raises(bad, exc):
    with pytest.raises(exc):
        bad()


# ---- operations vs brute force --------------------------------------------------------------


def test_apply_and_properties_random():
    rng = random.Random(1)
    for _ in range(150):
        lay = rand_layout(rng, unit=rng.random() < 0.5)
        img = set()
        for x in all_inputs(lay):
            y = lay.apply(x)
            assert y == ref_apply(lay, x)
            img.add(tuple(y.values()))
        n_in = 1 << lay.in_bits
        n_out = 1 << lay.out_bits
        assert lay.is_surjective() == (len(img) == n_out)
        assert lay.is_injective() == (len(img) == n_in)
        assert 1 << lay.rank() == len(img)
        # free variables: with them 0 every element is reached exactly once
        masks = lay.free_variable_masks()
        seen = [tuple(lay.apply(x).values()) for x in all_inputs(lay)
                if all(x[n] & masks[n] == 0 for n in x)]
        assert len(seen) == len(set(seen)) == len(img)


def test_product_compose_invert_random():
    rng = random.Random(2)
    for _ in range(120):
        a = rand_layout(rng, ("register", "lane"), ("dim0", "dim1"), 2, 2)
        b = rand_layout(rng, ("lane", "warp"), ("dim1", "dim2"), 2, 2)
        p = a * b
        for xa in all_inputs(a):
            for xb in all_inputs(b):
                ins = {"register": xa["register"], "lane": xa["lane"] | xb["lane"] << bits(dict(a.in_dims)["lane"]),
                       "warp": xb["warp"]}
                ya, yb = a.apply(xa), b.apply(xb)
                want = {"dim0": ya["dim0"], "dim1": ya["dim1"] ^ (yb["dim1"] << bits(dict(a.out_dims)["dim1"])),
                        "dim2": yb["dim2"]}
                assert p.apply(ins) == want
        q = p.divide_left(a)
        assert q is not None and a * q == p
        r = p.divide_right(b)
        assert r is not None and r * b == p
    for _ in range(120):
        a = rand_layout(rng, ("register", "lane"), ("dim0", "dim1"), 3, 3)
        outer = LinearLayout({"dim0": [[rng.randrange(8), rng.randrange(4)] for _ in range(bits(dict(a.out_dims)["dim0"]))],
                              "dim1": [[rng.randrange(8), rng.randrange(4)] for _ in range(bits(dict(a.out_dims)["dim1"]))]},
                             [("u", 8), ("v", 4)])
        c = a.compose(outer)
        for x in all_inputs(a):
            assert c.apply(x) == outer.apply(a.apply(x))


def test_invert_and_compose_random():
    rng = random.Random(3)
    solved = unsolved = 0
    for _ in range(200):
        outer = rand_layout(rng, ("register", "lane", "warp"), ("dim0", "dim1"), 3, 3, unit=rng.random() < 0.5)
        a = rand_layout(rng, ("register", "lane"), ("dim0", "dim1"), 2, 0)
        # a's out dims must fit inside outer's: rebuild a with outer's sizes
        a = LinearLayout({n: [[rng.randrange(s) for _, s in outer.out_dims] for _ in bs]
                          for n, bs in a.bases.items()}, outer.out_dims)
        reach = image(outer)
        ok = all(tuple(sorted(a.apply(x).items())) in reach for x in all_inputs(a))
        if not ok:
            with pytest.raises(ValueError):
                a.invert_and_compose(outer)
            unsolved += 1
            continue
        c = a.invert_and_compose(outer)
        solved += 1
        assert c.in_dims == a.in_dims and c.out_dims == outer.in_dims
        for x in all_inputs(a):
            assert outer.apply(c.apply(x)) == a.apply(x)
    assert solved > 50 and unsolved > 10


def test_invert_pseudo_invert_identities():
    rng = random.Random(4)
    done = 0
    while done < 60:
        n = rng.randint(1, 6)
        bases = [[rng.randrange(1 << n)] for _ in range(n)]
        lay = LinearLayout({"offset": bases}, [("dim0", 1 << n)])
        if not lay.is_invertible():
            with pytest.raises(ValueError):
                lay.invert()
            continue
        done += 1
        inv = lay.invert()
        for x in range(1 << n):
            assert inv.apply(dim0=lay.apply(offset=x)["dim0"]) == {"offset": x}
        ident = lay.compose(inv)
        assert ident == L.identity(1 << n, "offset", "offset")
        assert lay.invert_and_compose(lay) == L.identity(1 << n, "offset", "offset")
    for _ in range(60):
        lay = rand_layout(rng, ("register", "lane"), ("dim0",), 3, 3)
        if not lay.is_surjective():
            with pytest.raises(ValueError):
                lay.pseudo_invert()
            continue
        p = lay.pseudo_invert()
        for y in range(dict(lay.out_dims)["dim0"]):
            assert lay.apply(p.apply(dim0=y))["dim0"] == y


def test_structural_ops():
    rng = random.Random(5)
    for _ in range(80):
        lay = rand_layout(rng)
        flat = lay.flatten_ins().flatten_outs()
        assert len(flat.in_dims) == 1 and len(flat.out_dims) == 1
        back = flat.reshape_ins(lay.in_dims).reshape_outs(lay.out_dims)
        assert back == lay
        ins = [n for n, _ in lay.in_dims][::-1]
        t = lay.transpose_ins(ins).transpose_outs(["dim1", "dim0"])
        for x in all_inputs(lay):
            assert t.apply(x) == lay.apply(x)
        sub = lay.sublayout(["register", "warp"], ["dim1"])
        for x in all_inputs(sub):
            assert sub.apply(x) == {"dim1": lay.apply(x)["dim1"]}
        other = LinearLayout({"block": [[rng.randrange(s) for _, s in lay.out_dims]]}, lay.out_dims)
        cat = lay.concat_ins(other)
        for x in all_inputs(cat):
            want = {k: v ^ other.apply(block=x["block"])[k] for k, v in lay.apply({k: x[k] for k in x if k != "block"}).items()}
            assert cat.apply(x) == want
    q = (L.identity(4, "register", "dim0") * L.identity(8, "warp", "warp")).quotient("warp")
    assert q == L.identity(4, "register", "dim0")
    assert LinearLayout({"warp": [2, 1]}, [("warp", 4)]).quotient(["warp"]) is None


def test_num_consecutive():
    assert L.blocked([64, 64], [1, 8], [8, 4], [4, 1]).num_consecutive() == 1  # dim0 first out dim
    lay = L.blocked([64, 64], [1, 8], [8, 4], [4, 1]).transpose_outs(["dim1", "dim0"])
    assert lay.num_consecutive() == 8
    assert LinearLayout({"register": [1, 2], "lane": [1]}).num_consecutive() == 1
    assert LinearLayout({"register": [1, 2], "lane": [2]}).num_consecutive() == 2
    assert LinearLayout({"register": [1, 2], "lane": [4]}).num_consecutive() == 4


# ---- known layouts ----------------------------------------------------------------------------


def T(bases, outs):
    return LinearLayout(bases, outs)


def test_mma_accumulator_bases():
    # design brief / Triton: registers (col 1), (row 8); lanes (col 2), (col 4), (row 1), (row 2), (row 4)
    acc = L.mma_accumulator([16, 8], [1, 1])
    assert acc.bases["register"] == [(0, 1), (8, 0)]
    assert acc.bases["lane"] == [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]
    assert L.mma_accumulator([32, 32], [1, 1]).bases["register"] == [(0, 1), (8, 0), (0, 8), (0, 16), (16, 0)]
    w = L.wgmma_accumulator([128, 16], [4, 1], instr_n=16)
    assert w.bases["register"] == [(0, 1), (8, 0), (0, 8), (64, 0)] and w.bases["warp"] == [(16, 0), (32, 0)]
    w = L.mma_accumulator([32, 32], [4, 4], version=3, instr_n=16)
    assert w.bases["warp"] == [(16, 0), (0, 0), (0, 16), (0, 0)]


def test_ptx_fragments():
    """The PTX ISA tables for mma.m16n8k16 (f16) and m16n8k8 (tf32)."""
    C = L.mma_accumulator([16, 8], [1, 1])
    A = L.mma_operand([16, 16], 0, [1, 1], 16)
    B = L.mma_operand([16, 8], 1, [1, 1], 16)
    A32 = L.mma_operand([16, 8], 0, [1, 1], 32)
    B32 = L.mma_operand([8, 8], 1, [1, 1], 32)
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        for i in range(4):
            assert C(register=i, lane=lane) == {"dim0": g + 8 * (i >= 2), "dim1": 2 * t + (i & 1)}
        for i in range(8):
            assert A(register=i, lane=lane) == {"dim0": g + 8 * (i in (2, 3, 6, 7)), "dim1": 2 * t + (i & 1) + 8 * (i >= 4)}
        for i in range(4):
            assert B(register=i, lane=lane) == {"dim0": 2 * t + (i & 1) + 8 * (i >= 2), "dim1": g}
            assert A32(register=i, lane=lane) == {"dim0": g + 8 * (i in (1, 3)), "dim1": t + 4 * (i >= 2)}
        for i in range(2):
            assert B32(register=i, lane=lane) == {"dim0": t + 4 * i, "dim1": g}
    assert L.ldmatrix(4) == A.sublayout(["register", "lane"], ["dim0", "dim1"])
    assert L.ldmatrix(2, trans=True) == B.sublayout(["register", "lane"], ["dim0", "dim1"])


def test_triton_blocked_and_slices():
    assert L.blocked([16], [1], [4], [4]) == T({"register": [], "lane": [1, 2], "warp": [4, 8], "block": []},
                                              [("dim0", 16)])
    assert L.blocked([8], [4], [4], [4]) == T({"register": [1, 2], "lane": [4, 0], "warp": [0, 0], "block": []},
                                             [("dim0", 8)])
    got = L.blocked([128, 16], [1, 4], [8, 4], [4, 1], [1, 0], cga=([2, 2], [2, 1], [1, 0]))
    assert got == T({"register": [(0, 1), (0, 2), (32, 0)], "lane": [(0, 4), (0, 8), (1, 0), (2, 0), (4, 0)],
                     "warp": [(8, 0), (16, 0)], "block": [(0, 0), (64, 0)]}, [("dim0", 128), ("dim1", 16)])
    parent = L.blocked([1, 128], [2, 4], [4, 2], [2, 2], [1, 0], cga=([2, 2], [2, 2], [1, 0]))
    assert L.slice_layout(parent, 0) == T({"register": [1, 2, 16, 32], "lane": [4, 0, 0], "warp": [8, 0],
                                           "block": [64, 0]}, [("dim0", 128)])
    parent = L.mma_accumulator([1, 128], [2, 2])
    assert L.slice(parent, 0) == T({"register": [1, 16, 32, 64], "lane": [2, 4, 0, 0, 0], "warp": [8, 0],
                                    "block": []}, [("dim0", 128)])


def test_triton_shared():
    s = L.shared_swizzled([32, 32], vec=2, per_phase=2, max_phase=4)
    assert s.bases["offset"] == [(0, 1), (0, 2), (0, 4), (0, 8), (0, 16), (1, 0), (2, 2), (4, 4), (8, 0), (16, 0)]
    assert L.shared_swizzled([4, 8], 1, 1, 4, order=[0, 1]).bases["offset"] == [(1, 0), (2, 0), (1, 1), (2, 2), (0, 4)]
    assert L.nvmma_shared([8, 16], 16, 32).bases["offset"] == [(0, 1), (0, 2), (0, 4), (0, 8), (1, 0), (2, 0), (4, 8)]
    assert L.nvmma_shared([8, 64], 16, 128).bases["offset"] == [(0, 1), (0, 2), (0, 4), (0, 8), (0, 16), (0, 32),
                                                                (1, 8), (2, 16), (4, 32)]
    for swz in (0, 32, 64, 128):
        s = L.nvmma_shared([64, 64], 16, swz)
        assert s.sublayout(["offset"], ["dim0", "dim1"]).is_invertible()


def test_redundancy_masks():
    lay = L.blocked([8, 4], [1, 1], [8, 4], [4, 1])     # 4 warps for 32 elements: warps broadcast
    m = lay.redundancy_masks()
    assert m["warp"] == 0b11 and m["lane"] == 0 and m["register"] == 0
    stored = [tuple(lay.apply(x).values()) for x in all_inputs(lay)
              if x["lane"] & m["lane"] == 0 and x["warp"] & m["warp"] == 0 and x["register"] & m["register"] == 0]
    assert sorted(stored) == sorted(set(stored)) and len(stored) == 32


# ---- conversions, swizzles, bank conflicts --------------------------------------------------


def simulate_banks(reg, smem, elem_bits, vec):
    """Per-warp wavefronts of moving `reg` through `smem`, from tables (no linear algebra)."""
    off = {}
    for o in range(dict(smem.in_dims)["offset"]):
        off.setdefault(tuple(smem.apply(offset=o)[n] for n, _ in reg.out_dims), o)
    nreg, nlane = dict(reg.in_dims)["register"], dict(reg.in_dims)["lane"]
    el = lambda r, l: tuple(reg.apply(register=r, lane=l).values())  # noqa: E731
    vregs = []
    for j in range(bits(vec)):
        vregs.append(next(1 << q for q in range(bits(nreg)) if off[el(1 << q, 0)] == off[el(0, 0)] ^ (1 << j)))
    vmask = sum(vregs)
    nbytes = vec * elem_bits // 8
    lpp = 32 if nbytes <= 4 else 16 if nbytes == 8 else 8
    total = instrs = 0
    seen_regs = set()
    for r in range(nreg):
        if r & vmask:
            continue
        key = tuple(el(r, l) for l in range(nlane))
        if key in seen_regs:
            continue
        seen_regs.add(key)
        instrs += 1
        for p0 in range(0, nlane, lpp):
            banks = {}
            for l in range(p0, min(p0 + lpp, nlane)):
                addr = off[el(r, l)] * elem_bits // 8
                for w in range(addr // 4, (addr + nbytes - 1) // 4 + 1):
                    banks.setdefault(w % 32, set()).add(w)
            total += max(len(s) for s in banks.values())
    return instrs, total


def test_bank_conflicts_known_and_simulated():
    reg = L.blocked([32, 32], [1, 1], [32, 1], [1, 1], [0, 1])      # lanes walk down a column
    plain = L.shared_swizzled([32, 32])
    swz = L.shared_swizzled([32, 32], 1, 1, 32)
    bc = L.bank_conflicts(reg, plain, 32, 1)
    assert (bc.instructions, bc.wavefronts, bc.max_wavefronts) == (32, 1024, 32) and bc.conflicts == 992
    assert L.bank_conflicts(reg, swz, 32, 1).wavefronts == 32
    # mma accumulators (fp16) into a row-major 128x128 tile: 8 rows share the banks -> 8-way;
    # the 128-byte NVMMA swizzle removes every conflict.
    acc = L.mma_accumulator([128, 128], [4, 2])
    bc = L.bank_conflicts(acc, L.shared_swizzled([128, 128]), 16)
    assert bc.vec == 2 and bc.max_wavefronts == 8 and bc.wavefronts == 8 * bc.instructions
    bc = L.bank_conflicts(acc, L.nvmma_shared([128, 128], 16, 128), 16)
    assert bc.vec == 2 and bc.conflicts == 0
    assert (bc.instructions, bc.wavefronts) == simulate_banks(acc, L.nvmma_shared([128, 128], 16, 128), 16, 2)
    rng = random.Random(6)
    for _ in range(40):
        s0, s1 = 1 << rng.randint(3, 5), 1 << rng.randint(3, 5)
        spt = [1 << rng.randint(0, 2), 1 << rng.randint(0, 2)]
        tpw = [1, 1]
        for _ in range(5):
            tpw[rng.randrange(2)] *= 2
        order = rng.choice([[1, 0], [0, 1]])
        reg = L.blocked([s0, s1], spt, tpw, [1, 1], order)
        smem = L.shared_swizzled([s0, s1], 1 << rng.randint(0, 2), 1 << rng.randint(0, 2), 1 << rng.randint(0, 3),
                                 rng.choice([[1, 0], [0, 1]]))
        bitsz = rng.choice([8, 16, 32, 64])
        bc = L.bank_conflicts(reg, smem, bitsz, 1)
        assert (bc.instructions, bc.wavefronts) == simulate_banks(reg, smem, bitsz, 1)


def test_optimal_swizzle_matches_simulator():
    rng = random.Random(7)
    cases = [
        (L.blocked([32, 32], [1, 4], [4, 8], [1, 1]), L.blocked([32, 32], [4, 1], [8, 4], [1, 1], [0, 1]), 32),
        (L.mma_accumulator([64, 64], [2, 2]), L.mma_operand([64, 64], 0, [2, 2], 16), 16),
        (L.mma_accumulator([64, 64], [2, 2]), L.blocked([64, 64], [1, 8], [4, 8], [4, 1]), 16),
        (L.blocked([64, 32], [1, 1], [32, 1], [4, 1], [0, 1]), L.blocked([64, 32], [1, 1], [1, 32], [4, 1]), 8),
    ]
    for _ in range(6):
        tpw = [1, 1]
        for _ in range(5):
            tpw[rng.randrange(2)] *= 2
        cases.append((L.blocked([32, 64], [1, 2], tpw, [2, 1]),
                      L.blocked([32, 64], [2, 1], tpw[::-1], [1, 2], [0, 1]), rng.choice([16, 32])))
    for src, dst, elem_bits in cases:
        sw = L.optimal_swizzle(src, dst, elem_bits)
        assert sw.layout.sublayout(["offset"], ["dim0", "dim1"]).is_invertible()
        for side, pred in ((src, sw.store_wavefronts), (dst, sw.load_wavefronts)):
            instrs, total = simulate_banks(side, sw.layout, elem_bits, sw.vec)
            bc = L.bank_conflicts(side, sw.layout, elem_bits, sw.vec)
            assert (bc.instructions, bc.wavefronts) == (instrs, total)
            assert total == pred * instrs
    # the classic transpose: conflict-free after swizzling (without: 8-way or worse)
    sw = L.optimal_swizzle(*cases[0])
    assert sw.store_wavefronts == sw.store_ideal and sw.load_wavefronts == sw.load_ideal
    naive = L.shared_swizzled([32, 32])
    assert L.bank_conflicts(cases[0][1], naive, 32, 1).conflicts > 0


def run_shuffles(plan, src, dst):
    """Execute the shuffle schedule on element ids; every dst register must end right."""
    nreg_d, nlane = dict(dst.in_dims)["register"], dict(dst.in_dims)["lane"]
    got = {}
    for rnd in plan.details["schedule"]:
        senders = {}
        for lane, (src_lane, pairs) in enumerate(rnd):
            if not pairs:
                continue
            srcregs = [p[0] for p in pairs]
            assert senders.setdefault(src_lane, srcregs) == srcregs, "one word per sender per round"
            for sr, dr in pairs:
                got[(lane, dr)] = src.apply(register=sr, lane=src_lane)
    nreg_s = dict(src.in_dims)["register"]
    for lane in range(nlane):
        for r in range(nreg_d):
            want = dst.apply(register=r, lane=lane)
            if (lane, r) in got:
                assert got[(lane, r)] == want
            else:  # stays in the lane: a register move, or a copy of a duplicate
                assert any(src.apply(register=q, lane=lane) == want for q in range(nreg_s)) or \
                    any(got.get((lane, q)) == want for q in range(nreg_d))


def test_plan_conversion_kinds():
    b = L.blocked([64, 64], [1, 4], [4, 8], [4, 1])
    assert L.plan_conversion(b, b).kind == "noop"
    acc = L.mma_accumulator([64, 16], [4, 1])
    assert L.plan_conversion(acc, L.mma_operand([64, 16], 0, [4, 1], 16), 16).kind == "noop"
    perm = LinearLayout({"register": [(1, 0), (0, 1)], "lane": [(2, 0)], "warp": [], "block": []}, [("dim0", 4), ("dim1", 2)])
    orig = LinearLayout({"register": [(0, 1), (1, 0)], "lane": [(2, 0)], "warp": [], "block": []}, [("dim0", 4), ("dim1", 2)])
    assert L.plan_conversion(orig, perm).kind == "register"
    src = L.blocked([8, 8], [1, 1], [8, 4], [1, 1])
    dst = L.blocked([8, 8], [1, 1], [4, 8], [1, 1])
    plan = L.plan_conversion(src, dst, 32)
    assert plan.kind == "shuffle" and plan.details["rounds"] == 2
    run_shuffles(plan, src, dst)
    plan16 = L.plan_conversion(L.blocked([16, 16], [1, 2], [8, 4], [1, 1]), L.blocked([16, 16], [1, 2], [4, 8], [1, 1]), 16)
    assert plan16.kind == "shuffle" and plan16.details["pack"] == 2
    run_shuffles(plan16, L.blocked([16, 16], [1, 2], [8, 4], [1, 1]), L.blocked([16, 16], [1, 2], [4, 8], [1, 1]))
    t = L.plan_conversion(b, L.blocked([64, 64], [4, 1], [8, 4], [1, 4], [0, 1]), 16)
    assert t.kind == "shared" and t.details["swizzle"].vec >= 1
    assert "shared" in repr(t)
    c = L.plan_conversion(L.blocked([64, 64], [1, 4], [4, 8], [4, 1], cga=([2, 1], [2, 1], [0, 1])),
                          L.blocked([64, 64], [1, 4], [4, 8], [4, 1], cga=([1, 2], [1, 2], [1, 0])), 16)
    assert c.kind == "cluster"


def test_random_warp_local_conversions():
    rng = random.Random(8)
    kinds = set()
    for _ in range(60):
        s0, s1 = 1 << rng.randint(1, 4), 1 << rng.randint(1, 4)
        tpw = [1, 1]
        for _ in range(5):
            tpw[rng.randrange(2)] *= 2
        src = L.blocked([s0, s1], [1 << rng.randint(0, 2), 1 << rng.randint(0, 2)], tpw, [1, 1])
        # a random permutation of the register and lane bases of src
        nr = len(src.bases["register"])
        if rng.random() < 0.3:  # registers only
            regs = src.bases["register"]
            rng.shuffle(regs)
            flat = regs + src.bases["lane"]
        else:
            flat = src.bases["register"] + src.bases["lane"]
            rng.shuffle(flat)
        dst = LinearLayout({"register": flat[:nr], "lane": flat[nr:], "warp": [], "block": []}, src.out_dims)
        plan = L.plan_conversion(src, dst, rng.choice([8, 16, 32, 64]))
        kinds.add(plan.kind)
        if plan.kind == "shuffle":
            run_shuffles(plan, src, dst)
        full = dst.invert_and_compose(src)
        for x in all_inputs(dst):
            assert src.apply(full.apply(x)) == dst.apply(x)
    assert {"shuffle", "register", "noop"} <= kinds
