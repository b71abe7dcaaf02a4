"""A trial's `extra` has one schema (trialbook/extra_schema.py): no module outside it reads `extra` as a free dict,
every key written is one `Extra` declares, and the stored JSON (old ledgers' too) reads through the typed accessors."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from paths import REPO
from trialbook.agents.base import AgentResult
from trialbook.extra_schema import KEYS, Extra, ExtraReader, RolloutSummary, read_extra, with_extra
from trialbook.harness.trial.state import ImageRef, TrialExtra
from trialbook.ledger.store import Ledger, trial_row
from trialbook.records import Run, Trial
from trialbook.trajectory import Trajectory, Turn, tagged
from trialbook.verify.runner import Verdict
from trialbook.verify.verdict_record import verdict_keys

SRC = REPO / "src" / "trialbook"
SCHEMA = "extra_schema.py"
# receivers whose `.extra` is another thing with the same name, each with what it is
OTHER_EXTRAS = {"plan": "a SWE-bench build plan's notes (tasks/swebench/build_plan.py), not a trial's"}
DICT_METHODS = {"get", "items", "keys", "values", "setdefault", "update", "pop"}


def _trial_extra(node: ast.AST) -> bool:
    """`x.extra` where `x` is not one of OTHER_EXTRAS."""
    return isinstance(node, ast.Attribute) and node.attr == "extra" and ast.unparse(node.value) not in OTHER_EXTRAS


def free_uses(root: Path = SRC) -> list[str]:
    """`(x.extra or {})`, `x.extra.get(...)` (or another dict method), `x.extra[...]` and `{**x.extra}` outside the
    schema module: file:line and the code."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root).as_posix() == SCHEMA:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            hit = (
                (isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and _trial_extra(node.values[0]))
                or (isinstance(node, ast.Attribute) and node.attr in DICT_METHODS and _trial_extra(node.value))
                or (isinstance(node, ast.Subscript) and _trial_extra(node.value))
                or (isinstance(node, ast.Dict) and any(k is None and _trial_extra(v)
                                                       for k, v in zip(node.keys, node.values, strict=True)))
            )  # fmt: skip
            if hit:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return found


def written_keys(root: Path = SRC) -> dict[str, list[str]]:
    """key -> where it is written: keywords of `with_extra(...)` and `Extra(...)`, and `x["key"] = ...` on a name
    bound to `Extra(...)` in the same module."""
    where: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        typed = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in ("with_extra", "Extra"):
                for kw in node.keywords:
                    if kw.arg is not None:
                        where.setdefault(kw.arg, []).append(f"{path.relative_to(root)}:{node.lineno}")
            call = node.value if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) else None
            if isinstance(node, ast.Assign) and call is not None and ast.unparse(call.func).split(".")[-1] == "Extra":
                typed |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for target in targets:
                for t in target.elts if isinstance(target, ast.Tuple) else [target]:
                    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id in typed:
                        key = t.slice.value if isinstance(t.slice, ast.Constant) else None
                        where.setdefault(str(key), []).append(f"{path.relative_to(root)}:{node.lineno}")
    return where


def test_no_module_reads_a_trials_extra_as_a_free_dict() -> None:
    assert free_uses() == []


def test_every_key_written_is_declared_in_the_schema() -> None:
    found = written_keys()
    assert {"trial_name", "tags", "lost_engines", "group_masked", "warnings", "rollout", "canary"} <= set(found)
    assert {k: v for k, v in found.items() if k not in KEYS} == {}


def test_the_greps_find_planted_free_reads_and_undeclared_keys(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "def f(t, plan):\n"
        "    a = (t.extra or {}).get('x')\n"
        "    b = t.extra.get('y')\n"
        "    c = t.extra['z']\n"
        "    d = {**t.extra, 'w': 1}\n"
        "    e = plan.extra.get('debian_packages')\n"
        "    t.extra = with_extra(t.extra, trial_name='n', colour='red')\n"
        "    out = Extra(agent='a')\n"
        "    out['shade'], out['tags'] = 'dark', []\n"
    )
    assert sorted(line.split(":")[1] for line in free_uses(tmp_path)) == ["2", "3", "4", "5"]
    found = written_keys(tmp_path)
    assert set(found) == {"trial_name", "colour", "agent", "shade", "tags"}
    assert sorted(k for k in found if k not in KEYS) == ["colour", "shade"]


def test_with_extra_refuses_an_undeclared_key_and_copies() -> None:
    base = {"trial_name": "t", "foreign": 1}  # an imported key is kept as it came
    out = with_extra(base, tags=["x"])
    assert out == {"trial_name": "t", "foreign": 1, "tags": ["x"]} and base == {"trial_name": "t", "foreign": 1}
    with pytest.raises(TypeError, match="not declared in trialbook/extra_schema.py: colour"):
        with_extra(None, **{"colour": "red"})  # type: ignore[arg-type]


