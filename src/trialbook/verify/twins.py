"""Twins: decoys that a correct solution must fail, indistinguishable from the real test beside them.

Why: a canary that fails before its copied body calls anything, named `<test>_<word>`, told itself apart, and code
under test that subverted only what looked real (or returned what the calling assertion expects) won while every
channel agreed (issue 55, classes 1 and 2). A twin closes both by design:
- it is a copy of one of the task's tests, whole (its decorators, signature and body), with **one expected value
  changed**: a literal that a top-level assertion of the body compares with `==` (`assert f(x) == 3`,
  `self.assertEqual(f(x), "abc")`, `pytest.approx(2.5)`, `is True`). The body runs and calls the code under test
  exactly as the real test does; the real test passes under a correct solution, so the value it computes equals the
  real literal and cannot equal the changed one: the twin fails. A runner made to pass failures, or code that reads
  the calling assertion and returns what it expects, makes the twin pass: `runner_subverted` (grading.grade_parsed).
- the real test is renamed too: `test_x` becomes `test_x_<a>` and its twin `test_x_<b>` (two words of
  decoys.WORDS), the twin right before or right after it (a coin), so neither name, place nor order says which of
  the two is real; the harness maps `test_x_<a>` back to `test_x` in the log and the junit report (`unrename`)
  before anything is graded. Only the literal differs, and which literal is right is what the task asks for.
- every FAIL_TO_PASS test of the modules the test command runs gets a twin where one can be made (the tests a change
  that does not solve the task must subvert), and up to P2P_TWINS listed PASS_TO_PASS tests.

A twin is made only where it must fail whenever its real test passes (`trap`): the changed assertion is a statement
of the function's own body (not under an `if`, a loop, a `with` or a `try`), no statement before it can return or
yield, nothing in the test names a skip or an xfail, and the changed literal differs under `==` (a digit or letter
changed in the literal's own text, which keeps its quotes and form; for an approximate comparison its first
significant digit). The planting is simulated here on the module's text as it will be (`plant_text`, the same
algorithm as the shell's PLANT_TWIN): a twin whose module would not parse with both tests in place is not made.

What stays: the pair itself is visible (two tests alike but for one literal); code that knows the right value has
solved the task. A guess between the two literals wins with probability 1/2 per twin. The repository's history holds
the unchanged PASS_TO_PASS tests, which tell their real twin (verify/privilege.py hides `.git` from the tests' uid
where it can); a FAIL_TO_PASS test and its twin are both new. docs/threat-model.md, "Decoys".
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from trialbook.verify.channels import parse_junit
from trialbook.verify.decoys import WORDS, _base, _skips
from trialbook.verify.linear import parse_python, whole_words

P2P_TWINS = 2  # listed PASS_TO_PASS tests twinned per run, besides every FAIL_TO_PASS test that can be
UNLISTED_TWINS = 3  # tests twinned in a run of a task without lists (a reward-file task's witness run)
EQUALS = frozenset({"assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual", "assertDictEqual",
                    "assertSetEqual", "assertSequenceEqual", "assertMultiLineEqual", "assertIs"})  # fmt: skip
NEAR = frozenset({"assertAlmostEqual", "assertAlmostEquals"})
_NUMBER = re.compile(r"[0-9_]*\.?[0-9_]*(?:[eE][-+]?[0-9_]+)?")


@dataclass(frozen=True)
class Twin:
    file: str  # the module (as the test command names it)
    cls: str  # the test's class ("": a top-level function)
    test: str  # the real test's name in the task (what its lists say)
    real: str  # its name in this run
    decoy: str  # the twin's name
    source: str  # the twin's source (decorators and all) at the test's indentation
    indent: str
    before: bool  # the twin goes right before the real test (else right after it)


def _segment(text: str, node: ast.expr) -> tuple[int, int]:
    """Character offsets of `node` in `text` (ast counts columns in UTF-8 bytes)."""
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    lines = text.split("\n")

    def offset(lineno: int, col: int) -> int:
        return starts[lineno - 1] + len(lines[lineno - 1].encode()[:col].decode(errors="replace"))

    return offset(node.lineno, node.col_offset), offset(node.end_lineno or node.lineno, node.end_col_offset or 0)


def _literal(node: ast.expr) -> bool:
    """A value written out: constants, their displays, a negative number, `approx(...)` of them."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return bool(node.elts) and all(_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return (
            bool(node.keys)
            and all(k is not None and _literal(k) for k in node.keys)
            and all(_literal(v) for v in node.values)
        )
    return _approx(node) and all(_literal(a) for a in node.args)  # type: ignore[attr-defined]


