"""The floors of docs/architecture.md, enforced: every module of poolcheck is read with ``ast``;
no module imports a higher floor than its own, and no module imports poolcheck inside a function
(function-level imports are for optional third-party dependencies only: runtimes, dask, redis)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "poolcheck"

#: The floors table of docs/architecture.md: module prefix -> floor. The longest matching prefix
#: wins; a module no prefix matches fails the test (the table must name every module).
FLOORS: dict[str, int] = {
    "poolcheck.errors": 0,
    "poolcheck.userdata": 0,
    "poolcheck.fingerprint": 0,
    "poolcheck.results": 0,
    "poolcheck.spec": 1,
    "poolcheck.engines": 2,
    "poolcheck.api": 2,
    # The package itself re-exports the public functions of api.py: importing it is floor 2.
    "poolcheck": 2,
    "poolcheck.peers": 3,
    "poolcheck.cases": 3,
    "poolcheck.corpus": 3,
    "poolcheck.models": 3,  # reading and writing ONNX models: onnx_import, export, risk
    "poolcheck.judgement": 4,
    "poolcheck.runner": 5,
    "poolcheck.explain": 5,
    "poolcheck.repro": 5,  # standalone reproducer scripts: cases, peers' translations, spec sentences
    "poolcheck.fuzz": 5,
    "poolcheck.bench": 5,
    "poolcheck.models.audit": 5,  # `poolcheck audit`: runs a model's pool nodes like cases
    "poolcheck.report": 6,
    "poolcheck.cli": 7,
    "poolcheck.__main__": 7,
}

#: poolcheck imports allowed inside a function, as (importing module, imported module). Keep it
#: to the unavoidable minimum; a lazy import of poolcheck is never the way out of a cycle.
LOCAL_IMPORTS_ALLOWED: set[tuple[str, str]] = {
    # The registry builds each built-in peer lazily. Hoisting these imports (no cycle) made
    # tests/test_cluster.py::test_two_clients_share_a_redis_database fail (a find in the shared
    # database was not replayed); the cause is not found yet, so they stay until it is.
    *(("poolcheck.peers.registry", f"poolcheck.peers.{name}") for name in (
        "onnxruntime_peer", "openvino_peer", "torch_peer", "onnx_reference_peer", "tract_peer", "jax_peer",
        "openvino_onnx_peer", "torch_onnx_peer", "onnx_backend_peer")),
}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the poolcheck module imported
    line: int
    text: str  # the statement as written
    in_function: bool


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str, package: Path = PACKAGE) -> bool:
    """Whether ``name`` (dotted, under poolcheck) is a module or package file of the tree."""
    rel = Path(*name.split("."))
    root = package.parent
    return (root / rel).with_suffix(".py").is_file() or (root / rel / "__init__.py").is_file()


def poolcheck_imports(path: Path, package_dir: Path = PACKAGE) -> Iterator[Import]:
    """Every import of a poolcheck module in ``path``, resolved to the module actually imported
    (``from poolcheck import spec`` imports ``poolcheck.spec``; ``from poolcheck.spec.shape import
    resolve`` imports ``poolcheck.spec.shape``)."""
    source = path.read_text(encoding="utf-8")
    name = module_name(path, package_dir)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(node: ast.AST, in_function: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            text = ast.get_source_segment(source, child) or "" if isinstance(child, (ast.Import, ast.ImportFrom)) else ""
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name == "poolcheck" or alias.name.startswith("poolcheck."):
                        yield Import(name, alias.name, child.lineno, text, in_function)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    origin = ".".join(base + ([child.module] if child.module else []))
                else:
                    origin = child.module or ""
                if origin == "poolcheck" or origin.startswith("poolcheck."):
                    for alias in child.names:
                        sub = f"{origin}.{alias.name}"
                        target = sub if is_module(sub, package_dir) else origin
                        yield Import(name, target, child.lineno, text, in_function)
            yield from visit(child, inner)

    yield from visit(ast.parse(source, filename=str(path)), False)


def floor_of(module: str) -> int | None:
    best = None
    for prefix in FLOORS:
        if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best)):
            best = prefix
    return None if best is None else FLOORS[best]


MODULES = sorted(PACKAGE.rglob("*.py"))


def where(imp: Import) -> str:
    return f"{imp.module} (line {imp.line}): {' '.join(imp.text.split())}"


def test_the_tree_is_found() -> None:
    names = {module_name(p) for p in MODULES}
    assert {"poolcheck.spec.poolspec", "poolcheck.cli.run", "poolcheck.judgement"} <= names


def test_every_module_has_a_floor() -> None:
    missing = [module_name(p) for p in MODULES if floor_of(module_name(p)) is None]
    assert not missing, f"modules missing from the floors table of docs/architecture.md: {missing}"


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_no_module_imports_a_higher_floor(path: Path) -> None:
    own = floor_of(module_name(path))
    bad = [
        f"{where(imp)} imports floor {floor_of(imp.target)} ({imp.target}) from floor {own}"
        for imp in poolcheck_imports(path)
        if own is not None and (floor_of(imp.target) or 0) > own
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_no_poolcheck_import_inside_a_function(path: Path) -> None:
    bad = [
        f"{where(imp)} imports {imp.target} inside a function (import it at the top of the module)"
        for imp in poolcheck_imports(path)
        if imp.in_function and (imp.module, imp.target) not in LOCAL_IMPORTS_ALLOWED
    ]
    assert not bad, "\n".join(bad)


def test_allowed_local_imports_still_exist() -> None:
    """An entry of the allow-list that no longer matches anything is removed, not kept."""
    seen = {(i.module, i.target) for p in MODULES for i in poolcheck_imports(p) if i.in_function}
    assert LOCAL_IMPORTS_ALLOWED <= seen, f"stale entries: {sorted(LOCAL_IMPORTS_ALLOWED - seen)}"


# The checker itself, on made-up sources: it must see what it is meant to catch.
def _imports_of(tmp_path: Path, rel: str, source: str) -> list[Import]:
    """The imports the checker finds in ``source`` written as ``poolcheck/<rel>`` of a made-up
    tree that has ``poolcheck.spec.shape`` and ``poolcheck.cli``."""
    fake = tmp_path / "poolcheck"
    (fake / "spec").mkdir(parents=True)
    for name in ("__init__.py", "cli.py", "spec/__init__.py", "spec/shape.py"):
        (fake / name).touch()
    target = fake / rel
    target.write_text(source, encoding="utf-8")
    return list(poolcheck_imports(target, fake))


def test_checker_resolves_and_locates_imports(tmp_path: Path) -> None:
    found = _imports_of(tmp_path, "spec/rows.py", (
        "from poolcheck import spec\n"
        "from . import shape\n"
        "from poolcheck.spec.shape import resolve\n"
        "def f():\n"
        "    if True:\n"
        "        import poolcheck.cli\n"
        "import numpy\n"
    ))
    assert [(i.target, i.line, i.in_function) for i in found] == [
        ("poolcheck.spec", 1, False),
        ("poolcheck.spec.shape", 2, False),
        ("poolcheck.spec.shape", 3, False),
        ("poolcheck.cli", 6, True),
    ]
    assert floor_of("poolcheck.cli") == 7 and floor_of("poolcheck.spec.rows") == 1
    assert floor_of("poolcheck.models.audit") == 5 and floor_of("poolcheck.models.risk") == 3
    assert floor_of("poolcheck.resultsx") == 2  # a prefix matches whole names only
