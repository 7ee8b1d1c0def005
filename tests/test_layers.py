"""The layers of `hierdp_core`, bottom to top: a module imports only from its own layer or
the layers below (module level or inside a function alike), and no modules import each other
in a loop. An AST check of the source: nothing is imported. The layers are in
``docs/layout.md``."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "hierdp_core"

#: bottom to top; a module belongs to the layer of the longest prefix naming it (a package
#: or a module, dotted under hierdp_core)
LAYERS = (
    ("foundations", ("errors", "ids", "atomic", "interrupts", "defaults", "palette", "metric_names",
                     "mechanism_names", "tree_levels", "declared_values", "column_roles",
                     "query_columns", "publisher_key", "manifest_seal", "text_arrays",
                     "number_text", "query_settings")),
    ("data", ("hierarchy", "reading_order", "data", "queries", "structure", "categories", "memory_plan",
              "memory_sparse", "groupsizes.data",
              "groupsizes.declared_groups", "groupsizes.samples", "flows.data",
              "flows.samples", "flows.synthetic", "ranges.workloads", "ranges.hilbert")),
    ("privacy", ("privacy", "count_forecast")),
    ("algorithms", ("consistency", "groupsizes", "flows", "ranges")),
    ("mechanisms", ("mechanisms", "memory_of_data", "releases", "flows.release", "flows.tree",
                    "invariants", "verdict", "metrics")),
    ("intervals", ("intervals",)),
    ("engines", ("engine", "export", "table_rules", "audit", "config")),
    ("analysis", ("experiments", "ranges_sweep", "compare", "explain", "explain_errors",
                  "viz", "figure_parts", "map_figures", "noisy_view", "sweep_figures", "sweep_panels",
                  "groupsizes.experiments", "groupsizes.figures", "flows.experiments",
                  "flows.figures", "flows.metrics", "ranges.evaluation", "ranges.figures",
                  "geo", "report")),
    # the two front ends: the command line and the Python API (both run a release from
    # one `ReleaseConfig`)
    ("front ends", ("cli", "__main__", "api", "reproduce")),
    ("ui", ("ui",)),
)
LAYER_NAMES = [name for name, _ in LAYERS]


def module_files() -> dict[str, Path]:
    """Every module of hierdp_core by dotted name under it (a package by its folder)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _runtime_nodes(tree: ast.AST):
    """Every node of ``tree`` except those under ``if TYPE_CHECKING:`` (imports for
    annotations only, never run)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not (isinstance(child, ast.If) and isinstance(child.test, ast.Name)
                    and child.test.id == "TYPE_CHECKING"):
                todo.append(child)


def _imported_names(tree: ast.AST) -> list[str]:
    """The absolute dotted names of hierdp_core that ``tree`` imports, wherever it does:
    ``import``, ``from ... import`` (each name, which may be a module) and
    ``importlib.import_module("...")`` with a literal name."""
    names = []
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [f"{node.module}.{alias.name}" for alias in node.names]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            names.append(node.args[0].value)
    return [n.removeprefix("hierdp_core.") for n in names if n.startswith("hierdp_core.")]


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The module ``name`` (a module, or a name inside one) belongs to."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


@functools.lru_cache(maxsize=1)
def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of hierdp_core it imports (itself and the bare package left
    out)."""
    modules = module_files()
    graph = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[module] = {owner for name in _imported_names(tree)
                         if (owner := _owner(name, modules)) not in (None, module)}
    return graph


def layer_of(module: str) -> int:
    """The index in `LAYERS` of ``module`` (the package root: the Python API's layer)."""
    if module in ("", "__init__"):
        module = "api"
    best, index = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, index = len(prefix), i
    assert index is not None, f"hierdp_core.{module} is in no layer of LAYERS"
    return index


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) of every import of a module of a higher layer."""
    return {(a, b) for a, bs in graph.items() for b in bs if layer_of(b) > layer_of(a)}


def import_loops(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """The modules of every loop of imports (strongly connected sets of two or more
    modules), each sorted (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, loops = {}, {}, set(), [], set()
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    loops.add(tuple(sorted(members)))
    return loops


#: upward imports and import loops not yet removed (issue 29): none is left; an entry would
#: be a known debt, and the tests fail once one is gone so that the lists only shrink
KNOWN_UPWARD: set[tuple[str, str]] = set()
KNOWN_LOOPS: set[tuple[str, ...]] = set()


def test_every_module_has_a_layer():
    for module in import_graph():
        layer_of(module)


def test_the_checks_see_an_upward_import_and_a_loop():
    graph = {"errors": {"ui.session"}, "ui.session": {"errors"}, "cli.main": {"privacy.plan"},
             "privacy.plan": set()}
    assert upward_imports(graph) == {("errors", "ui.session")}
    assert import_loops(graph) == {("errors", "ui.session")}
    source = ("import hierdp_core.ui.session\nfrom hierdp_core.data import loaders\n"
              "def f():\n    from hierdp_core.errors import InputError\n"
              "    importlib.import_module('hierdp_core.cli.main')\n"
              "if TYPE_CHECKING:\n    from hierdp_core.viz import x\n")
    assert sorted(_imported_names(ast.parse(source))) == [
        "cli.main", "data.loaders", "errors.InputError", "ui.session"]


def test_no_upward_import_but_the_known_ones():
    found = upward_imports(import_graph())
    assert not found - KNOWN_UPWARD, "imports from a higher layer (see LAYERS)"
    assert not KNOWN_UPWARD - found, "gone: remove them from KNOWN_UPWARD"


def test_no_import_loop_but_the_known_ones():
    found = import_loops(import_graph())
    assert not found - KNOWN_LOOPS, "modules that import each other in a loop"
    assert not KNOWN_LOOPS - found, "gone or changed: update KNOWN_LOOPS"


#: the house rule for a module's size (STYLE.md: small modules with one job)
MAX_MODULE_LINES = 400


def test_no_module_is_over_the_size_rule():
    long = {name: n for name, path in module_files().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


#: the modules that may import argparse: the command line's parser; every other module
#: (the release path, the Python API, reproduce, the engines, the dashboard) takes a
#: `ReleaseConfig`, converted from the parsed arguments at the command's boundary
ARGPARSE_MODULES = {"cli.parser"}


def argparse_importers(sources: dict[str, str]) -> set[str]:
    """The modules (name -> source) that import argparse or a name from it."""
    return {name for name, source in sources.items()
            for node in _runtime_nodes(ast.parse(source))
            if (isinstance(node, ast.Import)
                and any(a.name.split(".")[0] == "argparse" for a in node.names))
            or (isinstance(node, ast.ImportFrom) and node.level == 0
                and (node.module or "").split(".")[0] == "argparse")}


def test_only_the_parser_imports_argparse():
    assert argparse_importers({"a": "import os\ndef f():\n    import argparse\n",
                               "b": "from argparse import Namespace\n",
                               "c": "import argparser\n"}) == {"a", "b"}
    sources = {name: path.read_text(encoding="utf-8") for name, path in module_files().items()}
    assert argparse_importers(sources) == ARGPARSE_MODULES
