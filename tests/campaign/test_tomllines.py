"""The key → line index of a campaign file (``tomllib`` gives no lines)."""

from __future__ import annotations

import tomllib

from scheduler.campaign.tomllines import key_lines, line_of

TEXT = '''\
name = "x"   # a comment with = and [brackets]
senders = ["s1",
  "s2"]
[recipients]
"phone_column" = 'tel'
[[steps]]
type = "text"
text = """
{{ nome }} [ { "
"""
[[steps]]
type = "carousel"
[[steps.cards]]
body = "Card"
buttons = [
  { type = "quick_reply", title = "a" },
  { type = "quick_reply", title = "b" },
]
[[steps.cards]]
body = "x"
[[steps]]
options = ["a", "b"]
pace.rate = 30
'''


def test_every_key_table_and_element_has_its_line() -> None:
    tomllib.loads(TEXT)  # the scanner is only ever given valid TOML
    lines = key_lines(TEXT)
    assert lines["name"] == 1 and lines["senders[1]"] == 3
    assert lines["recipients"] == 4 and lines["recipients.phone_column"] == 5
    assert lines["steps[0].text"] == 8 and lines["steps[1]"] == 11
    assert lines["steps[1].cards[0].buttons[1].title"] == 17
    assert lines["steps[1].cards[1].body"] == 20
    assert lines["steps[2].options[1]"] == 22 and lines["steps[2].pace.rate"] == 23


def test_a_key_not_in_the_file_gets_its_nearest_line() -> None:
    lines = key_lines(TEXT)
    assert line_of(lines, "recipients.file") == 4  # a missing key: its table
    assert line_of(lines, "steps[1].cards[0].buttons[1].id") == 17
    assert line_of(lines, None) is None
    assert line_of(key_lines('[[steps]]\ntext_file = "a.j2"\n'), "steps[0].text") == 2
