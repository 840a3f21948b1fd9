"""The architecture as a test: the import graph has no cycle and data flows one way.

Reads every module of ``heuresis_env``, ``agents``, ``baselines`` and ``heuresis`` (the
namespace of the inspect tasks) with :mod:`ast` (nothing is imported) and checks the rules of
``docs/architecture.md``:

- no import cycle between modules;
- ``heuresis_env`` imports neither ``agents`` nor ``baselines``;
- the rooms of ``heuresis_env`` import only rooms at their own stage or earlier
  (instance → evidence → environment → policy → run → report);
- ``reports`` and ``studies`` never import the environment (``env``, its toolbox);
- no project import inside a function (heavy third-party libraries may load lazily), except in
  the ``run`` function of a command module of ``agents`` (``heuresis --help`` reads every
  command's arguments, and must not load torch or the environment to do it);
- ``agents``, ``baselines`` and ``heuresis`` use ``heuresis_env`` through its public subpackage
  APIs; nothing but ``heuresis`` imports ``heuresis``;
- no module over 700 lines;
- one rule for the faces (``__init__.py``) of ``agents``, ``baselines`` and ``heuresis``: a
  face re-exports light names (importing it, in a fresh interpreter, loads neither torch nor
  the evaluation stage), a lazy face is lazy in the one way of :mod:`agents.faces`, no public
  name hides a module of its package, and no module imports another subpackage's modules
  past its face.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("heuresis_env", "agents", "baselines", "heuresis")

#: the stage of each room of heuresis_env; a module may import its own stage or earlier ones
STAGES = {
    "foundation": 0, "isolation": 0, "generation": 1, "discovery": 2, "evidence": 3, "env": 4, "questions": 4,
    "policy": 5, "evaluation": 6, "studies": 7, "reports": 8, "viewer": 9, "mcp": 9, "cli": 10,
}
#: top-level modules of heuresis_env and the stage they belong to
TOP_LEVEL_STAGE = {"policy": "policy", "__init__": "cli", "__main__": "cli"}
#: what agents and baselines may import from heuresis_env: subpackage faces and the
#: foundation modules (each one concept, public as a whole)
PUBLIC_MODULES = {
    "heuresis_env", "heuresis_env.generation", "heuresis_env.discovery",
    "heuresis_env.discovery.citests", "heuresis_env.evidence", "heuresis_env.env",
    "heuresis_env.evaluation", "heuresis_env.reports", "heuresis_env.studies",
    "heuresis_env.questions", "heuresis_env.policy", "heuresis_env.errors",
    "heuresis_env.graphs", "heuresis_env.metrics", "heuresis_env.seeding",
    "heuresis_env.cache", "heuresis_env.budgets", "heuresis_env.registration",
    "heuresis_env.files", "heuresis_env.data", "heuresis_env.trace_files", "heuresis_env.version",
    "heuresis_env.threads", "heuresis_env.progress", "heuresis_env.console",
    "heuresis_env.isolation",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


MODULES = modules()


def lazy_exports(tree: ast.Module) -> dict[str, str] | None:
    """A lazy face's ``_EXPORTS`` table (public name → module of the package), or None."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "_EXPORTS"):
            return ast.literal_eval(node.value)
    return None


