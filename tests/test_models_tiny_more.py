"""More transformers families at tiny sizes (benchmarks/suite.py's hf_models_more): vision CNNs
and hierarchical/windowed attention, audio front ends, multimodal towers, MoE routing,
state-space scans, relative position biases, more encoders, decoders and seq2seq models.
Each is compiled on the CPU (inference, random weights, no downloads) and checked against
eager by the dynamo harness rule (allclose, else RMSE against a float64 reference; eager
float64 failing leaves allclose alone), with torchc's graph/break counts bounded both ways:
  - at most the (graphs, breaks) measured (a regression fails; (1, 0) is exact),
  - at least one graph and at least half the ops measured (a silent fallback fails).
An improvement passes; lower EXPECTED then (TORCHC_TINY_MEASURE=1 prints the new rows).

The models run in a few subprocesses (a group each, in a fixed order, torchc.reset()
between models) to keep the run time modest: transformers keeps process-wide state, so each
group's order is part of what was measured. Set TORCHC_TINY_MORE=all to run the slow group
too (models whose compile or eager run takes longest on a loaded 2-core machine).

    TORCHC_TINY_MEASURE=1 python -m pytest -q -s tests/test_models_tiny_more.py
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

tf = pytest.importorskip("transformers")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MEASURED_WITH = "5.25"
# model -> (graphs, breaks, ops) measured with torchc at this commit
EXPECTED = {
    "hf_ast": (1, 0, 144),
    "hf_beit": (1, 0, 494),
    "hf_big_bird": (1, 0, 227),
    "hf_biogpt": (1, 0, 167),
    "hf_blenderbot": (1, 0, 301),
    "hf_clip": (1, 0, 333),
    "hf_cohere": (1, 0, 261),
    "hf_convbert": (1, 0, 336),
    "hf_convnextv2": (1, 0, 213),
    "hf_cvt": (1, 0, 715),
    "hf_deberta": (1, 0, 283),
    "hf_deit": (1, 0, 130),
    "hf_dinov2": (1, 0, 125),
    "hf_efficientnet": (1, 0, 414),
    "hf_esm": (1, 0, 248),
    "hf_fnet": (17, 14, 171),
    "hf_focalnet": (1, 0, 418),
    "hf_funnel": (1, 0, 570),
    "hf_gemma3": (1, 0, 381),
    "hf_granite": (1, 0, 252),
    "hf_hubert": (1, 0, 166),
    "hf_levit": (1, 0, 523),
    "hf_m2m100": (1, 0, 323),
    "hf_mamba": (45, 35, 560),
    "hf_marian": (1, 0, 273),
    "hf_megatron_bert": (1, 0, 199),
    "hf_mobilenet_v2": (1, 0, 889),
    "hf_mobilevit": (1, 0, 952),
    "hf_modernbert": (1, 0, 282),
    "hf_mpt": (1, 0, 181),
    "hf_mt5": (1, 0, 336),
    "hf_openai_gpt": (1, 0, 172),
    "hf_persimmon": (1, 0, 324),
    "hf_plbart": (1, 0, 310),
    "hf_poolformer": (1, 0, 464),
    "hf_prophetnet": (1, 0, 734),
    "hf_pvt_v2": (1, 0, 437),
    "hf_qwen2_moe": (1, 0, 479),
    "hf_olmoe": (1, 0, 411),
    "hf_regnet": (1, 0, 274),
    "hf_resnet": (1, 0, 242),
    "hf_roformer": (1, 0, 261),
    "hf_segformer": (10, 2, 659),
    "hf_siglip": (1, 0, 325),
    "hf_speech2text": (1, 0, 407),
    "hf_speecht5": (1, 0, 489),
    "hf_squeezebert": (1, 0, 210),
    "hf_starcoder2": (1, 0, 272),
    "hf_swin": (1, 0, 433),
    "hf_switch_transformers": (75, 49, 600),
    "hf_wav2vec2": (1, 0, 166),
    "hf_wavlm": (1, 0, 277),
    "hf_xglm": (1, 0, 189),
    "hf_xlnet": (1, 0, 243),
}
# groups run in one subprocess each; "slow" only with TORCHC_TINY_MORE=all
GROUPS = {
    "vision_multimodal": [
        "hf_resnet", "hf_deit", "hf_ast", "hf_dinov2", "hf_convnextv2", "hf_clip", "hf_siglip",
        "hf_cvt", "hf_efficientnet",
    ],
    "text": [
        "hf_mpt", "hf_granite", "hf_starcoder2", "hf_biogpt", "hf_openai_gpt", "hf_persimmon",
        "hf_marian", "hf_blenderbot", "hf_megatron_bert",
    ],
    "slow": [
        "hf_beit", "hf_big_bird", "hf_cohere", "hf_convbert", "hf_deberta", "hf_esm", "hf_fnet",
        "hf_focalnet", "hf_funnel", "hf_gemma3", "hf_hubert", "hf_levit", "hf_m2m100", "hf_mamba",
        "hf_mobilenet_v2", "hf_mobilevit", "hf_modernbert", "hf_mt5", "hf_plbart", "hf_poolformer",
        "hf_prophetnet", "hf_pvt_v2", "hf_regnet", "hf_roformer", "hf_segformer", "hf_speech2text",
        "hf_speecht5", "hf_squeezebert", "hf_swin", "hf_wav2vec2", "hf_wavlm", "hf_xlnet", "hf_xglm",
        "hf_olmoe", "hf_qwen2_moe", "hf_switch_transformers",
    ],
}

RUN = textwrap.dedent("""
    import copy, json, sys, time, torch
    sys.path.insert(0, {bench!r})
    import torchc, suite
    table = suite.hf_models(suite.Scale(tiny=True, batch=2))
    for name in {names!r}:
        t0 = time.time()
        try:
            build, make_inputs = table[name]
            torch.manual_seed(0)
            model = build().eval()
            inputs = make_inputs("cpu")
            with torch.no_grad():
                ref = [t.clone() for t in suite.tensors_of(model(**inputs))]
                try:
                    fp64 = suite.tensors_of(copy.deepcopy(model).double()(**suite.cast_inputs(inputs, torch.float64)))
                except Exception:
                    fp64 = None  # eager itself fails in float64 (grouped_mm, finfo overflow)
                torchc.reset()
                cm = torchc.compile(model)
                ok1, why1 = suite.same(ref, suite.tensors_of(cm(**inputs)), fp64, 1e-4)
                ex = torchc.explain(cm)(**inputs)
                ok2, why2 = suite.same(ref, suite.tensors_of(ex.result), fp64, 1e-4)
            res = dict(ok=ok1 and ok2, why=why1 or why2, graphs=ex.graph_count, breaks=ex.graph_break_count,
                       ops=ex.op_count, reasons=ex.break_reasons[:12])
        except Exception as e:
            res = dict(ok=False, why="raised " + type(e).__name__ + ": " + str(e)[:400], graphs=0, breaks=0,
                       ops=0, reasons=[])
        res["name"] = name
        res["seconds"] = round(time.time() - t0, 1)
        print("RESULT " + json.dumps(res), flush=True)
