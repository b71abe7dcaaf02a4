"""The command line as a whole: lazy area loading stays in step with the registered commands."""

from __future__ import annotations

import subprocess
import sys

from trialbook.cli import AREAS, COMMAND_AREAS, load

app = load()  # every area's commands


def registered(typer_app) -> set[str]:
    names = {c.name or c.callback.__name__ for c in typer_app.registered_commands}
    return names | {g.name for g in typer_app.registered_groups}


def test_every_command_is_mapped_to_its_area():
    assert registered(app) == set(COMMAND_AREAS)
    assert {a for areas in COMMAND_AREAS.values() for a in areas} == set(AREAS)


def test_each_command_runs_with_only_its_area_loaded():
    """A fresh interpreter that loads just the mapped areas still knows the command (one per set of areas)."""
    by_areas: dict[tuple[str, ...], list[str]] = {}
    for command, areas in COMMAND_AREAS.items():
        by_areas.setdefault(areas, []).append(command)
    for areas, commands in by_areas.items():
        code = (
            "from trialbook.cli import load; from trialbook.cli.common import app; "
            f"load({areas!r}); names = {{c.name for c in app.registered_commands}} | "
            "{g.name for g in app.registered_groups}; "
            f"print(sorted(set({commands!r}) - names))"
        )
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert res.stdout == "[]\n", (areas, res.stdout, res.stderr)


def test_main_without_arguments_shows_help_and_bad_usage_exits_2():
    run = [sys.executable, "-c", "from trialbook.cli import main; main()"]
    res = subprocess.run(run, capture_output=True, text=True)
    assert "compare" in res.stdout + res.stderr and "quickstart" in res.stdout + res.stderr
    res = subprocess.run([*run[:2], run[2], "show"], capture_output=True, text=True)
    assert res.returncode == 2 and "Traceback" not in res.stderr
