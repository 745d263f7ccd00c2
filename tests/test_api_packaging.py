"""Packaging of torchc (issue 25): build requirements, the torch pin, the C++ standard, the
license, the import-time check, and `import torchc` staying cheap. The wheel itself is built,
repaired, installed in a fresh venv and run by .ci/wheel_check.sh (CI)."""
import os
import subprocess
import sys

import pytest
import torch

import torchc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.needs_no_compiler  # packaging: nothing is compiled


def _pyproject():
    import tomllib
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def test_build_requirements_do_not_pull_torch():
    req = _pyproject()["build-system"]["requires"]
    assert not any(r.split("=")[0].split(">")[0].split("<")[0].strip() == "torch" for r in req), req


def test_metadata_license_and_dynamic_dependencies():
    p = _pyproject()["project"]
    assert p["license"] == "BSD-3-Clause" and "LICENSE" in p["license-files"]
    assert "dependencies" in p["dynamic"]  # torch==<the version built against>, from setup.py
    assert p["entry-points"]["torch_dynamo_backends"]["torchc"] == "torchc._backend:torchc_backend"
    with open(os.path.join(ROOT, "LICENSE")) as f:
        assert "BSD 3-Clause" in f.read()


def test_setup_takes_cxx_std_from_torch():
    """setup.py's C++ standard is the one torch's BuildExtension uses (c++20 for torch 2.13;
    the hard-coded c++17 failed with torch 2.14's headers)."""
    code = ("import sys, runpy; sys.argv=['setup.py', '--version'];"
            "g = runpy.run_path('setup.py', run_name='not_main');"
            "print(g['cxx_std'](), g['torch_version']()[0])")
    # run_name != '__main__' still runs setup(): ask only for --version (no build)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    std, ver = r.stdout.split()[-2:]
    from torch.utils import cpp_extension
    import inspect
    if "'c++20'" in inspect.getsource(cpp_extension.BuildExtension):
        assert std == "-std=c++20", std
    assert std in ("-std=c++17", "-std=c++20", "-std=c++23"), std
    assert ver == torch.__version__.split("+")[0]


def test_import_checks_the_torch_it_was_built_for(monkeypatch):
    try:
        from torchc._build_info import TORCH_VERSION
    except ImportError:
        pytest.skip("no build record (built without setup.py)")
    assert TORCH_VERSION.split("+")[0] == torch.__version__.split("+")[0]
    monkeypatch.setattr(torch, "__version__", "9.9.0")
    with pytest.raises(ImportError, match="built against torch .* cannot run with torch 9.9.0"):
        torchc._check_torch()


def test_import_torchc_does_not_import_dynamo():
    """torch._dynamo takes seconds to import: torchc's hooks into it wait for it."""
    code = ("import sys, torchc; assert 'torch._dynamo' not in sys.modules;"
            "import torch; m = torch.nn.Linear(2, 2);"
            "torch.compile(m, backend='torchc')(torch.ones(1, 2));"
            "import torch._dynamo; assert 'torchc' in torch._dynamo.list_backends(); print('ok')")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stderr
