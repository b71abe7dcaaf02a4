"""The generated reference pages are what the code gives now (scripts/docs_reference.py writes them)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "scripts" / "docs_reference.py")
reference = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = reference
spec.loader.exec_module(reference)


def test_the_reference_pages_are_current():
    for name, generate in reference.GENERATORS.items():
        assert reference.PAGES[name].read_text() == generate(), (
            f"{reference.PAGES[name].relative_to(ROOT)} is stale: run python scripts/docs_reference.py"
        )


def test_every_command_and_option_is_on_the_commands_page():
    import typer

    from trialbook.cli import load

    root = typer.main.get_command(load())
    page = reference.PAGES["commands"].read_text()
    found = reference.commands(root.context_class(root, info_name="trialbook"), root, ["trialbook"])
    assert len(found) > 40  # every area's commands, the groups' subcommands included
    for path, command, _ in found[1:]:
        section = page.split(f"\n## {' '.join(path)}\n", 1)[1].split("\n## ", 1)[0]
        for param in command.params:
            if param.param_type_name == "option" and not param.hidden:
                assert f"`{param.opts[0]}`" in section, (path, param.opts)
    assert "`--db`" in page and "| `--attempts` | int (x>=1) | `1` |" in page


def test_the_outcomes_page_has_every_outcome_and_policy_row():
    from trialbook.outcomes import OUTCOMES, POLICY

    page = reference.PAGES["outcomes"].read_text()
    for outcome in OUTCOMES:
        assert re.search(rf"^\| `{outcome.value}` \|", page, re.M), outcome
    for name in POLICY:
        assert re.search(rf"^\| `{name}` \|", page, re.M), name


def test_the_formats_page_has_every_key_the_readers_check():
    import msgspec

    from trialbook.importers.jsonl import Line
    from trialbook.tasks.loader import _SECTIONS

    page = reference.PAGES["formats"].read_text()
    for field in msgspec.structs.fields(Line):
        assert re.search(rf"^\| `{field.name}` \|", page, re.M), field.name
    for section, model in _SECTIONS.items():
        if section:
            part = page.split(f"### `[{section}]`", 1)[1].split("###", 1)[0]
            for key in model.model_fields:
                assert f"| `{key}` |" in part, (section, key)


def test_check_exits_1_on_a_stale_page(tmp_path, monkeypatch, capsys):
    stale = tmp_path / "outcomes.md"
    stale.write_text("old\n")
    monkeypatch.setitem(reference.PAGES, "outcomes", stale)
    monkeypatch.setitem(reference.PAGES, "commands", tmp_path / "commands.md")
    monkeypatch.setitem(reference.PAGES, "formats", tmp_path / "formats.md")
    assert reference.main(["--check"]) == 1
    assert stale.read_text() == "old\n" and not (tmp_path / "commands.md").exists()
    assert "is not what the code gives" in capsys.readouterr().out
    assert reference.main([]) == 0 and reference.main(["--check"]) == 0
