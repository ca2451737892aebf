"""Standalone reproducer scripts: a finding proven with nothing but NumPy and the runtime.

For a case (a saved fuzz find, a known-divergence registry entry, any case file) and a runtime,
:func:`reproducer` writes a self-contained Python script that builds the input, calls the
runtime's public API in its plainest form (:mod:`poolcheck.repro.runtimes`), computes the answer
the text requires with a short loop of its own (:mod:`poolcheck.repro.textbook`, copied into the
script), prints the input, the attributes, the expected and actual outputs and the sentences
(by id, with their words, from :mod:`poolcheck.spec.sources`), and exits 1 while the divergence
stands, 0 once the runtime agrees, 2 when the runtime fails some other way. ONNX runtimes also
need the ``.onnx`` model written next to the script.

A document finding (the OpenVINO written shape rule against the runtime) compares the output
shape with the one the written rule gives; a rejection compares nothing: the script exits 1
while the runtime refuses the configuration.

A bfloat16 case (a type NumPy lacks) holds its input in float32; the runtime converts it to
bfloat16 in front of the pool and back behind it (:mod:`poolcheck.repro.runtimes`), and the loop
rounds its answers to bfloat16. A refusal then stands only while the conversions alone run
(``casts_only``): otherwise the script exits 2, the runtime refusing the type, not the pool.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import poolcheck
from poolcheck.cases import load_paths
from poolcheck.cases.model import Case
from poolcheck.corpus import KNOWN_DIR
from poolcheck.errors import AttributeValueError, CaseFileError, PoolcheckError
from poolcheck.repro import textbook
from poolcheck.repro.family import FAMILY_REFERENCE, family_constants, family_runtime_call, textbook_family_source
from poolcheck.repro.runtimes import RUNTIMES, RuntimeCall, is_bfloat16, is_plugin, runtime_call, split_ref
from poolcheck.results import SIGNATURE_TAG, Signature
from poolcheck.spec.dtypes import is_numpy_type
from poolcheck.spec.family import FamilySpec
from poolcheck.spec.severity import rules_citing, severity_of
from poolcheck.spec.shape import resolve
from poolcheck.spec.sources import DOCUMENTS, sentence

#: The runtime a document finding (the OpenVINO written rule) is checked against.
DOCUMENT_RUNTIME = "openvino"
#: Exit statuses of a script.
STANDS, FIXED, OTHER = 1, 0, 2


@dataclass(frozen=True)
class Reproducer:
    """A script and the model file it reads (when it reads one)."""

    case_id: str
    runtime: str
    klass: str
    severity: str
    script: str
    model: bytes | None

    def write(self, directory: str | Path) -> list[Path]:
        """Write ``<case id>.py`` (and ``<case id>.onnx``) into ``directory``."""
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        script = folder / f"{file_stem(self.case_id)}.py"
        script.write_text(self.script, encoding="utf-8")
        script.chmod(0o755)
        written = [script]
        if self.model is not None:
            model = script.with_suffix(".onnx")
            model.write_bytes(self.model)
            written.append(model)
        return written


def file_stem(case_id: str) -> str:
    """A file name for a case id: letters, digits, '_' and '-' only (an id never names a path
    outside the output folder, nor a hidden file)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", case_id)[:120] or "case"


def _inert(text: str) -> str:
    """Text from a case file made safe inside the script's docstring: printable characters on
    one line, backslashes and quotes escaped (it can neither end the docstring nor run)."""
    flat = "".join(ch if ch.isprintable() else " " for ch in str(text))
    return flat.replace("\\", "\\\\").replace('"', '\\"')


def signature_of(case: Case) -> Signature | None:
    tag = next((t for t in case.tags if t.startswith(SIGNATURE_TAG)), None)
    return Signature.parse(tag[len(SIGNATURE_TAG):]) if tag else None


def runtime_of(case: Case) -> str | None:
    """The runtime a case's divergence was found on: its ``peer:`` tag, or OpenVINO for a
    document finding."""
    peer = next((t[len("peer:"):] for t in case.tags if t.startswith("peer:")), None)
    sig = signature_of(case)
    if peer is None and sig is not None and sig.kind == "document":
        return DOCUMENT_RUNTIME
    return peer


def _array_literal(x: np.ndarray) -> str:
    text = repr(x.tolist())
    return f"np.array({text}, dtype=np.{x.dtype.name})"