""")

_results = {}


def _run_group(group):
    if group in _results:
        return _results[group]
    names = GROUPS[group]
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", RUN.format(bench=os.path.join(ROOT, "benchmarks"), names=names)],
                       env=env, capture_output=True, text=True, timeout=1800)
    got = {}
    for ln in r.stdout.splitlines():
        if ln.startswith("RESULT "):
            res = json.loads(ln[len("RESULT "):])
            got[res["name"]] = res
    _results[group] = (got, r.returncode, r.stderr[-3000:])
    return _results[group]


def _group_of(name):
    return next(g for g, names in GROUPS.items() if name in names)


def _enabled(name):
    return _group_of(name) != "slow" or os.environ.get("TORCHC_TINY_MORE") == "all"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_tiny_transformers_more(name):
    if not _enabled(name):
        pytest.skip("slow group: TORCHC_TINY_MORE=all")
    got, rc, err = _run_group(_group_of(name))
    assert name in got, f"{name}: no result (rc {rc}):\n{err}"
    res = got[name]
    if os.environ.get("TORCHC_TINY_MEASURE"):
        print(f'\n    "{name}": ({res["graphs"]}, {res["breaks"]}, {res["ops"]}),  # {res["seconds"]} s')
    assert res["ok"], res["why"]
    graphs, breaks, ops = EXPECTED[name]
    assert res["graphs"] >= 1 and res["ops"] >= max(1, ops // 2), (
        f"{name}: {res['graphs']} graphs / {res['ops']} ops, expected about {graphs} / {ops}: "
        "fell back to eager?\n" + "\n".join(res["reasons"]))
    if tf.__version__.startswith(MEASURED_WITH) and not os.environ.get("TORCHC_TINY_MEASURE"):
        assert res["graphs"] <= graphs and res["breaks"] <= breaks, (
            f"{name}: {res['graphs']} graphs / {res['breaks']} breaks, expected at most "
            f"{graphs} / {breaks}:\n" + "\n".join(res["reasons"]))


@pytest.mark.needs_no_compiler
def test_groups_cover_expected():
    listed = [n for names in GROUPS.values() for n in names]
    assert sorted(listed) == sorted(EXPECTED) and len(set(listed)) == len(listed)


# MoE families in bfloat16 (the GPU suite's dtype): under compilation transformers routes
# non-bf16 experts to its custom-op fallback (a CUSTOM extern above in float32) and bf16 experts to
# F.grouped_mm, which torchc captures as one extern; histc / sort / index_add around it.
RUN_BF16 = textwrap.dedent("""
    import copy, json, sys, torch
    sys.path.insert(0, {bench!r})
    import torchc, suite
    table = suite.hf_models(suite.Scale(tiny=True, batch=2))
    for name in {names!r}:
        build, make_inputs = table[name]
        torch.manual_seed(0)
        model = build().eval().to(torch.bfloat16)
        inputs = {{k: v.to(torch.bfloat16) if v.is_floating_point() else v for k, v in make_inputs("cpu").items()}}
        with torch.no_grad():
            ref = [t.clone() for t in suite.tensors_of(model(**inputs))]
            try:
                fp64 = suite.tensors_of(copy.deepcopy(model).double()(**suite.cast_inputs(inputs, torch.float64)))
            except Exception:
                fp64 = None  # eager's grouped_mm refuses float64
            torchc.reset()
            ex = torchc.explain(model)(**inputs)
            ok, why = suite.same(ref, suite.tensors_of(ex.result), fp64, 1e-2)
        print("RESULT " + json.dumps(dict(name=name, ok=ok, why=why, graphs=ex.graph_count,
                                          breaks=ex.graph_break_count, ops=ex.op_count,
                                          reasons=ex.break_reasons[:8])), flush=True)
""")


def test_tiny_moe_bf16_whole():
    names = ["hf_qwen2_moe", "hf_olmoe"]
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", RUN_BF16.format(bench=os.path.join(ROOT, "benchmarks"), names=names)],
                       env=env, capture_output=True, text=True, timeout=900)
    got = {}
    for ln in r.stdout.splitlines():
        if ln.startswith("RESULT "):
            res = json.loads(ln[len("RESULT "):])
            got[res["name"]] = res
    assert sorted(got) == sorted(names), r.stderr[-3000:]
    for name, res in got.items():
        assert res["ok"], (name, res["why"])
        assert res["ops"] >= 100, (name, res)
        if tf.__version__.startswith(MEASURED_WITH):
            assert (res["graphs"], res["breaks"]) == (1, 0), (name, res["reasons"])
