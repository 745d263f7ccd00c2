"""torchc.layouts — linear layouts over F2 (the C library in layouts/, seen from Python).

A linear layout maps a hardware index (register, lane, warp, block — or offset, block for
shared memory) to a tensor index, one basis per input bit, XOR-linear::

    >>> from torchc import layouts as L
    >>> acc = L.mma_accumulator([16, 8], [1, 1])        # mma.sync m16n8 fp32 accumulator
    >>> acc.bases["register"], acc.bases["lane"]
    ([(0, 1), (8, 0)], [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)])
    >>> acc(register=1, lane=5)                           # lane 5 holds row 1, cols 2..3
    {'dim0': 1, 'dim1': 3}

Operations: ``apply`` (or calling the layout), ``compose``, ``invert_and_compose``, ``*``
(product), ``invert``, ``pseudo_invert``, reshape/transpose/flatten, ``sublayout``,
``concat_ins/outs``, ``quotient``, ``divide_left/right``, ``num_consecutive``,
``free_variable_masks``; builders for the standard NVIDIA layouts; conversion planning
(``plan_conversion``), the optimal shared-memory swizzle (``optimal_swizzle``) and a
bank-conflict counter (``bank_conflicts``).  Bad input raises ValueError or TypeError.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from torchc import _C

LinearLayout = _C.LinearLayout

__all__ = [
    "LinearLayout", "identity", "zeros", "strided", "identity_nd", "blocked", "slice_layout",
    "mma_accumulator", "mma_operand", "wgmma_accumulator", "wgmma_operand",
    "ldmatrix", "stmatrix", "ldmatrix_addresses", "shared_swizzled", "nvmma_shared",
    "apply", "compose", "invert_and_compose", "num_consecutive", "free_variable_masks",
    "redundancy_masks", "plan_conversion", "optimal_swizzle", "bank_conflicts",
    "ConversionPlan", "Swizzle", "BankConflicts",
]

# ---- basic builders ----------------------------------------------------------------------


def identity(size: int, in_dim: str, out_dim: str) -> LinearLayout:
    """in_dim of `size` -> out_dim of `size`, x -> x."""
    return _C.ll_identity(size, in_dim, out_dim)


def zeros(size: int, in_dim: str, out_dim: str, out_size: int = 1) -> LinearLayout:
    """in_dim of `size` -> 0 in an out_dim of `out_size` (broadcast)."""
    return _C.ll_zeros(size, in_dim, out_dim, out_size)


def strided(size: int, stride: int, in_dim: str, out_dim: str) -> LinearLayout:
    """x -> x * stride (power-of-two stride)."""
    return _C.ll_strided(size, stride, in_dim, out_dim)


def _default_order(rank: int) -> List[int]:
    return list(range(rank - 1, -1, -1))  # row-major: the last dim is the fastest


def identity_nd(in_dim: str, shape: Sequence[int], order: Optional[Sequence[int]] = None) -> LinearLayout:
    """in_dim enumerates the tensor dim0..dimN in `order` (order[0] fastest)."""
    return _C.ll_identity_nd(in_dim, list(shape), list(order) if order is not None else _default_order(len(shape)))


# ---- standard NVIDIA layouts -------------------------------------------------------------


def _cga(cga):
    if cga is None:
        return None
    if isinstance(cga, dict):
        return (cga["ctas_per_cga"], cga["cta_split"], cga["cta_order"])
    return tuple(cga)


def blocked(shape: Sequence[int], size_per_thread: Sequence[int], threads_per_warp: Sequence[int],
            warps_per_cta: Sequence[int], order: Optional[Sequence[int]] = None, cga=None) -> LinearLayout:
    """Triton's #blocked layout fitted to `shape` (broadcast when the tensor is smaller than the
    tile, repeated in registers when larger).  cga: (ctas_per_cga, cta_split, cta_order)."""
    rank = len(shape)
    return _C.ll_blocked(list(shape), list(size_per_thread), list(threads_per_warp),
                         list(warps_per_cta), list(order) if order is not None else _default_order(rank),
                         _cga(cga))


def slice_layout(parent: LinearLayout, dim: int) -> LinearLayout:
    """Triton's #slice: `parent` (built for the shape with a 1 inserted at `dim`) without out
    dim `dim`; zero register bases are dropped."""
    return _C.ll_slice(parent, dim)


def mma_accumulator(shape: Sequence[int], warps_per_cta: Sequence[int], version: int = 2,
                    instr_n: Optional[int] = None, cga=None) -> LinearLayout:
    """mma accumulator.  version 2: mma.sync m16n8 (registers (col 1), (row 8); lanes (col 2),
    (col 4), (row 1), (row 2), (row 4)); version 3: wgmma m64nN (instr_n defaults to the
    widest that fits, up to 256)."""
    if instr_n is None:
        if version == 2:
            instr_n = 8
        else:
            n = max(8, min(256, int(shape[1]) // max(1, int(warps_per_cta[1]))))
            instr_n = 1 << (n.bit_length() - 1)
    return _C.ll_mma_accumulator(version, list(shape), list(warps_per_cta), instr_n, _cga(cga))


def wgmma_accumulator(shape, warps_per_cta, instr_n=None, cga=None) -> LinearLayout:
    return mma_accumulator(shape, warps_per_cta, 3, instr_n, cga)


def mma_operand(shape: Sequence[int], op_idx: int, warps_per_cta: Sequence[int], elem_bits: int = 16,
                version: int = 2, k_width: int = 0, cga=None) -> LinearLayout:
    """mma operand A (op_idx 0, [M, K]) or B (op_idx 1, [K, N]) in registers for the parent
    accumulator's warps (broadcast along K).  elem_bits 16 or 32 (8 also accepted); k_width
    defaults to 32 / elem_bits.  version 3: wgmma A from registers."""
    return _C.ll_mma_operand(version, op_idx, list(shape), list(warps_per_cta), elem_bits, k_width, _cga(cga))


def wgmma_operand(shape, warps_per_cta, elem_bits=16, k_width=0, cga=None) -> LinearLayout:
    return mma_operand(shape, 0, warps_per_cta, elem_bits, 3, k_width, cga)


def ldmatrix(num: int = 4, trans: bool = False) -> LinearLayout:
    """The register/lane fragment of ldmatrix.x{1,2,4}[.trans] for 16-bit elements (x4 = the
    mma A fragment, x2.trans = the B fragment).  stmatrix uses the same fragment."""
    return _C.ll_ldmatrix(num, bool(trans), False)


stmatrix = ldmatrix


def ldmatrix_addresses(num: int = 4) -> LinearLayout:
    """lane -> (row, col) of the row address each lane supplies to ldmatrix/stmatrix."""
    return _C.ll_ldmatrix(num, False, True)


def shared_swizzled(shape: Sequence[int], vec: int = 1, per_phase: int = 1, max_phase: int = 1,
                    order: Optional[Sequence[int]] = None, cga=None) -> LinearLayout:
    """Triton's swizzled shared layout: offset -> tensor; row r XORs
    vec * ((r // per_phase) % max_phase) into the column (order[0] is contiguous)."""
    rank = len(shape)
    return _C.ll_shared_swizzled(list(shape), vec, per_phase, max_phase,
                                 list(order) if order is not None else _default_order(rank), _cga(cga))


def nvmma_shared(shape: Sequence[int], elem_bits: int, swizzle_bytes: int = 128, transposed: bool = False,
                 cga=None) -> LinearLayout:
    """The NVMMA (TMA / wgmma) shared layout with a 0/32/64/128-byte swizzle."""
    return _C.ll_nvmma_shared(list(shape), elem_bits, swizzle_bytes, bool(transposed), _cga(cga))


# ---- operations as functions --------------------------------------------------------------


def apply(layout: LinearLayout, ins: Optional[Dict[str, int]] = None, **kw) -> Dict[str, int]:
    """layout({in_dim: index}) -> {out_dim: index}; missing in dims are 0."""
    return layout.apply(ins or {}, **kw)


def compose(a: LinearLayout, outer: LinearLayout) -> LinearLayout:
    """x -> outer(a(x))."""
    return a.compose(outer)


def invert_and_compose(a: LinearLayout, outer: LinearLayout) -> LinearLayout:
    """C with outer(C(x)) == a(x): least squares over F2, free variables 0."""
    return a.invert_and_compose(outer)


def num_consecutive(layout: LinearLayout) -> int:
    return layout.num_consecutive()


def free_variable_masks(layout: LinearLayout) -> Dict[str, int]:
    return layout.free_variable_masks()


def redundancy_masks(layout: LinearLayout) -> Dict[str, int]:
    """{register, lane, warp, block: mask}: store only where (index & mask) == 0."""
    return layout.redundancy_masks()


# ---- conversion planning, swizzling, bank conflicts ----------------------------------------


@dataclass
class Swizzle:
    layout: LinearLayout        # offset[, block] -> tensor
    vec: int                    # elements per vector access (store and load)
    store_wavefronts: int       # per store instruction
    load_wavefronts: int        # per load instruction
    store_ideal: int            # without conflicts
    load_ideal: int

    def __repr__(self):
        return (f"Swizzle(vec={self.vec}, store={self.store_wavefronts}/{self.store_ideal} wavefronts, "
                f"load={self.load_wavefronts}/{self.load_ideal} wavefronts,\n  layout={self.layout!r})")


@dataclass
class BankConflicts:
    instructions: int     # warp instructions (per warp)
    wavefronts: int       # total wavefronts (per warp)
    ideal: int            # wavefronts without conflicts
    max_wavefronts: int   # worst instruction
    vec: int              # elements per lane per instruction

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal


@dataclass
class ConversionPlan:
    kind: str                         # noop | register | shuffle | shared | cluster
    cvt: LinearLayout                 # dst hardware -> src hardware, identity dims removed
    details: Dict[str, Any] = field(default_factory=dict)

    def __repr__(self):
        extra = ", ".join(f"{k}={v}" for k, v in self.details.items() if k not in ("schedule", "swizzle"))
        if "swizzle" in self.details:
            extra = (extra + ", " if extra else "") + repr(self.details["swizzle"])
        return f"ConversionPlan(kind={self.kind!r}{', ' + extra if extra else ''})"


def _swizzle(d) -> Swizzle:
    return Swizzle(d["layout"], d["vec"], d["store_wavefronts"], d["load_wavefronts"],
                   d["store_ideal"], d["load_ideal"])


def plan_conversion(src: LinearLayout, dst: LinearLayout, elem_bits: int = 32) -> ConversionPlan:
    """How to move a tensor from layout `src` to `dst`: cvt = dst.invert_and_compose(src), with
    block, warp, lane (and register) quotiented out while the identity.  Nothing left: 'noop';
    registers only: 'register'; lanes: 'shuffle' (details: rounds, pack, selects, schedule
    [[(src_lane, [(src_reg, dst_reg)...]) per lane] per round]); warps: 'shared' (details:
    swizzle); blocks: 'cluster'."""
    d = _C.ll_plan_conversion(src, dst, elem_bits)
    kind, cvt = d.pop("kind"), d.pop("cvt")
    if "swizzle" in d:
        d["swizzle"] = _swizzle(d["swizzle"])
    return ConversionPlan(kind, cvt, d)


def optimal_swizzle(src: LinearLayout, dst: LinearLayout, elem_bits: int) -> Swizzle:
    """The shared layout for a src -> dst round trip with the widest common vector and the
    fewest bank conflicts (the linear-layouts paper's construction)."""
    return _swizzle(_C.ll_optimal_swizzle(src, dst, elem_bits))


def bank_conflicts(reg: LinearLayout, smem: LinearLayout, elem_bits: int, vec: int = 0) -> BankConflicts:
    """Wavefronts of storing/loading the distributed layout `reg` to/from shared layout `smem`
    (32 banks x 4 bytes; phases of 32/16/8 lanes for 4/8/16-byte accesses).  vec=0: widest."""
    d = _C.ll_bank_conflicts(reg, smem, elem_bits, vec)
    return BankConflicts(d["instructions"], d["wavefronts"], d["ideal"], d["max_wavefronts"], d["vec"])


# `slice` is the name Triton uses; kept as an alias (it shadows the builtin only here).
slice = slice_layout  # noqa: A001
