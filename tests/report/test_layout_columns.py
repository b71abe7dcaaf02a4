"""At COLUMNS=80 the reporting commands show every name and verdict whole (narrow terminals get stacked rows),
and --markdown / --csv give the same tables in those forms."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from paths import INSTANCES, RESULTS
from trialbook.outcomes import policy_rows

BASE = "20240402_sweagent_gpt4"
CANDS = ("20240620_sweagent_claude3.5sonnet", "20240612_MASAI_gpt4o", "20250726_mini-v1.0.0_gemini-2.5-pro")


@pytest.fixture
def ledger(cli, tmp_path: Path) -> Path:
    for name in (BASE, *CANDS):
        assert cli("import", "swebench", str(RESULTS / f"{name}.json"), "--instances", str(INSTANCES)).exit_code == 0
    roll, steps = tmp_path / "roll.jsonl", tmp_path / "steps.jsonl"
    assert cli("sim", "rollouts", "--out", str(roll), "--steps-out", str(steps), use_db=False).exit_code == 0
    assert (
        cli("import", "jsonl", str(roll), "--run", "a-training-run-with-a-long-name", "--kind", "train").exit_code == 0
    )
    assert cli("import", "steps", str(steps), "--run", "a-training-run-with-a-long-name").exit_code == 0
    ids = [line.split('"instance_id": "')[1].split('"')[0] for line in INSTANCES.read_text().splitlines()]
    split = tmp_path / "split.txt"
    split.write_text("\n".join(ids[::2]) + "\n")
    return split


def _fits(out: str) -> None:
    assert "\u2026" not in out  # rich's ellipsis: something was cut
    assert max(map(len, out.splitlines())) <= 80, max(out.splitlines(), key=len)


def test_every_name_and_verdict_whole_at_80_columns(cli, ledger: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    runs = cli("runs")
    _fits(runs.stdout)
    for name in (BASE, *CANDS, "a-training-run-with-a-long-name"):
        assert name in runs.stdout.split()

    monkeypatch.chdir(ledger.parent)  # the split file is named in a warning: a short relative name, as a user types it
    res = cli("compare", BASE, *CANDS, "--split", ledger.name)
    assert res.exit_code == 0
    _fits(res.stdout)
    verdicts = [w for w in res.stdout.split("claim: ")[1:]]
    assert len(verdicts) == 9 and all(v.split()[0] in ("YES", "no") for v in verdicts)  # 3 candidates x all/in/out
    for cand in CANDS:
        assert res.stdout.splitlines().count(cand) == 3  # each row's name on a line of its own, whole
    for text in res.stdout.splitlines():  # prose wraps too, but never inside a CI such as "[+7.16, +15.24]"
        assert text.count("[") == text.count("]"), text

    policy = cli("policy", use_db=False)
    _fits(policy.stdout)
    lines = policy.stdout.splitlines()
    for row in policy_rows():
        assert row.exception in lines

    report = cli("train", "report", "a-training-run-with-a-long-name")
    assert report.exit_code == 0
    _fits(report.stdout)
    assert "0-4" in report.stdout and "at epoch boundaries" in report.stdout


def test_wide_terminal_keeps_the_table(cli, ledger: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    res = cli("compare", BASE, *CANDS)
    row = next(line for line in res.stdout.splitlines() if CANDS[2] in line)
    assert "YES" in row and "173/17/310" in row  # one row of a table, verdict included


def test_markdown_and_csv(cli, ledger: Path) -> None:
    rows = list(csv.reader(io.StringIO(cli("runs", "--csv").stdout)))
    assert rows[0] == ["run", "kind", "created", "tasks", "trials", "judged", "resolved", "rate"]
    assert [r[0] for r in rows[1:]] == [BASE, *CANDS, "a-training-run-with-a-long-name"]
    assert rows[1][-1] == "22.4%"
    md = cli("show", BASE, "--markdown").stdout
    assert "| repo | trials | judged | resolved | rate |" in md and "| django/django |" in md
    cmp_md = cli("compare", BASE, CANDS[0], "--by-repo", "--markdown").stdout
    assert "**By repo: `20240620_sweagent_claude3.5sonnet`**" in cmp_md and "| django/django |" in cmp_md
    cmp_csv = list(csv.reader(io.StringIO(cli("compare", BASE, *CANDS, "--csv").stdout)))
    assert cmp_csv[0][0] == "candidate" and [r[0] for r in cmp_csv[1:4]] == list(CANDS)
    tr = cli("train", "report", "a-training-run-with-a-long-name", "--markdown").stdout
    assert "| wv | traj | judged |" in tr and "┃" not in tr
    pol = list(csv.reader(io.StringIO(cli("policy", "--csv", use_db=False).stdout)))
    assert pol[0] == ["exception", "outcome", "retry", "graded", "meaning"] and len(pol) == len(policy_rows()) + 1
    attr = cli("attribute", BASE, CANDS[1], "--markdown").stdout
    assert "**change by transition**" in attr and "| unresolved | resolved |" in attr
    for flags in (("--csv", "--markdown"), ("--json", "--csv"), ("--markdown", "--json")):
        both = cli("runs", *flags)
        assert both.exit_code == 2 and "give at most one of --json, --markdown and --csv" in both.stderr
        assert both.stdout == "" and "Traceback" not in both.stderr


def test_two_formats_are_refused_before_the_command_writes(cli, ledger: Path, tmp_path: Path) -> None:
    out = tmp_path / "artifacts.txt"
    refused = cli("audit", BASE, "--write-tasks", str(out), "--json", "--markdown")
    assert refused.exit_code == 2 and "at most one of" in refused.stderr and not out.exists()
    assert cli("audit", BASE, "--write-tasks", str(out), "--json").exit_code == 0 and out.exists()


def test_plan_and_prereg_check_as_csv(cli, ledger: Path, tmp_path: Path) -> None:
    """Their output holds tables, so they take --csv like the other reporting commands."""
    plan = list(csv.reader(io.StringIO(cli("plan", "--tasks", "500", "--repeats", "4", "--effect", "5", "--csv",
                                           use_db=False).stdout)))  # fmt: skip
    assert plan[0] == ["K", "95% half-width (pp)", "MDE 80% (pp)", "tasks for 5 pp"]
    assert [r[0] for r in plan[1:]] == ["1", "2", "4 *", "8", "16"]
    out = tmp_path / "plan.yaml"
    res = cli("prereg", "init", "--pool", str(ledger), "--train", "100", "--holdout", "150", "--seed", "1",
              "--out", str(out))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    check = cli("prereg", "check", str(out), "--base", BASE, "--cand", CANDS[2], "--csv")
    assert check.exit_code == 0, check.stderr
    rows = list(csv.reader(io.StringIO(check.stdout)))
    assert rows[0][0] == "candidate" and rows[0][-1] == "claim"
    held_out = rows[1]
    assert held_out[0] == CANDS[2] and held_out[1] == "150" and held_out[-1] == "YES"
    assert "preregistered verdict" in check.stderr and f"{CANDS[2]}: CLAIM HOLDS" in check.stderr


def test_quickstart_table_keeps_task_names_and_outcomes_whole(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """The first command a user runs: at 80 columns rich's own table cut `uncommitted-…` and `verifier_tim…`."""
    from trialbook.cli.harness import _print_quickstart
    from trialbook.harness.workflows.quickstart import AgentTally, QuickstartResult, QuickTask, RunBrief

    hung, ok = {"verifier_timeout": 2}, {"resolved": 2}
    tasks = [
        QuickTask("uncommitted-test-config", "resolved",
                  {"nop": AgentTally(0, 2, 2, {"unresolved": 2}), "oracle": AgentTally(2, 2, 2, ok)}),
        QuickTask("hung-verifier", "verifier_timeout",
                  {"nop": AgentTally(0, 0, 2, hung), "oracle": AgentTally(0, 0, 2, hung)}),
    ]  # fmt: skip
    runs = {
        "nop": RunBrief("quickstart-nop", 4, 2, 0, 0.0, {}),
        "oracle": RunBrief("quickstart-oracle", 4, 2, 2, 100.0, ok),
    }
    monkeypatch.setenv("COLUMNS", "80")
    _print_quickstart(
        QuickstartResult("oracle", runs, tasks, None, "trialbook compare quickstart-nop quickstart-oracle")
    )
    out = capsys.readouterr().out
    _fits(out)
    lines = out.splitlines()
    assert "uncommitted-test-config" in lines and "hung-verifier" in lines  # stacked: each name on its own line
    assert out.count("verifier_timeout") == 2 and "outcomes: verifier_timeout 2" in out


def test_from_swebench_build_table_keeps_instance_and_image_whole(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """`tasks from-swebench --build`'s table of built images (rich's own table cut them at 80 columns)."""
    from trialbook.report.audit import print_build
    from trialbook.tasks.swebench.build import BuildLine, TasksBuilt

    task = "scikit-learn__scikit-learn-10297"
    image = f"trialbook-swe-{task}:0123456789abcdef"
    built = BuildLine(task, "built", image=image, seconds=81.4, image_mb=650.2)
    skipped = BuildLine("django__django-10097", "skipped", "no FAIL_TO_PASS tests")
    monkeypatch.setenv("COLUMNS", "80")
    print_build(TasksBuilt(out="tasks", written=[task], skipped=[skipped], instances=[built, skipped]))
    out = capsys.readouterr().out
    _fits(out)
    assert task in out.splitlines() and f"image: {image}" in out and "build s: 81" in out
    assert "skipped: django__django-10097: no FAIL_TO_PASS tests" in out
