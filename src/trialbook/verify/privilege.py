"""Privilege separation in the verifier: the task's test command runs as its own unprivileged uid.

Why: the code under test runs inside the test process, and until now that process ran as root with Docker's default
capabilities, as every other process of the verifier. So it could signal, ptrace, prlimit or write the memory
(/proc/<pid>/mem) of test.sh's shell after it, write the reward file itself, and change what test.sh runs after the
tests (`core.fsmonitor` in .git/config, hooks). A rule per trick does not converge; a uid boundary does.

Install and build steps too: SWE-bench's eval scripts re-install the repository (`pip install -e .`) before the test
command, and setuptools imports the working tree's code then (a setup.py that imports the package, `version = attr:`).
As root, that code read the staged test.sh (canaries, nonces, the hidden test patch) and replaced the setpriv the
prologue had probed once. So nothing of the agent runs with more privilege than the test run: each install or build
step (`_is_build_command`) runs as the same uid, into an install prefix of its own that only its python reads (the
image's environment stays root's, so root's python after the tests reads no .pth file the agent's code wrote), and
the programs root runs here are resolved once on the system's PATH before anything of that uid ran, called by that
path and checked when used.

How (`separate`): every test command of the staged test.sh (a command that runs a test runner or names a test module
or folder: `find_test_commands`) is prefixed with a shell function defined at the script's top, every install or
build step with its twin (BUILD_FUNCTION: no test markers, no junit report, its status under a `build` marker). For
each run it
- gives the working tree (the nearest folder holding `.git` above the command's directory) to TESTS_UID: every file
  and folder but the top `.git` (the repository's configuration and hooks, which root's later `git` reads) and files
  with more than one link (a hard link to a file outside the tree); the top folder itself stays root's and is made
  sticky and world-writable while the command runs (new files there, such as `.pytest_cache`, work; the tests can
  neither remove nor rename the root-owned `.git`; git's ownership check still sees root's repository);
- while a test command runs, makes the top `.git` mode 0700 (root's: the repository's history, which holds the
  unmodified tests, is not the tests' to read);
- runs the command as TESTS_UID:TESTS_UID, no supplementary groups, no capabilities (inheritable, ambient and bounding
  sets cleared), no new privileges (`setpriv`; else the image's python3, `-I -S`, does the same by syscalls), with a
  HOME and an install prefix of its own (`PIP_PREFIX`, `PIP_IGNORE_INSTALLED`, `PIP_NO_DEPS`; HOOK, named by
  PYTHONPATH, makes the prefix a site folder of that uid's python), made at the script's first install or build step
  (before it, and in a script without one, HOME is /tmp and there is no prefix: nothing was installed to read);
- kills every process of TESTS_UID when the command returns (nothing of the tests outlives it);
- removes any reward file the tests' uid left in /logs/verifier (that folder is sticky and world-writable while the
  tests run, so a test runner may write its own reports there, such as Harbor's ctrf.json; root's write after it then
  meets no file of the tests' in its way), and reports it (`Verdict.rewards_by_tests`);
- for a pytest run, asks pytest for a junit report in a fresh folder and prints it, read by root's builtins once
  nothing of the tests runs, between marker lines (verify/channels.py cross-checks it with the log and the status);
  where the verifier planted tests in a reward-file task's graded run (one run, verify/onerun.py), returns to test.sh
  the status the run would have had without them, computed from that report (SHOWN; their names are in this script
  only, root's, mode 0600, never exported);
- prints the command's exit status after a marker carrying a nonce the tests cannot read (the staged test.sh is root's,
  mode 0700; the shell's memory is root's), so the harness knows what the test command itself returned.
/tests is root's and mode 0700 unless a test command names it (Harbor's `pytest /tests/test_outputs.py`): then its
files stay readable, but test.sh and config.json (the F2P/P2P lists) are root's only. The harness reads reward files
only when root owns them.

A script with no test command found, or an image whose container does not run as root, runs its tests as
the verifier's own user (tagged `tests_not_separated`); docs/threat-model.md says what is guaranteed in each case.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Protocol

from trialbook.outcomes import REWARD_FILES
from trialbook.tasks.testscript import TestScript, words
from trialbook.verify import linear
from trialbook.verify.channels import REPORT_LIMIT

TESTS_UID = 60999  # the test command's uid and gid (no name in the image's /etc/passwd is needed)
TESTS_USER = "trialbook-tests"  # its USER / LOGNAME (getpass, pytest's tmp_path base folder)
FUNCTION = "__trialbook_tests"
BUILD_FUNCTION = "__trialbook_build"  # an install or build step of the working tree: the same uid, no test markers
LOG_DIR = "/logs/verifier"
# a test runner as a program, a module run with `-m`, or a script of the repository's own
RUNNERS = frozenset(("pytest", "py.test", "tox", "nox", "nosetests", "nose2", "trial", "runtests.py", "test"))
PY_RUNNERS = frozenset(("pytest", "unittest", "nose", "nose2", "tox", "twisted.trial", "django"))
# a program that runs the next words as a command (an interpreter runs a script or module)
LAUNCHERS = frozenset(("env", "timeout", "uv", "uvx", "poetry", "pipenv", "pdm", "hatch", "conda", "xvfb-run",
                       "coverage", "nice", "stdbuf", "time"))  # fmt: skip
INTERPRETER = re.compile(r"python[\d.]*|pypy[\d.]*")
TEST_FILE = re.compile(r"(test_.*|.*_tests?|tests)\.py")
TEST_DIR = re.compile(r"(\./)?(tests?|testing)(/.*)?")
# shell words after which a command starts (`if pytest ...; then`)
# an install or build step: it runs the working tree's code (setup.py, a build backend importing the package,
# a Makefile), so it runs as the tests' uid too (`_is_build_command`)
INSTALLERS = frozenset(("pip", "pip3", "uv", "poetry", "pdm", "pipenv", "conda", "mamba", "micromamba", "hatch"))
INSTALL_VERBS = frozenset(("install", "develop", "sync", "wheel", "build"))
BUILDERS = frozenset(("make", "gmake", "cmake", "meson", "ninja", "configure", "setup.py"))
PIP_PROGRAM = re.compile(r"pip[\d.]*")
KEYWORDS = frozenset(("if", "then", "else", "elif", "while", "until", "do", "!", "{", "time"))
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=\S*")
NOT_SEPARATED = "tests_not_separated"  # no test command found in test.sh, or no way to drop root: it ran as root
REWARD_BY_TESTS = "reward_written_by_tests"  # the tests' uid wrote a reward file (removed: test.sh's own counts)
CONTRADICTED = "exit_status_contradicts_log"  # a test command exited 0 after its runner reported a failure: 0


@dataclass(frozen=True)
class Separated:
    script: str  # the staged test.sh
    nonce: str  # the markers' nonce
    commands: int  # how many test commands run unprivileged (0: none was found)
    tests_readable: bool  # whether a test command names /tests (its files then stay readable)
    builds: int = 0  # how many install or build steps run unprivileged too


@dataclass
class Reading:
    """What the markers of a verifier run said: each test command's exit status as the tests left it and its output,
    how it was run (`setpriv`, `python3`, or `root`: not separated), and the reward files the tests' uid wrote."""

    runs: list[tuple[int, str]] = field(default_factory=list)
    how: list[str] = field(default_factory=list)
    rewards_by_tests: list[str] = field(default_factory=list)
    left: int = 0  # processes of the tests' uid alive when a test command returned (then killed)
    # each pytest run's junit report as root read it (None: absent) and its exit status (verify/channels.py)
    reports: list[str | None] = field(default_factory=list)
    report_exits: list[int] = field(default_factory=list)
    report_shown: list[int] = field(default_factory=list)  # the status test.sh saw of each (SHOWN: planted tests out)
    builds: list[int] = field(default_factory=list)  # each install or build step's exit status (run as that uid)


