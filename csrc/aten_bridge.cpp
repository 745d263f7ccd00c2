// aten_bridge.cpp — the only C++ in torchc: reads tensor metadata and allocates through
// ATen for the C layers. Everything here is reached through aten_bridge.h (extern "C").
// Errors become Python exceptions; no C++ exception crosses the boundary.
#include "aten_bridge.h"
#include "pyerr.h"

#include <cstdio>
#include <atomic>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <vector>

#include "ic.h"
#include "ic_config.h"
#include "matrix_exp.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/PythonTorchFunctionTLS.h>
#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <ATen/native/ConvUtils.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/VariableTypeUtils.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/PyInterpreter.h>
#include <torch/version.h>

namespace {

int dtype_to_ic(c10::ScalarType t) {
    switch (t) {
    case c10::ScalarType::Bool: return 0;
    case c10::ScalarType::Byte: return 1;
    case c10::ScalarType::Char: return 2;
    case c10::ScalarType::Short: return 3;
    case c10::ScalarType::Int: return 4;
    case c10::ScalarType::Long: return 5;
    case c10::ScalarType::Half: return 6;
    case c10::ScalarType::BFloat16: return 7;
    case c10::ScalarType::Float: return 8;
    case c10::ScalarType::Double: return 9;
    case c10::ScalarType::ComplexFloat: return 10; /* IC_C64: inputs and CUSTOM externs only */
    case c10::ScalarType::ComplexDouble: return 11;
    default: return -1;
    }
}

bool ic_to_dtype(int d, c10::ScalarType *out) {
    static const c10::ScalarType table[] = {
        c10::ScalarType::Bool, c10::ScalarType::Byte, c10::ScalarType::Char,
        c10::ScalarType::Short, c10::ScalarType::Int, c10::ScalarType::Long,
        c10::ScalarType::Half, c10::ScalarType::BFloat16, c10::ScalarType::Float,
        c10::ScalarType::Double, c10::ScalarType::ComplexFloat, c10::ScalarType::ComplexDouble};
    if (d < 0 || d >= (int)(sizeof table / sizeof table[0])) return false;
    *out = table[d];
    return true;
}

at::Tensor blob(void *p, const ic_meta &m, const at::TensorOptions &base) {
    c10::ScalarType st;
    if (!ic_to_dtype(m.dtype, &st)) throw std::runtime_error("unknown dtype");
    /* the device given (target_device): from_blob would ask the driver for the pointer's device
     * (cudaPointerGetAttributes) on every wrap, four times per extern call */
    return at::for_blob(p, c10::IntArrayRef(m.sizes, m.ndim))
        .strides(c10::IntArrayRef(m.strides, m.ndim))
        .options(base.dtype(st))
        .target_device(base.device())
        .make_tensor();
}

/* A CUDA conv that ATen would give to cuDNN, written by cuDNN straight into our buffer (the
 * generic path computes a new tensor and copies it: one more kernel and dispatch per conv).
 * false: not taken (another backend, an output layout cuDNN would not write), nothing done. */
bool conv_cudnn_out(const at::Tensor &x, const at::Tensor &w, const c10::optional<at::Tensor> &bias,
                    const int64_t *p, int64_t nd, at::Tensor &out) {
    const bool off = !ic_config_int(IC_CFG_conv_out);
    static const bool dbg = [] {
        char e[IC_CFG_STR_MAX];
        ic_config_str(IC_CFG_debug, e); /* torchc.config.debug, read once */
        return strstr(e, "conv") != nullptr;
    }();
    if (off || !x.is_cuda() || x.numel() == 0 || out.numel() == 0) return false;
    const c10::MemoryFormat fmt = out.suggest_memory_format();
    if (!out.is_contiguous(fmt)) {
        if (dbg) fprintf(stderr, "torchc conv: out %s not contiguous in its format: copy path\n", c10::str(out.sizes()).c_str());
        return false;
    }
    c10::IntArrayRef stride(p + 1, nd), padding(p + 1 + nd, nd), dilation(p + 1 + 2 * nd, nd);
    std::vector<int64_t> zeros((size_t)nd, 0);
    const int64_t groups = p[1 + 3 * nd];
    at::OptionalSymIntArrayRef bias_sizes;
    if (bias) bias_sizes = bias->sym_sizes();
    const at::native::ConvBackend be = at::native::select_conv_backend(
        x, w, bias, c10::fromIntArrayRefSlow(stride), c10::fromIntArrayRefSlow(padding),
        c10::fromIntArrayRefSlow(dilation), false, c10::fromIntArrayRefSlow(zeros), c10::SymInt(groups), bias_sizes);
    if (be != at::native::ConvBackend::Cudnn) {
        if (dbg)
            fprintf(stderr, "torchc conv: x %s w %s groups %lld: ATen backend %d, not cuDNN: copy path\n",
                    c10::str(x.sizes()).c_str(), c10::str(w.sizes()).c_str(), (long long)groups, (int)be);
        return false;
    }
    at::Context &ctx = at::globalContext();
    at::cudnn_convolution_out(out, x, w, padding, stride, dilation, groups, ctx.benchmarkCuDNN(),
                              ctx.deterministicCuDNN(), ctx.allowTF32CuDNN());
    if (bias) {
        std::vector<int64_t> shape((size_t)nd + 2, 1);
        shape[1] = bias->numel();
        out.add_(bias->reshape(shape));
    }
    return true;
}

/* Attention without a mask on 16-bit CUDA tensors with a head dim that is a multiple of 8 up
 * to 256 and unit-stride rows may call FlashAttention directly instead of
 * at::scaled_dot_product_attention, whose choice on sm_90 (cuDNN attention) costs 35-60 us
 * of host time a call in BERT/GPT-2 (profile_model.py --host: GPT-2's attention calls 59 ->
 * 34 us each) and a memset. torchc.config.sdpa / TORCHC_SDPA (read at every call, for in-process A/B runs):
 * "flash" always, "aten" never, default: when B*H*Lq*Lk*hd <= 2^29 multiply-adds, where the
 * host time is a large part of the call. H200, batch 32 bf16, one run, aten -> flash: BERT
 * 2.334 -> 2.264 ms, GPT-2 2.762 -> 2.587 ms (both 4e8 multiply-adds an attention), ViT-B/16
 * 3.322 -> 3.414 ms (9.5e8: its cuDNN kernel is the faster one; stays with the dispatcher).
 * Causal with Lq != Lk never: FlashAttention aligns its causal mask to the bottom right there,
 * eager's is_causal to the top left (eager's dispatcher refuses flash for it; H100, f16
 * 77x50 causal: max difference 3.2). */
bool sdpa_flash_ok(const at::Tensor *in, bool causal) {
    char e[IC_CFG_STR_MAX];
    ic_config_str(IC_CFG_sdpa, e); /* torchc.config.sdpa: auto, flash or aten */
    const bool always = !strcmp(e, "flash");
    if (!strcmp(e, "aten")) return false;
    for (int i = 0; i < 3; i++) {
        const at::Tensor &t = in[i];
        if (!t.is_cuda() || t.dim() != 4 || (t.scalar_type() != at::kHalf && t.scalar_type() != at::kBFloat16) ||
            t.stride(-1) != 1 || t.scalar_type() != in[0].scalar_type())
            return false;
    }
    const int64_t hd = in[0].size(-1);
    if (causal && in[0].size(-2) != in[1].size(-2)) return false;
    if (hd % 8 || hd > 256 || in[1].size(-1) != hd || in[2].size(-1) != hd) return false;
    const double macs = (double)in[0].size(0) * in[0].size(1) * in[0].size(2) * in[1].size(2) * hd;
    return always || macs <= (double)(1 << 29);
}

/* The gradients of attention without a mask or dropout (dq, dk, dv of g = dL/dout), from ATen's
 * kernels directly: never the autograd engine inside a compiled backward (on CUDA it refuses
 * to run while the GIL is held: "The autograd engine was called while holding the GIL", H100).
 * 4-D CUDA operands: FlashAttention's where the forward ran it (sdpa_flash_ok), else the
 * memory-efficient kernel's forward (for its logsumexp) and backward,
 * as eager's dispatcher runs for f32 (and 16-bit where it picks that kernel); 4-D CPU
 * operands where the dispatcher picks it: the CPU flash kernel's forward and backward (masks
 * included); anything else: the math form in f32 (f64 kept), eager's math backend:
 *   P = softmax(scale q k^T, causal: the upper triangle -inf), dv = P^T g, dP = g v^T,
 *   dS = P (dP - rowsum(dP P)), dq = scale dS k, dk = scale dS^T q. */
static void sdpa_bwd(const at::Tensor &g, const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, bool causal,
                     double scale, at::Tensor *d, const at::Tensor *mask = nullptr) {
    const at::Tensor qkv[3] = {q, k, v};
    if (mask == nullptr && q.is_cuda() && q.dim() == 4 && sdpa_flash_ok(qkv, causal)) {
        /* the forward ran FlashAttention (IC_EXT_SDPA, the same test): its backward, as eager's
         * autograd runs it after a flash forward, from a recomputed forward's logsumexp (the
         * memory-efficient kernel's forward and backward below took their place before) */
        try {
            auto f = at::_scaled_dot_product_flash_attention(q, k, v, 0.0, causal, false, scale);
            auto r = at::_scaled_dot_product_flash_attention_backward_symint(
                g, q, k, v, std::get<0>(f), std::get<1>(f), std::get<2>(f), std::get<3>(f), std::get<4>(f),
                std::get<5>(f), 0.0, causal, std::get<6>(f), std::get<7>(f), scale);
            d[0] = std::get<0>(r);
            d[1] = std::get<1>(r);
            d[2] = std::get<2>(r);
            return;
        } catch (const std::exception &) { /* refused (grad_out's layout, a shape): the kernels below */
        }
    }
    if (mask == nullptr && q.is_cuda() && q.dim() == 4) {
        try {
            auto f = at::_scaled_dot_product_efficient_attention(q, k, v, c10::nullopt, true, 0.0, causal, scale);
            auto r = at::_scaled_dot_product_efficient_attention_backward(
                g, q, k, v, at::Tensor(), std::get<0>(f), std::get<1>(f), std::get<2>(f), std::get<3>(f), 0.0,
                {true, true, true, false}, causal, scale);
            d[0] = std::get<0>(r);
            d[1] = std::get<1>(r);
            d[2] = std::get<2>(r);
            return;
        } catch (const std::exception &) { /* a shape or dtype it refuses: the math form */
        }
    }
    if (q.is_cpu() && q.dim() == 4) {
        /* the CPU: the fused kernel where eager's dispatcher picks it (4-D operands, masks
         * included): its forward again for the logsumexp, then its backward, as eager's
         * autograd runs it (tiled: no [.., L, S] tensor; a bool mask as the dispatcher turns
         * it into a float one, 0 where kept and -inf elsewhere) */
        c10::optional<at::Tensor> m;
        if (mask != nullptr)
            m = mask->scalar_type() != at::kBool
                    ? *mask
                    : at::where(*mask, at::zeros({}, q.options()),
                                at::full({}, -std::numeric_limits<double>::infinity(), q.options()));
        try {
            if (at::_fused_sdp_choice(q, k, v, m, 0.0, causal, scale, false) == 1) {
                auto f = at::_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, m, scale);
                auto r = at::_scaled_dot_product_flash_attention_for_cpu_backward(g, q, k, v, std::get<0>(f),
                                                                                  std::get<1>(f), 0.0, causal, m, scale);
                d[0] = std::get<0>(r);
                d[1] = std::get<1>(r);
                d[2] = std::get<2>(r);
                return;
            }
        } catch (const std::exception &) { /* refused: the math form */
        }
    }
    const at::ScalarType ct = q.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
    const at::Tensor qf = q.to(ct), kf = k.to(ct), vf = v.to(ct), gf = g.to(ct);
    at::Tensor sc = at::matmul(qf, kf.transpose(-2, -1)).mul_(scale);
    if (causal) {
        at::Tensor keep = at::ones({q.size(-2), k.size(-2)}, q.options().dtype(at::kBool)).tril();
        sc.masked_fill_(keep.logical_not(), -std::numeric_limits<double>::infinity());
    }
    if (mask != nullptr) { /* (a mask that needs no gradient: sdpa_stats_bwd's math case) */
        if (mask->scalar_type() == at::kBool) sc.masked_fill_(mask->logical_not(), -std::numeric_limits<double>::infinity());
        else sc.add_(mask->to(ct));
    }
    at::Tensor pr = at::softmax(sc, -1);
    if (mask != nullptr) pr.masked_fill_(pr.isnan(), 0.0); /* a row with every key masked: eager's safe softmax */
    const at::Tensor dp = at::matmul(gf, vf.transpose(-2, -1));
    const at::Tensor ds = pr * (dp - (dp * pr).sum(-1, true));
    d[0] = at::matmul(ds, kf).mul_(scale);
    d[1] = at::matmul(ds.transpose(-2, -1), qf).mul_(scale);
    d[2] = at::matmul(pr.transpose(-2, -1), gf);
}

