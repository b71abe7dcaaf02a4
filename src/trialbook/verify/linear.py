"""Regular expressions over text the code under test or the agent wrote, in time linear in that text (RE2).

The harness reads what it does not control: the verifier's log (anything the tests print), junit reports, the agent's
patch. A backtracking engine (Python's `re`) takes time polynomial or exponential in a crafted line for many ordinary
patterns (`^=+ .* in [\\d.]+s.*=+$` over a 20 KB run of `1 failed in 1s `: minutes), and holds the GIL while it does,
stalling every trial of the harness process (docs/threat-model.md, "The harness's own parsing"). RE2 (google-re2)
matches in time linear in the text for every pattern it accepts; it refuses the constructs that need backtracking
(backreferences, lookaround), so a pattern that compiles here is safe by construction, not by review.

`compile` is the one way the harness compiles a pattern it runs over such text; `AS_RE` is the subset of the `re`
module that swebench's Python log parsers call, on RE2, bound into their module by `bind_swebench` (their code runs
as published, on a linear engine; the grading tests check the status maps equal on every real log).

RE2's `\\w`, `\\d`, `\\s` and `\\b` are ASCII, Python's are Unicode: the patterns here read ASCII words of test runners
(`FAILED`, `passed`, test ids), where the two agree.
"""

from __future__ import annotations

import ast
import re
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

import re2

Pattern = Any  # re2._Regexp: search/match/fullmatch/finditer/findall/sub/split, as re.Pattern has them
_FLAGS = {re.IGNORECASE: "i", re.MULTILINE: "m", re.DOTALL: "s"}


def compile(pattern: str | bytes, flags: int = 0) -> Pattern:  # noqa: A001 (the `re` name, on purpose)
    """`pattern` compiled by RE2, `flags` (re.IGNORECASE, re.MULTILINE, re.DOTALL) as inline flags; raises re2.error
    for a pattern RE2 cannot match in linear time (a backreference, a lookaround)."""
    if flags & ~sum(_FLAGS):
        raise ValueError(f"flags {flags:#x}: only IGNORECASE, MULTILINE and DOTALL are supported")
    inline = "".join(c for f, c in _FLAGS.items() if flags & f)
    if inline:
        pattern = f"(?{inline})" + pattern if isinstance(pattern, str) else f"(?{inline})".encode() + pattern
    return re2.compile(pattern)


def is_linear(rx: object) -> bool:
    """Whether `rx` was compiled by RE2 (a test's check that a parser of untrusted text cannot backtrack)."""
    return isinstance(rx, re2._Regexp)


def _on(method: str) -> Callable[..., Any]:
    def call(pattern: str | Pattern, string: str, *args: Any, flags: int = 0) -> Any:
        rx = pattern if is_linear(pattern) else compile(pattern, flags)
        return getattr(rx, method)(string, *args)

    call.__name__ = method
    return call


def _sub(pattern: str | Pattern, repl: Any, string: str, count: int = 0, flags: int = 0) -> str:
    rx: Pattern = pattern if is_linear(pattern) else compile(pattern, flags)
    out: str = rx.sub(repl, string, count)
    return out


def _finditer(pattern: str | Pattern, string: str, flags: int = 0) -> Iterator[Any]:
    found: Iterator[Any] = _on("finditer")(pattern, string, flags=flags)
    return found


def _findall(pattern: str | Pattern, string: str, flags: int = 0) -> list[Any]:
    found: list[Any] = _on("findall")(pattern, string, flags=flags)
    return found


def _one(method: str) -> Callable[..., Any]:
    def call(pattern: str | Pattern, string: str, flags: int = 0) -> Any:
        return _on(method)(pattern, string, flags=flags)

    return call


AS_RE = types.SimpleNamespace(
    compile=compile,
    search=_one("search"),
    match=_one("match"),
    fullmatch=_one("fullmatch"),
    finditer=_finditer,
    findall=_findall,
    sub=_sub,
    split=_one("split"),
    escape=re.escape,
    error=re2.error,
    I=re.I,
    IGNORECASE=re.IGNORECASE,
    M=re.M,
    MULTILINE=re.MULTILINE,
    S=re.S,
    DOTALL=re.DOTALL,
)


# an ANSI escape (a colour, a cursor move): stripped before a log is read; most logs have none (the fast path)
ANSI = compile(r"\x1B(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])")


def strip_ansi(text: str) -> str:
    """`text` without its ANSI escapes."""
    return ANSI.sub("", text) if "\x1b" in text else text


def bind_swebench() -> types.ModuleType:
    """swebench's Python log parsers (the per-repo parsers of `MAP_REPO_TO_PARSER_PY`) run on RE2: their module's `re`
    is `AS_RE`. Three of them backtrack on a crafted line with Python's engine (pytest_options' `(.*?)\\[(.*)\\]` on
    a test id of 20 KB of `[`: minutes; sympy's and django's patterns over the whole log: quadratic). Returns the
    module. The parsers of other languages are left as they are (one uses a backreference, which RE2 refuses)."""
    from swebench.harness.log_parsers import python as parsers

    parsers.re = AS_RE
    module: types.ModuleType = parsers
    return module


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def whole_words(text: str, name: str) -> Iterator[int]:
    """The offsets in `text` where `name` stands as a word: a word boundary before it and no word character after it
    (what the regex `\\bNAME(?!\\w)` finds), by a scan linear in `text` (RE2 has no lookahead)."""
    at = text.find(name) if name else -1
    while at >= 0:
        end = at + len(name)
        before = text[at - 1] if at else ""
        if _is_word(before) != _is_word(name[0]) and (end == len(text) or not _is_word(text[end])):
            yield at
        at = text.find(name, at + 1)


_PARSE = threading.Lock()


def parse_python(text: str) -> ast.Module:
    """`ast.parse(text)`, one thread at a time: CPython 3.11's parser keeps its recursion depth in shared state, and two
    threads parsing at once raise `SystemError: AST constructor recursion depth mismatch` (it failed a trial of the
    docs' examples run, twins.choose_twins in one trial's thread beside another's). Raises SyntaxError or ValueError
    for what does not parse, as ast.parse does; a SystemError from it counts as not parsing."""
    with _PARSE:
        try:
            return ast.parse(text)
        except (SystemError, RecursionError, MemoryError) as exc:
            raise ValueError(f"not parsed: {type(exc).__name__}") from None