def _is_test_command(argv: list[str]) -> bool:
    """Whether a simple command's words (assignments dropped) run tests: a runner (RUNNERS, `python -m pytest`, a
    `runtests.py`, `bin/test`) or an interpreter or launcher naming a test module or folder; never an install."""
    if not argv or "install" in argv:
        return False
    program = PurePosixPath(argv[0]).name
    if program in RUNNERS and (program != "test" or "/" in argv[0]):  # `bin/test`, not the shell's `test -f`
        return True
    if not (INTERPRETER.fullmatch(program) or program in LAUNCHERS):
        return False
    for i, word in enumerate(argv[1:], 1):
        name = PurePosixPath(word).name
        if word == "-m" and i + 1 < len(argv) and argv[i + 1].split(".")[0] in PY_RUNNERS:
            return True
        if name in RUNNERS or TEST_FILE.fullmatch(name) or TEST_DIR.fullmatch(word.rstrip("/")):
            return True
        if name.endswith(".py") and "::" in word:
            return True
    return False


def _is_build_command(argv: list[str]) -> bool:
    """Whether a simple command's words install or build the working tree: `pip install`, `python -m pip install`,
    `uv pip install`, `poetry install`, `python setup.py <anything>`, `make`, a `./configure` (a test command is
    never one)."""
    if not argv or _is_test_command(argv):
        return False
    program = PurePosixPath(argv[0]).name
    args = argv[1:]
    if program in LAUNCHERS and program not in INSTALLERS:  # `env FOO=1 pip install .`, `timeout 600 make`
        rest = [w for w in args if not ASSIGNMENT.fullmatch(w) and not w.startswith("-")]
        return bool(rest) and _is_build_command(args[args.index(rest[0]) :])
    if program in BUILDERS:
        return True
    if PIP_PROGRAM.fullmatch(program) or program in INSTALLERS:
        return any(w in INSTALL_VERBS for w in args)
    if INTERPRETER.fullmatch(program):
        if any(PurePosixPath(w).name == "setup.py" for w in args):
            return True
        if "-m" in args and args.index("-m") + 1 < len(args):
            module = args[args.index("-m") + 1]
            later = args[args.index("-m") + 2 :]
            return module == "build" or (module in ("pip", "uv") and any(w in INSTALL_VERBS for w in later))
    return False


