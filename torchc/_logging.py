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


# a resume function's own locals (dynamo_hook/resume.c): what they hold, for users
_RESUME_LOCAL = re.compile(r"__torchc_(stack|local|arg|fn)(\d*)")
_RESUME_WORDS = {"stack": "stack value {} at the graph break", "local": "local {} at the graph break",
                 "arg": "argument {} of the call at the graph break",
                 "fn": "the function called at the graph break"}


def _resume_names(text):
    return _RESUME_LOCAL.sub(lambda m: _RESUME_WORDS[m.group(1)].format(m.group(2)), text)


def _local_names(text, code):
    """L[3] -> the local's name (guards print locals by index)."""
    if code is None:
        return _resume_names(text)
    # the order of CPython's "locals plus": locals, cells that are not arguments, free variables
    names = code.co_varnames + tuple(c for c in code.co_cellvars if c not in code.co_varnames) + \
        code.co_freevars
    return _resume_names(_LOCAL.sub(lambda m: repr(names[int(m.group(1))]) if int(m.group(1)) < len(names)
                                    else m.group(0), text))


# torch.compile(m, backend="torchc"): the code torchc captures is the forward FX generated
# for Dynamo's graph ("<eval_with_key>.N"); its lines are mapped back to the user's code
# through each FX node's stack trace. filename -> {line: ["file:line in fn", ...] innermost
# first}, and filename -> the user's "file:line" of the graph (its first node's outermost frame).
_FX_LINES = {}
_FX_ORIGIN = {}
_FX_KEEP = 4096  # graphs remembered (oldest forgotten first)
_TRACE_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def register_fx(gm, filename):
    """Remembers where each line of gm's generated forward came from in the user's code."""
    names = {n.name: n.meta.get("stack_trace") for n in gm.graph.nodes}
    lines = {}
    origin = None
    for i, text in enumerate(gm.code.splitlines(), 1):
        lhs = text.strip().split(" = ", 1)[0]
        st = names.get(lhs)
        if not st:
            continue
        frames = [f"{f}:{ln} in {fn}" for f, ln, fn in _TRACE_FRAME.findall(st)]
        if frames:
            lines[i] = frames[::-1]  # innermost first, as torchc's own "where"
            origin = origin or frames[0].rsplit(" in ", 1)[0]
    if len(_FX_LINES) >= _FX_KEEP:
        for k in list(_FX_LINES)[:_FX_KEEP // 2]:
            _FX_LINES.pop(k, None)
            _FX_ORIGIN.pop(k, None)
    _FX_LINES[filename] = lines
    if origin:
        _FX_ORIGIN[filename] = origin


def _resume_line(code):
    """The user line a resume function continues at (its prologue has no line numbers): the
    line of the instruction its first jump lands on."""
    import dis
    try:
        for ins in dis.get_instructions(code):
            if ins.opname.startswith("JUMP"):
                for start, end, line in code.co_lines():
                    if start <= ins.argval < end and line is not None and line > 0:
                        return line
                break
    except (TypeError, ValueError):
        pass
    return getattr(code, "co_firstlineno", -1)


def user_where(where, code=None):
    """torchc's "file:line in fn; ..." (innermost first) as the user knows it: lines of FX
    generated code mapped to the user's, resume functions' missing lines filled in."""
    out = []
    for part in (where or "").split("; "):
        loc, _, fn = part.partition(" in ")
        file, _, line = loc.rpartition(":")
        if not file:
            continue
        fx = _FX_LINES.get(file)
        if fx is not None:
            try:
                out += fx.get(int(line), [])
            except ValueError:
                pass
            continue
        if line.lstrip("-").isdigit() and int(line) <= 0 and code is not None and \
                getattr(code, "co_filename", None) == file:
            line = str(_resume_line(code))
        out.append(f"{file}:{line} in {user_name(fn)}")
    return "; ".join(out)


def user_loc(rec):
    """A record's "file:line" of its function, FX generated code mapped to the user's."""
    f = rec["filename"]
    return _FX_ORIGIN.get(f) or f"{f}:{rec['firstlineno']}"


def _stack(where, code=None):
    """'f.py:3 in g; f.py:9 in f' -> traceback-like lines, outermost first."""
    out = []
    for part in reversed(user_where(where, code).split("; ")):
        loc, _, fn = part.partition(" in ")
        file, _, line = loc.rpartition(":")
        if file:
            out.append(f'  File "{file}", line {line}, in {user_name(fn)}')
    return out


def where_of(rec):
    """The innermost user file:line of a record's failure or break, else its def line."""
    where = user_where(rec.get("where"), rec.get("code"))
    if where:
        return where.split("; ")[0].rsplit(" in ", 1)[0]
    return user_loc(rec)


def _on_record(rec):
    """torchc._C calls this with the record of every capture (not cache hits)."""
    name = user_name(rec["name"])
    code = rec.get("code")
    loc = user_loc(rec)
    if rec.get("recompile_reason") and _log["recompiles"].isEnabledFor(logging.INFO):
        why = _local_names(rec["recompile_reason"], code).split("\n")  # one line per cached entry
        if len(why) == 1:
            _log["recompiles"].info("Recompiling function %s in %s\n    triggered by the guard failure: %s",
                                    name, loc, why[0])
        else:
            _log["recompiles"].info("Recompiling function %s in %s\n    triggered by the guard failures "
                                    "(newest entry first):\n%s", name, loc, "\n".join("    - " + w for w in why))
    brk = rec.get("break_reason")
    fb = rec.get("fallback") and rec.get("reason")
    if (brk or fb) and _log["graph_breaks"].isEnabledFor(logging.INFO):
        what = "Graph break" if brk else "Frame runs eagerly"
        lines = [f"{what} in user code at {where_of(rec)}", f"Reason: {brk or fb}"]
        st = _stack(rec.get("where"), code)
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
    else:
        _drop_handler()  # every log off again: torchc's warnings reach the root logger as before


def _drop_handler():
    global _handler
    if _handler is not None:
        _root.removeHandler(_handler)
        _root.propagate = True
        _handler = None


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
    _C.set_log_wants(_wants)


def _wants(artifact):
    """torchc._C asks before it formats a record's recompile reason or guard list (costly on a
    cache miss of an entry with many guards): only when that log is on."""
    return _log[artifact].isEnabledFor(logging.INFO)
