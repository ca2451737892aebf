"""The floors of docs/architecture.md, enforced: every module of poolcheck is read with ``ast``;
no module imports a higher floor than its own, and no module imports poolcheck inside a function
(function-level imports are for optional third-party dependencies only: runtimes, dask, redis).
The floor table is read from the page itself, and every path the page names must exist."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import ROOT

PACKAGE = ROOT / "poolcheck"
DOC = ROOT / "docs" / "architecture.md"


def doc_floors(text: str) -> dict[str, int]:
    """The floors table of docs/architecture.md: module prefix -> floor, from every
    `` `poolcheck/...` `` path in a row's package column (``poolcheck/spec/`` -> ``poolcheck.spec``,
    ``poolcheck/__init__.py`` -> ``poolcheck``). The longest matching prefix wins."""
    floors: dict[str, int] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or not cells[0].isdigit():
            continue
        for path in re.findall(r"`(poolcheck/[^`]*)`", cells[1]):
            parts = path.rstrip("/").removesuffix(".py").split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            floors[".".join(parts)] = int(cells[0])
    return floors


FLOORS: dict[str, int] = doc_floors(DOC.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the poolcheck module imported
    line: int
    text: str  # the statement (as ast.unparse spells it)
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
            # ast.unparse, not get_source_segment: that splits the whole source again for every import
            text = ast.unparse(child) if isinstance(child, (ast.Import, ast.ImportFrom)) else ""
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
    """Every module has a row of its own (the package's row, floor 2, is for ``__init__.py``
    only: a new top-level module must be placed)."""
    named = {m for m in FLOORS if m != "poolcheck"}
    missing = [m for m in map(module_name, MODULES) if m != "poolcheck"
               and not any(m == prefix or m.startswith(prefix + ".") for prefix in named)]
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
        if imp.in_function
    ]
    assert not bad, "\n".join(bad)


def test_the_floor_table_is_read_from_the_doc() -> None:
    assert FLOORS["poolcheck.errors"] == 0 and FLOORS["poolcheck.files"] == 0
    assert FLOORS["poolcheck.spec"] == 1 and FLOORS["poolcheck"] == 2 and FLOORS["poolcheck.peers"] == 3
    assert FLOORS["poolcheck.models"] == 3 and FLOORS["poolcheck.models.audit"] == 5
    assert FLOORS["poolcheck.report"] == 6 and FLOORS["poolcheck.cli"] == 7 and FLOORS["poolcheck.__main__"] == 7


def test_every_path_the_doc_names_exists() -> None:
    """A row or a sentence naming a module that was moved or removed fails here."""
    text = DOC.read_text(encoding="utf-8")
    root = PACKAGE.parent
    missing = sorted({p for p in re.findall(r"`(poolcheck/[\w/.]*)`", text) if not (root / p).exists()})
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"


def test_builtin_peers_are_peer_classes_of_the_peers_floor() -> None:
    """The registry's table is data, loaded by name at run time (no import the checks above can
    see): each entry must name a class defined in a module of the peers floor."""
    from poolcheck.peers.registry import BUILTIN_PEERS, TAKES_ARGUMENT

    assert set(TAKES_ARGUMENT) <= set(BUILTIN_PEERS)
    for name, entry in BUILTIN_PEERS.items():
        module, _, cls = entry.partition(":")
        assert module.startswith("poolcheck.peers.") and floor_of(module) == FLOORS["poolcheck.peers"], entry
        path = PACKAGE.parent / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert any(isinstance(n, ast.ClassDef) and n.name == cls for n in tree.body), f"{name}: {entry} has no class {cls}"


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


def test_the_table_reader_on_a_made_up_page() -> None:
    page = (
        "| floor | package | holds | may import |\n| --- | --- | --- | --- |\n"
        "| 0 | `poolcheck/errors.py`, `poolcheck/files.py` | errors | nothing |\n"
        "| 3 | `poolcheck/models/` (except `audit.py`) | models | spec |\n"
        "| 2 | `poolcheck/__init__.py` | the package | spec |\n"
        "not a row: `poolcheck/cli/`\n"
    )
    assert doc_floors(page) == {"poolcheck.errors": 0, "poolcheck.files": 0, "poolcheck.models": 3, "poolcheck": 2}