def bound_names(path: Path) -> set[str]:
    """Names a package's ``__init__`` binds at module level (its public face), the names of
    a lazy face's ``_EXPORTS`` table included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set(lazy_exports(tree) or ())
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
    return names


FACES = {name: bound_names(path) for name, path in MODULES.items() if path.name == "__init__.py"}


def resolve(name: str) -> str | None:
    """The project module an imported name refers to (a module, or the module holding it)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path) -> list[tuple[str, str, int]]:
    """(imported project module, outermost enclosing function or "", line) per project import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST, in_function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or (child.name if isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef) else "")
            if isinstance(child, ast.Import):
                names = [alias.name for alias in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parent = package.split(".")
                    parent = parent[:len(parent) - (child.level - 1)]
                    base = ".".join(parent + ([base] if base else []))
                # ``from pkg import submodule`` imports the submodule, unless the package's
                # face binds that name itself; ``from m import name`` imports m
                names = [f"{base}.{alias.name}"
                         if f"{base}.{alias.name}" in MODULES
                         and alias.name not in FACES.get(base, ()) else base
                         for alias in child.names]
            else:
                visit(child, inside)
                continue
            targets = {resolve(name) for name in names if name.split(".")[0] in PACKAGES}
            for target in sorted(t for t in targets if t and t != module):
                found.append((target, in_function, child.lineno))
    visit(tree, "")
    return found


EDGES = [(module, target, in_function, line)
         for module, path in MODULES.items()
         for target, in_function, line in imports_of(module, path)]


def graph() -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(MODULES)
    g.add_edges_from((a, b) for a, b, _, _ in EDGES)
    return g


def room(module: str) -> str | None:
    """The room of a heuresis_env module (None outside heuresis_env)."""
    parts = module.split(".")
    if parts[0] != "heuresis_env":
        return None
    if len(parts) == 1:
        return "cli"
    if MODULES[module].name == "__init__.py" and len(parts) == 2:
        return parts[1] if parts[1] in STAGES else "foundation"
    if len(parts) == 2:
        return TOP_LEVEL_STAGE.get(parts[1], "foundation")
    return parts[1]


#: the longest a module may be, in every package (one concept a module; issue 43)
MAX_MODULE_LINES = 700


def test_no_module_is_over_700_lines():
    """``scripts/code_lengths.py`` lists them, and the functions over 80 lines."""
    long = {name: lines for name, path in MODULES.items()
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by concept): {long}"


def test_every_room_has_a_stage():
    rooms = {room(m) for m in MODULES if m.startswith("heuresis_env")}
    assert rooms <= set(STAGES), f"rooms without a stage in STAGES: {rooms - set(STAGES)}"


def test_the_import_graph_has_no_cycle():
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph()) if len(c) > 1]
    assert not cycles, f"import cycles: {cycles}"


def test_heuresis_env_imports_neither_agents_nor_baselines():
    bad = [f"{a}:{line} imports {b}" for a, b, _, line in EDGES
           if a.startswith("heuresis_env") and b.split(".")[0] in ("agents", "baselines")]
    assert not bad, "\n".join(bad)


def test_data_flows_one_way_between_rooms():
    bad = []
    for a, b, _, line in EDGES:
        ra, rb = room(a), room(b)
        if ra is None or rb is None or ra == rb:
            continue
        if STAGES[rb] > STAGES[ra]:
            bad.append(f"{a}:{line} ({ra}) imports {b} ({rb}), a later stage")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("reader", ["reports", "studies", "viewer"])
def test_readers_of_runs_never_import_the_environment(reader):
    bad = [f"{a}:{line} imports {b}" for a, b, _, line in EDGES
           if room(a) == reader and room(b) == "env"]
    assert not bad, "\n".join(bad)


def is_command_module(module: str) -> bool:
    """A ``heuresis.commands`` plugin of agents: ``agents.cli_*`` or ``agents.*.cli``."""
    last = module.rpartition(".")[2]
    return module.startswith("agents.") and (last == "cli" or last.startswith("cli_"))


def test_no_project_import_inside_a_function():
    bad = [f"{MODULES[a].relative_to(ROOT)}:{line} imports {b} inside {function}()"
           for a, b, function, line in EDGES
           if function and not (is_command_module(a) and function == "run")]
    assert not bad, "\n".join(bad)


def test_agents_and_baselines_use_the_public_api():
    bad = [f"{a}:{line} imports {b}" for a, b, _, line in EDGES
           if a.split(".")[0] in ("agents", "baselines", "heuresis")
           and b.startswith("heuresis_env") and b not in PUBLIC_MODULES]
    assert not bad, "\n".join(bad)


def test_only_inspect_reaches_the_inspect_namespace():
    """``heuresis`` holds the tasks inspect registers (through the ``inspect_ai`` entry point);
    the project never imports it."""
    bad = [f"{a}:{line} imports {b}" for a, b, _, line in EDGES
           if b.split(".")[0] == "heuresis" and a.split(".")[0] != "heuresis"]
    assert not bad, "\n".join(bad)


#: the faces the rule for faces covers (heuresis_env's rooms have the stage rules above)
OUTER_FACES = sorted(name for name, path in MODULES.items()
                     if path.name == "__init__.py" and name.split(".")[0] != "heuresis_env")
#: what importing a face must not load: torch, and the evaluation stage
HEAVY = ("torch", "heuresis_env.evaluation")


@pytest.mark.parametrize("face", OUTER_FACES)
def test_a_face_loads_neither_torch_nor_the_evaluation_stage(face):
    """Imported in a fresh interpreter (nothing else loaded first), as the ``heuresis``
    command, an entry point or another package imports it."""
    code = (f"import sys, json, importlib; importlib.import_module({face!r}); "
            f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=300,
                          env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert not loaded, (f"import {face} loads {loaded}: load those names lazily "
                        "(agents/faces.py says how)")


def test_no_module_reaches_past_another_subpackages_face():
    """``agents``, ``baselines`` and ``heuresis`` import another subpackage through its face
    (``from agents.llm import LLMPolicy``, not ``from agents.llm.policy import LLMPolicy``);
    their top-level modules (``agents.checks``, ``baselines.policies``) are public whole."""
    bad = []
    for a, b, _, line in EDGES:
        if b.split(".")[0] == "heuresis_env" or MODULES[b].name == "__init__.py":
            continue
        package = b.rpartition(".")[0]
        if "." in package and a != package and not a.startswith(package + "."):
            bad.append(f"{a}:{line} imports {b}: import its names from {package}")
    assert not bad, "\n".join(bad)


def type_checking_imports(tree: ast.Module) -> dict[str, str]:
    """Name → module of the imports under a face's ``if TYPE_CHECKING:``."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for child in node.body:
                if isinstance(child, ast.ImportFrom):
                    found.update({alias.asname or alias.name: child.module or ""
                                  for alias in child.names})
    return found


