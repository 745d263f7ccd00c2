// matrix_exp.cpp — exp(A) by scaling and squaring with the optimized Taylor polynomials of
// Bader, Blanes and Casas ("Computing the Matrix Exponential with an Optimized Taylor
// Polynomial Approximation", Mathematics 7(12), 2019), degree m in {1, 2, 4, 8, 12, 18}
// chosen from the 1-norm at run time (the norm is data dependent, so the choice is made
// here, at each call, not at compile time), and its vector-Jacobian product.
//
// The polynomial is a short program over matrix registers: GEMMs (ATen bmm/baddbmm, the
// library GEMM on either device; an addend is folded into the GEMM as beta = 1) and linear
// combinations, each group of which is one fused pointwise pass on the CPU (all outputs of a
// group from one read of its inputs). The same program runs in three modes:
//   FWD   registers X = polynomials in A (scaled by 2^-s), then s squarings;
//   PAIR  pairs (X, L): X over Aᴴ, L its derivative in the direction G; a product
//         (Xa, La)(Xb, Lb) = (Xa Xb, La Xb + Xa Lb). This evaluates the approximant on the
//         block matrix [[Aᴴ, G], [0, Aᴴ]] with n x n blocks only (3 GEMMs a product, against
//         8 for the 2n x 2n matrix), and L at the end is its top-right block: the VJP
//         L(Aᴴ, G) = gradient of <G, exp(A)> (Mathias 1996; used by torch's backward).
//   TAPE  like PAIR, but the X registers are those a FWD run saved, conjugate-transposed
//         (each register is a polynomial in A with real coefficients, so R(Aᴴ) = R(A)ᴴ):
//         2 GEMMs a product.
// The VJP uses A's own degree and scaling (not the block matrix's norm): the Fréchet
// derivative of the scaled approximant is that of exp at a perturbed point with the same
// relative backward error bound (Al-Mohy and Higham, SIMAX 30(4), 2009), and the result
// does not depend on the size of G.
#include "matrix_exp.h"
#include "scan.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <torch/csrc/autograd/python_variable.h>

#include "ic.h"
extern "C" int dh_alias_op(PyObject *fn, const char *name); /* dh.h (C only) */

