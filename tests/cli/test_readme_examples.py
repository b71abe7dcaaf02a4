"""Every ```console block of the README runs as written from a fresh copy of the repository and prints
what the README shows (scripts/readme_transcripts.py states the convention and regenerates the output)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("readme_transcripts", ROOT / "scripts" / "readme_transcripts.py")
transcripts = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = transcripts  # dataclasses look their module up there
spec.loader.exec_module(transcripts)


def blocks(group: str) -> list:
    return [b for b in transcripts.parse((ROOT / "README.md").read_text().split("\n")) if b.group == group]


def check(group: str, tmp_path: Path) -> None:
    chosen = blocks(group)
    transcripts.fresh_copy(tmp_path)
    ran = transcripts.run_group(chosen, tmp_path, timeout=1500)
    problems = [p for block, got in zip(chosen, ran, strict=True) for p in transcripts.differences(block, got)]
    assert not problems, (
        f"{len(problems)} README command(s) differ (update with `python scripts/readme_transcripts.py "
        f"--group {group}`):\n\n" + "\n\n".join(problems)
    )


def test_readme_offline_examples_print_what_the_readme_shows(tmp_path):
    assert len(blocks("offline")) >= 10  # imports, compare, plan, prereg, training, audit...
    check("offline", tmp_path)


@pytest.mark.docker
def test_readme_docker_examples_run_as_written(engine, tmp_path):
    assert len(blocks("docker")) >= 5  # quickstart, run/rerun/resume, attribute, validate x3
    check("docker", tmp_path)


@pytest.mark.llm
def test_readme_llm_examples_run_as_written(engine, tmp_path):
    """The mini agent against the real SmolLM2 server the blocks start themselves (scripts/model-up.sh)."""
    assert len(blocks("llm")) >= 2  # run --agent mini, quickstart --agent mini
    check("llm", tmp_path)


@pytest.mark.ray
def test_readme_cluster_example_runs_as_written(engine, tmp_path):
    """Starts a head and two worker nodes with `ray start`, runs trials on them, stops them (`ray stop`)."""
    assert len(blocks("ray")) >= 1  # the cluster transcript under "Running on a cluster"
    check("ray", tmp_path)


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
    with pytest.raises(SystemExit, match="unknown console option"):
        transcripts.parse(["<!-- console: dokcer -->", "```console", "$ true", "```"])
    with pytest.raises(SystemExit, match="must start with a `\\$ ` command"):
        transcripts.parse(["```console", "output first", "```"])


def test_a_drifted_output_or_status_is_reported(tmp_path):
    (block,) = transcripts.parse(["```console", "$ echo now", "before", "$ sh -c 'exit 3'", "```"])
    (ran,) = transcripts.run_group([block], tmp_path, timeout=30)
    assert [(c.output, c.status) for c in ran] == [(["now"], 0), ([], 3)]
    problems = transcripts.differences(block, ran)
    assert len(problems) == 2 and "output differs" in problems[0] and "exit 3, README says 0" in problems[1]
    # times, hashes and temp paths are masked: a new run of the same command is not a drift
    (block,) = transcripts.parse(["```console", "$ printf 'run 2026-11-29T22:09:05+00:00 sha256:e5b05eef8a87\\n'",
                                  "run 2025-01-01T00:00:00+00:00 sha256:0123456789ab", "```"])  # fmt: skip
    (ran,) = transcripts.run_group([block], tmp_path, timeout=30)
    assert transcripts.differences(block, ran) == []