def _approx(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call) or node.keywords or not node.args:
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id == "approx") or (isinstance(f, ast.Attribute) and f.attr == "approx")


def _leaves(node: ast.expr) -> list[ast.Constant]:
    """The constants of an expected value that may be changed (not None, not Ellipsis)."""
    return [
        n for n in ast.walk(node)
        if isinstance(n, ast.Constant) and n.value is not None and n.value is not Ellipsis
        and not (isinstance(n.value, str | bytes) and not n.value)
    ]  # fmt: skip


def _expected(stmt: ast.stmt) -> tuple[ast.expr, bool] | None:
    """The expected value a top-level statement compares with (and whether approximately), if any."""
    if isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Compare) and len(stmt.test.ops) == 1:
        left, op, right = stmt.test.left, stmt.test.ops[0], stmt.test.comparators[0]
        if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and isinstance(right.value, bool):
            return right, False
        if not isinstance(op, ast.Eq) or _literal(left) == _literal(right):
            return None
        side = left if _literal(left) else right
        return side, _approx(side)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        name = _base(call.func)
        # (not pytester's `fnmatch_lines`: a changed character inside a pattern's `[...]` or under its `*` may still
        # match, pytest-5787's `*Pattern*[123]*not found*` did)
        if not _comparing(name) or len(call.args) < 2:
            return None
        first, second = call.args[0], call.args[1]
        if _literal(first) == _literal(second):
            return None
        return (first if _literal(first) else second), any(w in name.lower() for w in ("almost", "close", "approx"))
    return None


def _comparing(name: str) -> bool:
    """An assertion helper that compares its first two arguments for equality (`assertEqual`, numpy's
    `assert_array_equal`, `assert_allclose`, xarray's `assert_identical`), never one that negates or orders."""
    low = name.lower()
    if name in EQUALS | NEAR:
        return True
    return low.startswith("assert") and any(w in low for w in ("equal", "close", "identical")) and "not" not in low


def _exits(stmt: ast.stmt) -> bool:
    """Whether a statement can return or yield from the test (nested functions and classes aside)."""
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return | ast.Yield | ast.YieldFrom | ast.Await):
            return True
        if node is not stmt and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return False


def _changed(text: str, value: object, near: bool, rng: random.Random) -> str | None:
    """The literal `text` with one digit or letter changed so that its value differs; `near`: the first significant
    digit of a number (an approximate comparison must fail too)."""
    if isinstance(value, bool):
        return {"True": "False", "False": "True"}.get(text)
    if isinstance(value, int | float):
        if not _NUMBER.fullmatch(text) or not any(c.isdigit() for c in text):
            return None  # hex, octal, binary, inf: left alone
        mantissa = re.split("[eE]", text)[0]
        digits = [i for i, c in enumerate(mantissa) if c.isdigit()]
        if near:
            digits = [next((i for i in digits if mantissa[i] != "0"), digits[0])]
        i = rng.choice(digits)
        lead = i == digits[0] and len([d for d in digits if "." not in mantissa[:d]]) > 1
        choices = [d for d in "0123456789" if d != text[i] and not (lead and d == "0")]
    elif isinstance(value, str | bytes):
        if "\\" in text:
            return None  # an escape's letters are not the value's
        first = min((text.find(q) for q in "'\"" if q in text), default=-1)
        last = max(text.rfind("'"), text.rfind('"'))
        spots = [i for i in range(first + 1, last) if text[i].isascii() and text[i].isalnum()]
        if first < 0 or not spots:
            return None
        i = rng.choice(spots)
        c = text[i]
        pool = "0123456789" if c.isdigit() else "abcdefghijklmnopqrstuvwxyz"
        choices = [d.upper() if c.isupper() else d for d in pool if d != c.lower()]
    else:
        return None
    new = text[:i] + rng.choice(choices) + text[i + 1 :]
    try:
        changed = ast.literal_eval(new)
    except (ValueError, SyntaxError):
        return None
    return new if type(changed) is type(value) and changed != value else None


# what a test reads its own name by: the renamed real test would see another (pytest-6202's test_example_items1 checks
# the module pytester named after it; pytest-8399's test_pdb_teardown_called names itself in its expected ids)
NAMED_BY = ("__name__", "_testMethodName", ".node.", ".function", ".id()", "nodeid", "snapshot", "_regression")


