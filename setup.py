"""Builds torchc._C: C11 sources of csrc/, dynamo_hook/, inductor_c/, layouts/ plus the one
C++ file csrc/aten_bridge.cpp, against the torch that is installed (its headers, libraries,
C++ standard and ABI; the wheel's metadata pins that torch version).

  pip install .                          # build isolation: the installed torch is found and used
  pip wheel --no-build-isolation .       # the same without isolation
  make build                             # in place, for development (torchc/_C*.so)

Under build isolation torch is not a build requirement (that would download another torch,
possibly of another version and ABI): setup.py asks the interpreter outside the isolated
environment where torch is (TORCHC_TORCH_PATH overrides) and builds against it.

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


def _loader_finds(soname):
    """The dynamic loader finds soname without a RUNPATH (ldconfig's cache)."""
    try:
        out = subprocess.check_output(["ldconfig", "-p"], text=True, stderr=subprocess.DEVNULL)
    except (OSError, subprocess.CalledProcessError):
        try:
            out = subprocess.check_output(["/sbin/ldconfig", "-p"], text=True, stderr=subprocess.DEVNULL)
        except (OSError, subprocess.CalledProcessError):
            return False
    return any(line.strip().startswith(soname + " ") for line in out.splitlines())


def _outer_torch_path():
    """The site directory holding the torch of the environment being installed into, seen
    from inside pip's isolated build environment (its sitecustomize hides the real
    site-packages through PYTHONPATH; a child interpreter without it sees them)."""
    if os.environ.get("TORCHC_TORCH_PATH"):
        return os.environ["TORCHC_TORCH_PATH"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    try:
        out = subprocess.check_output(
            [sys.executable, "-c", "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))"],
            env=env, text=True, stderr=subprocess.DEVNULL, cwd="/")
        return out.strip().splitlines()[-1]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return None


def import_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        path = _outer_torch_path()
        if not path:
            sys.exit("torchc: torch must be installed before torchc is built (pip install torch), "
                     "or TORCHC_TORCH_PATH set to the directory that holds it")
        sys.path.append(path)  # after the isolated environment's own packages
        import torch  # noqa: F401
    import torch
    return torch


def torch_paths():
    torch = import_torch()
    from torch.utils import cpp_extension
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    return cpp_extension.include_paths(), cpp_extension.library_paths(), abi


def cxx_std():
    """The C++ standard torch builds its extensions with (torch.utils.cpp_extension's
    BuildExtension adds it), and at least what torch's headers require (ATen.h's #error)."""
    import inspect
    import re
    torch = import_torch()
    from torch.utils import cpp_extension
    stds = [17]
    try:
        stds += [int(x) for x in re.findall(r"""cpp_flag_prefix \+ 'c\+\+(\d\d)'""",
                                            inspect.getsource(cpp_extension.BuildExtension))]
    except (OSError, TypeError):
        pass
    for inc in cpp_extension.include_paths():
        try:
            with open(os.path.join(inc, "ATen", "ATen.h")) as f:
                stds += [int(x) for x in re.findall(r"C\+\+(\d\d) or later compatible compiler", f.read())]
        except OSError:
            pass
    del torch
    return f"-std=c++{max(stds)}"


def torch_version():
    """(public version, full version) of the torch built against: '2.13.0', '2.13.0+cpu'."""
    torch = import_torch()
    full = torch.__version__
    return full.split("+")[0], full


def building_wheel():
    return any(a in ("bdist_wheel", "bdist", "install") for a in sys.argv[1:]) or \
        os.environ.get("TORCHC_WHEEL") == "1"


CFLAGS = ["-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Wno-unused-parameter",
          "-Wno-missing-field-initializers", "-fvisibility=hidden"]
CXXFLAGS = [cxx_std(), "-Wall", "-Wno-unused-parameter", "-fvisibility=hidden"]


class BuildExt(build_ext):
    def build_extension(self, ext):
        if building_wheel():
            # an in-place build (make build) leaves an up-to-date build/lib/.../_C*.so linked
            # with this machine's RUNPATHs: a wheel always links its own
            self.force = True
        orig = self.compiler._compile

        def _compile(obj, src, ext_, cc_args, extra_postargs, pp_opts):
            extra = list(extra_postargs) + (CXXFLAGS if src.endswith(".cpp") else CFLAGS)
            return orig(obj, src, ext_, cc_args, extra, pp_opts)

        self.compiler._compile = _compile
        # Compile sources in parallel (the C++ bridge alone takes most of a minute), and only
        # those whose object is out of date (_stale).
        self.compiler.compile = _parallel_compile(self.compiler, self.force)
        super().build_extension(ext)


def _stale(obj, cmd):
    """Whether obj must be compiled again: it is missing, was compiled by another command
    (flags, compiler, include paths: obj.cmd), or a file it was made from is newer than it or
    gone (obj.d, written by the compiler's -MMD -MP: the source and every header it included
    outside the system directories)."""
    try:
        with open(obj + ".cmd") as f:
            if f.read() != cmd:
                return True
        with open(obj + ".d") as f:
            text = f.read().replace("\\\n", " ")
        t = os.stat(obj).st_mtime_ns
    except OSError:
        return True
    # the first rule is "obj: src headers..."; -MP adds an empty rule per header after it
    deps = text.split("\n", 1)[0].split(":", 1)[1].split() if ":" in text else []
    if not deps:
        return True
    for dep in deps:
        try:
            if os.stat(dep).st_mtime_ns > t:
                return True
        except OSError:
            return True
    return False


def _parallel_compile(compiler, force):
    from concurrent.futures import ThreadPoolExecutor

    def compile(sources, output_dir=None, macros=None, include_dirs=None, debug=0,
                extra_preargs=None, extra_postargs=None, depends=None):
        macros, objects, extra_postargs, pp_opts, build = compiler._setup_compile(
            output_dir, macros, include_dirs, sources, depends, extra_postargs)
        cc_args = compiler._get_cc_args(pp_opts, debug, extra_preargs)

        def one(obj):
            src, ext = build[obj]
            cmd = repr((compiler.compiler_so, getattr(compiler, "compiler_so_cxx", None), src,
                        cc_args, extra_postargs, CXXFLAGS if src.endswith(".cpp") else CFLAGS))
            if not force and not _stale(obj, cmd):
                return
            try:
                os.unlink(obj + ".cmd")
            except OSError:
                pass
            compiler._compile(obj, src, ext, cc_args,
                              list(extra_postargs) + ["-MMD", "-MP", "-MF", obj + ".d"], pp_opts)
            with open(obj + ".cmd", "w") as f:
                f.write(cmd)

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
    if building_wheel():
        # no build-machine paths in the wheel: torch's libraries are found next to torchc in
        # site-packages (and are loaded already: torchc imports torch first); libLLVM is
        # bundled by the repair step (auditwheel: $ORIGIN/../torchc.libs), see .ci/wheel_check.sh
        rpath = ["$ORIGIN/../torch/lib"]
        if not _loader_finds("libLLVM-16.so.1"):
            # an LLVM outside the loader's search path (LLVM_LIB=/opt/...): a wheel installed
            # on this machine needs its directory; the repair step replaces it by the bundle
            rpath += libdirs
    else:
        rpath = libdirs + tlib
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
        runtime_library_dirs=rpath,
        libraries=libs + ["c10", "torch", "torch_cpu", "torch_python", "stdc++", "dl", "m",
                          "pthread"],
        extra_objects=link_objs,
        extra_compile_args=opt,
        extra_link_args=opt[2:] if os.environ.get("TORCHC_ASAN") or os.environ.get("TORCHC_TSAN") else [],
    )


def write_build_info():
    """torchc/_build_info.py: the torch each interpreter's build is tied to (checked at import).
    One entry per Python version: the 3.11 and 3.12 extensions sit side by side in torchc/ and
    may be built against different torch releases (`make PYTHON=python3.12 build`)."""
    pub, full = torch_version()
    torch = import_torch()
    path = os.path.join(ROOT, "torchc", "_build_info.py")
    builds = {}
    try:
        with open(path) as f:
            old = f.read()
        ns = {}
        exec(compile(old, path, "exec"), ns)
        builds = dict(ns.get("_BUILDS") or {})
    except Exception:
        old = None
    builds["%d.%d" % sys.version_info[:2]] = (full, int(torch._C._GLIBCXX_USE_CXX11_ABI))
    text = ('"""Written by setup.py: the torch torchc._C was built against (its C++ ABI), per Python\n'
            'version (each has its own extension). No entry for this interpreter: no TORCH_VERSION."""\n'
            "import sys as _sys\n\n"
            f"_BUILDS = {dict(sorted(builds.items()))!r}\n"
            "if '%d.%d' % _sys.version_info[:2] in _BUILDS:\n"
            "    TORCH_VERSION, CXX11_ABI = _BUILDS['%d.%d' % _sys.version_info[:2]]\n")
    if old == text:
        return
    with open(path, "w") as f:
        f.write(text)


write_build_info()
TORCH_PUBLIC, _ = torch_version()

setup(
    packages=["torchc", "torchc.manifolds"],
    ext_modules=[extension()],
    cmdclass={"build_ext": BuildExt},
    # one torch ABI: the version built against (a local tag such as +cpu or +cu126 is left
    # out, the C++ ABI of one torch version is the same across them)
    install_requires=[f"torch=={TORCH_PUBLIC}"],
)