namespace {
using at::Tensor;

enum Mode { FWD, PAIR, TAPE };

/* 1-norm bounds of the degrees (1, 2, 4, 8, 12, 18) for a backward error below the unit
 * roundoff, single and double precision (Bader, Blanes, Casas 2019, Table; the values
 * torch uses). Beyond the last one: degree 18 after 2^-s scaling. */
const int kDeg[6] = {1, 2, 4, 8, 12, 18};
const double kThetaF[6] = {1.192092800768788e-07, 5.978858893805233e-04, 5.116619363445086e-02,
                           5.800524627688768e-01, 1.461661507209034e+00, 3.010066362817634e+00};
const double kThetaD[6] = {2.220446049250313e-16, 2.580956802971767e-08, 3.397168839976962e-04,
                           4.991228871115323e-02, 2.996158913811580e-01, 1.090863719290036e+00};

/* Degree 12 and 18 coefficients (ibid.): B_i = sum_j b[i][j] P_j over P = (I, A, A^2, A^3[, A^6]) */
const double kB12[4][4] = {
    {9.0198e-16, 0.46932117595418237389, -0.20099424927047284052, -0.04623946134063071740},
    {5.31597895759871264183, 1.19926790417132231573, 0.01179296240992997031, 0.01108844528519167989},
    {0.18188869982170434744, 0.05502798439925399070, 0.09351590770535414968, 0.00610700528898058230},
    {-2.0861320e-13, -0.13181061013830184015, -0.02027855540589259079, -0.00675951846863086359}};
const double kB18[5][5] = {
    {0., -1.00365581030144618291e-01, -8.02924648241156932449e-03, -8.92138498045729985177e-04, 0.},
    {0., 3.97849749499645077844e-01, 1.36783778460411720168e+00, 4.98289622525382669416e-01,
     -6.37898194594723280150e-04},
    {-1.09676396052962061844e+01, 1.68015813878906206114e+00, 5.71779846478865511061e-02,
     -6.98210122488052056106e-03, 3.34975017086070470649e-05},
    {-9.04316832390810593223e-02, -6.76404519071381882256e-02, 6.75961301770459654925e-02,
     2.95552570429315521194e-02, -1.39180257516060693404e-05},
    {0., 0., -9.23364619367118555360e-02, -1.69364939002081722752e-02, -1.40086798182036094347e-05}};

/* What a FWD run keeps for a TAPE run: the degree, the scaling of each matrix and every X
 * register (registers are written once, so ids index this vector). */
struct Tape {
    int m = 0;
    std::vector<int64_t> s;
    std::vector<Tensor> X;
};

/* out_k = c[k][0] I + sum_j c[k][1 + j] in_j for k < nout: one pass over contiguous [B, n, n]
 * tensors on the CPU (blocks of 2048 elements: the inputs are read once for all outputs). */
template <typename T>
void lin_cpu(int nout, Tensor *out, int nin, const Tensor *in, const double *c, int64_t B, int64_t n) {
    using V = typename c10::scalar_value_type<T>::type;
    T *o[5];
    const T *x[5];
    for (int k = 0; k < nout; k++) o[k] = out[k].data_ptr<T>();
    for (int j = 0; j < nin; j++) x[j] = in[j].data_ptr<T>();
    const int64_t total = B * n * n, nn = n * n;
    const int w = nin + 1;
    at::parallel_for(0, (total + 2047) / 2048, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t blk = b0; blk < b1; blk++) {
            const int64_t lo = blk * 2048, hi = std::min(total, lo + 2048);
            for (int k = 0; k < nout; k++) {
                T *ok = o[k];
                const V c0 = (V)c[k * w + 1];
                if (nin == 0) {
                    for (int64_t i = lo; i < hi; i++) ok[i] = T(0);
                } else {
                    const T *x0 = x[0];
                    for (int64_t i = lo; i < hi; i++) ok[i] = x0[i] * c0;
                }
                for (int j = 1; j < nin; j++) {
                    const V cj = (V)c[k * w + 1 + j];
                    if (cj == V(0)) continue;
                    const T *xj = x[j];
                    for (int64_t i = lo; i < hi; i++) ok[i] += xj[i] * cj;
                }
                const V ci = (V)c[k * w];
                if (ci != V(0)) /* the diagonal entries inside [lo, hi) */
                    for (int64_t b = lo / nn; b * nn < hi; b++) {
                        const int64_t base = b * nn;
                        int64_t r = lo > base ? (lo - base + n) / (n + 1) : 0;
                        for (; r < n && base + r * (n + 1) < hi; r++) ok[base + r * (n + 1)] += T(ci);
                    }
            }
        }
    });
}

struct Eval {
    Mode mode;
    int64_t B, n;
    at::TensorOptions opt;
    std::vector<Tensor> X, L; /* registers, by id */
    Tape *save = nullptr;     /* FWD: where X goes */
    const Tape *tape = nullptr;
    bool pair() const { return mode != FWD; }

    int reg() {
        X.emplace_back();
        L.emplace_back();
        return (int)X.size() - 1;
    }
    Tensor xr(int r) { return mode == TAPE ? tape->X[r].mH() : X[r]; }

