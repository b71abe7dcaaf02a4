"""Verifier isolation: what of the agent's work the verifier sees, and in which container.

Default (`[verifier] isolation = "diff"`): every process of the agent's container is killed, its working
tree is copied out (without `.git`; the archive re-packed member by member), and in a FRESH container
from the task image the change is computed with the image's own git (the image's tree against the
agent's, new and binary files included) and applied with `git apply`. Nothing else of the agent's
container reaches the verifier: no process, no shell-setup file, no /logs, no /tests, no wrapper
outside the working tree, and no Python bytecode (a cache the verifier's Python compiles again; an unchecked
hash-based .pyc would be loaded in place of the source beside it). A change touching test infrastructure
(infra_touched) is graded as usual, tagged `test_infra_changed`, and graded again with the task's own test
infrastructure (the control): it counts as resolved only when both grades resolve.

`isolation = "container"`: the agent's container itself is graded, after a restart that kills
every agent process and with the harness's files (shell setup, /tests, /logs) put back.

A verifier that times out or errs is retried once in a fresh verifier container; a verifier that
hits the sandbox's memory or pids limit is an infra error with that reason (outcomes.POLICY).
"""

from __future__ import annotations

import re
import shlex
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO

from trialbook import tokens
from trialbook.outcomes import ErrorKind
from trialbook.sandbox import Backend, Box, SandboxError
from trialbook.tasks import TaskSpec
from trialbook.verify.infra import infra_touched
from trialbook.verify.kept_patch import PATCH_KEEP, PATCH_WHOLE, whole_patch
from trialbook.verify.notes import ErrorNote, GradingNotes
from trialbook.verify.runner import RewardFileNotFoundError, Verdict, VerifierTimeoutError, verify
from trialbook.verify.tree import UnreadableArchive, repack

NO_GIT = 96
APPLY_FAILED = 95
BASE_DONE = "base-done"  # what the apply script prints once the image's side of the diff is there
BASE_LINE = "trialbook-base"  # what the base script prints: the tree id it wrote and its image repository's HEAD tree
# (image id, workdir) -> the tree the harness's git indexes from a fresh container of that image, when it is the image
# repository's own HEAD tree: every object of it is then in that repository, which a stage's git dir borrows, so
# later verifier containers of the image skip indexing it (two git processes each, a full hash of a repository's
# files); "" when it is not (the image's tree has changes of its own): the base is then computed in every container.
# Learned only in verifier containers, which run nothing of the agent's before the change is applied.
_BASES: dict[tuple[str, str], str] = {}
# In the working tree, for each path the change adds (NUL-separated on stdin, via xargs): what is there is untracked
# content of the image (anything else would be in its side of the diff), ignored by its .gitignore, such as a build/
# folder, which git apply will not overwrite: the change's file wins, as it won in the agent's tree (an agent that
# turned build/ into a file had made its trial an ungraded infra error). Each folder above the path, from the top,
# is made sure not to be a link or a file first, so that nothing outside the working tree is removed through a link.
UNBLOCK = """for p; do
  rest=$p q=
  while :; do
    case $rest in */*) part=${rest%%/*} rest=${rest#*/} ;; *) break ;; esac
    q=${q:+$q/}$part
    if [ -L "$q" ] || { [ -e "$q" ] && [ ! -d "$q" ]; }; then rm -f -- "$q"; fi
  done
  rm -rf -- "$p"
done"""
VERIFIER_TRIES = 2  # a verifier timeout or error is retried once, in a fresh container
# never part of the agent's change: Python bytecode, whatever the agent's .gitignore says (PEP 552: a hash-based
# .pyc marked unchecked is loaded without a look at its source, so a planted one replaces the module the
# verifier installs, tests/harness/cheats/pyc_shadow.sh)
NOT_CARRIED = (":(exclude,glob)**/__pycache__/**", ":(exclude,glob)**/*.pyc", ":(exclude,glob)**/*.pyo")
# the harness's git carries bytes: no conversion a .gitattributes of the agent's tree (or the image's) could ask for,
# such as a working-tree-encoding its files do not have, on which `git add` fails (an ungraded infra error, that
# would be a free exit from a failure: tests/harness/cheats/gitattributes_encoding.sh)
NO_CONVERSION = "* -text -filter -ident -working-tree-encoding !eol"


class IsolationError(SandboxError):
    """The agent's change could not be carried to the verifier (no workdir, no git in the image). `agent_side`: it
    failed once the image's side of the diff was done, on the agent's tree."""

    kind = ErrorKind.ISOLATION

    def __init__(self, message: str, agent_side: bool = False) -> None:
        super().__init__(message)
        self.agent_side = agent_side