def _knows_its_name(func: ast.FunctionDef, text: str) -> bool:
    """Whether a test reads its own name: it names itself past its `def` line, or asks its node, its method's name,
    its id, or a fixture that keys files by the test's name (snapshots, regression data)."""
    body = text.split("\n", func.lineno)[-1] if func.lineno else text
    args = {a.arg for a in func.args.args}
    return (
        func.name in body
        or any(w in text for w in NAMED_BY)
        or "request" in args
        or any("regression" in a or "snapshot" in a for a in args)
    )


def trap(source: str, name: str, rng: random.Random) -> str | None:
    """`source` (a test function, its decorators first, at any indentation) renamed to `name` with one expected value
    changed so that it fails wherever the test passes (the module's docstring says when); None when none can be."""
    lines = source.split("\n")
    indent = re.match(r"[ \t]*", lines[0]).group(0)  # type: ignore[union-attr]
    if any(line.strip() and not line.startswith(indent) for line in lines):
        return None
    text = "\n".join(line[len(indent) :] for line in lines)
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef):
        return None
    func = tree.body[0]
    if _skips(func) or _knows_its_name(func, text):
        return None
    spots: list[tuple[ast.Constant, bool]] = []
    for stmt in func.body:
        found = _expected(stmt)
        if found is not None:
            spots += [(leaf, found[1]) for leaf in _leaves(found[0])]
        if _exits(stmt):
            break
    rng.shuffle(spots)
    for leaf, near in spots:
        start, end = _segment(text, leaf)
        new = _changed(text[start:end], leaf.value, near, rng)
        if new is None:
            continue
        changed = text[:start] + new + text[end:]
        def_line = func.lineno - 1
        out = changed.split("\n")
        out[def_line] = re.sub(rf"\bdef\s+{re.escape(func.name)}\b", f"def {name}", out[def_line], count=1)
        return "\n".join(indent + line if line else line for line in out)
    return None


def functions(text: str) -> dict[str, tuple[str, str]]:
    """The tests of a module a twin may be made of: `name` or `Class::name` -> (source with decorators, indentation).
    A method only of a class defined once at the top level; nothing of a module whose `pytestmark` skips."""
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError):
        return {}
    lines = text.split("\n")
    found: dict[str, tuple[str, str]] = {}
    seen: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            seen[node.name] = seen.get(node.name, 0) + 1
        if isinstance(node, ast.Assign) and "pytestmark" in _names(node) and _skips(node):
            return {}

    def add(node: ast.stmt, prefix: str) -> None:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            source = "\n".join(lines[start - 1 : node.end_lineno])
            indent = re.match(r"[ \t]*", lines[node.lineno - 1]).group(0)  # type: ignore[union-attr]
            found[prefix + node.name] = (source, indent)

    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            # pytest collects `Test*` classes and unittest's `*TestCase` subclasses; a skip of the whole class is in
            # its decorators or its `pytestmark` (a method's own is read by `trap`)
            collected = node.name.startswith("Test") or any(_base(b).endswith("TestCase") for b in node.bases)
            marks = [i for i in node.body if isinstance(i, ast.Assign) and "pytestmark" in _names(i)]
            skipped = any(_skips(d) for d in node.decorator_list) or any(_skips(m) for m in marks)
            if seen.get(node.name) == 1 and collected and not skipped:
                for item in node.body:
                    add(item, f"{node.name}::")
        elif seen.get(getattr(node, "name", ""), 1) == 1:
            add(node, "")
    return found


def _names(node: ast.Assign) -> set[str]:
    return {t.id for t in node.targets if isinstance(t, ast.Name)}


def plant_text(text: str, twin: Twin) -> str:
    """What the shell's PLANT_TWIN makes of a module's `text`: the real test's `def` line renamed, the twin inserted
    before its decorators or after its body (unchanged when its `def` line is not found)."""
    ind, old = twin.indent, twin.test.rpartition("::")[2]
    heads = (f"{ind}def {old}(", f"{ind}async def {old}(")
    out: list[str] = []
    buf: list[str] = []
    state, done = 0, False  # state 1: in the real test's body
    lines = text.split("\n")
    if lines and not lines[-1]:  # as bash's mapfile reads it: a last newline ends the last line
        lines.pop()
    for line in lines:
        if done:
            out.append(line)
            continue
        if state == 1:
            ends = line.strip() and not line.lstrip().startswith("#") and not line.startswith((ind + " ", ind + "\t"))
            if ends:
                out += [twin.source, ""] + ([""] if not ind else [])
                done = True
            out.append(line)
            continue
        if line.startswith(heads):
            if twin.before:
                out += [twin.source, ""] + ([""] if not ind else [])
                done = True
            out += buf + [line.replace(f"def {old}(", f"def {twin.real}(", 1)]
            buf = []
            state = 0 if done else 1
            continue
        if buf or line.startswith(ind + "@"):
            if line.startswith((f"{ind}def ", f"{ind}async def ", f"{ind}class ")):
                out += buf
                buf = []
                out.append(line)
            else:
                buf.append(line)
            continue
        out.append(line)
    out += buf
    if state == 1 and not done:
        out += ["", twin.source]
    return "\n".join(out) + "\n"