    /* dst[k] = c[k][0] I + sum_j c[k][1 + j] R[src[j]] (the L part has no identity term) */
    void lin(int nout, const int *dst, int nsrc, const int *src, const double *c) {
        Tensor out[5], in[5];
        if (mode != TAPE) { /* X part */
            for (int k = 0; k < nout; k++) out[k] = at::empty({B, n, n}, opt);
            for (int j = 0; j < nsrc; j++) in[j] = X[src[j]];
            combine(nout, out, nsrc, in, c, false);
            for (int k = 0; k < nout; k++) X[dst[k]] = out[k];
        }
        if (pair()) {
            for (int k = 0; k < nout; k++) out[k] = at::empty({B, n, n}, opt);
            for (int j = 0; j < nsrc; j++) in[j] = L[src[j]];
            combine(nout, out, nsrc, in, c, true);
            for (int k = 0; k < nout; k++) L[dst[k]] = out[k];
        }
    }
    void combine(int nout, Tensor *out, int nin, const Tensor *in, const double *c, bool no_eye) {
        const int w = nin + 1;
        double cc[5 * 6];
        for (int k = 0; k < nout; k++)
            for (int j = 0; j < w; j++) cc[k * w + j] = j == 0 && no_eye ? 0.0 : c[k * w + j];
        bool cpu = opt.device().is_cpu();
        for (int j = 0; j < nin && cpu; j++) cpu = in[j].is_contiguous();
        if (cpu) {
            AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES(out[0].scalar_type(), "torchc_mexp_lin",
                                                   [&] { lin_cpu<scalar_t>(nout, out, nin, in, cc, B, n); });
            return;
        }
        for (int k = 0; k < nout; k++) {
            out[k].zero_();
            for (int j = 0; j < nin; j++)
                if (cc[k * w + 1 + j] != 0.0) out[k].add_(in[j], cc[k * w + 1 + j]);
            if (cc[k * w] != 0.0) out[k].diagonal(0, -2, -1).add_(cc[k * w]);
        }
    }
    /* dst = [R[add] +] R[a] R[b] */
    int mul(int a, int b, int add = -1) {
        int d = reg();
        if (mode != TAPE) X[d] = add >= 0 ? at::baddbmm(X[add], X[a], X[b]) : at::bmm(X[a], X[b]);
        if (pair()) {
            Tensor xa = xr(a), xb = xr(b);
            Tensor l = add >= 0 ? at::baddbmm(L[add], L[a], xb) : at::bmm(L[a], xb);
            l.baddbmm_(xa, L[b]);
            L[d] = l;
        }
        return d;
    }
    /* one register from a linear combination (convenience) */
    int lin1(double ci, std::initializer_list<std::pair<int, double>> t) {
        int d = reg(), src[5], j = 0;
        double c[6] = {ci};
        for (auto &p : t) src[j] = p.first, c[1 + j] = p.second, j++;
        lin(1, &d, j, src, c);
        return d;
    }
};

/* The Taylor program of degree m over register a (the scaled matrix); returns the result register. */
int taylor(Eval &e, int m, int a) {
    switch (m) {
    case 1: return e.lin1(1.0, {{a, 1.0}});
    case 2: {
        int a2 = e.mul(a, a);
        return e.lin1(1.0, {{a, 1.0}, {a2, 0.5}});
    }
    case 4: { /* I + A + A^2 (I/2 + A/6 + A^2/24) */
        int a2 = e.mul(a, a);
        int q = e.lin1(0.5, {{a, 1.0 / 6}, {a2, 1.0 / 24}});
        int r = e.lin1(1.0, {{a, 1.0}});
        return e.mul(a2, q, r);
    }
    case 8: {
        const double s177 = std::sqrt(177.0), x3 = 2.0 / 3.0, x1 = x3 * ((1.0 + s177) / 88.0),
                     x2 = x3 * ((1.0 + s177) / 352.0), x4 = (-271.0 + 29.0 * s177) / (315.0 * x3),
                     x5 = (-11.0 + 11.0 * s177) / (1260.0 * x3), x6 = (-99.0 + 11.0 * s177) / (5040.0 * x3),
                     x7 = (89.0 - s177) / (5040.0 * x3 * x3), y2 = (857.0 - 58.0 * s177) / 630.0;
        int a2 = e.mul(a, a);
        int q1 = e.lin1(0.0, {{a, x1}, {a2, x2}});
        int a4 = e.mul(a2, q1); /* A^2 (x1 A + x2 A^2) */
        /* (x3 A^2 + A4), (x4 I + x5 A + x6 A^2 + x7 A4), (I + A + y2 A^2): one pass */
        int d[3] = {e.reg(), e.reg(), e.reg()}, src[3] = {a, a2, a4};
        const double c[3][4] = {{0, 0, x3, 1}, {x4, x5, x6, x7}, {1, 1, y2, 0}};
        e.lin(3, d, 3, src, &c[0][0]);
        return e.mul(d[0], d[1], d[2]);
    }
    case 12: {
        int a2 = e.mul(a, a), a3 = e.mul(a2, a);
        int b[4] = {e.reg(), e.reg(), e.reg(), e.reg()}, src[3] = {a, a2, a3};
        e.lin(4, b, 3, src, &kB12[0][0]);
        int c = e.mul(b[3], b[3], b[2]);          /* B2 + B3^2 */
        int d = e.lin1(0.0, {{b[1], 1.0}, {c, 1.0}}); /* B1 + C */
        return e.mul(d, c, b[0]);                 /* B0 + (B1 + C) C */
    }
    default: {
        int a2 = e.mul(a, a), a3 = e.mul(a2, a), a6 = e.mul(a3, a3);
        int b[5] = {e.reg(), e.reg(), e.reg(), e.reg(), e.reg()}, src[4] = {a, a2, a3, a6};
        e.lin(5, b, 4, src, &kB18[0][0]);
        int a9 = e.mul(b[0], b[4], b[3]);            /* B3 + B0 B4 */
        int d = e.lin1(0.0, {{b[2], 1.0}, {a9, 1.0}}); /* B2 + A9 */
        return e.mul(d, a9, b[1]);                   /* B1 + (B2 + A9) A9 */
    }
    }
}