def _textbook_source() -> str:
    src = inspect.getsource(textbook)
    doc_end = src.index('"""', 3) + 3  # drop the module docstring: the script has its own
    return src[doc_end:].strip("\n").replace("import itertools\nimport math\n\nimport numpy as np\n",
                                              "import itertools\nimport math\n")


def _sentences(atoms: Sequence[str], case: Case) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    for rule in rules_citing(atoms, case.spec):  # a FamilySpec weighs too
        for sid in rule.sentences:
            s = sentence(sid)
            if all(sid != o[0] for o in out):
                out.append((sid, DOCUMENTS[s.document].title, s.text))
    return out


_MAIN = '''

def show(label, array):
    print(f"{label}: shape {tuple(np.shape(array))}")
    print(np.array2string(np.asarray(array), threshold=200, max_line_width=100))


def casts_alone_run():
    """Whether the runtime converts to bfloat16 and back without the pool (then the refusal is
    the pool's on bfloat16)."""
    try:
        back = np.asarray(casts_only(X.copy()))
    except Exception as exc:
        print(f"the conversions alone fail too ({type(exc).__name__}: {' '.join(str(exc).split())[:300]}): "
              f"{RUNTIME} refuses bfloat16 itself, not the pool")
        return False
    if back.shape != X.shape or differences(X, back):
        print(f"the conversions alone change the input: {RUNTIME}'s bfloat16 casts are at fault, not the pool")
        return False
    print(f"the conversions to bfloat16 and back alone run: the refusal is the pool's on bfloat16")
    return True


def main():
    print(f"{RUNTIME}: {CLASS} ({SEVERITY})")
    print(f"operator {OP} {ATTRIBUTES}")
    print(f"runtime call: {CALL}")
    for sid, document, text in SENTENCES:
        print(f"[{sid}] {document}: {text!r}")
    print(f"why: {WHY}")
    show(f"input ({'bfloat16, held in float32' if BFLOAT16 else X.dtype})", X)
    if I is not None:
        show("indices input I", I)
    save = sys.argv[2] if len(sys.argv) > 2 and sys.argv[1] == "--save" else None  # an .npz of the outputs
    try:
        values, indices = actual(X.copy()) if I is None else actual(X.copy(), I.copy())
    except Exception as exc:  # the runtime refuses or fails
        print(f"{RUNTIME} raised {type(exc).__name__}: {' '.join(str(exc).split())[:500]}")
        if EXPECTS != "rejection":
            return 2
        return 1 if not BFLOAT16 or casts_alone_run() else 2
    if EXPECTS == "rejection":
        print(f"{RUNTIME} now accepts the configuration: the rejection is gone")
        return 0
    values = np.asarray(values)
    if EXPECTS == "shape":
        print(f"the written rule gives shape {WRITTEN_SHAPE}; {RUNTIME} gives {values.shape}")
        return 1 if tuple(values.shape) != tuple(WRITTEN_SHAPE) else 0
    expected, expected_indices, tolerance = reference()
    if save:
        np.savez(save, expected=expected, actual=values,
                 **({"expected_indices": expected_indices} if expected_indices is not None else {}),
                 **({"actual_indices": np.asarray(indices)} if indices is not None else {}))
    show("expected values", expected)
    show("actual values", values)
    if values.shape != expected.shape:
        print(f"DIVERGES: output shape {values.shape}, the text requires {expected.shape}")
        return 1
    bad = differences(expected, values, tolerance)
    if expected_indices is not None and indices is not None:
        show("expected indices", expected_indices)
        show("actual indices", indices)
        bad_indices = differences(expected_indices, np.asarray(indices).astype(np.int64))
    else:
        bad_indices = []
    for label, where, exp, act in (("values", bad, expected, values), ("indices", bad_indices, expected_indices,
                                                                          indices)):
        if where:
            p = where[0]
            print(f"DIVERGES: {label} differ at {len(where)} position(s); first at {list(p)}: expected "
                  f"{np.asarray(exp)[p]!r}, got {np.asarray(act)[p]!r}")
    if bad or bad_indices:
        return 1
    print(f"{RUNTIME} agrees with the text here: the divergence is fixed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''

#: What a MaxPool/AveragePool script compares with: the loop's values, its indices where the
#: runtime gives them in the text's layout (INDEX), the average rule's tolerance for averages.
_POOL_REFERENCE = '''

def reference():
    expected, expected_indices, tolerance = pool(X, KIND, AXES, EXCLUDE_PAD, *INDEX, bfloat16=BFLOAT16)
    return expected, (expected_indices if INDEX != (None, None) else None), (tolerance if KIND == "avg" else None)
