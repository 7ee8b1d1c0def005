"""Start the dashboard warm: ``python -m hierdp_core.ui.serve [streamlit options]`` imports
every module the dashboard's pages import and starts writing the bundled map files, then
serves ``app.py`` as ``streamlit run`` does, in the same process. Streamlit runs each page
as a script in its server process, so without this the first visitor waits for the imports
(about 2 s here) on top of the page itself.

The modules are read from the pages' ``import`` statements (``ast``), so a page's new import
is warmed without a list to keep."""

from __future__ import annotations

import ast
import importlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app.py"


def page_scripts(app: Path = APP) -> list[Path]:
    """The dashboard's scripts: ``app.py`` and ``pages/*.py`` beside it."""
    return [app, *sorted((app.parent / "pages").glob("*.py"))]


def imported_modules(script: Path) -> Iterator[str]:
    """The absolute module names a script imports at its top level or in its functions."""
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            # `from package import module` names modules too; a name that is not one is
            # an attribute, imported with its package
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def warm(app: Path = APP) -> list[str]:
    """Import what the dashboard's scripts import and start writing the bundled map files;
    return the modules imported. A name that is not a module is skipped (see
    `imported_modules`); any other import error is raised, as the page would."""
    names = sorted({name for script in page_scripts(app) for name in imported_modules(script)})
    done = []
    # the caches made before the server's runtime exists are the ones it uses: not a warning
    logging.getLogger("streamlit.runtime.caching.cache_data_api").addFilter(
        lambda record: "No runtime found" not in record.getMessage())
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # the module exists and one of its own imports is missing
                raise
            continue
        done.append(name)
    from hierdp_core.ui import map_layers

    map_layers.prepare_bundled_maps()
    return done


def warm_samples() -> None:
    """What the first visitors wait for, computed ahead: Home and Results first
    (`map_layers.warm_bundled_samples`), then the query pages
    (`samples.warm_query_pages`)."""
    from hierdp_core.ui import map_layers, samples

    map_layers.warm_bundled_samples()
    samples.warm_query_pages()


def main(argv: list[str] | None = None) -> int:
    """Warm, then ``streamlit run app.py`` with ``argv`` (Streamlit's own options), while a
    background thread computes what the first visitors would wait for (`warm_samples`);
    ``HIERDP_WARM_SAMPLES=0`` leaves that to them."""
    warm()
    if os.environ.get("HIERDP_WARM_SAMPLES", "1") != "0":
        threading.Thread(target=warm_samples, name="hierdp-warm-samples",
                         daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(APP), *(sys.argv[1:] if argv is None else argv)]
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
