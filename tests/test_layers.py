"""What may import what (docs/ARCHITECTURE.md, "Layers"), read from the source."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def imported_modules(folder: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (ROOT / folder).rglob("*.py"):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = names
    return found


def test_model_imports_no_django_celery_or_service_code():
    for path, names in imported_modules("model").items():
        leaks = {
            n for n in names if n.split(".")[0] in ("django", "celery", "webapp", "ocr_worker")
        }
        assert not leaks, f"{path} imports {sorted(leaks)}"


def test_core_is_the_bottom_of_the_web_app():
    for path, names in imported_modules("webapp/core").items():
        leaks = {n for n in names if n.startswith("webapp.") and not n.startswith("webapp.core")}
        assert not leaks, f"{path} imports {sorted(leaks)}"


def test_the_client_imports_nothing_of_the_service():
    for path, names in imported_modules("folio_client").items():
        leaks = {n for n in names if n.split(".")[0] in ("django", "model", "webapp", "ocr_worker")}
        assert not leaks, f"{path} imports {sorted(leaks)}"


# `/` serves the Reader to programs and the home page to browsers: the UI routes to the view.
ROUTING = {("webapp/ui/views/home.py", "webapp.reader.views")}


def test_views_import_no_other_apps_views():
    for path, names in imported_modules("webapp").items():
        app = Path(path).parts[1]
        leaks = {
            n
            for n in names
            if n.startswith("webapp.")
            and n.split(".")[-1] in ("api", "views")
            and n.split(".")[1] != app
            and path != "webapp/urls.py"
            and (path, n) not in ROUTING
        }
        assert not leaks, f"{path} imports {sorted(leaks)}"