bool single(at::ScalarType t) { return t == at::kFloat || t == at::kComplexFloat; }

/* Degree and scalings from the 1-norms; false when a norm is not finite. */
bool choose(const Tensor &a3, int *m, std::vector<int64_t> &s) {
    const int64_t B = a3.size(0);
    Tensor nrm = a3.abs().sum(-2).amax(-1).to(at::kDouble).cpu().contiguous();
    const double *v = nrm.data_ptr<double>();
    const double *th = single(a3.scalar_type()) ? kThetaF : kThetaD;
    int di = 0;
    s.assign((size_t)B, 0);
    for (int64_t i = 0; i < B; i++) {
        if (!std::isfinite(v[i])) return false;
        int k = 0;
        while (k < 5 && v[i] > th[k]) k++;
        di = std::max(di, k);
        if (k == 5 && v[i] > th[5]) s[(size_t)i] = (int64_t)std::ceil(std::log2(v[i] / th[5]));
    }
    *m = kDeg[di];
    return true;
}

/* Shared by forward and VJP: scale, evaluate, square. x0 (and l0 for PAIR/TAPE) are the
 * unscaled starting registers [B, n, n]. Returns the final register's X (FWD) or L. */
Tensor run(Eval &e, int m, const std::vector<int64_t> &s, const Tensor &x0, const Tensor &l0) {
    const int64_t B = e.B;
    int64_t smax = 0;
    bool uniform = true;
    for (int64_t v : s) smax = std::max(smax, v), uniform &= v == s[0];
    Tensor scale; /* per matrix, when the scalings differ */
    if (smax > 0 && !uniform) {
        std::vector<double> f((size_t)B);
        for (int64_t i = 0; i < B; i++) f[(size_t)i] = std::ldexp(1.0, (int)-s[(size_t)i]);
        scale = at::tensor(f, at::TensorOptions().dtype(at::kDouble))
                    .to(e.opt.device(), c10::toRealValueType(e.opt.dtype().toScalarType()))
                    .view({B, 1, 1});
    }
    /* registers are plain contiguous tensors (lin_cpu reads raw memory: no conj/neg bits) */
    auto scaled = [&](const Tensor &t) {
        Tensor r = smax == 0 ? t : uniform ? t.mul(std::ldexp(1.0, (int)-s[0])) : t * scale;
        return r.resolve_conj().resolve_neg().contiguous();
    };
    int a = e.reg();
    if (e.mode != TAPE) e.X[a] = scaled(x0);
    if (e.pair()) e.L[a] = scaled(l0);
    int r = taylor(e, m, a);
    for (int64_t p = 0; p < smax; p++) {
        if (uniform) {
            r = e.mul(r, r);
            continue;
        }
        std::vector<uint8_t> mk((size_t)B);
        for (int64_t i = 0; i < B; i++) mk[(size_t)i] = s[(size_t)i] > p;
        Tensor mask = at::tensor(std::vector<int64_t>(mk.begin(), mk.end()), at::TensorOptions().dtype(at::kLong))
                          .to(at::kBool)
                          .to(e.opt.device())
                          .view({B, 1, 1});
        int q = e.mul(r, r), d = e.reg();
        if (e.mode != TAPE) e.X[d] = at::where(mask, e.X[q], e.X[r]);
        if (e.pair()) e.L[d] = at::where(mask, e.L[q], e.L[r]);
        r = d;
    }
    if (e.save) {
        e.save->m = m;
        e.save->s = s;
        e.save->X = e.X;
    }
    return e.mode == FWD ? e.X[r] : e.L[r];
}

Tensor as3(const Tensor &a) { return a.reshape({-1, a.size(-2), a.size(-1)}); }