def test_every_key_the_harness_writes_for_a_full_trial_is_declared() -> None:
    verdict = Verdict(
        reward=1.0, graded_by="test_log", exit_code=0, file_reward=1.0, tests_user="tb", rewards_by_tests=["r"],
        conflicts=["c"], outlived=2, foreign_rewards=["f"], canary="test_canary", canary_seen="failed",
        official_reward=1.0, channels="junit", seal={"start": "n"}, not_gold={"t": "XFAIL"},
    )  # fmt: skip
    extra = TrialExtra(
        trial_name="tb-r-t-0-1", agent="oracle", timeout_multiplier=1.0, agent_timeout_s=60.0,
        verifier_timeout_s=30.0, retries=1, phase_s={"agent": 1.0}, verifier_hash="h", tags=["x"],
        cleanup_error="c", verifier={"isolation": "diff"}, agent_limit_hits={"pids": 1}, runtime="runc",
        image=ImageRef("ref", "sha256:3"), agent_result=AgentResult(exit_code=0, info={"submitted": True},
                                                                    files={"trajectory.json": "{}"}),
        verdict_keys=verdict_keys(verdict), hack_zeroed=["hack_x"],
    ).as_dict()  # fmt: skip
    assert set(extra) <= KEYS
    assert {"official_reward", "channels", "seal", "not_gold", "canary", "train_reward"} <= set(extra)
    assert extra["canary"] == {"name": "test_canary", "seen": "failed"}
    assert set(verdict_keys(verdict)) <= KEYS
    notes = read_extra(extra)
    assert (notes.canary, notes.seal, notes.not_gold, notes.official_reward) == (
        {"name": "test_canary", "seen": "failed"}, {"start": "n"}, {"t": "XFAIL"}, 1.0)  # fmt: skip


def test_a_trajectory_summary_is_the_schemas_rollout_and_tagged_writes_declared_keys() -> None:
    turns = [Turn([1, 2], [3], [None]), Turn([9], [4], [None])]  # the second prompt does not extend the first
    traj = Trajectory.of(turns, model="m")
    assert set(traj.summary(3)) == set(RolloutSummary.__annotations__)
    out = tagged({"tags": ["x", "broken_prefix"], "foreign": 1}, traj, 3)
    assert out["tags"] == ["x", "broken_prefix"] and out["foreign"] == 1 and set(out) - {"foreign"} <= KEYS
    assert read_extra(out).rollout == traj.summary(3)


@pytest.mark.parametrize(
    ("raw", "name", "tags", "retries"),
    [
        (None, None, [], 0),
        ('{"trial_name": "n", "tags": ["a", 3], "retries": 2}', "n", ["a"], 2),  # the stored JSON text
        ({"trial_name": 7, "tags": "a", "retries": "2"}, None, [], 0),  # another file's types: empty, never raised
        ("[1, 2]", None, [], 0),  # JSON that is not an object
        ("not json", None, [], 0),
    ],
)
def test_reads_are_typed_and_forgiving(raw: object, name: str | None, tags: list[str], retries: int) -> None:
    notes = read_extra(raw)
    assert (notes.trial_name, notes.tags, notes.retries) == (name, tags, retries)
    assert notes.canary is None and notes.group_masked is None and notes.phase_s == {} and not notes.masked


def test_an_old_ledgers_extra_reads_back_through_the_schema(tmp_path: Path) -> None:
    """A trial as an older trialbook stored it (keys since renamed or gone kept as they were, a canary without
    `seen`) and an imported one with keys of its own: the ledger returns them unchanged, the reader typed."""
    old = {"trial_name": "tb-old-t-0-1", "agent": "mini", "tags": ["hack_x"], "phase_s": {"agent": 2},
           "canary": {"name": "test_c"}, "verifier": {"isolation": "diff", "tries": 1}, "agent_cost": 0.1}  # fmt: skip
    ledger = Ledger(f"sqlite:///{tmp_path / 'l.db'}")
    with ledger.transaction() as conn:
        run_id = ledger.create_run(conn, Run(name="old"))
        ledger.record_trial(conn, trial_row(run_id, Trial(task_id="o__r-1", outcome="resolved", reward=1.0, extra=old)))
    (row,) = ledger.trial_rows(run_id)
    assert row.extra == old
    notes = read_extra(row)
    assert (notes.trial_name, notes.agent, notes.tags, notes.phase_s) == ("tb-old-t-0-1", "mini", ["hack_x"],
                                                                           {"agent": 2.0})  # fmt: skip
    assert notes.canary == {"name": "test_c", "seen": None}
    assert isinstance(read_extra(json.dumps(old)), ExtraReader) and read_extra(json.dumps(old)).has("agent_cost")
    assert Extra(agent="a") == {"agent": "a"}  # the schema's value is the stored dict itself