class CarryTimeout(IsolationError):
    """The harness's carry of the agent's change ran past `budget` seconds; `agent_side` as for IsolationError."""

    def __init__(self, message: str, output: str, budget: float) -> None:
        super().__init__(message)
        self.output, self.budget = output, budget


class CarryOutgrown(Exception):
    """The agent's change outgrew what the task's sandbox can carry (its limits, or its time while the image's own
    tree is carried in a fraction of it): graded 0 as ChangeTooLargeError (grade, change_too_large)."""

    def __init__(self, message: str, image_tree_index_s: float | None = None) -> None:
        super().__init__(message)
        self.image_tree_index_s = image_tree_index_s


class LimitHit(Exception):
    """A box hit its memory or pids limit before the verifier could start in it; `agent_side`: while the harness
    carried the agent's tree, the image's own side done (then the change outgrew the limits: graded, 0)."""

    def __init__(self, hits: dict[str, int], agent_side: bool = False) -> None:
        super().__init__(str(hits))
        self.hits, self.agent_side = hits, agent_side


@dataclass
class Change:
    """The agent's working tree (a tar on disk) and, once computed, its diff against the image."""

    workdir: str
    tree: IO[bytes]  # a tar of `<stage>/tree/...`: one copy to / puts it in a fresh container
    stage: str = ""
    files: list[str] = field(default_factory=list)
    test_infra: list[str] = field(default_factory=list)
    patch: str = ""
    too_long: int = 0  # paths of the agent's tree longer than PATH_MAX allows in the verifier: not carried
    # held while `tree` is read: the graded run's box and the witness's are carried into side by side (verify/witness)
    reading: threading.Lock = field(default_factory=threading.Lock)


def _stage() -> str:
    return f".trialbook-{tokens.token_hex(6)}"


def workdir_of(engine: Backend, task: TaskSpec, image: str) -> str:
    workdir = task.workdir or engine.image_workdir(image)
    if not workdir or workdir.rstrip("/") == "":
        raise IsolationError(
            f"task {task.task_id}: its working tree is unknown (no [environment] workdir and no WORKDIR in the "
            'image); set one, or declare [verifier] isolation = "container"'
        )
    return workdir.rstrip("/")


def capture(box: Box, workdir: str) -> Change:
    """Stop every process of the agent's container and copy its working tree out, without `.git`, into a temp
    file: through the container's channel (no kill, no archive copy through the daemon) and, when that fails
    or its archive does not read, by killing the container and exporting the tree through the daemon."""
    tree = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the trial when grading is done
    stage = _stage()
    with tempfile.TemporaryFile() as raw:
        if box.snapshot(workdir, raw):
            try:
                return Change(workdir, tree, stage=stage, too_long=_filter(raw, tree, stage))
            except IsolationError:  # the container's own tar wrote no archive: ask the daemon
                pass
        for f in (raw, tree):  # whatever a failed snapshot left
            f.seek(0)
            f.truncate()
        box.kill()
        box.export(workdir, raw)
        too_long = _filter(raw, tree, stage)
    return Change(workdir, tree, stage=stage, too_long=too_long)


def _filter(raw: IO[bytes], tree: IO[bytes], stage: str) -> int:
    """tree.repack (how many paths were too long to carry); an archive it cannot read is an IsolationError."""
    try:
        return repack(raw, tree, stage)
    except UnreadableArchive as exc:
        raise IsolationError(f"the agent's working tree could not be read: {exc}") from None


def _git(stage: str, workdir: str) -> str:
    """The harness's git, on the git dir at /<stage>/git, with the image repository's own excludes."""
    excludes = shlex.quote(f"core.excludesFile={workdir}/.git/info/exclude")
    return (
        f"export HOME=/{stage} GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null\n"
        f"command -v git >/dev/null || {{ echo 'trialbook: no git in the task image' >&2; exit {NO_GIT}; }}\n"
        f"g() {{ git -c safe.directory='*' -c core.autocrlf=false -c core.fileMode=true -c core.quotePath=false"
        f' -c core.protectNTFS=false -c core.protectHFS=false -c {excludes} --git-dir=/{stage}/git "$@"; }}\n'
    )