'''


def reproducer(case: Case, runtime: str | None = None) -> Reproducer:
    """The script for ``case`` on ``runtime`` (default: the runtime the case's divergence was
    found on). Raises ValueError (no runtime, an unknown one) or ``PeerDeclined``."""
    runtime = runtime or runtime_of(case)
    if not runtime:
        raise ValueError(f"case {case.id!r} names no runtime (no 'peer:' tag): pass one")
    if is_plugin(runtime) and not _plugin_exists(runtime):
        raise ValueError(f"case {case.id!r}: {runtime!r} is no built-in runtime, plugin file or module here "
                         "(pass the plugin with --runtime PATH)")
    bf16 = is_bfloat16(case.dtype)
    if not is_numpy_type(case.dtype) and not bf16:
        raise ValueError(f"case {case.id!r}: {case.dtype.name} inputs have no standalone script yet (the script "
                         "uses NumPy's own types and bfloat16 only)")
    sig = signature_of(case)
    klass = sig.detail if sig is not None else "divergence"
    atoms = [a for a in klass.split("+") if a]
    severity = severity_of(atoms, case.spec).value  # a FamilySpec weighs too
    x = np.asarray(case.input)
    if isinstance(case.spec, FamilySpec):
        if bf16:  # a script holding np.bfloat16 would fail on import and exit 1 as if it diverged
            raise ValueError(f"case {case.id!r}: bfloat16 {case.op} inputs have no standalone script yet (the "
                             "family scripts use NumPy's own types only)")
        return _family_reproducer(case, runtime, klass, atoms, severity)
    call: RuntimeCall = runtime_call(runtime, case.pool_spec, x.shape, x.dtype)
    geom = resolve(case.pool_spec, x.shape)
    axes = [(a.size, a.kernel, a.stride, a.dilation, a.pad_begin, a.pad_end, a.out) for a in geom.axes]
    if sig is not None and sig.kind == "document":
        expects = "shape"
    elif klass.startswith("rejects"):
        expects = "rejection"
    else:
        expects = "output"
    written = tuple(case.expected.get("shape") or ()) if expects == "shape" else ()
    index = call.index if call.index is not None else (None, None)
    bf16_note = ("The input is bfloat16, which NumPy has no type for: X holds its values in float32, the runtime\n"
                 "converts them to bfloat16 in front of the pool and the values back to float32 behind it.\n"
                 if bf16 else "")
    header = _header(case, runtime, klass, severity, call, note=bf16_note)
    data: dict[str, Any] = {
        **_described(case, runtime, klass, atoms, severity, expects),
        "WRITTEN_SHAPE": written,
        "KIND": case.pool_spec.op,
        "EXCLUDE_PAD": bool(case.pool_spec.exclude_pad),
        "INDEX": index,
        "BFLOAT16": bf16,
    }
    consts = "\n".join(f"{k} = {v!r}" for k, v in data.items())
    geometry = ("# the windows per spatial axis: (size, kernel, stride, dilation, pad_begin, pad_end, output\n"
                "# length), the pads applied and the length the shape rule of the operator's text gives\n"
                f"AXES = {axes!r}\n")
    body = (header + _textbook_source() + "\n\n\n# ---- the configuration\n" + consts + "\n" + geometry
            + f"X = {_array_literal(x.astype(np.float32) if bf16 else x)}"
            + ("  # bfloat16 values, held in float32" if bf16 else "")
            + "\nI = None\n\n# ---- the runtime, called plainly\n" + call.code + _POOL_REFERENCE + _MAIN)
    return Reproducer(case.id, runtime, klass, severity, body, call.model)


def _described(case: Case, runtime: str, klass: str, atoms: Sequence[str], severity: str,
               expects: str) -> dict[str, Any]:
    """The constants every script prints: runtime, class, severity, operator, sentences, why."""
    name, _ = split_ref(runtime)
    return {
        "RUNTIME": name if name == runtime else runtime,
        "CLASS": "".join(ch if ch.isprintable() else " " for ch in klass),
        "SEVERITY": severity,
        "OP": case.op,
        "ATTRIBUTES": dict(case.attributes),
        "SENTENCES": _sentences(atoms, case),
        "WHY": _why(atoms, case, expects),
        "EXPECTS": expects,
    }


def _why(atoms: Sequence[str], case: Case, expects: str) -> str:
    rules = rules_citing(atoms, case.spec)  # a FamilySpec weighs too
    return "; ".join(f"{r.key}: {r.why}" for r in rules) or (
        "a rejection of a valid configuration (limitation)" if expects == "rejection" else
        "no named behaviour explains it: the loop below is what the text requires")


def _header(case: Case, runtime: str, klass: str, severity: str, call: RuntimeCall, note: str = "") -> str:
    needs = ", ".join(("numpy",) + call.needs)
    stem = file_stem(case.id)
    model_note = f" and {stem}.onnx next to this script" if call.model is not None else ""
    return (
        f'#!/usr/bin/env python3\n"""{_inert(case.title or case.id)}\n\n'
        f"Reproducer written by poolcheck {poolcheck.__version__} for case {_inert(case.id)} "
        f"({_inert(Path(case.path).name)}): {_inert(runtime)}, {_inert(klass)} ({severity}).\n"
        f"Needs: Python 3, {needs}{model_note}; nothing of poolcheck.\n"
        f"Run: python3 {stem}.py  (--save OUT.npz also writes the expected and actual outputs)\n"
        + note +
        "Exit status: 1 while the runtime differs from what the text requires (the divergence stands),\n"
        "0 once it agrees, 2 when the runtime fails some other way.\n"
        '"""\n\nimport pathlib  # noqa: F401\nimport sys\n\nimport numpy as np\n\nnan, inf = float("nan"), float("inf")  # as the input below writes them\n\n'
    )


def _family_reproducer(case: Case, runtime: str, klass: str, atoms: Sequence[str], severity: str) -> Reproducer:
    """The script for a family case (LpPool, global pooling, MaxUnpool, adaptive pooling)."""
    spec = case.spec
    assert isinstance(spec, FamilySpec)
    x = np.asarray(case.input)
    call = family_runtime_call(runtime, spec, x.shape, x.dtype)
    expects = "rejection" if klass.startswith("rejects") else "output"
    data: dict[str, Any] = {**_described(case, runtime, klass, atoms, severity, expects),
                            **family_constants(spec, x.shape), "BFLOAT16": False}
    consts = "\n".join(f"{k} = {v!r}" for k, v in data.items())
    given = case.inputs.get("I")
    indices = "None" if given is None else _array_literal(np.asarray(given, dtype=np.int64))
    body = (_header(case, runtime, klass, severity, call) + _textbook_source() + "\n\n\n" + textbook_family_source()
            + "\n\n\n# ---- the configuration\n" + consts + f"\nX = {_array_literal(x)}\nI = {indices}\n\n"
            "# ---- the runtime, called plainly\n" + call.code + FAMILY_REFERENCE + _MAIN)
    return Reproducer(case.id, runtime, klass, severity, body, call.model)


@dataclass
class ReproRun:
    """What ``poolcheck repro`` wrote: each case's files, and the cases it could not write (why)."""

    written: list[tuple[str, list[Path]]]
    skipped: list[tuple[str, str]]


def _plugin_exists(ref: str) -> bool:
    """A plugin file that exists, or a module Python can find (without running it)."""
    if ref.endswith(".py") or "/" in ref:
        return Path(ref).is_file()
    try:
        return importlib.util.find_spec(ref) is not None
    except (ImportError, ValueError):
        return False


def write_reproducers(paths: Sequence[str | Path], directory: str | Path, *, k: str | None = None,
                      runtime: str | None = None) -> ReproRun:
    """A script for every selected case of ``paths`` (default: the bundled known-divergence
    registry) into ``directory``. ``k`` selects cases by id substring; ``runtime`` overrides each
    case's own runtime. Bad case files raise :class:`CaseFileError`; a case the runtime cannot
    express, or that names no runtime, is skipped with its reason."""
    if runtime is not None and is_plugin(runtime) and not _plugin_exists(runtime):
        raise AttributeValueError("--runtime", f"no built-in runtime, plugin file or module {runtime!r} (built-in "
                                               f"runtimes: {', '.join(RUNTIMES)})")
    cases, errors = load_paths([Path(p) for p in paths] or [KNOWN_DIR])
    if errors:
        raise errors[0]
    selected = [c for c in cases if k is None or k in c.id]
    if not selected:
        raise CaseFileError(f"no case matches -k {k!r}" if k else "no case found", path=", ".join(map(str, paths)))
    run = ReproRun([], [])
    for case in selected:
        try:
            rep = reproducer(case, runtime)
        except (PoolcheckError, ValueError) as exc:
            run.skipped.append((case.id, str(exc)))
            continue
        run.written.append((case.id, rep.write(directory)))
    return run