_OPERATOR = re.compile(r"&&|\|\||[;|&(){}]")


def _segments(text: str) -> list[int]:
    """Offsets in `text` where a simple command may start: the start and after each unquoted operator."""
    starts, quote, i = [0], "", 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "\\":
            i += 2
            continue
        elif c == "#" and (i == 0 or text[i - 1].isspace()):
            break
        elif c == "$" and text[i + 1 : i + 2] == "(":  # a command substitution: its own command starts after `(`
            starts.append(i + 2)
            i += 2
            continue
        else:
            m = _OPERATOR.match(text, i)
            if m:
                starts.append(m.end())
                i = m.end()
                continue
        i += 1
    return starts


def _command_start(text: str, start: int) -> tuple[int, list[str]] | None:
    """From `start`, past blanks, shell keywords and assignments: the offset of the program's word and the command's
    words up to the next operator; None when there is none or the words cannot be read."""
    i = start
    while True:
        while i < len(text) and text[i] in " \t":
            i += 1
        m = re.match(r"\S+", text[i:])
        if m is None:
            return None
        word = m.group(0)
        if word in KEYWORDS or (ASSIGNMENT.fullmatch(word) and "'" not in word and '"' not in word):
            i += len(word)
            continue
        break
    end = len(text)
    for s in _segments(text[i:])[1:]:
        end = i + s
        break
    argv = _words(text[i:end].rstrip(";&|(){} \t"))
    return (i, argv) if argv else None


def _words(part: str) -> list[str]:
    """The words of a part of one of the script's commands (a simple command of it, the rest of its line): the shell's
    split of a string that is not a whole command, so not one of the script's `Command.words`."""
    return words(part)


def find_test_commands(script: TestScript, build: bool = False) -> list[tuple[int, int]]:
    """(line index, column) of each test command's program in `script` (`build`: of each install or build step,
    `_is_build_command`), outside heredocs; a command on a continued line is found only when it starts on the first
    physical line."""
    wanted = _is_build_command if build else _is_test_command
    lines = script.text.split("\n")
    found = []
    for command in script.commands:
        index, text = command.line, command.text
        first = lines[index]
        for seg in _segments(text):
            got = _command_start(text, seg)
            if got is None:
                continue
            col, argv = got
            if argv[0] in ("exec", "eval", "source", ".") or col >= len(first):
                continue
            if wanted(argv):
                found.append((index, col))
    return found


# run as the tests' uid when a test command returns: how many of its processes are still alive (not zombies; this
# shell and its one child, the `$(...)` that reads the count, aside), then SIGKILL to all of them (kill(-1) from
# that uid reaches that uid's processes only)
COUNT_AND_KILL = (
    'n=0; for p in /proc/[0-9]*; do [ -O "$p" ] || continue; s=; read -r s < "$p/stat" 2>/dev/null || continue; '
    's=${s##*) }; [ "${p#/proc/}" = $$ ] || [ "${s%% *}" = Z ] || n=$((n+1)); done; '
    "kill -9 -1 2>/dev/null; kill -9 -1 2>/dev/null; echo $n"
)


SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
# the programs root runs in the prologue and the function: resolved once on SYSTEM_PATH before anything of the tests'
# uid ran, called by that path, and checked again each time (`__tb_ok`: a root-owned file in a root-owned folder)
TOOLS = ("setpriv", "python3", "env", "find", "chown", "chmod", "stat", "mktemp", "mkdir", "install", "rm")
# Imported by every python of the tests' uid (PYTHONPATH names its folder, root's and read-only): the uid's own
# install prefix as a site folder (its .pth files read), then the image's own sitecustomize, which this one shadows
HOOK = """# trialbook (verify/privilege.py): the tests' uid's install prefix, a site folder of its python only
import os as _os, site as _site, sys as _sys
_d = "%s/lib/python%%d.%%d/site-packages" %% _sys.version_info[:2]
try:
    _os.makedirs(_d, exist_ok=True)
    _site.addsitedir(_d)
    # in PYTHONPATH too, for the processes it starts: setuptools' `develop` (pip install -e) refuses a prefix
    # that is neither a site folder nor on PYTHONPATH (it probes .pth files with `python -E`, which skips this hook)
    _p = _os.environ.get("PYTHONPATH", "")
    if _d not in _p.split(_os.pathsep):
        _os.environ["PYTHONPATH"] = _p + _os.pathsep + _d if _p else _d
    import importlib.machinery as _m, importlib.util as _u
    _here = _os.path.dirname(_os.path.abspath(__file__))
    _s = _m.PathFinder.find_spec("sitecustomize", [p for p in _sys.path if p and _os.path.abspath(p) != _here])
    if _s is not None and _s.loader is not None:
        _s.loader.exec_module(_u.module_from_spec(_s))
except Exception:
    pass
"""


# The status a pytest run holding planted tests returns to test.sh (`__tb_shown STATUS REPORT`, sets __tb_s), computed
# by root from the run's junit report once nothing of the tests runs: 0 when the run failed (1) only by its planted
# tests, that is when the report holds at least one planted test, each failing, and no other test failing or erroring;
# else the run's own status. A report read otherwise (a comment, a CDATA section, a testcase left open) leaves the
# status as it is. verify/onerun.shown_status computes the same in the harness from the report root printed; a
# difference is a forged report (verify/onerun.py). Linear in the report: one `read` per tag.
SHOWN = r"""__tb_shown() {
  __tb_s=$1
  { [ -n "$__tb_planted" ] && [ "$1" = 1 ] && [ -f "$2" ] && [ ! -L "$2" ]; } || return 0
  local t n c= f=0 pf=0 pp=0 rf=0
  while IFS= read -r -d '<' t || [ -n "$t" ]; do
    case $t in
      '!'*) return 0 ;;
      testcase|testcase[[:space:]/\>]*)
        [ -n "$c" ] && return 0
        n=${t#*[[:space:]]name=\"}; [ "$n" = "$t" ] && n=; n=${n%%\"*}; n=${n%%\[*}
        c=r; [ -n "$n" ] && case $__tb_planted in *" $n "*) c=p ;; esac
        f=0; t=${t%>*}
        case $t in */) [ $c = p ] && pp=1; c= ;; esac ;;
      failure|failure[[:space:]/\>]*|error|error[[:space:]/\>]*) [ -n "$c" ] && f=1 ;;
      /testcase*)
        if [ "$c" = p ]; then if [ $f = 1 ]; then pf=1; else pp=1; fi
        elif [ "$c" = r ] && [ $f = 1 ]; then rf=1
        fi
        c= ;;
    esac
  done < "$2"
  [ -z "$c" ] && [ $pf = 1 ] && [ $pp = 0 ] && [ $rf = 0 ] && __tb_s=0
  return 0
}"""


