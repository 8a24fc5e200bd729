"""docs/CLI.md is complete against the parser: every command and every flag `--help` shows."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

from memtray.core.cli.main import build_parser

DOC = Path(__file__).resolve().parents[3] / "docs" / "CLI.md"


def _commands(parser: argparse.ArgumentParser, path: list[str]) -> Iterator[tuple[list[str], list[str]]]:
    """(command path, its --flags as --help shows them) for every parser in the tree."""
    flags = sorted({o for a in parser._actions if a.help != argparse.SUPPRESS
                    for o in a.option_strings if o.startswith("--") and o != "--help"})
    yield path, flags
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, [*path, name])


def _spans(doc: str) -> list[str]:
    return re.findall(r"`([^`]+)`", doc)


def test_every_command_and_flag_is_in_the_reference() -> None:
    doc = DOC.read_text(encoding="utf-8")
    spans = _spans(doc)
    parser = build_parser()
    tree = list(_commands(parser, []))
    assert len(tree) > 30  # the walk found the subcommands (memory, remind, ... and the desktop's)
    missing: list[str] = []
    for path, flags in tree:
        if not path:  # global options (--home, --no-daemon, --version): anywhere in the reference
            missing += [f for f in flags if not any(re.search(re.escape(f) + r"(?![\w-])", s) for s in spans)]
            continue
        cmd = " ".join(["memtray", *path])
        # the command is written out in a code span, with each of its flags in one of them
        mine = [s for s in spans if s == cmd or s.startswith(cmd + " ")]
        if not mine:
            missing.append(cmd)
            continue
        missing += [f"{cmd} {f}" for f in flags
                    if not any(re.search(re.escape(f) + r"(?![\w-])", s) for s in mine)]
    assert not missing, "docs/CLI.md lacks: " + ", ".join(missing)


def test_the_check_sees_a_missing_flag() -> None:
    """The comparison itself can fail: a flag absent from the text is reported."""
    spans = _spans("| `memtray show` | show it |")
    assert not any(re.search(r"--window(?![\w-])", s) for s in spans if s.startswith("memtray show"))
    assert [p for p, _f in _commands(build_parser(), []) if p == ["show"]]
