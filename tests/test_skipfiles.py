"""Library modules a compiled call only passes through (filelock, typing_extensions, tqdm, ...)
are never hooked as frames of their own: a frame of such a module runs eagerly, with no graph,
no break and no recompile of its own (dynamo_hook/skipfiles.c). Checked in a subprocess with
fake packages under a site-packages directory."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent("""
    import sys, torch
    sys.path.insert(0, {site!r})
    import torchc
    import filelock, torchc_fake_model_lib, torchc_fake_extra
    x = torch.randn(4)
    out = []
    for mod in (filelock, torchc_fake_model_lib, torchc_fake_extra):
        e = torchc.explain(mod.helper)(x)
        torch.testing.assert_close(e.result, x * 2 + 1)
        out.append((mod.__name__, e.graph_count, len(e.records)))
    print(out)
""")


def test_library_frames_skipped(tmp_path):
    site = tmp_path / "venv" / "lib" / "python3" / "site-packages"
    for name in ("filelock", "torchc_fake_model_lib", "torchc_fake_extra"):
        (site / name).mkdir(parents=True)
        (site / name / "__init__.py").write_text("def helper(x):\n    return x * 2 + 1\n")
    env = dict(os.environ, PYTHONPATH=ROOT, TORCHC_SKIP_MODULES="other, torchc_fake_extra")
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(site=str(site))], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    got = eval(r.stdout.strip().splitlines()[-1])
    assert got == [("filelock", 0, 0), ("torchc_fake_model_lib", 1, 1), ("torchc_fake_extra", 0, 0)]