def _prologue(nonce: str, planted: tuple[str, ...] = ()) -> str:
    """The functions an install or build step and a test command are run through (see the module's docstring), and
    how the image lets root drop its privileges. Quiet under `set -x` and safe under `set -euo pipefail`: what it
    does is the harness's, not the task's log. `planted`: the names of the tests the verifier planted, whose
    failures the status a pytest run returns to test.sh leaves out (SHOWN, verify/onerun.py)."""
    u = TESTS_UID
    drop = f"--reuid={u} --regid={u} --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs"
    # the same by syscalls, for an image without util-linux's setpriv (prctl 24: PR_CAPBSET_DROP, 38:
    # PR_SET_NO_NEW_PRIVS; setuid from root to another uid clears the permitted and effective sets); run with -I -S:
    # root's python reads no PYTHON* variable, no site folder and no .pth file before it drops
    py = (
        "import ctypes,os,sys\nc=ctypes.CDLL(None,use_errno=True)\n[c.prctl(24,n,0,0,0) for n in range(64)]\n"
        f"c.prctl(38,1,0,0,0)\nos.setgroups([])\nos.setgid({u})\nos.setuid({u})\nos.execv(sys.argv[1],sys.argv[1:])"
    )
    reward_paths = " ".join(f"{LOG_DIR}/{f}" for f in REWARD_FILES)
    mark = f"@@trialbook-tests-{nonce}@@"
    tools = " ".join(TOOLS)
    names = " ".join(n for n in planted if re.fullmatch(r"\w+", n))
    return f"""{{ __tb_x=$-; set +x; }} 2>/dev/null
__tb_planted={shlex.quote(f" {names} " if names else "")}
{SHOWN}
__tb_as= __tb_py=
for __tb_t in {tools}; do  # the first on the system's PATH, as `command -v` finds it (no subshell: no process)
  __tb_p=
  for __tb_d in {SYSTEM_PATH.replace(":", " ")}; do
    if [ -f "$__tb_d/$__tb_t" ] && [ -x "$__tb_d/$__tb_t" ]; then __tb_p=$__tb_d/$__tb_t; break; fi
  done
  eval "__tb_$__tb_t=\\$__tb_p"
done
__tb_ok() {{ [ -n "$1" ] && [ -f "$1" ] && [ -O "$1" ] && [ -O "${{1%/*}}" ]; }}
__tb_sys() {{  # a tool as resolved at the start, refused when it is no longer root's
  local __tb_p; eval "__tb_p=\\${{__tb_$1:-}}"; shift
  if __tb_ok "$__tb_p"; then "$__tb_p" "$@"; else return 126; fi
}}
if [ "${{EUID:-1}}" = 0 ]; then
  if __tb_ok "$__tb_setpriv" && __tb_ok "$__tb_env" && "$__tb_setpriv" {drop} -- "$__tb_env" >/dev/null 2>&1
  then __tb_as=setpriv
  elif __tb_ok "$__tb_python3" && __tb_ok "$__tb_env" && "$__tb_python3" -I -S -c {shlex.quote(py)} "$__tb_env" \\
    >/dev/null 2>&1; then __tb_as=python3
  fi
fi
__tb_made=
__tb_prefix() {{  # root's folder for the uid's python, made at the first install or build step (a script without one
  # pays nothing for it): its install prefix and HOME (the uid's), the hook (root's, read-only)
  [ -n "$__tb_made" ] && return 0
  __tb_made=1
  __tb_py=$(__tb_sys mktemp -d /tmp/tb-py.XXXXXX 2>/dev/null) || {{ __tb_py=; return 0; }}
  {{ __tb_sys mkdir "$__tb_py/hook" &&
    printf {shlex.quote(HOOK)} "$__tb_py/prefix" > "$__tb_py/hook/sitecustomize.py" &&
    __tb_sys install -d -m 755 -o {u} -g {u} "$__tb_py/prefix" "$__tb_py/home" &&
    __tb_sys chmod u=rwX,go=rX "$__tb_py" "$__tb_py/hook" "$__tb_py/hook/sitecustomize.py"; }} 2>/dev/null || __tb_py=
}}
__tb_drop() {{  # as the tests' uid: a HOME and an install prefix of its own; git trusts the tree it was handed
  {{ local __tb_z=$-; set +x; }} 2>/dev/null
  set -- HOME="${{__tb_py:-/tmp}}${{__tb_py:+/home}}" USER={TESTS_USER} LOGNAME={TESTS_USER} GIT_CONFIG_COUNT=1 \\
    GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*' "$@"
  [ -n "$__tb_py" ] && set -- PYTHONPATH="$__tb_py/hook${{PYTHONPATH:+:$PYTHONPATH}}" PIP_PREFIX="$__tb_py/prefix" \\
    PIP_IGNORE_INSTALLED=1 PIP_NO_DEPS=1 PIP_NO_WARN_SCRIPT_LOCATION=1 PATH="$__tb_py/prefix/bin:$PATH" "$@"
  if [ "$__tb_as" = setpriv ] && __tb_ok "$__tb_setpriv" && __tb_ok "$__tb_env"; then
    case $__tb_z in *x*) set -x ;; esac
    "$__tb_setpriv" {drop} -- "$__tb_env" "$@"
  elif [ "$__tb_as" = python3 ] && __tb_ok "$__tb_python3" && __tb_ok "$__tb_env"; then
    case $__tb_z in *x*) set -x ;; esac
    "$__tb_python3" -I -S -c {shlex.quote(py)} "$__tb_env" "$@"
  else printf 'trialbook: %s is no longer the one found at the start: not run\\n' "$__tb_as" >&2; return 126
  fi
}}
{BUILD_FUNCTION}() {{ __tb_run build "$@"; }}
{FUNCTION}() {{ __tb_run test "$@"; }}
__tb_run() {{
  {{ __tb_y=$-; set +x; }} 2>/dev/null
  __tb_kind=$1; shift
  [ "$__tb_kind" = test ] && printf '\\n{mark} start %s\\n' "${{__tb_as:-root}}"
  __tb_rc=0 __tb_rep= __tb_pytest= __tb_prev= __tb_add=
  # a junit report for a pytest run (verify/channels.py): as the tests' uid, or as root where tests were planted
  {{ [ "$__tb_kind" = test ] && {{ [ -n "$__tb_as" ] || [ -n "$__tb_planted" ]; }}; }} || __tb_pytest=no
  for __tb_w in "$@" ${{PYTEST_ADDOPTS:-}}; do  # a pytest run without a junit report of its own
    case $__tb_w in
      --junitxml*|--junit-xml*|no:junitxml|-pno:junitxml) __tb_pytest=no; break ;;
      pytest|*/pytest|py.test|*/py.test) __tb_pytest=${{__tb_pytest:-yes}} ;;
    esac
    [ "$__tb_prev" = -m ] && [ "$__tb_w" = pytest ] && __tb_pytest=${{__tb_pytest:-yes}}
    __tb_prev=$__tb_w
  done
  if [ "$__tb_pytest" = yes ] && __tb_rep=$(__tb_sys mktemp -d /tmp/tb-rep.XXXXXX 2>/dev/null); then
    [ -n "$__tb_as" ] && {{ __tb_sys chown {u}:{u} "$__tb_rep" 2>/dev/null || :; }}
    __tb_add="${{PYTEST_ADDOPTS:+$PYTEST_ADDOPTS }}--junitxml=$__tb_rep/junit.xml"
  else __tb_rep=
  fi
  if [ -n "$__tb_as" ]; then
    [ "$__tb_kind" = build ] && __tb_prefix
    __tb_top=$PWD
    while [ "$__tb_top" != / ] && [ ! -e "$__tb_top/.git" ]; do
      __tb_top=${{__tb_top%/*}}; __tb_top=${{__tb_top:-/}}
    done
    [ "$__tb_top" = / ] && __tb_top=$PWD
    __tb_mode= __tb_git=
    case $__tb_top in
      /|/bin|/boot|/dev|/etc|/lib*|/proc|/root|/sbin|/sys|/usr|/var|/tmp|/tests|/logs|/logs/*) ;;
      *) __tb_sys find "$__tb_top" -xdev -path "$__tb_top/.git" -prune -o ! -path "$__tb_top" \\
           \\( -type d -o -links 1 \\) -exec "$__tb_chown" -h {u}:{u} {{}} + 2>/dev/null || :
         # the repository's history is root's alone while tests run (the unmodified tests are in it); both modes read
         # by one stat
         if [ "$__tb_kind" = test ] && [ -d "$__tb_top/.git" ] && [ ! -L "$__tb_top/.git" ]; then
           __tb_git=$(__tb_sys stat -c %a "$__tb_top" "$__tb_top/.git" 2>/dev/null) || __tb_git=
           __tb_mode=${{__tb_git%%[!0-7]*}} __tb_git=${{__tb_git##*[!0-7]}}
           [ -n "$__tb_git" ] && __tb_sys chmod 700 "$__tb_top/.git" \\
             2>/dev/null || __tb_git=
         else __tb_mode=$(__tb_sys stat -c %a "$__tb_top" 2>/dev/null) || __tb_mode=
         fi
         __tb_mode=${{__tb_mode:-755}}
         __tb_sys chmod 1777 "$__tb_top" 2>/dev/null || : ;;
    esac
    [ -n "$__tb_rep" ] && set -- PYTEST_ADDOPTS="$__tb_add" "$@"
    case $__tb_y in *x*) set -x ;; esac
    __tb_drop "$@" && __tb_rc=0 || __tb_rc=$?
    {{ set +x; }} 2>/dev/null
    __tb_left=$(__tb_drop /bin/sh -c {shlex.quote(COUNT_AND_KILL)} 2>/dev/null) || __tb_left=
    printf '\\n{mark} left %s\\n' "${{__tb_left:-0}}"
    [ -n "$__tb_git" ] && {{ __tb_sys chmod "$__tb_git" "$__tb_top/.git" 2>/dev/null || :; }}
  else
    case $__tb_y in *x*) set -x ;; esac
    if [ -n "$__tb_rep" ]; then PYTEST_ADDOPTS=$__tb_add "$@" && __tb_rc=0 || __tb_rc=$?
    else "$@" && __tb_rc=0 || __tb_rc=$?
    fi
    {{ set +x; }} 2>/dev/null
  fi
  __tb_s=$__tb_rc
  if [ -n "$__tb_rep" ]; then  # read by root once nothing of the tests runs, with the shell's builtins only
    __tb_f="$__tb_rep/junit.xml"
    if [ -f "$__tb_f" ] && [ ! -L "$__tb_f" ]; then
      __tb_xml=; IFS= read -r -N {REPORT_LIMIT} __tb_xml < "$__tb_f" || :
      [ "${{#__tb_xml}}" -lt {REPORT_LIMIT} ] && __tb_shown "$__tb_rc" "$__tb_f"
      printf '\\n{mark} report %s %s\\n%s\\n{mark} report-end\\n' "$__tb_rc" "$__tb_s" "$__tb_xml"; __tb_xml=
    else printf '\\n{mark} report %s %s\\n\\n{mark} report-missing\\n' "$__tb_rc" "$__tb_s"
    fi
    __tb_sys rm -rf -- "$__tb_rep"
  fi
  if [ -n "$__tb_as" ]; then
    [ -n "$__tb_mode" ] && {{ __tb_sys chmod "$__tb_mode" "$__tb_top" 2>/dev/null || :; }}
    for __tb_f in {reward_paths}; do
      if [ -L "$__tb_f" ] || {{ [ -e "$__tb_f" ] && [ ! -O "$__tb_f" ]; }}; then
        __tb_sys rm -rf -- "$__tb_f"; printf '\\n{mark} reward %s\\n' "${{__tb_f##*/}}"
      fi
    done
  fi
  if [ "$__tb_kind" = test ]; then printf '\\n{mark} end %s %s\\n' "$__tb_rc" "${{__tb_as:-root}}"
  else printf '\\n{mark} build %s %s\\n' "$__tb_rc" "${{__tb_as:-root}}"
  fi
  case $__tb_y in *x*) set -x ;; esac
  return $__tb_s
}}
case $__tb_x in *x*) set -x ;; esac
"""


