"""A command's ``--help`` that sends the reader to a document sends them where the
options it names are explained.

A newcomer read ``replay --help``: "--from N, --override and --model live make
it selective (see the README)"; the README no longer says a word of them (they
are in docs/cli.md).  Every paragraph of every command's help that names a
document (the README, ``docs/NAME.md``, a quoted section title) is checked:
the document exists, holds the section, and explains each option the
paragraph names.
"""

from __future__ import annotations

import re

import click
from click.testing import CliRunner

from otel_replay.cli.main import cli
from tests.fixtures.data import ROOT

_DOC = re.compile(r"see (the README|docs/[\w-]+\.md)(?:,\s*\"([^\"]+)\")?")
_OPTION = re.compile(r"(?<![\w-])--[a-z][\w-]*")


def _helps() -> dict[str, str]:
    """Each command's help text (the group's too), as printed."""
    assert isinstance(cli, click.Group)
    out = {"": CliRunner().invoke(cli, ["--help"]).output}
    for name in cli.list_commands(click.Context(cli)):
        out[name] = CliRunner().invoke(cli, [name, "--help"]).output
    return out


def test_every_help_reference_explains_the_options_it_is_cited_for() -> None:
    cited = 0
    for command, text in _helps().items():
        for paragraph in re.split(r"\n\s*\n", text):
            flat = " ".join(paragraph.split())
            for found in _DOC.finditer(flat):
                cited += 1
                where, section = found.groups()
                doc = ROOT / ("README.md" if where == "the README" else where)
                assert doc.is_file(), (command, where)
                body = doc.read_text(encoding="utf-8")
                if section is not None:
                    headings = " ".join(re.findall(r"^#+ .*|^\*\*[^*]+\*\*", body, re.M))
                    assert section in headings, (command, where, section)
                for option in _OPTION.findall(flat[: found.start()]):
                    assert option in body, (command, where, option)
    assert cited  # the check saw at least the replay command's reference
