"""The README's first screen is what a newcomer needs (issue 29, item 5): set-up and the
dashboard, the tests, the command line on their own CSV with ``--geography`` (a recipe that
runs as printed), the Python example (run by tests/test_api.py); the rest is in ``docs/``,
whose relative links and anchors all resolve."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FIRST_SCREEN = 65  # lines
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]


def first_screen() -> str:
    return "\n".join(README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN])


def test_the_first_screen_has_set_up_tests_cli_and_python():
    screen = first_screen()
    for command in ("bash scripts/run-dashboard.sh", "bash scripts/test.sh",
                    ".venv/bin/hierdp", "hierdp release", "--geography", "```python",
                    "hierdp_core.release("):
        assert command in screen, f"{command!r} is not on the README's first screen"
    assert len(README.read_text(encoding="utf-8").splitlines()) <= FIRST_SCREEN


def own_csv_recipe() -> str:
    """The first screen's bash block that releases a CSV of one's own."""
    blocks = re.findall(r"```bash\n(.*?)```", first_screen(), flags=re.S)
    recipe = [b for b in blocks if "hierdp release" in b]
    assert len(recipe) == 1, "the first screen has no (or several) own-CSV recipes"
    return recipe[0]


def test_the_own_csv_recipe_runs_as_printed(tmp_path):
    script = own_csv_recipe().replace(".venv/bin/hierdp",
                                      f"{sys.executable} -m hierdp_core")
    done = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert "publishable: yes" in done.stdout
    released = (tmp_path / "release" / "release.csv").read_text().splitlines()
    assert any(",02/02013," in line for line in released)  # declared, nobody lives there


def slug(heading: str) -> str:
    """The anchor the forge gives a Markdown heading (lower case, punctuation dropped,
    spaces to hyphens)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {slug(m[1]) for m in re.finditer(r"^#+ (.*)$", text, flags=re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_and_anchors_resolve(page):
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target} does not exist"
        if anchor:
            assert anchor in anchors(linked), f"{page.name}: no heading for {target}"


def test_every_doc_page_is_linked_from_the_readme_and_the_docs_index():
    readme = README.read_text(encoding="utf-8")
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    for page in PAGES[1:]:
        if page.name != "README.md":
            assert f"docs/{page.name}" in readme and f"({page.name})" in index, page.name