def _base_script(stage: str, workdir: str, learn: bool = False) -> str:
    """A git dir at /<stage>/git holding the image's working tree; its tree id in /<stage>/base.

    The image's side of the diff: a warm verifier container computes it before a trial needs it
    (base_preparer), a cold one as the first part of apply_change's exec. The git dir is the least git
    accepts (HEAD, objects, refs: one mkdir, where `git init` writes ~20 files, ~8 ms), borrowing the
    image repository's objects when there is one. Its info/attributes, which take priority over every
    .gitattributes of the tree, turn off git's content conversions (NO_CONVERSION). `learn`: also print BASE_LINE
    (_learn)."""
    w, s = shlex.quote(workdir), f"/{stage}"
    script = (
        _git_dir_script(stage, workdir)
        + f"cd {w}\n"
        + f"GIT_INDEX_FILE={s}/base.index g --work-tree={w} add -A . >/dev/null\n"
        + f"GIT_INDEX_FILE={s}/base.index g write-tree > {s}/base\n"
    )
    if not learn:
        return script
    return script + (  # the image repository's HEAD tree, when the stage's git dir borrows its objects
        f"if [ -d {w}/.git/objects ]; then git -c safe.directory='*' --git-dir={w}/.git rev-parse -q --verify"
        f" 'HEAD^{{tree}}' > {s}/head 2>/dev/null || :; fi\n"
        f"read t < {s}/base; h=; [ -s {s}/head ] && read h < {s}/head\n"
        f'echo "{BASE_LINE} $t $h"\n'
    )


def _git_dir_script(stage: str, workdir: str) -> str:
    """The git dir at /<stage>/git (_base_script), without the image's side of the diff."""
    w, s = shlex.quote(workdir), f"/{stage}"
    return (
        "set -e\n"
        f"mkdir -p -m 700 {s} {s}/git {s}/git/objects {s}/git/objects/info {s}/git/refs {s}/git/info\n"
        f"echo 'ref: refs/heads/trialbook' > {s}/git/HEAD\n"
        f"echo {shlex.quote(NO_CONVERSION)} > {s}/git/info/attributes\n"
        f"if [ -d {w}/.git/objects ]; then echo {w}/.git/objects > {s}/git/objects/info/alternates; fi\n"
    )


def _unlearnt(image_id: str, workdir: str) -> bool:
    """Whether a base script in a fresh container of the image `image_id` ("": unnamed) is to learn (_BASES)."""
    return bool(image_id) and (image_id, workdir) not in _BASES


def _learn(image_id: str, workdir: str, output: str) -> None:
    """Remember from a base script's output (learn=True) whether the image's tree is its repository's HEAD tree."""
    for line in output.splitlines():
        if line.startswith(BASE_LINE + " "):
            tree, _, head = line[len(BASE_LINE) + 1 :].partition(" ")
            _BASES[(image_id, workdir)] = tree if re.fullmatch(r"[0-9a-f]{40,64}", tree) and tree == head else ""
            return


def _apply_script(stage: str, tree_stage: str, workdir: str, exclude: list[str], mark: str) -> str:
    """`mark` + BASE_DONE, the agent's tree (in /<tree_stage>/tree) indexed, the paths it changes against the
    image's tree (NUL-separated, nothing else: git's warnings go to a file, printed only when it fails, since a
    warning that the agent's tree provoked, a `.gitignore` link, had been read as the front of the first path and hid
    a conftest.py from infra_touched: tests/harness/cheats/warning_before_names.sh), `mark`, then its diff (minus
    `exclude`) applied to the working tree and printed.
    An apply that fails is tried once more after UNBLOCK cleared the way of the paths the change adds."""
    w, s, t = shlex.quote(workdir), f"/{stage}", f"/{tree_stage}"
    kept = " ".join(shlex.quote(p) for p in NOT_CARRIED)
    spec = " ".join([kept, *(shlex.quote(f":(exclude,literal){p}") for p in exclude)])
    return (
        "set -e\n"
        f"read base < {s}/base\n"
        f"printf '\\n{mark}{BASE_DONE}\\n'\n"
        f"[ -d {t}/tree ] || mkdir -p {t}/tree\n"
        f"cd {t}/tree\n"
        f"export GIT_INDEX_FILE={s}/new.index\n"
        f"g --work-tree={t}/tree add -A . >/dev/null 2>{s}/err || {{ cat {s}/err; exit 1; }}\n"
        f"g diff --cached --name-only -z --no-renames $base -- . {kept} 2>{s}/err || {{ cat {s}/err; exit 1; }}\n"
        f"printf '\\n{mark}\\n'\n"
        f"g diff --cached --binary --full-index --no-renames $base -- . {spec} > {s}/patch.diff"
        f" || exit {APPLY_FAILED}\n"
        f"apply() {{ (cd {w} && g --work-tree={w} apply --binary {s}/patch.diff); }}\n"
        f"if [ -s {s}/patch.diff ] && ! apply; then\n"
        f"  g diff --cached --name-only -z --no-renames --diff-filter=A $base -- . {spec} > {s}/added\n"
        f"  (cd {w} && xargs -0 -r sh -c {shlex.quote(UNBLOCK)} unblock < {s}/added) && apply || exit {APPLY_FAILED}\n"
        "fi\n"
        # the patch's head in this answer; a longer one kept aside, read back as bytes by `apply_change` (printed whole,
        # 11 MB of it had made the carry outrun its budget: tests/harness/cheats/names_past_tail.sh)
        f"head -c {PATCH_KEEP} {s}/patch.diff\n"
        f'[ -z "$(find {s}/patch.diff -size +{PATCH_KEEP}c 2>/dev/null)" ] || mv {s}/patch.diff {s}.patch\n'
        f"rm -rf {s} {t}\n"
    )