def separate(test_script: TestScript, nonce: str, planted: tuple[str, ...] = ()) -> Separated:
    """`test_script` with each test command run through FUNCTION and each install or build step through BUILD_FUNCTION
    (the module's docstring), their definitions put after the shebang; unchanged but for the prologue when neither is
    found (then it prints no markers). `planted`: tests whose failures the status a pytest run returns leaves out
    (SHOWN: a reward-file task's one run, verify/onerun.py); their names are in this script only, root's alone."""
    script = test_script.text
    found = find_test_commands(test_script)
    builds = find_test_commands(test_script, build=True)
    lines = script.split("\n")
    named_tests = False
    for index, col, function in sorted([*((i, c, FUNCTION) for i, c in found),
                                        *((i, c, BUILD_FUNCTION) for i, c in builds)], reverse=True):  # fmt: skip
        line = lines[index]
        if function == FUNCTION:
            named_tests = named_tests or any(w == "/tests" or w.startswith("/tests/") for w in _words(line[col:]))
        lines[index] = f"{line[:col]}{function} {line[col:]}"
    named_tests = named_tests or re.search(r"\bcd\s+/tests\b", script) is not None
    head = 1 if lines and lines[0].startswith("#!") else 0
    body = "\n".join([*lines[:head], _prologue(nonce, planted) if found or builds else "", *lines[head:]])
    return Separated(body, nonce, len(found), named_tests, len(builds))