/* Attention in a training graph with its backward's statistics (IC_EXT_SDPA with params
 * {is_causal, 1}, IC_EXT_SDPA_BWD with params {is_causal, 1}; ic.h ic_sdpa_stats_layout): the
 * forward runs the kernel eager's dispatcher picks and keeps its logsumexp, and the backward
 * runs that kernel's backward on it, as eager's autograd does (nothing recomputed):
 *   CPU: _scaled_dot_product_flash_attention_for_cpu (eager's choice for 4-D operands it
 *   accepts, masks included) and its backward; the header's tag says which ran (read on
 *   the host).
 *   CUDA (no mask): FlashAttention (head dims multiples of 8) or the memory-efficient kernel
 *   where _fused_sdp_choice picks them (eager's choice); the backward asks the same question
 *   of the same operands (a tag read back from the device would synchronize each backward).
 * Anything else (the math path, cuDNN's kernel): tag NONE, the output from
 * at::scaled_dot_product_attention and the backward recomputed (sdpa_bwd). */
static int sdpa_stats_kind(const at::Tensor *in, int nin, bool causal, double scale) {
    const at::Tensor &q = in[0];
    if (q.dim() != 4 || !(q.is_cuda() || q.is_cpu())) return IC_SDPA_ST_NONE;
    c10::optional<at::Tensor> mask;
    if (nin == 4) mask = in[3];
    const int64_t ch = at::_fused_sdp_choice(q, in[1], in[2], mask, 0.0, causal, scale, false);
    if (q.is_cpu()) return ch == 1 ? IC_SDPA_ST_CPU_FLASH : IC_SDPA_ST_NONE;
    /* CUDA: eager's composite pads head dims to a multiple of 8 around FlashAttention and
     * turns a mask into an aligned float bias for the memory-efficient kernel: those cases
     * keep the dispatcher (tag NONE) */
    if (nin != 3) return IC_SDPA_ST_NONE;
    if (ch == 1 && q.size(-1) % 8 == 0 && in[2].size(-1) % 8 == 0) return IC_SDPA_ST_FLASH;
    if (ch == 2) return IC_SDPA_ST_EFFICIENT;
    return IC_SDPA_ST_NONE;
}

static void sdpa_stats_views(const at::Tensor &q, const at::Tensor &v, const at::Tensor &flat, at::Tensor *ov,
                             at::Tensor *hdr, at::Tensor *lse_area) {
    ic_meta om{};
    om.ndim = (int)q.dim();
    for (int i = 0; i < om.ndim; i++) om.sizes[i] = q.size(i);
    om.sizes[om.ndim - 1] = v.size(-1);
    int64_t n, off, total;
    ic_sdpa_stats_layout(&om, &n, &off, &total);
    if (flat.dim() != 1 || flat.size(0) != total) throw std::runtime_error("sdpa: statistics of another layout");
    if (ov) *ov = flat.narrow(0, 0, n).view(c10::IntArrayRef(om.sizes, om.ndim));
    const at::Tensor st = flat.narrow(0, off, total - off);
    *hdr = st.narrow(0, 0, 16);
    int64_t rows = 1;
    for (int i = 0; i + 2 < om.ndim; i++) rows *= om.sizes[i];
    const int64_t L = om.sizes[om.ndim - 2], Lp = (L + 31) / 32 * 32;
    *lse_area = st.narrow(0, 16, rows * Lp).view({rows, Lp});
}