/* exp(a) for a [..., n, n]; tape: keep what the VJP's TAPE mode needs (or nullptr) */
bool ours(const Tensor &a) {
    const at::ScalarType t = a.scalar_type();
    return a.dim() >= 2 && a.size(-1) == a.size(-2) && a.layout() == at::kStrided &&
           (t == at::kFloat || t == at::kDouble || t == at::kComplexFloat || t == at::kComplexDouble);
}

Tensor mexp(const Tensor &a, Tape *tape) {
    if (!ours(a)) { /* other dtypes and bad shapes: torch's (and its errors) */
        if (tape) tape->m = -1;
        return at::linalg_matrix_exp(a);
    }
    at::NoTF32Guard no_tf32;
    if (a.numel() == 0) return at::empty_like(a, at::MemoryFormat::Contiguous);
    if (a.size(-1) == 1 && !tape) return a.exp(); /* torch's own special case */
    Tensor a3 = as3(a);
    int m;
    std::vector<int64_t> s;
    if (!choose(a3, &m, s)) {
        if (tape) tape->m = -1;
        return at::linalg_matrix_exp(a);
    }
    Eval e{FWD, a3.size(0), a3.size(1), a3.options()};
    e.save = tape;
    return run(e, m, s, a3, Tensor()).view(a.sizes());
}

/* gradient of <g, exp(a)> = L(aᴴ, g); tape from mexp(a, tape) or nullptr (recomputed) */
Tensor mexp_vjp(const Tensor &a, const Tensor &g, const Tape *tape) {
    if (a.dim() < 2 || a.size(-1) != a.size(-2)) throw std::invalid_argument("matrix_exp_vjp: expected square matrices");
    if (g.sizes() != a.sizes()) throw std::invalid_argument("matrix_exp_vjp: gradient and input shapes differ");
    at::NoTF32Guard no_tf32;
    if (a.numel() == 0) return at::zeros_like(a, at::MemoryFormat::Contiguous);
    Tensor a3 = as3(a), g3 = as3(g.to(a.scalar_type()));
    int m = 0;
    std::vector<int64_t> s;
    if (tape && tape->m > 0) {
        m = tape->m;
        s = tape->s;
    }
    if (m == 0 && (!ours(a) || (tape && tape->m < 0) || !choose(a3, &m, s))) { /* torch's block-matrix form */
        const int64_t n = a.size(-1);
        std::vector<int64_t> sz = a.sizes().vec();
        sz[sz.size() - 2] *= 2, sz[sz.size() - 1] *= 2;
        Tensor big = at::zeros(sz, a.options()), ah = a.mH();
        big.narrow(-2, 0, n).narrow(-1, 0, n).copy_(ah);
        big.narrow(-2, n, n).narrow(-1, n, n).copy_(ah);
        big.narrow(-2, 0, n).narrow(-1, n, n).copy_(g);
        return at::linalg_matrix_exp(big).narrow(-2, 0, n).narrow(-1, n, n).contiguous();
    }
    Eval e{tape ? TAPE : PAIR, a3.size(0), a3.size(1), a3.options()};
    e.tape = tape;
    Tensor x0 = tape ? Tensor() : a3.mH();
    return run(e, m, s, x0, g3).view(a.sizes());
}

/* ---- Python functions (torchc._C) ---------------------------------------------------- */

void tape_free(PyObject *cap) { delete static_cast<Tape *>(PyCapsule_GetPointer(cap, "torchc.mexp_tape")); }

bool tensor_arg(PyObject *o, const char *fn, const char *name) {
    if (THPVariable_Check(o)) return true;
    PyErr_Format(PyExc_TypeError, "%s: %s must be a tensor, not %s", fn, name, Py_TYPE(o)->tp_name);
    return false;
}

template <typename F>
PyObject *guarded(const char *fn, F &&f) {
    try {
        c10::AutoGradMode no_grad(false);
        return f();
    } catch (const c10::Error &e) { /* torch's own checks (torch.linalg.matrix_exp's fallback): its message */
        PyErr_Format(PyExc_RuntimeError, "%s", e.what_without_backtrace());
    } catch (const std::invalid_argument &e) {
        PyErr_Format(PyExc_ValueError, "%s", e.what());
    } catch (const std::exception &e) {
        PyErr_Format(PyExc_RuntimeError, "%s: %s", fn, e.what());
    }
    return nullptr;
}