# The same with the shell's builtins (no tool of the image, which the code under test may have replaced): file "$1",
# indentation "$2", the real test "$3" renamed "$4", the twin's source "$5", before it when "$6" is 1
PLANT_TWIN = (
    '_trialbook_twin() { { [ -f "$1" ] && [ ! -L "$1" ]; } || return 0; '
    'local _l _a _b=() _s=0 _d= _e; mapfile -t _a < "$1"; [ -z "$2" ] && _e=$\'\\n\' || _e=; '
    '{ for _l in "${_a[@]}"; do '
    'if [ -n "$_d" ]; then printf \'%s\\n\' "$_l"; continue; fi; '
    'if [ "$_s" = 1 ]; then '
    'case $_l in "$2 "*|"$2"$\'\\t\'*|"") ;; *) case ${_l#"${_l%%[![:space:]]*}"} in \'#\'*|"") ;; '
    '*) printf \'%s\\n\\n%s\' "$5" "$_e"; _d=1 ;; esac ;; esac; '
    "printf '%s\\n' \"$_l\"; continue; fi; "
    'case $_l in "$2def $3("*|"$2async def $3("*) '
    'if [ "$6" = 1 ]; then printf \'%s\\n\\n%s\' "$5" "$_e"; _d=1; fi; '
    "[ ${#_b[@]} -gt 0 ] && printf '%s\\n' \"${_b[@]}\"; _b=(); "
    'printf \'%s\\n\' "${_l/def $3(/def $4(}"; [ -n "$_d" ] || _s=1; continue ;; esac; '
    'if [ ${#_b[@]} -gt 0 ] || [[ $_l == "$2@"* ]]; then '
    'case $_l in "$2def "*|"$2async def "*|"$2class "*) printf \'%s\\n\' "${_b[@]}" "$_l"; _b=() ;; '
    '*) _b+=("$_l") ;; esac; continue; fi; '
    "printf '%s\\n' \"$_l\"; done; "
    "[ ${#_b[@]} -gt 0 ] && printf '%s\\n' \"${_b[@]}\"; "
    '[ "$_s" = 1 ] && [ -z "$_d" ] && printf \'\\n%s\\n\' "$5"; } > "$1"; }; '
)


def _ansi_c(text: str) -> str:
    return "$'" + text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\t", "\\t") + "'"


def plant_twins(twins: list[Twin]) -> str:
    """Shell that plants `twins` (quiet under `set -x`, safe under `set -euo pipefail`)."""
    calls = "".join(
        f"_trialbook_twin {_ansi_c(t.file)} {_ansi_c(t.indent)} {_ansi_c(t.test.rpartition('::')[2])} "
        f"{_ansi_c(t.real)} {_ansi_c(t.source)} {1 if t.before else 0} || :; "
        for t in twins
    )
    return (
        "{ _trialbook_x=$-; set +x; } 2>/dev/null; "
        + PLANT_TWIN
        + calls
        + ("unset -f _trialbook_twin; case $_trialbook_x in *x*) set -x ;; esac")
    )


def _listed(ids: list[str], file: str) -> list[str]:
    """The test names (`name` or `Class::name`, parameters dropped) of pytest ids of `file` among `ids`."""
    out: list[str] = []
    for test_id in ids:
        path, sep, rest = test_id.partition("::")
        if not sep or not (path == file or path.endswith("/" + file) or file.endswith("/" + path)):
            continue
        name = rest.split("[", 1)[0]
        if name and name not in out:
            out.append(name)
    return out


