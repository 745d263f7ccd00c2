/* ic_config.h — torchc's settings: one table.
 *
 * Each row: X(name, type, default, codegen, choices, doc)
 *   type     BOOL (0/1, also false/true, off/on, no/yes), INT (0..65536 unless choices give a
 *            range "lo..hi") or STR (< IC_CFG_STR_MAX bytes: paths and lists fit)
 *   default  as text, parsed like any other value
 *   codegen  1 when the value changes generated code or launch plans: the whole set of these is
 *            hashed into both cache keys (CPU: the in-memory and the code key; GPU: the disk key),
 *            so no setting can be left off a key by hand
 *   choices  for STR: the values allowed, "|"-separated ("" any); for INT: "lo..hi" ("" 0..65536)
 *   doc      one line, shown by torchc.config and explain()
 *
 * The frontend's settings (dynamo_hook, csrc, torchc/_api.py) are rows here too: what one trace may
 * hold, the recompile limit, threads, automatic dynamic shapes, the capture's conv choices. Three
 * follow torch's own setting while at their "follow" value (recompile_limit 0:
 * torch._dynamo.config.recompile_limit; num_threads 0: torch.get_num_threads() at each call;
 * automatic_dynamic_shapes -1: torch._dynamo.config.automatic_dynamic_shapes).
 *
 * Where a value comes from: torchc.config.<name> = v (Python, ic_config_set) wins, else the
 * environment variable TORCHC_<NAME> (an override for scripts and A/B runs), else the default.
 * A compilation reads all of them once (ic_config_read) into its context (ic_ctx.cfg); code
 * that runs outside a compilation (graph builders, the runtime) reads one with ic_config_int /
 * ic_config_str. A value that does not parse is ignored (the default applies) when it comes from
 * the environment — torchc/_config.py warns once per variable and value, naming what is
 * accepted (ic_config_check) — and refused (IC_EINVALID-style error text) when set from Python. */
#ifndef IC_CONFIG_H
#define IC_CONFIG_H

#include <stddef.h>

#define IC_CFG_STR_MAX 512 /* a STR value's room, its NUL included */

