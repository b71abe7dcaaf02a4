"""The "bring your own work" pages (docs/predictions.md, docs/harbor.md, docs/own-agent.md) run as written:
every ```console block, from a fresh copy of the repository, prints what the page shows (the README's
convention: scripts/readme_transcripts.py, `--readme docs/PAGE.md` regenerates a page's output)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("readme_transcripts", ROOT / "scripts" / "readme_transcripts.py")
transcripts = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = transcripts
spec.loader.exec_module(transcripts)
PAGES = ("predictions", "harbor", "own-agent")


def check(page: str, group: str, tmp_path: Path) -> None:
    blocks = [b for b in transcripts.parse((ROOT / "docs" / f"{page}.md").read_text().split("\n")) if b.group == group]
    assert blocks, f"docs/{page}.md has no {group} console block"
    transcripts.fresh_copy(tmp_path)
    ran = transcripts.run_group(blocks, tmp_path, timeout=900)
    problems = [p for block, got in zip(blocks, ran, strict=True) for p in transcripts.differences(block, got)]
    assert not problems, (
        f"{len(problems)} command(s) of docs/{page}.md differ (update with `python scripts/readme_transcripts.py"
        f" --readme docs/{page}.md --group {group}`):\n\n" + "\n\n".join(problems)
    )


def test_every_page_is_under_a_page_and_starts_from_what_you_have():
    for page in PAGES:
        text = (ROOT / "docs" / f"{page}.md").read_text()
        assert text.startswith("# I have "), page
        blocks = transcripts.parse(text.split("\n"))
        inside = {i for b in blocks for i in range(b.start, b.end + 1)}
        prose = [ln for i, ln in enumerate(text.split("\n")) if i not in inside and ln.strip()]
        commands = sum(len(b.commands) for b in blocks)
        assert len(prose) <= 45 and commands <= 10, (page, len(prose), commands)  # a page, less the printed output


@pytest.mark.parametrize("page", ["predictions", "harbor"])
def test_offline_examples(page: str, tmp_path: Path):
    check(page, "offline", tmp_path)


@pytest.mark.docker
@pytest.mark.parametrize("page", ["predictions", "own-agent"])
def test_docker_examples(engine, page: str, tmp_path: Path):
    check(page, "docker", tmp_path)