/* the statistics' part of the flat output (the stats value alone, the backward's operand) */
static void sdpa_stats_parts(const at::Tensor &q, const at::Tensor &v, const at::Tensor &st, at::Tensor *hdr,
                             at::Tensor *lse_area) {
    int64_t rows = 1;
    for (int i = 0; i + 2 < q.dim(); i++) rows *= q.size(i);
    const int64_t L = q.size(-2), Lp = (L + 31) / 32 * 32;
    (void)v;
    if (st.dim() != 1 || st.size(0) != 16 + rows * Lp) throw std::runtime_error("sdpa_bwd: statistics of another layout");
    *hdr = st.narrow(0, 0, 16);
    *lse_area = st.narrow(0, 16, rows * Lp).view({rows, Lp});
}

void copy_in(const at::Tensor &dst, const at::Tensor &src); /* below */

static void sdpa_stats_fwd(const at::Tensor *in, int nin, bool causal, double scale, const at::Tensor &flat) {
    const at::Tensor &q = in[0], &k = in[1], &v = in[2];
    c10::optional<at::Tensor> mask;
    if (nin == 4) mask = in[3];
    at::Tensor ov, hdr, area, o, lse;
    sdpa_stats_views(q, v, flat, &ov, &hdr, &area);
    const int kind = sdpa_stats_kind(in, nin, causal, scale);
    switch (kind) {
    case IC_SDPA_ST_CPU_FLASH: {
        auto r = at::_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, mask, scale);
        o = std::get<0>(r), lse = std::get<1>(r);
        break;
    }
    case IC_SDPA_ST_FLASH: {
        auto r = at::_scaled_dot_product_flash_attention(q, k, v, 0.0, causal, false, scale);
        o = std::get<0>(r), lse = std::get<1>(r);
        break;
    }
    case IC_SDPA_ST_EFFICIENT: {
        auto r = at::_scaled_dot_product_efficient_attention(q, k, v, c10::nullopt, true, 0.0, causal, scale);
        o = std::get<0>(r), lse = std::get<1>(r);
        break;
    }
    default: o = at::scaled_dot_product_attention(q, k, v, mask, 0.0, causal, scale); break;
    }
    copy_in(ov, o);
    hdr.fill_((double)kind); /* (element 0 is read) */
    if (kind != IC_SDPA_ST_NONE) {
        const int64_t rows = area.size(0);
        if (lse.numel() % (rows ? rows : 1) || lse.size(-1) > area.size(1))
            throw std::runtime_error("sdpa: a logsumexp of an unexpected shape");
        area.narrow(1, 0, lse.size(-1)).copy_(lse.reshape({rows, lse.size(-1)}));
    }
}

/* dq, dk, dv from the forward's statistics; false: the forward kept none (tag NONE) */
static bool sdpa_stats_bwd(const at::Tensor *in, int nin, bool causal, double scale, at::Tensor *d) {
    const at::Tensor &g = in[0], &q = in[1], &k = in[2], &v = in[3], &o = in[4];
    c10::optional<at::Tensor> mask;
    if (nin == 7) mask = in[6];
    at::Tensor hdr, area;
    sdpa_stats_parts(q, v, in[5], &hdr, &area);
    int kind;
    if (q.is_cpu()) kind = (int)hdr[0].item<double>();
    else kind = nin == 7 ? IC_SDPA_ST_NONE : sdpa_stats_kind(in + 1, 3, causal, scale); /* (no device read) */
    std::vector<int64_t> lsz(q.sizes().begin(), q.sizes().end() - 1);
    const int64_t L = q.size(-2);
    switch (kind) {
    case IC_SDPA_ST_CPU_FLASH: {
        at::Tensor lse = area.narrow(1, 0, L).contiguous().view(lsz);
        auto r = at::_scaled_dot_product_flash_attention_for_cpu_backward(g, q, k, v, o, lse, 0.0, causal, mask, scale);
        d[0] = std::get<0>(r), d[1] = std::get<1>(r), d[2] = std::get<2>(r);
        return true;
    }
    case IC_SDPA_ST_FLASH: {
        at::Tensor lse = area.narrow(1, 0, L).contiguous().view(lsz); /* [B, H, L] dense, as the kernel reads it */
        const at::Tensor none = at::empty({}, at::TensorOptions().dtype(at::kLong));
        auto r = at::_scaled_dot_product_flash_attention_backward(g, q, k, v, o, lse, at::Tensor(), at::Tensor(), L,
                                                                  k.size(-2), 0.0, causal, none, none, scale);
        d[0] = std::get<0>(r), d[1] = std::get<1>(r), d[2] = std::get<2>(r);
        return true;
    }
    case IC_SDPA_ST_EFFICIENT: {
        lsz.back() = area.size(1);
        at::Tensor lse = area.view(lsz);
        const at::Tensor none = at::empty({}, at::TensorOptions().dtype(at::kLong));
        auto r = at::_scaled_dot_product_efficient_attention_backward(g, q, k, v, at::Tensor(), o, lse, none, none, 0.0,
                                                                      {true, true, true, false}, causal, scale);
        d[0] = std::get<0>(r), d[1] = std::get<1>(r), d[2] = std::get<2>(r);
        return true;
    }
    default: return false;
    }
}

/* an uninitialized tensor of meta m (its strides) on dev */
static at::Tensor empty_of(const ic_meta &m, const c10::Device &dev) {
    c10::ScalarType st;
    if (!ic_to_dtype(m.dtype, &st)) throw std::runtime_error("unknown dtype");
    return at::empty_strided(c10::IntArrayRef(m.sizes, m.ndim), c10::IntArrayRef(m.strides, m.ndim),
                             at::TensorOptions().dtype(st).device(dev));
}

/* The probe's results, once per key: the metas (dtype, sizes, strides) of q, k, v and the
 * mask, causal, scale, the device and every global setting the dispatcher's choice of backend
 * reads (the enabled backends, their priority order, reduced-precision math, deterministic
 * algorithms). A capture of a model's attention layers, a recompile, another model with the
 * same shapes: the attention ran on up to 256 MB of operands each time before. Failures are
 * kept too (the op refused these metas), except running out of memory. Bounded: cleared when
 * full. */