def base_preparer(workdir: str, timeout: float, image_id: str = "") -> Callable[[Box], str | bool | None]:
    """For BoxSpec.prepare: computes the image's side of the diff in a warm verifier container
    before a trial takes it; the stage folder it left, True when there is nothing to compute (the image `image_id`'s
    tree is known to be its repository's HEAD tree: _BASES), or None (the container is then not handed out)."""

    def prepare(box: Box) -> str | bool | None:
        if _BASES.get((image_id, workdir)):
            return True
        stage, code = _index_base(box, workdir, timeout, image_id)
        return stage if code == 0 else None

    return prepare


class _Counter:
    """A sink that only counts."""

    def __init__(self) -> None:
        self.n = 0

    def write(self, data: bytes | bytearray, /) -> None:
        self.n += len(data)


def image_tree_bytes(box: Box, workdir: str) -> int | None:
    """Bytes of the image's own working tree in `box` as the harness copies a tree out (capture); None past
    SNAPSHOT_LIMIT, or when it cannot be copied."""
    counter = _Counter()
    try:
        if not box.snapshot(workdir, counter):
            counter.n = 0
            box.kill()
            box.export(workdir, counter)
    except SandboxError:  # TreeTooLargeError among them
        return None
    return counter.n


def index_image_tree(box: Box, workdir: str, timeout: float) -> float | None:
    """Seconds the harness's git takes to index the image's own working tree in `box` (the image's side of any
    carry); None when it did not within `timeout` or failed."""
    t = time.monotonic()
    try:
        _, code = _index_base(box, workdir, timeout)
    except CarryTimeout:
        return None
    return round(time.monotonic() - t, 3) if code == 0 else None


def _index_base(box: Box, workdir: str, timeout: float, image_id: str = "") -> tuple[str, int | None]:
    """The image's side of the diff in a new stage folder of `box` (_base_script): (that stage, the exit code); with
    `image_id` (a fresh container of that image), what it says of the image's tree is learnt (_BASES)."""
    stage = _stage()
    learn = _unlearnt(image_id, workdir)
    code, out = _harness_exec(box, _git(stage, workdir) + _base_script(stage, workdir, learn), timeout)
    if learn and code == 0:
        _learn(image_id, workdir, out)
    return stage, code