def staging(separated: Separated | None) -> str:
    """Shell (run as root before test.sh) that makes /tests root's own and /logs/verifier writable but sticky."""
    if separated is None or not (separated.commands or separated.builds):
        return ""
    secrets = "chmod 600 /tests/test.sh /tests/config.json 2>/dev/null"
    tests = secrets if separated.tests_readable else "chmod 700 /tests"
    return f"mkdir -p {LOG_DIR} && chmod 755 /logs && chmod 1777 {LOG_DIR} && {{ {tests}; }}\n"


def read_markers(log: str, nonce: str) -> tuple[str, Reading]:
    """The log without the markers' lines, and what they said (`Reading`). A marker line is the harness's only with
    the nonce, which the tests cannot read."""
    mark = f"@@trialbook-tests-{nonce}@@ "
    reading = Reading()
    kept: list[str] = []
    span: list[str] | None = None
    report: list[str] | None = None
    for line in log.split("\n"):
        if report is not None and not line.startswith(mark):
            report.append(line)
            continue
        if not line.startswith(mark):
            kept.append(line)
            if span is not None:
                span.append(line)
            continue
        kind, _, arg = line[len(mark) :].partition(" ")
        if kind == "start":
            reading.how.append(arg.strip())
            span = []
        elif kind == "end":  # its start may have been cut from the log's kept tail by a flood of output
            status, _, how = arg.strip().partition(" ")
            if span is None:
                reading.how.append(how or "root")
            reading.runs.append((int(status) if status.isdigit() else -1, "\n".join(kept if span is None else span)))
            span = None
        elif kind == "build":  # an install or build step's status (no test run: not in `runs`)
            status = arg.strip().partition(" ")[0]
            reading.builds.append(int(status) if status.isdigit() else -1)
        elif kind == "left":
            reading.left += int(arg.strip()) if arg.strip().isdigit() else 0
        elif kind == "reward":
            reading.rewards_by_tests.append(arg.strip())
        elif kind == "report":  # the run's own status, then the one test.sh saw (SHOWN)
            status, _, shown = arg.strip().partition(" ")
            reading.report_exits.append(int(status) if status.isdigit() else -1)
            reading.report_shown.append(int(shown) if shown.isdigit() else -1)
            report = []
        elif kind in ("report-end", "report-missing") and report is not None:
            reading.reports.append("\n".join(report) if kind == "report-end" else None)
            report = None
    if report is not None:  # cut short: an unread report
        reading.reports.append(None)
    return "\n".join(kept), reading


