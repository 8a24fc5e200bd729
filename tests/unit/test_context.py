"""The system prompt is stable; time goes into the runtime-context line only."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from memtray.core.agent.context import load_bootstrap, load_skills, runtime_context, system_prompt


def test_system_prompt_is_byte_identical_and_time_free(tmp_path: Path) -> None:
    (tmp_path / "USER.md").write_text("I prefer short answers.")
    a = system_prompt("## Facts\n- Likes tea\n", load_bootstrap(tmp_path), load_skills(None))
    b = system_prompt("## Facts\n- Likes tea\n", load_bootstrap(tmp_path), load_skills(None))
    assert a == b
    assert "# Memory" in a and "Likes tea" in a and "I prefer short answers." in a
    assert "2026" not in a
    assert "\n# Memory\n" not in system_prompt("", [], [])


def test_runtime_context_in_zone() -> None:
    now = datetime(2026, 3, 29, 1, 30, tzinfo=UTC)  # Europe/Paris switches to summer time at 01:00 UTC
    line = runtime_context(now, "Europe/Paris")
    assert line == "[Runtime context: Sunday 2026-03-29 03:30 Europe/Paris (UTC+02:00)]"
    assert "UTC+00:00" in runtime_context(now, "Not/AZone")


def test_symlinked_bootstrap_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("secret instructions")
    home = tmp_path / "home"
    home.mkdir()
    (home / "AGENTS.md").symlink_to(outside)
    assert load_bootstrap(home) == []