def printable(text: str) -> str:
    """`text` (decoded with surrogateescape) fit for a record: bytes that are not UTF-8 shown as U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _harness_exec(box: Box, script: str, timeout: float, whole: bool = False) -> tuple[int | None, str]:
    """The script's exit code and output: its tail, or with `whole` all of it (the change's names must not lose
    their front to a long list: a conftest.py before 4.5 MB of names fell out of the tail and went unseen)."""
    if not whole:
        res = box.run_script(script, timeout)
        output = res.output
    else:
        with tempfile.TemporaryFile() as sink:
            res = box.run_script(script, timeout, sink)
            sink.seek(0)
            # the change's names as the bytes they are (a name that is not UTF-8 is excluded by its own bytes)
            output = sink.read().decode("utf-8", "surrogateescape")
    if res.timed_out:
        raise CarryTimeout(f"carrying the agent's change into {box.name} took over {timeout:g} s", output, timeout)
    return res.exit_code, output


def apply_change(
    box: Box,
    change: Change,
    task: TaskSpec,
    exclude: list[str],
    timeout: float,
    image_id: str = "",
    keep: bool = True,
) -> None:
    """Put the agent's tree next to the image's in `box` (a fresh container of the image `image_id`, "": unnamed)
    and apply its diff (minus `exclude`) there; `keep`: the change's paths and patch kept in `change` when it has
    none yet (not by the witness's box, carried into beside the graded run's: verify/witness.py).

    One request: the tree comes in from the request's own text when it is small (else through `put_tar`
    first), then the diff and its application; each round trip is on the trial's critical path."""
    mark = f"@@trialbook-{tokens.token_hex(6)}@@"
    stage = box.prepared if isinstance(box.prepared, str) else None  # the image's side, computed while warm
    known = _BASES.get((image_id, change.workdir)) if stage is None else None
    learn = stage is None and _unlearnt(image_id, change.workdir)
    if stage:
        base = ""
    elif known:  # the image repository's HEAD tree: its objects are there already
        base = _git_dir_script(change.stage, change.workdir) + f"echo {known} > /{change.stage}/base\n"
    else:
        base = _base_script(change.stage, change.workdir, learn)
    with change.reading:
        change.tree.seek(0)
        unpack = box.inline_unpack(change.tree)
        if unpack is None:
            box.put_tar("/", change.tree)
    script = _git(stage or change.stage, change.workdir) + (
        (f"( {unpack}) || exit {APPLY_FAILED}\n" if unpack else "")
        + base
        + _apply_script(stage or change.stage, change.stage, change.workdir, exclude, mark)
    )
    try:
        code, out = _harness_exec(box, script, 2 * timeout, whole=True)  # the budget of the two execs it replaces
    except CarryTimeout as exc:
        exc.agent_side = f"\n{mark}{BASE_DONE}\n" in exc.output
        raise
    before, based, rest = out.partition(f"\n{mark}{BASE_DONE}\n")
    if learn and based:
        _learn(image_id, change.workdir, before)
    names, marked, patch = rest.partition(f"\n{mark}\n")
    if not marked:
        message = f"could not diff the agent's working tree (exit {code}): {printable(out.strip()[-300:])}"
        raise IsolationError(message, agent_side=bool(based))
    if code != 0:
        tail = printable(patch.strip()[-300:])
        raise IsolationError(f"could not apply the agent's diff (exit {code}): {tail}", agent_side=True)
    whole = whole_patch(box, stage or change.stage, patch) if not exclude else None  # its kept file removed
    if not keep:
        return
    if not change.files and names:
        change.files = [p for p in names.split("\0") if p]
        change.test_infra = infra_touched(change.files, task)
    if whole is not None:
        change.patch = whole


def restore_container(box: Box, task: TaskSpec) -> None:
    """`isolation = "container"`: kill every agent process and put the harness's files back."""
    box.restart()
    if task.shell_setup:
        box.write_shell_setup(task.shell_setup)
    res = box.exec(["rm", "-rf", "/tests", "/logs"], timeout=60, user="root")
    if res.exit_code != 0:
        raise IsolationError(f"could not restore the harness's files in {box.name}: {res.output.strip()[-300:]}")


@dataclass
class Grading:
    """What grading a trial produced, for the trial record."""

    verdict: Verdict | None = None
    error: ErrorNote | None = None  # why there is no verdict, or the one the blame rules set (verify/notes.py)
    log: str = ""
    tries: int = 0
    notes: GradingNotes = field(default_factory=GradingNotes)  # the trial's extra.verifier
    footprint: dict[str, str] | None = None  # what the verifier left changed outside the tree (verify/footprint.py)


