"""The dashboard names its session keys in one place (`hierdp_core.ui.session`): no page or
ui module reads or writes ``st.session_state`` under a literal string key."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSION = ROOT / "hierdp_core" / "ui" / "session.py"
ACCESSORS = {"get", "pop", "setdefault"}


def dashboard_files() -> list[Path]:
    files = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")),
             *sorted((ROOT / "hierdp_core" / "ui").glob("*.py"))]
    return [f for f in files if f != SESSION]


def _is_session_state(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "session_state"


def _literal(node: ast.AST) -> bool:
    """A string written out in place: a constant, or an f-string with text of its own."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, ast.JoinedStr) and any(
        isinstance(v, ast.Constant) and v.value for v in node.values)


def literal_keys(source: str) -> list[tuple[int, str]]:
    """(line, key) of every ``session_state[...]``, ``session_state.get/pop/setdefault(...)``
    and ``... in session_state`` under a literal key in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if isinstance(node, ast.Subscript) and _is_session_state(node.value):
            key = node.slice
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ACCESSORS and _is_session_state(node.func.value)
              and node.args):
            key = node.args[0]
        elif (isinstance(node, ast.Compare) and len(node.ops) == 1
              and isinstance(node.ops[0], (ast.In, ast.NotIn))
              and _is_session_state(node.comparators[0])):
            key = node.left
        if key is not None and _literal(key):
            found.append((node.lineno, ast.unparse(key)))
    return found


def test_the_check_sees_literal_keys():
    source = ("st.session_state['a'] = 1\nst.session_state.get(f'{p}_b')\n"
              "'c' in st.session_state\nst.session_state[KEY]\nst.session_state.get(key(p))\n")
    assert [line for line, _ in literal_keys(source)] == [1, 2, 3]


def test_no_literal_session_keys_outside_the_session_module():
    found = {f"{path.relative_to(ROOT)}:{line}": key for path in dashboard_files()
             for line, key in literal_keys(path.read_text(encoding="utf-8"))}
    assert found == {}


def key_names(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string in ``source`` that names a session key of the
    dashboard's own (``hd_...``), written out or leading an f-string (its first part)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value.startswith("hd_"):
            found.append((node.lineno, node.value))
    return found


def test_the_key_check_sees_key_names():
    source = 'A = "hd_a"\nB = f"hd_{x}"\nC = "the hd_ keys"\nD = key("x")\n'
    assert [line for line, _ in key_names(source)] == [1, 2]


def test_every_session_key_is_named_in_the_session_module():
    found = {f"{path.relative_to(ROOT)}:{line}": text for path in dashboard_files()
             for line, text in key_names(path.read_text(encoding="utf-8"))}
    assert found == {}
