"""The ctypes mirrors of inductor_c/ic.h's structs in tests/test_gpu.py (also used by
test_gemm_gpu.py and test_gpu_cache.py, which only run with CUDA) must be as large as C's:
ic_compile writes all of ic_err, and a short Err let it write past a Python-owned buffer,
which crashed later tests in the same process on the H100 run of 2026-12-05. Checked here on
every machine: a CPU compile through the same bindings writes nothing past the mirror."""
import ctypes
from ctypes import POINTER, byref, sizeof

import pytest
import torchc

pytestmark = pytest.mark.needs_no_compiler


def test_err_and_options_cover_what_ic_compile_touches():
    import test_gpu as T
    lib = ctypes.CDLL(torchc._C.__file__)
    lib.ic_graph_new.restype = ctypes.c_void_p
    lib.ic_graph_free.argtypes = [ctypes.c_void_p]
    lib.ic_compile.restype = ctypes.c_void_p
    lib.ic_compile.argtypes = [ctypes.c_void_p, POINTER(T.Options), POINTER(T.Err)]
    lib.ic_compiled_free.argtypes = [ctypes.c_void_p]
    n = sizeof(T.Err) + 64
    buf = (ctypes.c_char * n)()
    ctypes.memset(buf, 0xAB, n)
    opt = T.Options(T.IC_CPU, 0, 1, 1, 0, 0)
    g = lib.ic_graph_new()
    try:
        c = lib.ic_compile(g, byref(opt), ctypes.cast(ctypes.addressof(buf), POINTER(T.Err)))
        if c:
            lib.ic_compiled_free(c)
    finally:
        lib.ic_graph_free(g)
    tail = bytes(buf)[sizeof(T.Err):]
    assert tail == b"\xab" * 64, "ic_compile wrote past tests/test_gpu.py's Err: add ic_err's new fields"
    assert sizeof(T.Err) >= 300 and sizeof(T.Options) == 6 * 4 and sizeof(T.Meta) == 8 + 128 + 8 + 8 * 16