PyObject *py_matrix_exp(PyObject *, PyObject *a) {
    if (!tensor_arg(a, "matrix_exp", "A")) return nullptr;
    return guarded("matrix_exp", [&]() -> PyObject * { return THPVariable_Wrap(mexp(THPVariable_Unpack(a), nullptr)); });
}

/* (E, tape): tape is a capsule for matrix_exp_vjp */
PyObject *py_matrix_exp_save(PyObject *, PyObject *a) {
    if (!tensor_arg(a, "matrix_exp_save", "A")) return nullptr;
    return guarded("matrix_exp_save", [&]() -> PyObject * {
        auto tape = std::make_unique<Tape>();
        Tensor e = mexp(THPVariable_Unpack(a), tape.get());
        PyObject *E = THPVariable_Wrap(std::move(e)), *cap = nullptr, *res = nullptr;
        if (E == nullptr) return nullptr;
        cap = PyCapsule_New(tape.get(), "torchc.mexp_tape", tape_free);
        if (cap == nullptr) goto error;
        tape.release(); /* owned by the capsule */
        res = PyTuple_Pack(2, E, cap);
    error:
        Py_XDECREF(cap);
        Py_DECREF(E);
        return res;
    });
}

/* matrix_exp_vjp(A, G, tape=None) */
PyObject *py_matrix_exp_vjp(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 2 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "matrix_exp_vjp(A, G, tape=None)");
        return nullptr;
    }
    if (!tensor_arg(args[0], "matrix_exp_vjp", "A") || !tensor_arg(args[1], "matrix_exp_vjp", "G")) return nullptr;
    const Tape *tape = nullptr;
    if (nargs == 3 && args[2] != Py_None) {
        tape = static_cast<const Tape *>(PyCapsule_GetPointer(args[2], "torchc.mexp_tape"));
        if (tape == nullptr) return nullptr;
    }
    return guarded("matrix_exp_vjp", [&]() -> PyObject * {
        return THPVariable_Wrap(mexp_vjp(THPVariable_Unpack(args[0]), THPVariable_Unpack(args[1]), tape));
    });
}

PyMethodDef kMethods[] = {
    {"matrix_exp", (PyCFunction)py_matrix_exp, METH_O,
     "matrix_exp(A): exp of square matrices [..., n, n] (float32/64, complex64/128), degree from the 1-norm."},
    {"matrix_exp_save", (PyCFunction)py_matrix_exp_save, METH_O,
     "matrix_exp_save(A) -> (exp(A), tape): also keeps the registers for matrix_exp_vjp."},
    {"matrix_exp_vjp", (PyCFunction)(void (*)(void))py_matrix_exp_vjp, METH_FASTCALL,
     "matrix_exp_vjp(A, G, tape=None): the gradient of <G, exp(A)>, i.e. L(A^H, G)."},
    {nullptr, nullptr, 0, nullptr}};

} // namespace

void tc_linalg_extern(int kind, const at::Tensor *in, int nin, const int64_t *p, int np, at::Tensor &out) {
    switch (kind) {
    case IC_EXT_MATRIX_EXP: out.copy_(mexp(in[0], nullptr)); break;
    case IC_EXT_MATRIX_EXP_VJP: out.copy_(mexp_vjp(in[0], in[1], nullptr)); break;
    case IC_EXT_SOLVE:
        if (np == 4) /* solve_triangular: left, upper, unitriangular (graph/linalg.c) */
            at::linalg_solve_triangular_out(out, in[0], in[1], p[1] != 0, p[0] != 0, p[2] != 0);
        else
            at::linalg_solve_out(out, in[0], in[1], np > 0 ? p[0] != 0 : true);
        break;
    default: throw std::runtime_error("tc_linalg_extern: not a linalg extern");
    }
}

extern "C" int tc_matrix_exp_init(PyObject *module) {
    if (tc_scan_init(module) < 0) /* torchc.scan (csrc/scan.c) */
        return -1;
    for (PyMethodDef *d = kMethods; d->ml_name; d++) {
        PyObject *f = PyCFunction_NewEx(d, nullptr, nullptr);
        /* traced by torchc as torch.matrix_exp (the graph op runs this same code) */
        if (f == nullptr || (!strcmp(d->ml_name, "matrix_exp") && dh_alias_op(f, "matrix_exp") < 0) ||
            PyModule_AddObject(module, d->ml_name, f) < 0) {
            Py_XDECREF(f);
            return -1;
        }
    }
    return 0;
}
