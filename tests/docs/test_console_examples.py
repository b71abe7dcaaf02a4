"""Every ```console block of the README and of the docs pages runs as written from a fresh copy of the
repository and prints what the page shows (scripts/readme_transcripts.py states the convention, groups the
pages into chains and regenerates the output)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("readme_transcripts", ROOT / "scripts" / "readme_transcripts.py")
transcripts = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = transcripts  # dataclasses look their module up there
spec.loader.exec_module(transcripts)
CHAINS = transcripts.chains()


def chains_with(group: str) -> list[str]:
    return [name for name, pages in CHAINS.items() if transcripts.chain_blocks(pages, group)]


def blocks(group: str) -> list:
    return [block for pages in CHAINS.values() for _, block in transcripts.chain_blocks(pages, group)]


def check(chain: str, group: str, tmp_path: Path) -> None:
    problems, _ = transcripts.check_chain(CHAINS[chain], group, tmp_path, timeout=1500)
    assert not problems, (
        f"{len(problems)} command(s) of {chain} differ (update with `python scripts/readme_transcripts.py "
        f"--page {CHAINS[chain][0].relative_to(ROOT)} --group {group}`):\n\n" + "\n\n".join(problems)
    )


def test_every_page_with_examples_is_in_a_chain():
    """A page's examples run only if it is in a chain: the guides' chain lists existing pages, every other
    page with a console block is a chain of its own, and no example went missing when the README was split."""
    for page in transcripts.GUIDES:
        assert (ROOT / page).is_file(), page
    pages = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    with_examples = {page for page in pages if "```console" in page.read_text()}
    assert with_examples == {page for chain in CHAINS.values() for page in chain if "```console" in page.read_text()}
    counts = {group: len(blocks(group)) for group in transcripts.GROUPS}
    # imports, compare, plan, prereg, training, audit... / quickstart, run/rerun/resume, attribute, validate x3
    assert counts["offline"] >= 20 and counts["docker"] >= 8 and counts["llm"] >= 2 and counts["ray"] >= 1, counts


@pytest.mark.parametrize("chain", chains_with("offline"))
def test_offline_examples_print_what_the_page_shows(chain: str, tmp_path: Path):
    check(chain, "offline", tmp_path)


@pytest.mark.docker
@pytest.mark.parametrize("chain", chains_with("docker"))
def test_docker_examples_run_as_written(engine, chain: str, tmp_path: Path):
    check(chain, "docker", tmp_path)


@pytest.mark.llm
@pytest.mark.parametrize("chain", chains_with("llm"))
def test_llm_examples_run_as_written(engine, chain: str, tmp_path: Path):
    """The mini agent against the real SmolLM2 server the blocks start themselves (scripts/model-up.sh)."""
    check(chain, "llm", tmp_path)


@pytest.mark.ray
@pytest.mark.parametrize("chain", chains_with("ray"))
def test_cluster_examples_run_as_written(engine, chain: str, tmp_path: Path):
    """Starts a head and two worker nodes with `ray start`, runs trials on them, stops them (`ray stop`)."""
    check(chain, "ray", tmp_path)


def test_convention_parses_commands_outputs_and_exit_statuses():
    lines = [
        "text", "<!-- console: docker varies -->", "```console", "$ echo a \\", "    b", "a b",
        "$ false", "(exit 1)", "```", "```", "$ not run", "```", "```console", "$ true", "```",
    ]  # fmt: skip
    first, second = transcripts.parse(lines)
    assert first.options == {"docker", "varies"} and first.group == "docker" and second.group == "offline"
    assert [(c.text, c.output, c.status) for c in first.commands] == [
        ("echo a \\\n    b", ["a b"], 0),
        ("false", [], 1),
    ]
    assert transcripts.render(first.commands) == lines[3:8]
    with pytest.raises(SystemExit, match="docs/x.md line 1: unknown console option"):
        transcripts.parse(["<!-- console: dokcer -->", "```console", "$ true", "```"], "docs/x.md")
    with pytest.raises(SystemExit, match="must start with a `\\$ ` command"):
        transcripts.parse(["```console", "output first", "```"])


def test_a_drifted_output_or_status_is_reported(tmp_path):
    (block,) = transcripts.parse(["```console", "$ echo now", "before", "$ sh -c 'exit 3'", "```"])
    (ran,) = transcripts.run_group([block], tmp_path, timeout=30)
    assert [(c.output, c.status) for c in ran] == [(["now"], 0), ([], 3)]
    problems = transcripts.differences(block, ran)
    assert len(problems) == 2 and "output differs" in problems[0] and "exit 3, the page says 0" in problems[1]
    # times, hashes and temp paths are masked: a new run of the same command is not a drift
    (block,) = transcripts.parse(["```console", "$ printf 'run 2026-11-29T22:09:05+00:00 sha256:e5b05eef8a87\\n'",
                                  "run 2025-01-01T00:00:00+00:00 sha256:0123456789ab", "```"])  # fmt: skip
    (ran,) = transcripts.run_group([block], tmp_path, timeout=30)
    assert transcripts.differences(block, ran) == []


def test_a_chain_runs_its_pages_in_order_in_one_copy(tmp_path):
    """A later page of a chain sees what an earlier page's block made; the drift names the page and line."""
    site = tmp_path / "site"
    site.mkdir()
    subprocess.run(["git", "init", "-q", str(site)], check=True)
    (site / "a.md").write_text("```console\n$ X=1; echo made > made.txt\n```\n")
    (site / "b.md").write_text("text\n\n```console\n$ echo $X; cat made.txt\n1\nmade\n$ echo drift\nold\n```\n")
    pages = [site / "a.md", site / "b.md"]
    root, transcripts.ROOT = transcripts.ROOT, site
    try:
        problems, replacements = transcripts.check_chain(pages, "offline", tmp_path / "copy", timeout=30)
    finally:
        transcripts.ROOT = root
    assert len(problems) == 1 and problems[0].startswith("b.md line 3: `echo drift`: output differs"), problems
    assert replacements[site / "b.md", 2] == (8, ["$ echo $X; cat made.txt", "1", "made", "$ echo drift", "drift"])
