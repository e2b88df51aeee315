"""Where each key of a TOML file is: a key path → line index (``tomllib`` gives no lines).

Key paths are the ones campaign errors use: ``pace.rate``, ``steps[2].cards[0].buttons``,
``steps[1].options[0]``. The scanner walks the text once, character by character, tracking
strings (basic, literal and their multi-line forms), comments, table headers (``[a.b]``),
arrays of tables (``[[steps]]`` → ``steps[0]``, ``steps[1]``…), arrays and inline tables,
and records the line where each key, table and array element starts. It assumes the text
is valid TOML (``tomllib`` read it first); on anything odd it only records fewer lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"""
_KEY = rf"{_PART}(?:[ \t]*\.[ \t]*{_PART})*"
_HEADER = re.compile(rf"[ \t]*(\[\[?)[ \t]*({_KEY})[ \t]*\]\]?")
_ASSIGN = re.compile(rf"[ \t]*({_KEY})[ \t]*=")
_SPLIT = re.compile(_PART)


def _parts(key: str) -> list[str]:
    """``a."b c".d`` → ``["a", "b c", "d"]``."""
    out = []
    for match in _SPLIT.finditer(key):
        text = match.group(0)
        out.append(text[1:-1] if text[0] in "\"'" else text)
    return out


@dataclass
class _Container:
    """An open array (``index`` counts its elements) or inline table."""

    kind: str  # "array" or "table"
    path: str
    index: int = 0
    seen_value: bool = False


@dataclass
class _Scanner:
    text: str
    lines: dict[str, int] = field(default_factory=dict)
    arrays: dict[str, int] = field(default_factory=dict)  # array-of-tables path → last index
    prefix: str = ""
    line: int = 1
    pos: int = 0
    stack: list[_Container] = field(default_factory=list)
    value_path: str = ""

    def record(self, path: str) -> None:
        self.lines.setdefault(path, self.line)

    def resolve(self, parts: list[str], base: str = "") -> str:
        """Join key parts; a part naming an array of tables means its last element."""
        path = base
        for part in parts:
            path = f"{path}.{part}" if path else part
            if path in self.arrays:
                path = f"{path}[{self.arrays[path]}]"
        return path

    def skip_line(self) -> None:
        end = self.text.find("\n", self.pos)
        self.pos = len(self.text) if end < 0 else end

    def skip_string(self) -> None:
        """Move past the string starting at ``pos``, counting the lines inside it."""
        text, pos = self.text, self.pos
        for quote in ('"""', "'''"):
            if text.startswith(quote, pos):
                end = pos + 3
                while True:
                    found = text.find(quote, end)
                    if found < 0:
                        found = len(text) - 3
                        break
                    if quote == '"""' and _escaped(text, found):
                        end = found + 1
                        continue
                    break
                while text.startswith(quote[0], found + 3):  # up to two quotes close it
                    found += 1
                self.line += text.count("\n", pos, found)
                self.pos = found + 3
                return
        quote, end = text[pos], pos + 1
        while end < len(text) and text[end] != quote and text[end] != "\n":
            end += 2 if quote == '"' and text[end] == "\\" else 1
        self.pos = end + 1

    def statement(self) -> None:
        """A line outside any value: a table header or ``key =``."""
        header = _HEADER.match(self.text, self.pos)
        if header is not None:
            parts = _parts(header.group(2))
            if header.group(1) == "[[":
                array = self.resolve(parts[:-1])
                array = f"{array}.{parts[-1]}" if array else parts[-1]
                self.arrays[array] = self.arrays.get(array, -1) + 1
                self.prefix = f"{array}[{self.arrays[array]}]"
                self.lines.setdefault(array, self.line)
            else:
                self.prefix = self.resolve(parts)
            self.record(self.prefix)
            self.pos = header.end()
            return
        self.assignment(self.prefix)

    def assignment(self, base: str) -> None:
        found = _ASSIGN.match(self.text, self.pos)
        if found is None:
            return
        path = self.resolve(_parts(found.group(1)), base)
        self.record(path)
        self.pos = found.end()
        self.value_path = path

    def element_start(self) -> None:
        """A value begins: inside an array, it is element ``index``."""
        top = self.stack[-1] if self.stack else None
        if top is not None and top.kind == "array" and not top.seen_value:
            top.seen_value = True
            self.value_path = f"{top.path}[{top.index}]"
            self.record(self.value_path)

    def run(self) -> dict[str, int]:
        text = self.text
        at_line_start = True
        while self.pos < len(text):
            if at_line_start and not self.stack:
                at_line_start = False
                self.statement()
                continue
            char = text[self.pos]
            if char == "\n":
                self.line += 1
                self.pos += 1
                at_line_start = True
                continue
            if char in " \t\r":
                self.pos += 1
                continue
            if char == "#":
                self.skip_line()
                continue
            top = self.stack[-1] if self.stack else None
            in_table = top is not None and top.kind == "table" and not top.seen_value
            if in_table and _ASSIGN.match(text, self.pos):
                assert top is not None
                self.assignment(top.path)
                top.seen_value = True
                continue
            if char == ",":
                if top is not None:
                    if top.kind == "array":
                        top.index += 1
                    top.seen_value = False
                self.pos += 1
                continue
            if char in "]}":
                if self.stack:
                    self.stack.pop()
                self.pos += 1
                continue
            self.element_start()
            if char in "[{":
                self.stack.append(_Container("array" if char == "[" else "table", self.value_path))
                self.pos += 1
                continue
            if char in "\"'":
                self.skip_string()
                continue
            self.pos += 1
        return self.lines


def _escaped(text: str, index: int) -> bool:
    """Whether the character at ``index`` follows an odd number of backslashes."""
    count = 0
    while index - count - 1 >= 0 and text[index - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def key_lines(text: str) -> dict[str, int]:
    """Line (1-based) of every key path, table and array element of a TOML text."""
    return _Scanner(text).run()


def line_of(lines: dict[str, int], key: str | None) -> int | None:
    """The line of ``key`` or of the nearest enclosing key that is in the file.

    ``steps[3].text`` also finds ``steps[3].text_file`` (a template file given instead); a
    key the file does not have (a missing required key) gets its table's line.
    """
    if not key:
        return None
    path = key
    while path:
        if path in lines:
            return lines[path]
        if f"{path}_file" in lines:
            return lines[f"{path}_file"]
        cut = max(path.rfind("."), path.rfind("["))
        if cut <= 0:
            break
        path = path[:cut]
    return lines.get(path)