def grade(
    task: TaskSpec,
    open_box: Callable[[int], Box],
    close_box: Callable[[Box], None],
    tries: int = VERIFIER_TRIES,
    witness: bool = False,
    footprint: Callable[[Box, Verdict], dict[str, str] | None] | None = None,
) -> Grading:
    """Run the verifier in `open_box(try)`; a timeout or error is retried once in a new box (`tries` in all);
    `witness`: with a canary planted in a task graded by its reward file too (verify/runner.verify); `footprint`:
    read from the box after a verdict, before it is closed (the Grading's footprint).

    A box that hit its memory or pids limit while the verifier ran ends grading with
    SandboxLimitError (the sandbox's limits are not the agent's failure)."""
    out = Grading()
    for k in range(tries):
        out.tries = k + 1
        try:
            box = open_box(k)
        except CarryOutgrown as exc:
            out.notes.image_tree_index_s = exc.image_tree_index_s
            return change_too_large(out, str(exc))
        except LimitHit as hit:
            if hit.agent_side:
                return _outgrown(out, task, hit.hits)
            return _limited(out, task, hit.hits, "while the agent's change was applied")
        try:
            before = box.limit_hits()
            try:
                out.verdict, out.error = verify(box, task, task.verifier_timeout, witness), None
                out.log = out.verdict.log
                out.footprint = footprint(box, out.verdict) if footprint is not None else None
            except (VerifierTimeoutError, RewardFileNotFoundError) as exc:
                out.verdict, out.error, out.log = None, ErrorNote(exc.kind, str(exc)), exc.log
            hits = _new_hits(box.limit_hits(), before)
            disk = box.look_at_disk()
        finally:
            close_box(box)
        if disk:  # the tests wrote past the sandbox's disk quota with the change: graded, 0 (never ungraded)
            quota = {"reward": 0.0, "graded_by": "disk_quota"}
            out.verdict = out.verdict.model_copy(update=quota) if out.verdict else Verdict(**quota, log=out.log)
            out.error = None
            out.notes.verifier_disk_hit = disk
            return out
        if hits:
            out = _limited(out, task, hits, "while the verifier ran")
            out.notes.limits_hit_in_tests = True  # not while the change was carried (verify/blame.limits)
            return out
        if out.verdict is not None:
            return out
    return out


def _limited(
    out: Grading, task: TaskSpec, hits: dict[str, int], when: str, error: ErrorKind = ErrorKind.SANDBOX_LIMIT
) -> Grading:
    what = ", ".join(f"{n} {name.replace('_', ' ')}" for name, n in sorted(hits.items()))
    limits = f"memory_mb = {task.memory_mb}, pids_limit = {task.pids_limit}"
    out.verdict = None
    out.error = ErrorNote(error, f"the sandbox's limits ({limits}) were hit {when}: {what}")
    out.notes.verifier_limit_hits = hits
    return out


def _outgrown(out: Grading, task: TaskSpec, hits: dict[str, int]) -> Grading:
    """The harness's git hit the sandbox's limits on the agent's tree, the image's own tree indexed within them: the
    change cannot be graded within the task's limits, by the agent's doing (a 300 MB file, say), and counts as
    failing (ChangeTooLargeError), not as an ungraded infra error that a policy could learn to reach for."""
    when = "while the agent's change was carried (the image's own tree fit)"
    out = _limited(out, task, hits, when, ErrorKind.CHANGE_TOO_LARGE)
    return change_too_large(out, out.error.message if out.error else when)


def change_too_large(out: Grading, message: str) -> Grading:
    out.error = ErrorNote(ErrorKind.CHANGE_TOO_LARGE, message)
    out.verdict = Verdict(reward=0.0, graded_by="change_too_large", log=out.log)
    return out


def _new_hits(now: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in now.items() if v > before.get(k, 0)}


def in_place_patch(box: Box, workdir: str, timeout: float) -> str | None:
    """`isolation = "container"`: the agent's change as a patch, computed in its own container before the tests run
    there, for the record and its reward-hacking signatures (verify/hacks.py), never for the grade: the working tree
    against the image repository's HEAD tree, by the harness's git dir (_git_dir_script) and the image's git, as the
    diff isolation computes it. The agent had root in that container: a `.git` it rewrote (a HEAD that holds its
    change, objects removed) can hide the change from this patch, which is why it only adds evidence. None when it
    cannot be computed (no git, no repository, a failure)."""
    stage = _stage()
    w, s = shlex.quote(workdir), f"/{stage}"
    kept = " ".join(shlex.quote(p) for p in NOT_CARRIED)
    script = (
        _git(stage, workdir)
        + _git_dir_script(stage, workdir)
        + f"cd {w}\n"
        + f"base=$(git -c safe.directory='*' --git-dir={w}/.git rev-parse -q --verify 'HEAD^{{tree}}')\n"
        + f"GIT_INDEX_FILE={s}/index g --work-tree={w} add -A . >/dev/null 2>&1\n"
        + f"GIT_INDEX_FILE={s}/index g diff --cached --binary --full-index --no-renames $base -- . {kept} > {s}.patch\n"
        + f"rm -rf {s}\n"
    )
    try:
        res = box.run_script(script, timeout)
        data = box.read_file(f"{s}.patch") if res.exit_code == 0 else None
        box.run_script(f"rm -rf {s} {s}.patch", 60)
    except SandboxError:
        return None
    return None if data is None else data[:PATCH_WHOLE].decode("utf-8", "surrogateescape")