@pytest.mark.parametrize("face", OUTER_FACES)
def test_a_lazy_face_is_lazy_the_one_way(face):
    """A face that loads its names on first use does it through ``agents.faces.lazy_face``
    from an ``_EXPORTS`` table the ``TYPE_CHECKING`` imports repeat name for name; no face
    swaps its module's class; no public name is also a module of the package (importing that
    module would bind it on the package in the name's place)."""
    tree = ast.parse(MODULES[face].read_text(encoding="utf-8"))
    source = ast.unparse(tree)
    assert "__class__" not in source, f"{face} changes its module's class"
    submodules = {m.rpartition(".")[2] for m in MODULES if m.rpartition(".")[0] == face}
    hidden = sorted(FACES[face] & submodules)
    assert not hidden, f"{face} exports names that are also its modules: {hidden}"
    exports = lazy_exports(tree)
    defines = [node for node in tree.body if "__getattr__" in {
        getattr(n, "id", getattr(n, "name", None)) for n in ast.walk(node)}]
    if exports is None:
        assert not defines, f"{face} has a __getattr__ but no _EXPORTS table"
        return
    one_way = [node for node in defines if isinstance(node, ast.Assign)
               and ast.unparse(node.targets[0]) == "(__getattr__, __dir__)"
               and isinstance(node.value, ast.Call)
               and ast.unparse(node.value.func) == "lazy_face"
               and [ast.unparse(arg) for arg in node.value.args] == ["__name__", "_EXPORTS"]]
    assert len(defines) == len(one_way) == 1, (
        f"{face}: a lazy face gets its __getattr__ one way: "
        "`__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)` (agents/faces.py)")
    assert type_checking_imports(tree) == {
        name: f"{face}.{module}" for name, module in exports.items()}, (
        f"{face}: the TYPE_CHECKING imports and _EXPORTS differ")
    assert set(exports.values()) <= submodules
    public = next(ast.literal_eval(node.value) for node in tree.body
                  if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__")
    own = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    assert set(exports) <= set(public) <= set(exports) | own, (
        f"{face}: __all__ is the _EXPORTS names (and the face's own functions)")


def test_tests_take_only_main_from_a_main_module():
    """A ``__main__`` module is a command's door (its ``main``); the library it runs lives in
    importable modules (``cli``, ``commands``), which is where tests import it from."""
    bad = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("__main__"):
                bad += [f"{path.relative_to(ROOT)}:{node.lineno} imports {alias.name} from "
                        f"{node.module}" for alias in node.names if alias.name != "main"]
    assert not bad, "\n".join(bad)


def test_the_checks_see_the_imports():
    """The parser finds what it should (a broken parser would pass every check above)."""
    assert ("heuresis_env.env.core", "heuresis_env.env.toolbox.registry") in {
        (a, b) for a, b, _, _ in EDGES}
    assert room("heuresis_env.env.toolbox.registry") == "env"
    assert room("heuresis_env.errors") == "foundation"
    assert len(MODULES) > 80
