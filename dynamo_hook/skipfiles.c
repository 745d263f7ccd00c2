/* skipfiles.c — library modules a compiled call only passes through, never hooked as frames
 * of their own (like Dynamo's skip files): their frames run eagerly, the frames they call are
 * hooked as usual. torch, torchc and the standard library are skipped by directory (cache.c);
 * these are third-party packages found under a site-packages/dist-packages directory, named
 * by their top-level module: utilities (file locks, typing backports, metadata, progress
 * bars, serialization, hub clients, numerics) that no model's tensor code lives in.
 *
 * TORCHC_SKIP_MODULES="a,b" adds top-level modules; a code object torchc.allow_in_graph()
 * names is never skipped (cache.c's dh_allow_code clears the flag).
 */
#include "dh_internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const builtin_skip[] = {
    "filelock", "typing_extensions", "importlib_metadata", "importlib_resources", "packaging",
    "tqdm", "huggingface_hub", "safetensors", "tokenizers", "regex", "requests", "urllib3",
    "certifi", "charset_normalizer", "idna", "yaml", "_yaml", "six", "attr", "attrs",
    "pydantic", "pydantic_core", "jinja2", "markupsafe", "sympy", "mpmath", "networkx",
    "numpy", "pandas", "fsspec", "psutil", "tabulate", "hypothesis", "colorama", "rich",
    "click", "dill", "cloudpickle", "absl", "google", "protobuf", "onnx", "onnxruntime",
    "tensorboard", "wandb", "omegaconf", "hydra", "sklearn", "scipy", "PIL", "cv2",
    "setuptools", "pkg_resources", "_pytest", "pytest", "pluggy", "triton", "optree",
    "functorch", "einops_exts", "tree", "xarray", "fx2trt_oss", "tensorrt", "torch2trt",
    "tvm", "tensorflow", "jax", "jaxlib", "sentencepiece", "termcolor", "coloredlogs",
    "humanfriendly", "loguru", "wrapt", "decorator", "typeguard", "beartype", "jaxtyping",
    NULL};

static char **extra_skip; /* torchc.config.skip_modules, parsed once */
static int n_extra = -1;

static void load_extra(void) {
    n_extra = 0;
    char env[IC_CFG_STR_MAX];
    ic_config_str(IC_CFG_skip_modules, env);
    if (*env == 0)
        return;
    int cap = 1;
    for (const char *p = env; *p; p++)
        cap += *p == ',';
    extra_skip = calloc((size_t)cap, sizeof *extra_skip);
    if (extra_skip == NULL)
        return;
    const char *p = env;
    while (*p && n_extra < cap) {
        const char *q = strchr(p, ',');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        while (len && (*p == ' ')) p++, len--;
        while (len && p[len - 1] == ' ') len--;
        if (len > 0 && (extra_skip[n_extra] = strndup(p, len)) != NULL)
            n_extra++;
        if (q == NULL)
            break;
        p = q + 1;
    }
}

static int listed(const char *top, size_t len) {
    for (int i = 0; builtin_skip[i]; i++)
        if (strlen(builtin_skip[i]) == len && strncmp(builtin_skip[i], top, len) == 0)
            return 1;
    if (n_extra < 0)
        load_extra();
    for (int i = 0; i < n_extra; i++)
        if (strlen(extra_skip[i]) == len && strncmp(extra_skip[i], top, len) == 0)
            return 1;
    return 0;
}

/* The top-level module of a file under .../site-packages/ or .../dist-packages/ (a package
 * directory or a single-file module) is in the skip list. */
int dh_skipfile_module(const char *path) {
    if (path == NULL)
        return 0;
    const char *hit = NULL;
    for (const char *p = strstr(path, "-packages/"); p; p = strstr(p + 1, "-packages/"))
        hit = p; /* the innermost site-packages (a virtualenv inside another) */
    if (hit == NULL)
        return 0;
    const char *top = hit + strlen("-packages/");
    size_t len = strcspn(top, "/");
    if (top[len] == 0 && len > 3 && strcmp(top + len - 3, ".py") == 0)
        len -= 3; /* six.py, typing_extensions.py */
    return len > 0 && listed(top, len);
}