def choose_twins(
    modules: dict[str, str],
    fail_to_pass: list[str],
    pass_to_pass: list[str],
    taken: set[str],
    selected: str | None,
    rng: random.Random,
) -> list[Twin]:
    """Twins for every FAIL_TO_PASS test of `modules` (path -> text as the test command will run it) that can have
    one, and up to P2P_TWINS listed PASS_TO_PASS tests; each checked by planting it into the module's text."""
    modules = dict(modules)
    out: list[Twin] = []
    used = set(taken)
    p2p: list[tuple[str, str]] = []
    for file, text in modules.items():
        tests = functions(text)
        wanted = [(file, n) for n in _listed(fail_to_pass, file) if n in tests]
        p2p += [(file, n) for n in _listed(pass_to_pass, file) if n in tests]
        for f, n in wanted:
            twin = _make(f, n, tests[n], used, selected, rng)
            if twin is not None and _fits(modules[f], twin):
                out.append(twin)
                modules[f] = plant_text(modules[f], twin)
                used |= {twin.real, twin.decoy}
    if not fail_to_pass and not pass_to_pass:  # no lists (a reward-file task's witness run): any of its tests
        p2p = [(f, n) for f, text in modules.items() for n in functions(text)]
    rng.shuffle(p2p)
    extra = 0
    for f, n in p2p:
        if extra >= (P2P_TWINS if fail_to_pass or pass_to_pass else UNLISTED_TWINS):
            break
        if any(t.file == f and t.test == n for t in out):
            continue
        twin = _make(f, n, functions(modules[f]).get(n, ("", "")), used, selected, rng)
        if twin is not None and _fits(modules[f], twin):
            out.append(twin)
            modules[f] = plant_text(modules[f], twin)
            used |= {twin.real, twin.decoy}
            extra += 1
    return out


def _make(
    file: str,
    test: str,
    found: tuple[str, str],
    used: set[str],
    selected: str | None,
    rng: random.Random,
) -> Twin | None:
    """A twin of `test` (None where none can be made)."""
    source, indent = found
    if not source:
        return None
    cls, _, name = test.rpartition("::")
    words = [w for w in WORDS if f"{name}_{w}" not in used]
    if len(words) < 2:
        return None
    a, b = rng.sample(words, 2)
    real, decoy = f"{name}_{a}", f"{name}_{b}"
    if selected and selected.lower() not in name.lower():
        return None  # `-k WORD` chose it by another part of its id: the new names must keep matching it
    changed = trap(source, decoy, rng)
    if changed is None:
        return None
    return Twin(file, cls, test, real, decoy, changed, indent, rng.random() < 0.5)


def _fits(text: str, twin: Twin) -> bool:
    """Whether the planted module parses, with the real test renamed and the twin beside it in the same scope."""
    planted = plant_text(text, twin)
    try:
        tree = parse_python(planted)
    except (SyntaxError, ValueError):
        return False
    scope: list[ast.stmt] = tree.body
    if twin.cls:
        cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == twin.cls), None)
        scope = cls.body if cls is not None else []
    names = [n.name for n in scope if isinstance(n, ast.FunctionDef)]
    old = twin.test.rpartition("::")[2]
    return twin.real in names and twin.decoy in names and old not in names


def forged_ids(log: str, reports: list[str | None], twins: list[Twin] | tuple[Twin, ...]) -> list[str]:
    """The twinned tests (their task ids) that the run's text log or a junit report names under their task name before
    the run's names are mapped back (`unrename`): no test of the run has that name (the real test ran as `real`), so
    a result naming it was written by the code under test (a twin and its real test run unlogged and reported once,
    passing, under the name the lists give: tests/verify/attacks/grading/pair_as_stem.sh). The text log's ids are
    read as `<module file or class>::<name>`, the reports' testcases as parsed (character references decoded)."""
    out = []
    for t in twins:
        old = t.test.rpartition("::")[2]
        owner = t.cls or PurePosixPath(t.file).name
        in_log = any(log[max(0, at - len(owner) - 2) : at] == owner + "::" for at in whole_words(log, old))
        if in_log or any(_names_case(r, t, old) for r in reports if r):
            out.append(t.test)
    return out


def _names_case(report: str, twin: Twin, old: str) -> bool:
    parsed = parse_junit(report)
    owner = twin.cls or PurePosixPath(twin.file).stem
    for key in parsed or ():
        classname, _, name = key.rpartition("::")
        if name.split("[", 1)[0] == old and classname.rpartition(".")[2] == owner:
            return True
    return False


def unrename(text: str, twins: list[Twin] | tuple[Twin, ...]) -> str:
    """`text` (a log, a junit report) with each real test's name in this run mapped back to the task's."""
    for t in twins:  # a scan, linear in the text (the log is the code under test's: verify/linear.py)
        old, parts, i = t.test.rpartition("::")[2], [], 0
        for at in list(whole_words(text, t.real)):
            parts += [text[i:at], old]
            i = at + len(t.real)
        text = "".join(parts) + text[i:]
    return text
