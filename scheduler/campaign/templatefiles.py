"""Where template files (``text_file = "…"``, any ``*_file`` key of a step) are found.

A name is looked for, in order:

1. as it is, when it is absolute (``/srv/textos/aviso.txt.j2``, ``~/textos/aviso.txt.j2``);
2. under the project's ``templates/`` folder (``welcome.txt.j2`` →
   ``<project>/templates/welcome.txt.j2``);
3. beside the campaign file (``aviso.txt.j2`` next to ``campaigns/aviso.toml``, or
   ``../textos/aviso.txt.j2`` from there).

The first file that exists is used; ``{% include %}`` and ``{% extends %}`` inside a
template follow the same rule. A name found nowhere is an error that lists every path
tried. Template files are UTF-8 text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import jinja2

from scheduler.campaign.exceptions import Issue, TemplateError


class CampaignLoader(jinja2.BaseLoader):
    """A Jinja2 loader over the campaign's folders that also takes absolute paths."""

    def __init__(self, folders: Sequence[Path]) -> None:
        self.folders = list(folders)

    def candidates(self, name: str) -> list[Path]:
        """Every path ``name`` may be, in the order they are tried."""
        path = Path(name).expanduser()
        if path.is_absolute():
            return [path]
        return [folder / path for folder in self.folders]

    def find(self, name: str) -> Path | None:
        """The file ``name`` is, or ``None``."""
        return next((p for p in self.candidates(name) if p.is_file()), None)

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str, Callable[[], bool]]:
        """The template's text, its resolved path and an up-to-date check (Jinja's API)."""
        path = self.find(template)
        if path is None:
            raise jinja2.TemplateNotFound(template)
        path = path.resolve()
        try:
            source = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise TemplateError(Issue(str(path), "not UTF-8 text: save the template as "
                                                 "UTF-8")) from None
        mtime = path.stat().st_mtime
        return source, str(path), lambda: path.is_file() and path.stat().st_mtime == mtime


def not_found_message(loader: jinja2.BaseLoader | None, name: str) -> str:
    """The error of a template file found nowhere, with every path tried."""
    tried = loader.candidates(name) if isinstance(loader, CampaignLoader) else []
    where = ", ".join(str(p) for p in tried) or "no template folder"
    return (f"template file {name!r} not found (tried {where}); a template file may be "
            "an absolute path, under the project's templates/ or beside the campaign file")