namespace {
struct sdpa_probe {
    int rc;
    int64_t st[IC_MAX_DIMS];
};
std::mutex sdpa_mu;
std::map<std::vector<int64_t>, sdpa_probe> sdpa_seen;
std::atomic<unsigned long long> sdpa_runs{0}, sdpa_hits{0};
constexpr size_t SDPA_SEEN_MAX = 4096;

std::vector<int64_t> sdpa_key(const ic_meta *const ms[4], int causal, double scale, int device) {
    std::vector<int64_t> key;
    for (int i = 0; i < 4; i++) {
        if (!ms[i]) {
            key.push_back(-1);
            continue;
        }
        key.push_back(ms[i]->dtype);
        key.push_back(ms[i]->ndim);
        for (int d = 0; d < ms[i]->ndim; d++) {
            key.push_back(ms[i]->sizes[d]);
            key.push_back(ms[i]->strides[d]);
        }
    }
    int64_t sb;
    static_assert(sizeof sb == sizeof scale, "double");
    std::memcpy(&sb, &scale, sizeof sb);
    key.push_back(causal != 0);
    key.push_back(sb);
    key.push_back(device);
    at::Context &ctx = at::globalContext();
    key.push_back((int64_t)ctx.userEnabledFlashSDP() | (int64_t)ctx.userEnabledFA3SDP() << 1 |
                  (int64_t)ctx.userEnabledMemEfficientSDP() << 2 | (int64_t)ctx.userEnabledMathSDP() << 3 |
                  (int64_t)ctx.userEnabledCuDNNSDP() << 4 | (int64_t)ctx.userEnabledOverrideableSDP() << 5 |
                  (int64_t)ctx.allowFP16BF16ReductionMathSDP() << 6 | (int64_t)ctx.deterministicAlgorithms() << 7);
    for (at::SDPBackend b : ctx.sDPPriorityOrder()) key.push_back((int64_t)b);
    return key;
}

int sdpa_probe_run(const ic_meta *q, const ic_meta *k, const ic_meta *v, const ic_meta *mask, int causal,
                   double scale, int device, int64_t *st, bool *oom) {
    sdpa_runs.fetch_add(1, std::memory_order_relaxed);
    try {
        c10::InferenceMode guard;
        const c10::Device dev(c10::DeviceType::CUDA, (c10::DeviceIndex)device);
        c10::optional<at::Tensor> mk;
        if (mask) mk = empty_of(*mask, dev); /* values do not matter: only the layout is read */
        at::Tensor o = at::scaled_dot_product_attention(empty_of(*q, dev), empty_of(*k, dev), empty_of(*v, dev), mk,
                                                        0.0, causal != 0, scale);
        if (o.dim() != q->ndim) return -1;
        for (int d = 0; d < o.dim(); d++) st[d] = o.stride(d);
        return 0;
    } catch (const c10::OutOfMemoryError &) {
        *oom = true;
        return -1;
    } catch (...) {
        return -1;
    }
}
} // namespace

extern "C" int tc_sdpa_out_strides(const ic_meta *q, const ic_meta *k, const ic_meta *v, const ic_meta *mask,
                                   int causal, double scale, int device, int64_t *st) {
    const ic_meta *ms[4] = {q, k, v, mask};
    double bytes = 0;
    for (int i = 0; i < 4 && ms[i]; i++) {
        if (ms[i]->dyn || ms[i]->ndim < 0 || ms[i]->ndim > IC_MAX_DIMS) return -1;
        double span = 1;
        for (int d = 0; d < ms[i]->ndim; d++) span += (double)(ms[i]->sizes[d] - 1) * (double)ms[i]->strides[d];
        bytes += span * (double)ic_dtype_size((ic_dtype)ms[i]->dtype);
    }
    if (bytes > (double)(1 << 28)) return -1; /* a probe this large is not worth its memory */
    if (q->ndim < 1) return -1;
    std::vector<int64_t> key;
    try {
        key = sdpa_key(ms, causal, scale, device);
        std::lock_guard<std::mutex> lk(sdpa_mu);
        auto it = sdpa_seen.find(key);
        if (it != sdpa_seen.end()) {
            sdpa_hits.fetch_add(1, std::memory_order_relaxed);
            if (it->second.rc == 0) std::memcpy(st, it->second.st, sizeof(int64_t) * (size_t)q->ndim);
            return it->second.rc;
        }
    } catch (...) { /* bad_alloc: probe without the cache */
        key.clear();
    }
    sdpa_probe r{};
    bool oom = false;
    r.rc = sdpa_probe_run(q, k, v, mask, causal, scale, device, r.st, &oom);
    if (r.rc == 0) std::memcpy(st, r.st, sizeof(int64_t) * (size_t)q->ndim);
    if (!oom && !key.empty()) {
        try {
            /* the first attention call of a process can change the settings the key reads (the
             * H200 run: the second ask of the same key ran the probe again), so the answer is
             * kept under the key as it reads after the run too */
            std::vector<int64_t> after = sdpa_key(ms, causal, scale, device);
            std::lock_guard<std::mutex> lk(sdpa_mu);
            if (sdpa_seen.size() + 2 > SDPA_SEEN_MAX) sdpa_seen.clear();
            if (after != key) sdpa_seen.emplace(std::move(after), r);
            sdpa_seen.emplace(std::move(key), r);
        } catch (...) {
        }
    }
    return r.rc;
}

extern "C" void tc_sdpa_probe_stats(unsigned long long *runs, unsigned long long *hits) {
    *runs = sdpa_runs.load(std::memory_order_relaxed);
    *hits = sdpa_hits.load(std::memory_order_relaxed);
}

/* _C.sdpa_layout_probe(q, k, v, mask, causal, scale, device): tc_sdpa_out_strides on the metas of
 * these tensors (any device: only sizes, strides and dtypes are read): the strides, or None. */
extern "C" PyObject *tc_sdpa_layout_probe_py(PyObject *args) {
    PyObject *o[4];
    int causal = 0, device = 0;
    double scale = 1.0;
    if (!PyArg_ParseTuple(args, "OOOOpdi", &o[0], &o[1], &o[2], &o[3], &causal, &scale, &device)) return nullptr;
    ic_meta m[4];
    for (int i = 0; i < 4; i++) {
        if (i == 3 && o[i] == Py_None) break;
        if (!THPVariable_Check(o[i])) {
            PyErr_SetString(PyExc_TypeError, "sdpa_layout_probe: q, k, v (and a mask or None) must be tensors");
            return nullptr;
        }
        const at::Tensor &t = THPVariable_Unpack(o[i]);
        std::memset(&m[i], 0, sizeof m[i]);
        m[i].dtype = (ic_dtype)dtype_to_ic(t.scalar_type());
        if ((int)m[i].dtype < 0 || t.dim() > IC_MAX_DIMS) {
            PyErr_SetString(PyExc_ValueError, "sdpa_layout_probe: a dtype or rank torchc does not handle");
            return nullptr;
        }
        m[i].ndim = (int)t.dim();
        for (int d = 0; d < m[i].ndim; d++) {
            m[i].sizes[d] = t.size(d);
            m[i].strides[d] = t.stride(d);
        }
    }
    int64_t st[IC_MAX_DIMS];
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tc_sdpa_out_strides(&m[0], &m[1], &m[2], o[3] == Py_None ? nullptr : &m[3], causal, scale, device, st);
    Py_END_ALLOW_THREADS
    if (rc != 0) Py_RETURN_NONE;
    PyObject *r = PyTuple_New(m[0].ndim);
    for (int d = 0; r && d < m[0].ndim; d++) {
        PyObject *x = PyLong_FromLongLong(st[d]);
        if (!x) {
            Py_CLEAR(r);
            break;
        }
        PyTuple_SET_ITEM(r, d, x);
    }
    return r;
}

/* torchc.scan's loop constants (csrc/scan.c sets them around each C loop, on its thread):
 * a GEMM's right operand that is a transposed view of one of them ([K, N] with strides
 * (1, ld): Bᵀ of an RNN's h Bᵀ, a Linear's weight) is read from a contiguous copy made at
 * its first use in the loop and dropped when the loop ends. The loop's forward and backward
 * graphs read one constant in both layouts (h Bᵀ, then dz B), and MKL's NN kernels beat the
 * transposed ones at these sizes (784 x [128,170]x[170,170], 1 thread: 37 against 43 ms);
 * one layout is chosen per graph input, so without the copy one of the two GEMM streams
 * ran transposed. The constants are not written while the loop runs (a body mutating an
 * input never runs as a C loop), so the copy stays valid for the loop. */
namespace {
struct scan_const_copy {
    const void *ptr;
    int64_t rows, cols, ld;
    at::ScalarType dtype;
    at::Tensor copy;
};
thread_local const void *const *scan_consts = nullptr;
thread_local int scan_nconsts = 0;
thread_local std::vector<scan_const_copy> *scan_copies = nullptr;

at::Tensor loop_const_layout(const at::Tensor &b) {
    if (scan_nconsts == 0 || b.dim() != 2 || b.stride(0) != 1 || b.size(0) < 2 || b.size(1) < 2 ||
        b.stride(1) < b.size(0) || !b.device().is_cpu() ||
        (b.scalar_type() != at::kFloat && b.scalar_type() != at::kDouble))
        return b;
    const void *p = b.data_ptr();
    int hit = 0;
    for (int i = 0; i < scan_nconsts && !hit; i++) hit = scan_consts[i] == p;
    if (!hit) return b;
    if (scan_copies == nullptr) scan_copies = new std::vector<scan_const_copy>();
    for (auto &k : *scan_copies)
        if (k.ptr == p && k.rows == b.size(0) && k.cols == b.size(1) && k.ld == b.stride(1) && k.dtype == b.scalar_type())
            return k.copy;
    at::Tensor copy = b.contiguous();
    scan_copies->push_back({p, b.size(0), b.size(1), b.stride(1), b.scalar_type(), copy});
    return copy;
}
} // namespace

