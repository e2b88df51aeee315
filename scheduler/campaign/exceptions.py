"""Errors of campaign files: the definition, the recipients CSV, the templates.

Tree::

    SchedulerError                          (scheduler/core/errors.py)
    └── CampaignError                       anything wrong with a campaign's files
        ├── DefinitionError                 the TOML definition (every problem at once)
        ├── RecipientsError                 the recipients CSV or a suppression list
        │   ├── RecipientsFileNotFound      a CSV or suppression file is missing
        │   ├── UnreadableRecipientsFile    not text, or pandas cannot parse it
        │   ├── EmptyRecipientsFile         no header, or a header and no rows
        │   ├── MissingColumnError          the phone column is not in the header
        │   ├── RaggedRowsError             rows with more fields than the header
        │   ├── UnclosedQuoteError          a quote that opens a value and never closes
        │   ├── BlankValueError             a blank value that [blanks] says is an error
        │   └── TooManyInvalidNumbers       more unreachable numbers than max_invalid
        └── TemplateError                   a message template
            ├── TemplateNotFoundError       a ``*_file`` template is missing
            ├── TemplateSyntaxError         Jinja2 syntax error (file and line)
            ├── UndefinedVariableError      a variable the row does not have (name, row)
            ├── SandboxViolationError       the template reached for Python internals
            └── InvalidRenderedBodyError    the rendered body fails the endpoint's model

Every error carries the :class:`Issue` list it was built from, so ``campaign validate``
can report all of them at once. pandas, Jinja2 and phonenumbers errors are translated into
these classes where they are caught (``recipients``, ``rendering``, ``phones``); none of
them escapes the package.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from scheduler.core.errors import SchedulerError


@dataclass(frozen=True, slots=True)
class Issue:
    """One problem: which file, which key path, which CSV row or template line, and what."""

    file: str
    message: str
    key: str | None = None
    row: int | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
        if self.key:
            where += f" [{self.key}]"
        if self.row is not None:
            where += f" row {self.row}"
        return f"{where}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (every key present, ``None`` when it does not apply)."""
        return asdict(self)


class CampaignError(SchedulerError):
    """Base of every campaign-file error; ``issues`` lists each problem found."""

    def __init__(self, issues: list[Issue] | Issue | str, *, file: str = "") -> None:
        if isinstance(issues, str):
            issues = [Issue(file=file, message=issues)]
        elif isinstance(issues, Issue):
            issues = [issues]
        self.issues: list[Issue] = list(issues)
        super().__init__("\n".join(str(issue) for issue in self.issues))


class DefinitionError(CampaignError):
    """The TOML definition is not valid; every problem found is in ``issues``."""


class RecipientsError(CampaignError):
    """The recipients CSV or a suppression list cannot be used."""


class RecipientsFileNotFound(RecipientsError):
    """A recipients or suppression file does not exist."""


class UnreadableRecipientsFile(RecipientsError):
    """The file is not text in a known encoding, or pandas cannot parse it."""


class EmptyRecipientsFile(RecipientsError):
    """The file has no header, or a header and no data rows."""


class MissingColumnError(RecipientsError):
    """The phone column named in the definition is not in the header."""


class RaggedRowsError(RecipientsError):
    """Some rows have more fields than the header."""


class UnclosedQuoteError(RecipientsError):
    """A quote opens a value and never closes (with any other malformed rows found)."""


class BlankValueError(RecipientsError):
    """A row has a blank value in a column whose ``[blanks]`` rule is ``"error"``."""


class TooManyInvalidNumbers(RecipientsError):
    """More numbers are invalid or unreachable on the channel than ``max_invalid`` allows."""


class TemplateError(CampaignError):
    """A message template cannot be loaded, compiled or rendered."""


class TemplateNotFoundError(TemplateError):
    """A template file named by a ``*_file`` key is found nowhere it may be."""


class TemplateSyntaxError(TemplateError):
    """Jinja2 could not compile the template; the issue names the file and line."""


class UndefinedVariableError(TemplateError):
    """The template uses a variable the row does not have; the issue names it and the row."""


class SandboxViolationError(TemplateError):
    """The template tried to reach Python internals and the sandbox stopped it."""


class InvalidRenderedBodyError(TemplateError):
    """The rendered step does not pass the endpoint's request model."""
