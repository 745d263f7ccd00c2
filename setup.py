"""Builds torchc._C: C11 sources of csrc/, dynamo_hook/, inductor_c/, layouts/ plus the one
C++ file csrc/aten_bridge.cpp. Needs torch at build time: pip install --no-build-isolation -e .

LLVM 16: llvm-config-16 (or LLVM_CONFIG), or LLVM_INCLUDE + LLVM_LIB (a directory with
libLLVM-16.so, or the path of the library file itself). TORCHC_ASAN=1 builds with
-fsanitize=address,undefined. CUDA's cuda.h is optional (libcuda is opened at run time).
"""
import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def sources():
    pats = ["csrc/*.c", "csrc/*.cpp", "dynamo_hook/*.c", "inductor_c/*.c", "inductor_c/*/*.c",
            "layouts/*.c"]
    out = []
    for p in pats:
        out += sorted(glob.glob(os.path.join(ROOT, p)))
    out = [os.path.relpath(s, ROOT) for s in out]
    # TORCHC_EXCLUDE="a.c b/*.c": leave sources out (work in progress in a shared tree)
    import fnmatch
    skip = os.environ.get("TORCHC_EXCLUDE", "").split()
    return [s for s in out if not any(fnmatch.fnmatch(s, x) for x in skip)]


def llvm():
    inc, lib = os.environ.get("LLVM_INCLUDE"), os.environ.get("LLVM_LIB")
    if not (inc and lib):
        cfg = os.environ.get("LLVM_CONFIG") or shutil.which("llvm-config-16") or "llvm-config"
        try:
            run = lambda *a: subprocess.check_output([cfg, *a], text=True).strip()
            if not run("--version").startswith("16."):
                raise RuntimeError(f"{cfg} is not LLVM 16")
            inc = inc or run("--includedir")
            lib = lib or run("--libdir")
        except (OSError, subprocess.CalledProcessError) as e:
            sys.exit(f"torchc: LLVM 16 not found ({e}); apt-get install llvm-16-dev or set "
                     "LLVM_INCLUDE and LLVM_LIB")
    if os.path.isfile(lib):  # the library file itself, e.g. /lib/x86_64-linux-gnu/libLLVM-16.so.1
        return inc, [os.path.abspath(lib)], [], [os.path.dirname(os.path.abspath(lib))]
    return inc, [], ["LLVM-16"], [lib]


def torch_paths():
    import torch
    from torch.utils import cpp_extension
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    return cpp_extension.include_paths(), cpp_extension.library_paths(), abi


CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Wno-unused-parameter",
          "-Wno-missing-field-initializers", "-fvisibility=hidden"]
CXXFLAGS = ["-std=c++17", "-Wall", "-Wno-unused-parameter", "-fvisibility=hidden"]


class BuildExt(build_ext):
    def build_extension(self, ext):
        orig = self.compiler._compile

        def _compile(obj, src, ext_, cc_args, extra_postargs, pp_opts):
            extra = list(extra_postargs) + (CXXFLAGS if src.endswith(".cpp") else CFLAGS)
            return orig(obj, src, ext_, cc_args, extra, pp_opts)

        self.compiler._compile = _compile
        # Compile sources in parallel: the C++ bridge alone takes most of a minute.
        self.compiler.compile = _parallel_compile(self.compiler)
        super().build_extension(ext)


def _parallel_compile(compiler):
    from concurrent.futures import ThreadPoolExecutor

    def compile(sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                extra_preargs=None, extra_postargs=None, depends=None):
        macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs)
        cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)

        def one(obj):
            src, ext = build[obj]
            compiler._compile(obj, src, ext, cc_args, extra_postargs, pp_opts)

        jobs = int(os.environ.get("TORCHC_BUILD_JOBS", os.cpu_count() or 2))
        with ThreadPoolExecutor(max_workers=jobs) as ex:
            list(ex.map(one, objects))
        return objects

    return compile


def extension():
    inc, link_objs, libs, libdirs = llvm()
    tinc, tlib, abi = torch_paths()
    opt = ["-O0", "-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer"] \
        if os.environ.get("TORCHC_ASAN") else ["-O2", "-g"]
    if os.environ.get("TORCHC_TSAN"):  # make test-tsan: ThreadSanitizer
        opt = ["-O1", "-g", "-fsanitize=thread", "-fno-omit-frame-pointer"]
    cuda_inc = os.environ.get("CUDA_INCLUDE", "/usr/local/cuda/include")
    macros = [("_GLIBCXX_USE_CXX11_ABI", str(abi))]
    if os.path.exists(os.path.join(cuda_inc, "cuda.h")):
        macros.append(("TORCHC_HAVE_CUDA_H", "1"))
    return Extension(
        "torchc._C",
        sources=sources(),
        # headers: an edited header rebuilds the extension (build_ext checks only these)
        depends=sorted(os.path.relpath(h, ROOT) for p in ["csrc/*.h", "dynamo_hook/*.h", "inductor_c/*.h",
                                                          "inductor_c/*/*.h", "layouts/*.h"]
                       for h in glob.glob(os.path.join(ROOT, p))),
        include_dirs=[ROOT, os.path.join(ROOT, "csrc"), os.path.join(ROOT, "inductor_c"),
                      os.path.join(ROOT, "layouts"), os.path.join(ROOT, "dynamo_hook"), inc,
                      *tinc] + ([cuda_inc] if os.path.isdir(cuda_inc) else []),
        define_macros=macros,
        library_dirs=libdirs + tlib,
        runtime_library_dirs=libdirs + tlib,
        libraries=libs + ["c10", "torch", "torch_cpu", "torch_python", "stdc++", "dl", "m",
                          "pthread"],
        extra_objects=link_objs,
        extra_compile_args=opt,
        extra_link_args=opt[2:] if os.environ.get("TORCHC_ASAN") or os.environ.get("TORCHC_TSAN") else [],
    )


setup(
    packages=["torchc"],
    ext_modules=[extension()],
    cmdclass={"build_ext": BuildExt},
)