# A failure the runner itself reported in its summary: pytest's last line (`=== 1 failed, 2 passed in 0.1s ===`),
# unittest's `FAILED (failures=1)`; an exit status of 0 after one is the code under test's (an `os._exit(0)` at
# exit), not the runner's. The output is the code under test's: RE2, linear in it (verify/linear.py)
RUNNER_FAILED = linear.compile(
    r"^=+ .*\b\d+ (failed|errors?)\b.* in [\d.]+s.*=+\s*$|^FAILED \((failures|errors)=\d+", re.MULTILINE
)


def exit_contradicts_log(reading: Reading) -> bool:
    """Whether a test command exited 0 while its own runner reported a failure in its output."""
    return any(status == 0 and RUNNER_FAILED.search(text) for status, text in reading.runs)


class _Verdict(Protocol):
    graded_by: str
    tests_user: str | None
    rewards_by_tests: list[str]
    exit_contradicts_log: bool


def privilege_tags(verdict: _Verdict) -> list[str]:
    """The trial's tags from what a verdict says of its test commands' privileges."""
    ran = verdict.graded_by in ("test_log", "reward_file")  # not a grade the harness gave without a run (blame.py)
    tags = [NOT_SEPARATED] if ran and verdict.tests_user in (None, "root") else []
    tags += [REWARD_BY_TESTS] if verdict.rewards_by_tests else []
    return tags + ([CONTRADICTED] if verdict.exit_contradicts_log else [])