extern "C" void tc_scan_consts_set(const void *const *ptrs, int n) {
    scan_consts = n > 0 ? ptrs : nullptr;
    scan_nconsts = n > 0 ? n : 0;
    if (n <= 0 && scan_copies != nullptr) {
        delete scan_copies;
        scan_copies = nullptr;
    }
}

/* An ATen result copied into the graph's buffer (an extern without an out= path): one more
 * kernel and a read and write of the result. Counted (stats()["extern_copies"], against
 * "extern_calls") so that the tests see a path that writes in place regress to a copy. */
std::atomic<unsigned long long> n_extern_calls{0}, n_extern_copies{0};

void copy_in(const at::Tensor &dst, const at::Tensor &src) {
    n_extern_copies.fetch_add(1, std::memory_order_relaxed);
    dst.copy_(src);
}

void run_extern(const ic_extern_call *c) {
    c10::InferenceMode guard;
    n_extern_calls.fetch_add(1, std::memory_order_relaxed);
    const c10::Device dev = c->device == IC_CUDA
                                ? c10::Device(c10::DeviceType::CUDA, (c10::DeviceIndex)c->device_index)
                                : c10::Device(c10::DeviceType::CPU);
    const at::TensorOptions base = at::TensorOptions().device(dev);
    at::Tensor in[IC_EXT_MAXIN];
    for (int i = 0; i < c->nin && i < IC_EXT_MAXIN; i++) in[i] = blob(c->in[i], c->in_meta[i], base);
    at::Tensor out = blob(c->out, *c->out_meta, base);
    const int64_t *p = c->params;
    switch (c->kind) {
    case IC_EXT_MM: at::mm_out(out, in[0], loop_const_layout(in[1])); break;
    case IC_EXT_BMM: at::bmm_out(out, in[0], in[1]); break;
    case IC_EXT_MATMUL:
        /* a 1-D operand: matmul_out writes through a 2-D view and resizes out (with ATen's
         * deprecation warning); compute, then copy into out */
        if (in[0].dim() == 1 || in[1].dim() == 1) copy_in(out, at::matmul(in[0], in[1]));
        else at::matmul_out(out, in[0], in[1]);
        break;
    case IC_EXT_ADDMM: at::addmm_out(out, in[0], in[1], loop_const_layout(in[2]), c->beta, c->alpha); break;
    case IC_EXT_BADDBMM: at::baddbmm_out(out, in[0], in[1], in[2], c->beta, c->alpha); break;
    case IC_EXT_LINEAR: {
        const int64_t N = in[1].size(0), K = in[1].size(1);
        const int64_t M = N ? out.numel() / N : 0;
        at::Tensor x2 = in[0].reshape({M, K}), o2 = out.view({M, N});
        if (c->nin == 3) at::addmm_out(o2, in[2], x2, loop_const_layout(in[1].t()));
        else at::mm_out(o2, x2, loop_const_layout(in[1].t()));
        break;
    }
    case IC_EXT_CONV: {
        const int64_t nd = p[0];
        std::vector<int64_t> zeros((size_t)nd, 0);
        c10::optional<at::Tensor> bias;
        if (c->nin == 3) bias = in[2];
        /* channels-last (params[2 + 3 nd] = 1): x and out are [N, *s, C]; ATen sees the
         * NCHW views, channels-last strided, and picks its channels-last kernels */
        const bool cl = c->nparams == 3 + 3 * nd && p[2 + 3 * nd] == 1;
        std::vector<int64_t> to_nchw, to_nhwc;
        if (cl) {
            to_nchw.push_back(0);
            to_nchw.push_back(nd + 1);
            to_nhwc.push_back(0);
            for (int64_t i = 0; i < nd; i++) {
                to_nchw.push_back(1 + i);
                to_nhwc.push_back(2 + i);
            }
            to_nhwc.push_back(1);
        }
        at::Tensor x = cl ? in[0].permute(to_nchw) : in[0];
        if (cl) {
            at::Tensor o = out.permute(to_nchw);
            if (conv_cudnn_out(x, in[1], bias, p, nd, o)) break;
        } else if (conv_cudnn_out(x, in[1], bias, p, nd, out)) {
            break;
        }
        at::Tensor r = at::convolution(x, in[1], bias, c10::IntArrayRef(p + 1, nd),
                                       c10::IntArrayRef(p + 1 + nd, nd), c10::IntArrayRef(p + 1 + 2 * nd, nd),
                                       false, zeros, p[1 + 3 * nd]);
        if (cl) copy_in(out, r.permute(to_nhwc));
        else copy_in(out, r);
        break;
    }
    case IC_EXT_SDPA: {
        if (c->nparams == 2) { /* training: with the backward's statistics */
            sdpa_stats_fwd(in, c->nin, p[0] != 0, c->beta, out);
            break;
        }
        c10::optional<at::Tensor> mask;
        if (c->nin == 4) mask = in[3];
        if (c->nin == 3 && sdpa_flash_ok(in, p[0] != 0)) { /* see sdpa_flash_ok */
            try {
                auto r = at::_scaled_dot_product_flash_attention(in[0], in[1], in[2], 0.0, p[0] != 0, false, c->beta);
                copy_in(out, std::get<0>(r));
                break;
            } catch (const std::exception &) { /* a shape FlashAttention refuses: the dispatcher's choice */
            }
        }
        copy_in(out, at::scaled_dot_product_attention(in[0], in[1], in[2], mask, 0.0, p[0] != 0, c->beta));
        break;
    }
    case IC_EXT_GATHER: at::gather_out(out, in[0], p[0], in[1]); break;
    case IC_EXT_SCATTER:
        if (c->nparams == 3) { /* scatter_reduce: reduction, include_self (graph.c) */
            static const char *const modes[] = {"sum", "prod", "mean", "amax", "amin"};
            copy_in(out, at::scatter_reduce(in[0], p[0], in[1], in[2], modes[p[1]], p[2] != 0));
        } else {
            copy_in(out, at::scatter(in[0], p[0], in[1], in[2]));
        }
        break;
    case IC_EXT_SCATTER_ADD: copy_in(out, at::scatter_add(in[0], p[0], in[1], in[2])); break;
    case IC_EXT_CUMSUM: at::cumsum_out(out, in[0], p[0], out.scalar_type()); break;
    case IC_EXT_CUMPROD: at::cumprod_out(out, in[0], p[0], out.scalar_type()); break;
    case IC_EXT_CONV_BWD: { /* training: params are conv's, then which gradient */
        const int64_t nd = p[0], which = p[c->nparams - 1];
        const bool cl = c->nparams == 4 + 3 * nd && p[2 + 3 * nd] == 1;
        std::vector<int64_t> zeros((size_t)nd, 0), to_nchw, to_nhwc;
        if (cl) {
            to_nchw.push_back(0);
            to_nchw.push_back(nd + 1);
            to_nhwc.push_back(0);
            for (int64_t i = 0; i < nd; i++) {
                to_nchw.push_back(1 + i);
                to_nhwc.push_back(2 + i);
            }
            to_nhwc.push_back(1);
        }
        at::Tensor g = cl ? in[0].permute(to_nchw) : in[0], x = cl ? in[1].permute(to_nchw) : in[1];
        auto r = at::convolution_backward(g, x, in[2], c10::nullopt, c10::IntArrayRef(p + 1, nd),
                                          c10::IntArrayRef(p + 1 + nd, nd), c10::IntArrayRef(p + 1 + 2 * nd, nd), false,
                                          zeros, p[1 + 3 * nd], {which != 1, which != 0, false});
        /* which = 2: both in one call, out = [dx (x's shape, NHWC when cl) | dw] flat */
        at::Tensor dx = which == 2 ? out.narrow(0, 0, in[1].numel()).view(in[1].sizes()) : out;
        at::Tensor dw = which == 2 ? out.narrow(0, in[1].numel(), in[2].numel()).view(in[2].sizes()) : out;
        if (which != 1) copy_in(dx, cl ? std::get<0>(r).permute(to_nhwc) : std::get<0>(r));
        if (which != 0) copy_in(dw, std::get<1>(r));
        break;
    }
    case IC_EXT_SDPA_BWD: { /* training: see sdpa_bwd */
        at::Tensor d[3];
        if (c->nparams != 2 || !sdpa_stats_bwd(in, c->nin, p[0] != 0, c->beta, d))
            sdpa_bwd(in[0], in[1], in[2], in[3], p[0] != 0, c->beta, d,
                     c->nin == 7 ? &in[6] : c->nin == 5 ? &in[4] : nullptr);
        const int64_t nq = in[1].numel(), nk = in[2].numel(), nv = in[3].numel();
        copy_in(out.narrow(0, 0, nq).view(in[1].sizes()), d[0]);
        copy_in(out.narrow(0, nq, nk).view(in[2].sizes()), d[1]);
        copy_in(out.narrow(0, nq + nk, nv).view(in[3].sizes()), d[2]);
        break;
    }
    case IC_EXT_DROPOUT_MASK: { /* eager's CPU dropout: empty_like(x).bernoulli_(1 - p).div_(1 - p),
                                * in x's layout where params give its strides (the draws' order) */
        at::Tensor r = c->nparams == out.dim() && c->nparams > 0
                           ? at::empty_strided(out.sizes(), c10::IntArrayRef(p, (size_t)c->nparams), out.options())
                           : out;
        if (c->beta >= 1.0) {
            r.zero_();
        } else {
            r.bernoulli_(1.0 - c->beta);
            r.div_(1.0 - c->beta);
        }
        if (!r.is_same(out)) copy_in(out, r);
        break;
    }
    case IC_EXT_ARGSORT: /* topk (5 params), kthvalue/median/nanmedian (4): ATen's own selection, so
                          * ties pick eager's indices */
        if (c->nparams == 5) copy_in(out, std::get<1>(at::topk(in[0], p[3], p[0], p[1] != 0, p[4] != 0)));
        else if (c->nparams == 4 && p[1] == 0) copy_in(out, std::get<1>(at::kthvalue(in[0], p[2], p[0], p[3] != 0)));
        else if (c->nparams == 4 && p[1] == 1) copy_in(out, std::get<1>(at::median(in[0], p[0], p[3] != 0)));
        else if (c->nparams == 4) copy_in(out, std::get<1>(at::nanmedian(in[0], p[0], p[3] != 0)));
        else copy_in(out, std::get<1>(at::sort(in[0], std::optional<bool>(p[2] != 0), p[0], p[1] != 0)));
        break;
    case IC_EXT_GROUPED_MM: { /* MoE experts: ATen's grouped GEMM; its kernels want each matrix's
                               * leading dim a multiple of 16 bytes: row-major where that holds,
                               * else column-major (the caller checked eager's own layouts) */
        const int64_t al = 16 / (int64_t)in[0].element_size();
        auto fit = [al](const at::Tensor &m) {
            const bool ok_ptr = reinterpret_cast<uintptr_t>(m.data_ptr()) % 16 == 0;
            if (ok_ptr && m.stride(-1) == 1 && m.stride(-2) % al == 0 && m.stride(-2) >= std::max<int64_t>(1, m.size(-1)))
                return m;
            if (m.size(-1) % al != 0 && m.size(-2) % al == 0)
                return m.transpose(-2, -1).clone(at::MemoryFormat::Contiguous).transpose(-2, -1);
            return m.clone(at::MemoryFormat::Contiguous); /* a fresh, aligned buffer */
        };
        copy_in(out, at::_grouped_mm(fit(in[0]), fit(in[1]), in[2]));
        break;
    }
    case IC_EXT_RANDOM: { /* eager's own draws: the tensor eager's factory makes (its dtype, sizes
                           * and strides), filled by the same ATen call on the default generator */
        c10::ScalarType st;
        if (!ic_to_dtype((int)p[1], &st)) throw std::runtime_error("random: bad dtype");
        const int64_t nd = p[4];
        c10::IntArrayRef sizes(p + 5, (size_t)nd);
        at::Tensor r = c->nparams == 5 + 2 * nd ? at::empty_strided(sizes, c10::IntArrayRef(p + 5 + nd, (size_t)nd), base.dtype(st))
                                                : at::empty(sizes, base.dtype(st));
        switch (p[0]) {
        case IC_RND_UNIFORM: r.uniform_(c->beta, c->alpha); break;
        case IC_RND_NORMAL: r.normal_(c->beta, c->alpha); break;
        case IC_RND_RANDINT: r.random_(p[2], p[3]); break;
        case IC_RND_BERNOULLI: r.bernoulli_(c->beta); break;
        case IC_RND_BERNOULLI_T: r.bernoulli_(in[0]); break;
        case IC_RND_RANDPERM: at::randperm_out(r, p[5]); break;
        case IC_RND_MULTINOMIAL: r = at::multinomial(in[0], p[2], p[3] != 0); break;
        case IC_RND_EXPONENTIAL: r.exponential_(c->beta); break;
        default: throw std::runtime_error("random: unknown distribution");
        }
        copy_in(out, r);
        break;
    }
    /* ---- models helper (F.grid_sample) ---- */
    case IC_EXT_GRID_SAMPLE: copy_in(out, at::grid_sampler(in[0], in[1], p[0], p[1], p[2] != 0)); break;
    case IC_EXT_GRID_SAMPLE_BWD: { /* training: grid_sample's params, then which gradient */
        const int64_t which = p[3];
        const std::array<bool, 2> mask = {which != 1, which != 0};
        auto r = in[1].dim() == 4 ? at::grid_sampler_2d_backward(in[0], in[1], in[2], p[0], p[1], p[2] != 0, mask)
                                  : at::grid_sampler_3d_backward(in[0], in[1], in[2], p[0], p[1], p[2] != 0, mask);
        at::Tensor dx = which == 2 ? out.narrow(0, 0, in[1].numel()).view(in[1].sizes()) : out;
        at::Tensor dgrid = which == 2 ? out.narrow(0, in[1].numel(), in[2].numel()).view(in[2].sizes()) : out;
        if (which != 1) copy_in(dx, std::get<0>(r));
        if (which != 0) copy_in(dgrid, std::get<1>(r));
        break;
    }
    /* ---- end models helper ---- */
    case IC_EXT_MATRIX_EXP: /* linear algebra: csrc/matrix_exp.cpp */
    case IC_EXT_MATRIX_EXP_VJP:
    case IC_EXT_SOLVE: tc_linalg_extern(c->kind, in, c->nin, p, c->nparams, out); break;
    default: throw std::runtime_error("unknown extern kind");
    }
}

} // namespace