#ifdef __cplusplus
extern "C" {
#endif

#define IC_CONFIG_TABLE(X)                                                                                            \
    X(debug, STR, "", 0, "", "dumps on stderr: a comma list of graph, loops, llvm, ptx, time, dedupe (GPU: kernel repeats checked against their built code), all (any but time bypasses the caches)") \
    X(cache, BOOL, "1", 0, "", "the in-memory compile cache (0: every graph compiled again)")                        \
    X(cse, BOOL, "0", 1, "", "common subexpressions merged before lowering (opt-in: not yet measured on the GPU models)") \
    X(stencil, BOOL, "1", 1, "", "padded values read by 4 or more windows stored once; GPU stencil kernels take fewer lanes") \
    X(cl_propagate, BOOL, "1", 1, "", "channels-last carried through elementwise ops, pools and pads between 16-bit CUDA convs") \
    X(compile_threads, INT, "0", 0, "", "threads that optimize and emit GPU modules in parallel (0: one per CPU)")        \
    X(kernels_per_part, INT, "0", 0, "", "GPU kernels per LLVM module of a parallel compile (0: spread over the threads)") \
    X(gemm, STR, "auto", 1, "auto|extern|template", "GPU matmuls: ATen/cuBLAS extern calls, the own tensor-core template, or by size") \
    X(gemm_choice, STR, "", 1, "|measure|static|extern|template", "GPU GEMMs in the timed band: timed on the first call (\"\"), the fixed rule, or forced") \
    X(gpu_tile, BOOL, "1", 1, "", "GPU transposes through shared-memory tiles")                                    \
    X(gpu_lowp, BOOL, "1", 1, "", "approximate GPU exp/GELU/division where only f16/bf16 results depend on them")   \
    X(gpu_pdl, BOOL, "1", 1, "", "programmatic dependent launch on sm_90 (launches overlap the previous kernel's tail)") \
    X(gpu_vec8, BOOL, "1", 1, "", "8 elements a thread (two 16-byte accesses) for f32 pointwise kernels with transcendentals") \
    X(gpu_stage, STR, "1", 1, "0|1|all", "GPU rows too long for registers staged in shared memory (all: also rows of 9-16 values a thread)") \
    X(gpu_online, BOOL, "1", 1, "", "online split rows (max and sum of exps, or mean and M2, in one launch)")        \
    X(gpu_lazy, STR, "1", 1, "0|1|probe", "GPU scalar fallback variants compiled on first need (probe: also in PTX-only compiles)") \
    X(gpu_dedupe, BOOL, "1", 1, "", "identical GPU kernels of repeated layers generated once")                     \
    X(debug_gemm, BOOL, "0", 0, "", "print each GPU GEMM choice's timing")                                          \
    X(cublaslt, BOOL, "1", 0, "", "GPU matmuls with a bias through cuBLASLt (0: ATen)")                              \
    X(cudnn, BOOL, "1", 0, "", "16-bit GPU convolutions through the cuDNN backend API (0: ATen)")                   \
    X(conv_out, BOOL, "1", 0, "", "CUDA convs that cuDNN would run written straight into torchc's buffer (0: ATen's result copied)") \
    X(sdpa, STR, "auto", 0, "auto|flash|aten", "16-bit CUDA attention externs: FlashAttention always, ATen's dispatcher, or by size") \
    X(conv_layout, STR, "auto", 0, "auto|nhwc|nchw", "captured 2-d convs in channels-last (auto: on CUDA for 16-bit floats)") \
    X(dwconv, STR, "auto", 0, "auto|0|1", "depthwise convs captured as sums of taps fused with their neighbours (auto: on CUDA)") \
    X(dwconv_taps, INT, "25", 0, "1..65536", "the largest depthwise kernel (taps) captured as a sum")                  \
    X(adaptive_windows, INT, "64", 0, "1..4096", "output positions a dim of an adaptive pool with uneven windows is captured with (a slice reduced each)") \
    X(max_sources, INT, "1048576", 0, "1..67108864", "guarded values one trace may read (more: the frame runs eagerly, with this reason)") \
    X(inline_depth, INT, "48", 0, "1..128", "nested Python calls a trace inlines (deeper: a graph break, with this reason)") \
    X(max_outputs, INT, "65536", 0, "1..67108864", "graph outputs and in-place updated inputs of one graph")           \
    X(max_dict_items, INT, "8192", 0, "1..1048576", "items of a dict a trace models (its key set guarded by one check, a value only once the trace reads it; a larger dict read in a trace: a break, with this reason)") \
    X(max_index_inputs, INT, "4096", 0, "1..1048576", "index and divisor input tensors of one graph checked against their bounds before each run (more: the trace breaks, with this reason)") \
    X(scan_persistent, BOOL, "0", 0, "", "(off until run on a GPU: ported to C without one) a CUDA torchc.scan that needs no gradient, a recurrent matvec plus pointwise work, runs as one persistent kernel; 0: the loop over its compiled body") \
    X(rnn_unroll_steps, INT, "256", 0, "0..1048576", "cell steps (time steps x layers x directions) of one nn.RNN/GRU/LSTM call unrolled into the graph (more: that call runs eagerly, a break with this reason)") \
    X(max_cat_inputs, INT, "4096", 0, "1..1048576", "tensors one cat, stack, hstack or vstack joins in a graph (more: a break, with this reason; a compiled cat of many tensors stores each into its slice, as eager's copy, but its compile grows with the count: 4096 [4, 5] tensors 8.5 s)") \
    X(max_unroll, INT, "4096", 0, "1..1048576", "rows a loop over a tensor unrolls, views one unbind, split, chunk or tensor_split makes, numbers of a torch.tensor(list) built in the graph, items of a constant sequence iterated or of a repetition (seq * k: 16x) (more: a break, with this reason)") \
    X(max_trace_steps, INT, "200000", 0, "1..1073741824", "bytecode instructions one trace interprets, inlined calls and unrolled loops included (more: the trace fails, with this reason)") \
    X(fold_max_bytes, INT, "65536", 0, "0..67108864", "largest tensor built from constants only (no input, parameter or random draw) computed by torch at capture time and kept as a constant (0: none)") \
    X(recompile_limit, INT, "0", 0, "0..1048576", "graphs per code object before it runs eagerly (0: torch._dynamo.config.recompile_limit, 8 without it)") \
    X(num_threads, INT, "0", 0, "0..256", "CPU kernel threads (0: torch.get_num_threads() at each compiled call)")    \
    X(automatic_dynamic_shapes, INT, "-1", 0, "-1..1", "a dim that changes becomes dynamic (-1: torch._dynamo.config.automatic_dynamic_shapes)") \
    X(disk_cache, BOOL, "1", 0, "", "the on-disk code cache (cache=0 turns it off too)")                              \
    X(cache_dir, STR, "", 0, "", "the on-disk cache's folder (\"\": $XDG_CACHE_HOME/torchc, else ~/.cache/torchc)")   \
    X(cache_max_mb, STR, "", 0, "", "the on-disk cache's cap in MiB, a positive number (\"\" or not one: 1024; 2^44 or inf: no cap)") \
    X(ptxas, STR, "", 0, "", "the ptxas that turns PTX into cubins for the disk cache (\"\": CUDA's, found at runtime; 0: none)") \
    X(backward_ahead, BOOL, "1", 0, "", "a training graph's backward compiles on a helper thread from its capture on, beside the forward's compile (0: when the first backward needs it)") \
    X(cpu_tiers, INT, "4000", 0, "0..1073741824", "CPU graphs of this many LLVM instructions or more run first on quickly made code while their optimized code is made on a background thread and swapped in (0: never)") \
    X(spin, INT, "2000", 0, "0..1073741824", "pause instructions an idle CPU worker spins before it sleeps (read at its first use)") \
    X(host_stats, BOOL, "0", 0, "", "time the host-side steps of compiled calls (frame hook, launches) for torchc.stats()") \
    X(debug_dyn, BOOL, "0", 0, "", "dumps on stderr why a graph did not compile with dynamic sizes (developers)") \
    X(ptx_probe, STR, "", 0, "", "compile CPU graphs for the GPU too and keep the PTX in this folder (developers' PTX checks)") \
    X(skip_modules, STR, "", 0, "", "more top-level modules whose frames the hook never traces, comma-separated (read at the first frame)")

typedef enum ic_config_id {
#define IC_CFG_ID(name, type, dflt, cg, choices, doc) IC_CFG_##name,
    IC_CONFIG_TABLE(IC_CFG_ID)
#undef IC_CFG_ID
        IC_CFG_COUNT
} ic_config_id;

#define IC_CFG_FIELD_BOOL(name) int name;
#define IC_CFG_FIELD_INT(name) long long name;
#define IC_CFG_FIELD_STR(name) char name[IC_CFG_STR_MAX];
/* All settings, read once per compilation (ic_ctx.cfg). */
typedef struct ic_config {
#define IC_CFG_FIELD(name, type, dflt, cg, choices, doc) IC_CFG_FIELD_##type(name)
    IC_CONFIG_TABLE(IC_CFG_FIELD)
#undef IC_CFG_FIELD
} ic_config;

typedef struct ic_config_entry {
    const char *name, *type, *dflt, *choices, *doc;
    const char *env; /* TORCHC_<NAME> */
    int codegen;
} ic_config_entry;

const ic_config_entry *ic_config_entry_at(int id); /* NULL out of range */
int ic_config_find(const char *name);               /* id, or -1 */
/* Sets (text) or unsets (NULL) the Python-level value of setting id: 0, or -1 with a message in
 * err when the text does not parse for the setting's type and choices. */
int ic_config_set(int id, const char *text, char *err, size_t n);
/* 0 when text is a valid value of setting id (what ic_config_set would take, and for a STR row
 * one its reader understands), else -1 with the reason in err (environment values: warned). */
int ic_config_check(int id, const char *text, char *err, size_t n);
/* The value in effect as text (out, n bytes); returns where it comes from: 0 the default, 1 the
 * environment, 2 ic_config_set. */
int ic_config_value(int id, char *out, size_t n);
void ic_config_read(ic_config *out);      /* every setting (a compilation's ic_ctx.cfg) */
long long ic_config_int(int id);          /* one BOOL/INT setting in effect now */
void ic_config_str(int id, char out[IC_CFG_STR_MAX]); /* one STR setting in effect now */
/* "|name=value" of every codegen setting of cfg, appended to a cache key; malloc'd or NULL */
char *ic_config_key(const ic_config *cfg);
/* ic_config_read, changed: each line "name=value (env|set)" of the settings not at their
 * default; malloc'd ("" when none) or NULL */
char *ic_config_changed(void);

#ifdef __cplusplus
}
#endif
#endif
