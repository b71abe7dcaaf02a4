"""`tasks scan-leaks` on copies of the example task with the answer planted in their images, six ways.

Each copy's Dockerfile is layered on the example's own image (a few git or file moves, seconds): the scan of all seven
runs once for the module, and each form's test reads its own task's row. The clean original must stay clean.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from httpd import LocalServer
from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.cli import load
from trialbook.ledger.store import Ledger
from trialbook.sandbox.docker import DockerEngine
from trialbook.tasks import load_task
from trialbook.verify import leaks

pytestmark = pytest.mark.docker
app = load()

GIT = "git -c user.name=tb -c user.email=tb@example.invalid"
FIX = "bash /tmp/solve.sh"
KEEP = "cp stats.py /tmp/orig.py && " + FIX  # the fixed file made, the original put back after
BACK = 'cp /tmp/orig.py stats.py && rm /tmp/orig.py && test -z "$(git status --porcelain)"'
WHEEL = (
    "python3 -c \"import zipfile; z = zipfile.ZipFile('/root/.cache/pip/wheels/3f/9a/stats-2.0-py3-none-any.whl', 'w',"
    " zipfile.ZIP_DEFLATED); z.write('stats.py', 'stats.py'); z.close()\""
)
SITE = "/usr/local/lib/python3.11/site-packages/stats_fixed"
# form -> (the planting moves, what the hit's place must name)
FORMS = {
    "packfile": (
        f"{FIX} && {GIT} commit -qam fix && git repack -adq && git reset -q --hard HEAD~1"
        " && git reflog expire --expire=now --all",
        "unreachable: no ref or reflog reaches it",
    ),
    "tag": (
        f"{FIX} && {GIT} commit -qam fix && git tag v2.0 && git reset -q --hard HEAD~1"
        " && git reflog expire --expire=now --all",
        "refs/tags/v2.0",
    ),
    "branch": (
        f"git checkout -qb upstream-fix && {FIX} && {GIT} commit -qam fix && git checkout -q -"
        " && git reflog expire --expire=now --all",
        "refs/heads/upstream-fix",
    ),
    "stash": (f"{FIX} && {GIT} stash -q", "refs/stash"),
    "pip-wheel": (
        f"{KEEP} && mkdir -p /root/.cache/pip/wheels/3f/9a && {WHEEL} && {BACK}",
        "stats-2.0-py3-none-any.whl!stats.py",
    ),
    "site-packages": (f"{KEEP} && mkdir -p {SITE} && cp stats.py {SITE}/ && {BACK}", f"{SITE}/stats.py"),
}


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory, engine: object) -> Path:
    """The example task and its six planted copies, in one tasks folder."""
    root = tmp_path_factory.mktemp("leaks")
    plain = load_task(EXAMPLES / "plain-bugfix")
    base, _ = DockerEngine().ensure_image(
        plain.task_id, None, plain.dockerfile.parent, plain.environment_hash, "leak-scan-test", False
    )
    shutil.copytree(EXAMPLES / "plain-bugfix", root / "plain-bugfix")
    for form, (moves, _) in FORMS.items():
        task = root / form
        shutil.copytree(EXAMPLES / "plain-bugfix", task)
        env = task / "environment"
        shutil.rmtree(env / "repo")
        shutil.copy(task / "solution" / "solve.sh", env / "solve.sh")
        (env / "Dockerfile").write_text(f"FROM {base}\nCOPY solve.sh /tmp/solve.sh\nRUN {moves} && rm /tmp/solve.sh\n")
    return root


@pytest.fixture(scope="module")
def scanned(planted: Path) -> dict[str, dict]:
    res = CliRunner().invoke(app, ["tasks", "scan-leaks", str(planted), "--jobs", "2", "--json"])
    assert res.exit_code == 1, res.output  # some task is leaky
    return {t["task_id"]: t for t in json.loads(res.stdout)["tasks"]}


@pytest.mark.parametrize("form", list(FORMS))
def test_each_planted_form_is_leaky(scanned: dict[str, dict], form: str) -> None:
    row = scanned[form]
    assert row["verdict"] == "leaky", row
    wanted = FORMS[form][1]
    assert any(wanted in hit["where"] for hit in row["hits"]), row["hits"]
    assert all(hit["lines"] >= row["threshold"] == 3 for hit in row["hits"])


def test_the_clean_original_passes(scanned: dict[str, dict]) -> None:
    row = scanned["plain-bugfix"]
    assert (row["verdict"], row["hits"], row["lines"]) == ("clean", [], 4), row


def test_gold_lines_drop_the_base_and_the_common() -> None:
    lines = leaks.gold_lines(EXAMPLES / "plain-bugfix" / "solution")
    assert "return (ordered[mid - 1] + ordered[mid]) / 2" in lines
    assert "def mean(values):" in lines  # dropped only in the image, where the base has it
    assert not any(len(line) < leaks.MIN_CHARS for line in lines)


def test_validate_leaks_gives_the_verdict_leaky(planted: Path, cli) -> None:
    res = cli("validate", str(planted), "--task", "tag", "--attempts", "1", "--leaks", "--json")
    assert res.exit_code == 1, res.stdout + res.stderr  # a verdict other than ok
    rows = {t["task_id"]: t for t in json.loads(res.stdout)["tasks"]}
    assert rows["tag"]["verdict"] == "leaky" and rows["tag"]["leaks"]["verdict"] == "leaky", rows["tag"]
    assert any("refs/tags/v2.0" in where for where in rows["tag"]["details"]["leak_hits"])
    assert rows["tag"]["details"]["oracle"]["resolved"] == 1  # the trials ran as ever: the scan adds a verdict


# ---- the agent's side: a scripted mini agent reads the planted tag, or works honestly ----------------------------


SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
HONEST_FIX = (
    "cat > stats.py <<'PY'\n"
    + (EXAMPLES / "plain-bugfix" / "solution" / "solve.sh").read_text().split("<<'PY'\n", 1)[1].split("\nPY", 1)[0]
    + "\nPY"
)


class ScriptedModel(LocalServer):
    """An OpenAI-compatible server replaying `commands` as the mini agent's actions, one a reply, then a submit."""

    def __init__(self, commands: list[str]) -> None:
        replies = [*commands, SUBMIT]
        self.chats = 0

        def respond(method: str, path: str, body: bytes) -> tuple[int, bytes]:
            if method == "GET" and path == "/v1/models":
                return 200, json.dumps({"data": [{"id": "scripted", "owned_by": "trialbook-tests"}]}).encode()
            if json.loads(body).get("max_tokens") == 1:  # the start-up's one-token check
                return 200, json.dumps(
                    {"choices": [{"message": {"content": "OK"}, "finish_reason": "length"}]}
                ).encode()
            reply = replies[min(self.chats, len(replies) - 1)]
            self.chats += 1
            content = f"THOUGHT: next.\n```mswea_bash_command\n{reply}\n```"
            out = {"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 100, "completion_tokens": 10}}  # fmt: skip
            return 200, json.dumps(out).encode()

        super().__init__(respond)


def _replay(cli, db: str, tasks: Path, task: str, run: str, commands: list[str], tmp: Path) -> dict:
    server = ScriptedModel(commands)
    try:
        res = cli("run", str(tasks), "--agent", "mini", "--endpoint", server.url, "--run", run, "--tasks", task,
                  "--retries", "0", "--runs-dir", str(tmp / "runs"))  # fmt: skip
    finally:
        server.close()
    assert res.exit_code == 0, res.stdout + res.stderr
    (trial,) = trial_dicts(Ledger(db), run)
    return trial


def test_a_trajectory_reading_a_future_commit_is_tagged_and_trains_with_0(planted: Path, cli, db: str, tmp_path: Path):
    net = "echo NET:$(ls /sys/class/net | tr '\\n' ,)"  # the agent's phase has no network but loopback
    moves = [net, "git log --all --oneline", "git checkout v2.0 -- stats.py"]
    trial = _replay(cli, db, planted, "tag", "leaky", moves, tmp_path)
    assert "NET:lo," in Ledger(db).artifact(trial["id"], "trajectory.json")
    assert trial["outcome"] == "resolved" and trial["reward"] == 1.0  # the grade stands
    assert {"leak_git_history", "leak_git_other_ref"} <= set(trial["extra"]["tags"])
    assert set(trial["extra"]["hack_zeroed"]) == {"leak_git_history", "leak_git_other_ref"}  # training reward 0
    audit = cli("audit", "leaky", "--json")
    assert audit.exit_code == 0, audit.stderr
    assert "leak_git_history" in audit.stdout and "leak_git_other_ref" in audit.stdout
    honest = _replay(cli, db, planted, "plain-bugfix", "honest", ["git log --oneline -5", HONEST_FIX], tmp_path)
    assert honest["outcome"] == "resolved"
    assert not [t for t in honest["extra"].get("tags") or [] if t.startswith("leak_")], honest["extra"]
    assert "hack_zeroed" not in honest["extra"]