extern "C" {

extern "C" void tc_extern_copy_stats(unsigned long long *calls, unsigned long long *copies) {
    *calls = n_extern_calls.load();
    *copies = n_extern_copies.load();
}

/* the CUSTOM extern (torchc/_custom_ops.py run): the operands and the output as tensors on
 * the graph's buffers, the op called from Python under the GIL (the CPU graph runs without
 * it; externs run on the caller's thread); a Python exception becomes err ("ATen custom:
 * ...": the frame reruns eagerly), but KeyboardInterrupt, MemoryError, RecursionError and
 * other non-Exceptions stay set in the thread's state: the caller of ic_run raises them, as
 * eager would from the op, without running the frame again */
PyObject *dh_custom_op_run(PyObject *key, PyObject *ins, PyObject *out, PyObject *strides); /* dynamo_hook/dh.h */

static int custom_extern(const ic_extern_call *c, ic_err *err) {
    PyGILState_STATE gs = PyGILState_Ensure();
    PyObject *ins = NULL, *out = NULL, *strides = Py_NewRef(Py_None), *key = NULL, *r = NULL;
    int rc = -1;
    try {
        const c10::Device dev = c->device == IC_CUDA
                                    ? c10::Device(c10::DeviceType::CUDA, (c10::DeviceIndex)c->device_index)
                                    : c10::Device(c10::DeviceType::CPU);
        const at::TensorOptions base = at::TensorOptions().device(dev);
        if ((ins = PyTuple_New(c->nin)) == NULL) goto error;
        for (int i = 0; i < c->nin; i++) {
            PyObject *x = THPVariable_Wrap(blob(c->in[i], c->in_meta[i], base));
            if (x == NULL) goto error;
            PyTuple_SET_ITEM(ins, i, x);
        }
        if ((out = THPVariable_Wrap(blob(c->out, *c->out_meta, base))) == NULL) goto error;
        const int64_t nd = c->params[3];
        if (c->params[1] > 0) { /* eager's strides of the written operand */
            Py_DECREF(strides);
            if ((strides = PyTuple_New(nd)) == NULL) goto error;
            for (int64_t i = 0; i < nd; i++) {
                PyObject *v = PyLong_FromLongLong(c->params[4 + nd + i]);
                if (v == NULL) goto error;
                PyTuple_SET_ITEM(strides, i, v);
            }
        }
        if ((key = PyLong_FromLongLong(c->params[0])) == NULL) goto error;
        r = dh_custom_op_run(key, ins, out, strides);
        if (r == NULL) goto error;
        rc = 0;
    } catch (const std::exception &e) {
        snprintf(err->msg, sizeof err->msg, "ATen custom: %.200s", e.what());
        err->code = IC_EINTERNAL;
    }
error:
    if (rc != 0 && PyErr_Occurred() && tc_pyerr_fatal(PyErr_Occurred())) {
        snprintf(err->msg, sizeof err->msg, "ATen custom: %s (raised to the caller)",
                 ((PyTypeObject *)PyErr_Occurred())->tp_name);
        err->code = IC_EINTERNAL;
    } else if (rc != 0 && PyErr_Occurred()) {
        PyObject *tp, *v, *tb;
        PyErr_Fetch(&tp, &v, &tb);
        PyObject *sv = v ? PyObject_Str(v) : NULL;
        const char *txt = sv && PyUnicode_Check(sv) ? PyUnicode_AsUTF8(sv) : NULL;
        snprintf(err->msg, sizeof err->msg, "ATen custom: %s: %.200s", tp ? ((PyTypeObject *)tp)->tp_name : "error",
                 txt ? txt : "");
        err->code = IC_EINTERNAL;
        Py_XDECREF(sv);
        Py_XDECREF(tp);
        Py_XDECREF(v);
        Py_XDECREF(tb);
        PyErr_Clear();
    }
    Py_XDECREF(ins);
    Py_XDECREF(out);
    Py_XDECREF(strides);
    Py_XDECREF(key);
    Py_XDECREF(r);
    PyGILState_Release(gs);
    return rc;
}

int tc_extern_handler(const ic_extern_call *call, ic_err *err) {
    if (call->kind == IC_EXT_CUSTOM) return custom_extern(call, err);
    try {
        run_extern(call);
        return 0;
    } catch (const std::exception &e) {
        err->code = IC_EINTERNAL;
        snprintf(err->msg, sizeof err->msg, "ATen %s: %.200s", ic_extern_name(call->kind), e.what());
        return -1;
    } catch (...) {
        err->code = IC_EINTERNAL;
        snprintf(err->msg, sizeof err->msg, "ATen %s: unknown C++ exception", ic_extern_name(call->kind));
        return -1;
    }
}

/* THPVariable_Check runs isinstance() for subclasses, which can fail (RecursionError near the
 * limit, a hostile __class__) and then throws: never let that escape into C (abort); the
 * object is taken as no tensor and an Exception is dropped (the caller's next step re-raises
 * it); MemoryError and KeyboardInterrupt stay set and propagate at the caller's next check. */
int tc_is_tensor(PyObject *o) {
    try {
        return THPVariable_Check(o) ? 1 : 0;
    } catch (...) {
        (void)tc_clear_expected(NULL);
        return 0;
    }
}

int tc_is_cuda(PyObject *o) {
    try {
        return THPVariable_Check(o) && THPVariable_Unpack(o).is_cuda() ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

int tc_is_plain_tensor(PyObject *o) { return THPVariable_CheckExact(o) ? 1 : 0; }

/* functorch pushes its front-mode key into the thread's included set while a transform's
 * layer is on the stack; functionalization and Python dispatch modes (TorchDispatchMode)
 * include theirs: eager ops are intercepted, compiled kernels would not be. */
int tc_transform_active(void) {
    const c10::DispatchKeySet inc = c10::impl::tls_local_dispatch_key_set().included_;
    static const c10::DispatchKeySet modes({c10::DispatchKey::FuncTorchDynamicLayerFrontMode,
                                            c10::DispatchKey::Functionalize, c10::DispatchKey::Python});
    return inc.has_any(modes) ? 1 : 0;
}

/* A TorchFunctionMode on the thread's stack (entered around the call, torch.device(...) as a
 * context or torch.set_default_device): eager routes every torch call of the frame through
 * it; compiled kernels would not (a mode's rewrite lost, factories on the wrong device).
 * Modes entered inside a traced frame live on the trace's own stack (sym_tfm.c), not here. */
int tc_torch_function_mode_active(void) {
    return at::impl::PythonTorchFunctionTLS::stack_len() > 0 && !at::impl::torch_function_all_disabled() ? 1 : 0;
}

PyObject *tc_torch_function_mode_single(int *n) {
    *n = 0;
    if (!tc_torch_function_mode_active())
        return NULL;
    try {
        *n = (int)std::min<int64_t>(at::impl::PythonTorchFunctionTLS::stack_len(), 1 << 20);
        if (*n != 1)
            return NULL;
        const std::shared_ptr<c10::SafePyObject> &m = at::impl::PythonTorchFunctionTLS::get_stack_at(0);
        return m ? m->ptr(getPyInterpreter()) : NULL;
    } catch (...) {
        return NULL; /* the caller treats it as a mode it does not know: eager */
    }
}

/* torch.func wrappers (BatchedTensor, GradTrackingTensor, FunctionalTensorWrapper) pass
 * THPVariable_CheckExact and look strided; their data belongs to the tensor they wrap. */
static bool transform_tensor(const at::Tensor &t) {
    static const c10::DispatchKeySet wrappers({c10::DispatchKey::Functionalize, c10::DispatchKey::FuncTorchBatched,
                                               c10::DispatchKey::FuncTorchGradWrapper,
                                               c10::DispatchKey::BatchedNestedTensor, c10::DispatchKey::Python,
                                               c10::DispatchKey::PythonTLSSnapshot});
    if (t.key_set().has_any(wrappers) || !t.has_storage())
        return true;
    /* a forward-AD dual (torch.autograd.forward_ad: one level at a time, index 0): the
     * tangent would be lost by a compiled graph */
    return t._fw_grad(0).defined();
}

static int tensor_meta(PyObject *o, tc_meta *m) {
    const at::Tensor &t = THPVariable_Unpack(o);
    m->flags = 0;
    m->data = nullptr;
    if (!t.defined() || t.layout() != c10::kStrided || t.is_quantized() || t.is_nested() ||
        t.is_meta() || t.is_mkldnn() || t.is_neg() || t.is_conj() || !THPVariable_CheckExact(o))
        m->flags |= TC_META_SPECIAL;
    if (!t.defined()) {
        m->ndim = 0;
        m->dtype = -1;
        return 0;
    }
    if (transform_tensor(t))
        m->flags |= TC_META_SPECIAL | TC_META_TRANSFORM;
    m->dtype = dtype_to_ic(t.scalar_type());
    const c10::Device dev = t.device();
    m->device_type = dev.is_cpu() ? TC_DEV_CPU : dev.is_cuda() ? TC_DEV_CUDA : TC_DEV_OTHER;
    m->device_index = dev.has_index() ? dev.index() : 0;
    m->requires_grad = t.requires_grad() ? 1 : 0;
    const int64_t nd = t.dim();
    m->ndim = (int)nd;
    if (nd > TC_MAX_DIMS) {
        m->flags |= TC_META_TOO_MANY_DIMS;
        return 0;
    }
    if (m->flags & TC_META_SPECIAL)
        return 0;
    c10::IntArrayRef sz = t.sizes(), st = t.strides();
    for (int64_t i = 0; i < nd; i++) {
        m->sizes[i] = sz[i];
        m->strides[i] = st[i];
    }
    m->data = t.data_ptr();
    return 0;
}

int tc_tensor_meta(PyObject *o, tc_meta *m) {
    try {
        return tensor_meta(o, m);
    } catch (...) { /* symbolic sizes, no storage, ...: a tensor torchc does not handle */
        m->flags |= TC_META_SPECIAL;
        m->data = nullptr;
        if (m->ndim < 0 || m->ndim > TC_MAX_DIMS)
            m->ndim = 0;
        return 0;
    }
}

PyObject *tc_empty_strided(int ndim, const int64_t *sizes, const int64_t *strides, int dtype,
                           int device_type, int device_index) {
    c10::ScalarType st;
    if (!ic_to_dtype(dtype, &st)) {
        PyErr_Format(PyExc_ValueError, "torchc: unknown dtype code %d", dtype);
        return nullptr;
    }
    try {
        c10::Device dev = device_type == TC_DEV_CUDA
                              ? c10::Device(c10::DeviceType::CUDA, (c10::DeviceIndex)device_index)
                              : c10::Device(c10::DeviceType::CPU);
        at::Tensor t = at::empty_strided(c10::IntArrayRef(sizes, ndim),
                                         c10::IntArrayRef(strides, ndim),
                                         at::TensorOptions().dtype(st).device(dev));
        return THPVariable_Wrap(std::move(t));
    } catch (const std::exception &e) {
        PyErr_Format(PyExc_RuntimeError, "torchc: allocation failed: %s", e.what());
        return nullptr;
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "torchc: allocation failed: unknown C++ exception");
        return nullptr;
    }
}

void *tc_data_ptr(PyObject *o) {
    try {
        return THPVariable_Unpack(o).data_ptr();
    } catch (...) {
        return nullptr;
    }
}

void *tc_device_alloc(size_t bytes, int device, void *stream, void **handle) {
    try {
        auto *t = new at::Tensor(at::empty(
            {(int64_t)(bytes ? bytes : 1)},
            at::TensorOptions().dtype(at::kByte).device(c10::Device(c10::DeviceType::CUDA,
                                                                    (c10::DeviceIndex)device))));
        *handle = t;
        return t->data_ptr();
    } catch (...) {
        *handle = nullptr;
        return nullptr;
    }
}

void tc_device_release(void *handle) {
    try {
        delete static_cast<at::Tensor *>(handle);
    } catch (...) {
    }
}

int tc_copy_(PyObject *dst, PyObject *src) {
    try {
        c10::AutoGradMode no_grad(false);
        at::Tensor d = THPVariable_Unpack(dst);
        d.copy_(THPVariable_Unpack(src));
        return 0;
    } catch (const std::exception &e) {
        PyErr_Format(PyExc_RuntimeError, "torchc: in-place copy-back failed: %s", e.what());
        return -1;
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "torchc: in-place copy-back failed: unknown C++ exception");
        return -1;
    }
}

int tc_copy_quiet(PyObject *dst, PyObject *src) {
    try {
        at::Tensor d = THPVariable_Unpack(dst);
        c10::AutoGradMode no_grad(false);
        at::AutoDispatchBelowADInplaceOrView below; /* (no version bump) */
        d.copy_(THPVariable_Unpack(src));
        return 0;
    } catch (const c10::Error &e) {
        PyErr_Format(PyExc_RuntimeError, "%s", e.what_without_backtrace());
        return -1;
    } catch (const std::exception &e) {
        PyErr_Format(PyExc_RuntimeError, "torchc: in-place copy-back failed: %s", e.what());
        return -1;
    } catch (...) {
        PyErr_SetString(PyExc_RuntimeError, "torchc: in-place copy-back failed: unknown C++ exception");
        return -1;
    }
}

int tc_inplace_refused(PyObject *t, int requires_grad) {
    try {
        const at::Tensor &d = THPVariable_Unpack(t);
        return torch::autograd::can_mutate_inplace(d, requires_grad != 0) !=
               torch::autograd::can_mutate_inplace_result::success;
    } catch (...) {
        return 1; /* (eager decides) */
    }
}

/* The C++ exception being handled as a Python RuntimeError (c10's message without its
 * backtrace); -1. Called from a catch (...) block only. */
static int py_error_from_cxx(const char *what_failed) {
    try {
        throw;
    } catch (const c10::Error &e) {
        PyErr_Format(PyExc_RuntimeError, "%s", e.what_without_backtrace());
    } catch (const std::exception &e) {
        PyErr_Format(PyExc_RuntimeError, "%s", e.what());
    } catch (...) {
        PyErr_Format(PyExc_RuntimeError, "torchc: %s failed: unknown C++ exception", what_failed);
    }
    return -1;
}

int tc_bump_version(PyObject *t, int n) {
    try {
        const at::Tensor &d = THPVariable_Unpack(t);
        for (int i = 0; i < n; i++)
            torch::autograd::impl::bump_version(d);
        return 0;
    } catch (...) {
        return py_error_from_cxx("version bump");
    }
}

int tc_tensor_version(PyObject *t, int64_t *v) {
    try {
        *v = THPVariable_Unpack(t)._version();
        return 0;
    } catch (...) {
        return py_error_from_cxx("version read");
    }
}

int tc_default_dtype(void) {
    try {
        return dtype_to_ic(c10::typeMetaToScalarType(c10::get_default_dtype()));
    } catch (...) {
        return -1;
    }
}

int tc_index_in_range(PyObject *idx, int64_t bound) {
    try {
        c10::AutoGradMode no_grad(false);
        const at::Tensor &t = THPVariable_Unpack(idx);
        if (t.numel() == 0)
            return 1;
        auto mm = at::aminmax(t);
        return std::get<0>(mm).item<int64_t>() >= 0 && std::get<1>(mm).item<int64_t>() < bound;
    } catch (...) {
        return 0;
    }
}

int tc_grad_enabled(void) { return c10::GradMode::is_enabled() ? 1 : 0; }
void tc_set_grad_enabled(int on) { c10::GradMode::set_enabled(on != 0); }

/* Autocast state of the CPU and CUDA as one int (0: off on both): bit 0 CPU enabled, bits
 * 1-7 its dtype; bit 8 CUDA enabled, bits 9-15 its dtype (ic_dtype codes + 1). */
int tc_autocast_state(void) {
    int key = 0;
    try {
        if (at::autocast::is_autocast_enabled(at::kCPU))
            key |= 1 | (dtype_to_ic(at::autocast::get_autocast_dtype(at::kCPU)) + 1) << 1;
        if (at::autocast::is_autocast_enabled(at::kCUDA))
            key |= 1 << 8 | (dtype_to_ic(at::autocast::get_autocast_dtype(at::kCUDA)) + 1) << 9;
    } catch (const std::exception &) {
        key |= 1 << 16; /* unknown: never equal to an off state */
    }
    return key;
}

int tc_num_threads(void) {
    try {
        return at::get_num_threads();
    } catch (...) {
        return 1;
    }
}

const char *tc_torch_version(void) { return TORCH_VERSION; }

} // extern "C"
