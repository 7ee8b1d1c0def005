"""The core library and the CLI work without Streamlit: only `hierdp_core.ui` (the dashboard's
layer) may import it. Checked in a child Python in which importing Streamlit fails, and by
scanning the core's module-level imports."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd

import hierdp_core

CORE = Path(hierdp_core.__file__).resolve().parent
UI = CORE / "ui"

# run first in the child: any import of streamlit (or a submodule) raises ImportError
BLOCK = textwrap.dedent("""
    import sys
    from importlib.abc import MetaPathFinder

    class NoStreamlit(MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "streamlit" or name.startswith("streamlit."):
                raise ImportError(f"{name} is blocked: the core must work without Streamlit")
            return None

    for name in [m for m in sys.modules if m == "streamlit" or m.startswith("streamlit.")]:
        del sys.modules[name]
    sys.meta_path.insert(0, NoStreamlit())
""")


def run_blocked(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK + textwrap.dedent(code)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def core_modules() -> list[str]:
    """Dotted names of every module of the package outside ``hierdp_core/ui``."""
    names = []
    for path in sorted(CORE.rglob("*.py")):
        if UI in path.parents or path.name == "__main__.py":
            continue
        parts = path.relative_to(CORE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_the_block_itself_works(tmp_path):
    done = run_blocked("import hierdp_core.ui.session", tmp_path)
    assert done.returncode != 0 and "streamlit is blocked" in done.stderr


def test_every_core_module_imports_without_streamlit(tmp_path):
    modules = core_modules()
    assert len(modules) > 30 and "hierdp_core.cli.main" in modules
    done = run_blocked(f"""
        import importlib, json
        for name in {modules!r}:
            importlib.import_module(name)
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("streamlit"))))
    """, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_cli_runs_without_streamlit(tmp_path):
    table = pd.DataFrame({"state": ["A", "A", "B"], "county": ["A1", "A2", "B1"],
                          "count": [10, 20, 30]})
    table.to_csv(tmp_path / "t.csv", index=False)
    cli = "import runpy; sys.argv = {argv!r}; runpy.run_module('hierdp_core', run_name='__main__')"
    helped = run_blocked(cli.format(argv=["hierdp", "--help"]), tmp_path)
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert "release" in helped.stdout
    argv = ["hierdp", "release", "t.csv", "--levels", "state,county", "--count-column",
            "count", "--structure-from-data", "--mechanism", "topdown", "--epsilon", "1",
            "--seed", "3", "--out", "out"]
    released = run_blocked(cli.format(argv=argv), tmp_path)
    assert released.returncode == 0, released.stderr[-2000:]
    assert (tmp_path / "out").is_dir() and any((tmp_path / "out").iterdir())


def imports_streamlit(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "streamlit" for a in node.names)
    return isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "streamlit"


def module_level(tree: ast.Module):
    """The statements run on import: the module's body and the blocks of its top-level
    if/try/with statements (not function or class bodies)."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                stack.extend(getattr(node, field, []))
        elif isinstance(node, ast.ExceptHandler):
            stack.extend(node.body)


def test_no_core_module_imports_streamlit_at_module_level():
    offenders = [str(path.relative_to(CORE.parent)) for path in sorted(CORE.rglob("*.py"))
                 if UI not in path.parents
                 and any(map(imports_streamlit, module_level(ast.parse(path.read_text()))))]
    assert offenders == []
    # and the scan sees an import where there is one
    assert any(map(imports_streamlit, module_level(ast.parse((UI / "session.py").read_text()))))
