"""torchc's logs through Python logging, switchable like TORCH_LOGS.

Loggers (children of "torchc"):
    torchc.graph_breaks   every graph break / fallback, with the user's file:line and the
                          inlined call stack
    torchc.recompiles     every recompile, with the guard that failed
    torchc.guards         the guards of each compiled graph
    torchc.graph          torchc's graph IR of each compiled graph
    torchc.output_code    the kernels generated for each graph
    torchc.perf           compile time of each frame: capture, cache lookup, graph passes,
                          code generation (LLVM / NVPTX), loading (JIT, cached code), FX
                          export (torchc.compile(backend=...))

Switch them on with TORCHC_LOGS="graph_breaks,recompiles" (or "+recompiles" for DEBUG,
"all") in the environment, torchc.set_logs(recompiles=True, ...), or ordinary logging
configuration of these loggers (INFO level).
"""
import logging
import os
import re

from . import _C

ARTIFACTS = ("graph_breaks", "recompiles", "guards", "graph", "output_code", "perf")
_root = logging.getLogger("torchc")
_log = {a: logging.getLogger("torchc." + a) for a in ARTIFACTS}
_handler = None

_RESUME = re.compile(r"torchc_resume_(\w+?)_at_\d+")
_LOCAL = re.compile(r"\bL\[(\d+)\]")


def user_name(name):
    """A frame's name as the user wrote it: resume functions after a graph break are named
    after the function they continue."""
    return _RESUME.sub(lambda m: m.group(1), str(name))


def _local_names(text, code):
    """L[3] -> the local's name (guards print locals by index)."""
    if code is None:
        return text
    # the order of CPython's "locals plus": locals, cells that are not arguments, free variables
    names = code.co_varnames + tuple(c for c in code.co_cellvars if c not in code.co_varnames) + \
        code.co_freevars
    return _LOCAL.sub(lambda m: repr(names[int(m.group(1))]) if int(m.group(1)) < len(names)
                      else m.group(0), text)


def _stack(where):
    """'f.py:3 in g; f.py:9 in f' -> traceback-like lines, outermost first."""
    out = []
    for part in reversed((where or "").split("; ")):
        loc, _, fn = part.partition(" in ")
        file, _, line = loc.rpartition(":")
        if file:
            out.append(f'  File "{file}", line {line}, in {user_name(fn)}')
    return out


def where_of(rec):
    """The innermost user file:line of a record's failure or break, else its def line."""
    where = rec.get("where")
    if where:
        return where.split("; ")[0].rsplit(" in ", 1)[0]
    return f"{rec['filename']}:{rec['firstlineno']}"


def _on_record(rec):
    """torchc._C calls this with the record of every capture (not cache hits)."""
    name = user_name(rec["name"])
    code = rec.get("code")
    loc = f"{rec['filename']}:{rec['firstlineno']}"
    if rec.get("recompile_reason") and _log["recompiles"].isEnabledFor(logging.INFO):
        _log["recompiles"].info("Recompiling function %s in %s\n    triggered by the guard failure: %s",
                                name, loc, _local_names(rec["recompile_reason"], code))
    brk = rec.get("break_reason")
    fb = rec.get("fallback") and rec.get("reason")
    if (brk or fb) and _log["graph_breaks"].isEnabledFor(logging.INFO):
        what = "Graph break" if brk else "Frame runs eagerly"
        lines = [f"{what} in user code at {where_of(rec)}", f"Reason: {brk or fb}"]
        st = _stack(rec.get("where"))
        if st:
            lines += ["User code traceback:"] + st
        _log["graph_breaks"].info("%s", "\n".join(lines))
    if rec.get("event") != "compiled" or rec.get("fallback"):
        return
    if rec.get("guards") and _log["guards"].isEnabledFor(logging.INFO):
        _log["guards"].info("GUARDS of %s (%s):\n%s", name, loc,
                            "\n".join("  " + _local_names(g, code) for g in rec["guards"]))
    if rec.get("graph") and _log["graph"].isEnabledFor(logging.INFO):
        _log["graph"].info("GRAPH of %s (%s), %d ops:\n%s", name, loc, rec.get("op_count", 0),
                           rec["graph"])
    if rec.get("kernels") and _log["output_code"].isEnabledFor(logging.INFO):
        _log["output_code"].info("OUTPUT CODE of %s (%s):\n%s", name, loc, rec["kernels"])
    if _log["perf"].isEnabledFor(logging.INFO):
        _log["perf"].info("%s (%s): %s", name, loc, breakdown(rec))


STAGES = (("capture", "capture"), ("cache_lookup", "cache lookup"), ("graph_passes", "graph passes"),
          ("codegen", "codegen"), ("load", "load"), ("fx_export", "FX export"))


def breakdown(rec):
    """'compile 0.123 s: capture 0.010 s, cache lookup ..., ...' for one capture's record"""
    t = rec.get("compile_times") or {}
    parts = [f"{label} {t[k]:.4f} s" for k, label in STAGES if t.get(k) or k in ("capture", "codegen")]
    hits = rec.get("cache_hits", 0)
    tail = f" ({hits} graph{'s' if hits != 1 else ''} from the in-memory cache)" if hits else ""
    return f"compile {rec.get('compile_ms', 0.0) / 1e3:.4f} s: " + ", ".join(parts) + tail


def set_logs(all=None, **artifacts):
    """torchc.set_logs(recompiles=True, graph_breaks=True, ...) like torch._logging.set_logs:
    True (INFO), a logging level, or False/None (off). all=True switches every artifact."""
    bad = sorted(set(artifacts) - set(ARTIFACTS))
    if bad:
        raise ValueError(f"torchc.set_logs: unknown log {bad[0]!r}; valid: {', '.join(ARTIFACTS)}")
    levels = {a: all for a in ARTIFACTS} if all is not None else {}
    levels.update(artifacts)
    for a, v in levels.items():
        if v is True:
            lvl = logging.INFO
        elif v in (False, None):
            lvl = logging.WARNING
        elif isinstance(v, int):
            lvl = v
        else:
            raise TypeError(f"torchc.set_logs: {a}= expects a bool or a logging level, got {v!r}")
        _log[a].setLevel(lvl)
    if any(lg.level and lg.level < logging.WARNING for lg in _log.values()):
        _ensure_handler()


def _ensure_handler():
    """As TORCH_LOGS does: a stderr handler on the torchc logger, once."""
    global _handler
    if _handler is None:
        _handler = logging.StreamHandler()
        _handler.setFormatter(logging.Formatter("[torchc %(name)s] %(message)s"))
        _root.addHandler(_handler)
        _root.propagate = False


def parse(spec):
    """TORCHC_LOGS value -> {artifact: level}: "a,b", "+a" for DEBUG, "all"."""
    out = {}
    for tok in (t.strip() for t in (spec or "").split(",")):
        if not tok:
            continue
        lvl = logging.DEBUG if tok.startswith("+") else logging.INFO
        tok = tok.lstrip("+-")
        if tok == "all":
            out.update({a: lvl for a in ARTIFACTS})
        elif tok in ARTIFACTS:
            out[tok] = lvl
        else:
            raise ValueError(f"TORCHC_LOGS: unknown log {tok!r}; valid: all, {', '.join(ARTIFACTS)}")
    return out


def init():
    spec = os.environ.get("TORCHC_LOGS")
    if spec:
        set_logs(**parse(spec))
    _C.set_log_hook(_on_record)
