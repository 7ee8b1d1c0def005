"""The dashboard names its session keys in two modules (`hierdp_core.ui.session`: the
``hd_*`` keys; `hierdp_core.ui.widget_keys`: the widgets', a widget's key being its
session-state key in Streamlit): no page, ``app.py`` or module of `hierdp_core` reads or
writes ``st.session_state`` under a literal string key, passes one as ``key=`` or to a
key-building function (named ``*_key``), or names a key constant (``*KEY = "..."``) of its
own. An AST check of the source: nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KEY_MODULES = {ROOT / "hierdp_core" / "ui" / "session.py",
               ROOT / "hierdp_core" / "ui" / "widget_keys.py"}
ACCESSORS = {"get", "pop", "setdefault"}


def dashboard_files() -> list[Path]:
    files = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")),
             *sorted((ROOT / "hierdp_core" / "ui").glob("*.py"))]
    return [f for f in files if f not in KEY_MODULES]


def checked_files() -> list[Path]:
    """The dashboard's files and every other module of `hierdp_core`."""
    core = [f for f in sorted((ROOT / "hierdp_core").rglob("*.py")) if f.parent.name != "ui"]
    return dashboard_files() + core


def _is_session_state(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "session_state"


def _literal(node: ast.AST) -> bool:
    """A string written out in place: a constant, or an f-string with text of its own."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    return isinstance(node, ast.JoinedStr) and any(
        isinstance(v, ast.Constant) and v.value for v in node.values)


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def literal_keys(source: str) -> list[tuple[int, str]]:
    """(line, key) of every ``session_state[...]``, ``session_state.get/pop/setdefault(...)``
    and ``... in session_state`` under a literal key in ``source``, every literal ``key=``
    and argument of a ``*_key`` function, and every ``*KEY = <literal>``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        keys = []
        if isinstance(node, ast.Subscript) and _is_session_state(node.value):
            keys = [node.slice]
        elif isinstance(node, ast.Call):
            keys = [kw.value for kw in node.keywords if kw.arg == "key"]
            if _callee(node).endswith("_key"):
                keys += node.args
            if (isinstance(node.func, ast.Attribute) and node.func.attr in ACCESSORS
                    and _is_session_state(node.func.value) and node.args):
                keys.append(node.args[0])
        elif (isinstance(node, ast.Compare) and len(node.ops) == 1
              and isinstance(node.ops[0], (ast.In, ast.NotIn))
              and _is_session_state(node.comparators[0])):
            keys = [node.left]
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id.endswith("KEY") for t in node.targets):
            keys = [node.value]
        found += [(node.lineno, ast.unparse(key)) for key in keys if _literal(key)]
    return found


def test_the_check_sees_literal_keys():
    source = ("st.session_state['a'] = 1\nst.session_state.get(f'{p}_b')\n"
              "'c' in st.session_state\nst.session_state[KEY]\nst.session_state.get(key(p))\n")
    assert [line for line, _ in literal_keys(source)] == [1, 2, 3]


@pytest.mark.parametrize("source", [
    'st.button("Go", key="go")',
    'st.selectbox("L", [], key=f"lv{view}")',
    'st.text_input("T", key=table_key("roles_x"))',
    'PRESET_KEY = "split_preset"',
])
def test_the_check_sees_literal_widget_keys(source):
    assert literal_keys(source)


@pytest.mark.parametrize("source", [
    'st.button("Go", key=wk.GO)',
    'st.selectbox("L", [], key=wk.GS_LEVEL + view)',
    'st.selectbox("L", [], key=f"{prefix}{view}")',
    'sorted(xs, key=len)',
    'st.text_input("T", key=table_key(wk.ROLES_X))',
    'st.session_state.get(session.ROLES, {}).get("levels")',
])
def test_the_check_passes_named_keys(source):
    assert not literal_keys(source)


def test_no_literal_session_keys_outside_the_key_modules():
    found = {f"{path.relative_to(ROOT)}:{line}": key for path in checked_files()
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


def named_keys() -> set[str]:
    """The keys the key modules name (upper-case constants, one or a tuple of strings)
    that hold an underscore (a bare word such as ``epsilon`` is also a settings field)."""
    keys = set()
    for path in KEY_MODULES:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and all(
                    isinstance(t, ast.Name | ast.Tuple) for t in node.targets):
                values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                keys |= {v.value for v in values
                         if isinstance(v, ast.Constant) and isinstance(v.value, str)}
    return {k for k in keys if "_" in k and " " not in k}


def test_the_named_keys_are_read():
    assert {"hd_dataset", "gs_up_count", "split_preset", "cfg_upload"} <= named_keys()
    assert "epsilon" not in named_keys()


def test_no_dashboard_module_writes_out_a_named_key():
    """Not as a positional argument (a picker's key) or a dict key (widget values a loaded
    configuration sets) either."""
    keys = named_keys()
    found = {f"{path.relative_to(ROOT)}:{node.lineno}": node.value
             for path in dashboard_files()
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Constant) and node.value in keys}
    assert found == {}
