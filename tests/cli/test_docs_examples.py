"""The "bring your own work" pages (docs/predictions.md, docs/harbor.md, docs/own-agent.md) are short and start
from what the reader has. Their examples run in tests/docs/test_console_examples.py, as every page's do."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("readme_transcripts", ROOT / "scripts" / "readme_transcripts.py")
transcripts = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = transcripts
spec.loader.exec_module(transcripts)
PAGES = ("predictions", "harbor", "own-agent")


def test_every_page_is_under_a_page_and_starts_from_what_you_have():
    for page in PAGES:
        text = (ROOT / "docs" / f"{page}.md").read_text()
        assert text.startswith("# I have "), page
        blocks = transcripts.parse(text.split("\n"))
        inside = {i for b in blocks for i in range(b.start, b.end + 1)}
        prose = [ln for i, ln in enumerate(text.split("\n")) if i not in inside and ln.strip()]
        commands = sum(len(b.commands) for b in blocks)
        assert len(prose) <= 45 and commands <= 10, (page, len(prose), commands)  # a page, less the printed output
