"""Run the ```console blocks of the README and the docs pages in a fresh copy of the repository and write
their real output back.

    python scripts/readme_transcripts.py [--group offline|docker|llm|ray ...] [--check] [--page PAGE ...]

The convention (also stated in docs/contributing/testing.md): a block fenced with ```console is an example
that runs. Its lines starting with `$ ` are commands (a line ending in `\\` continues on the next); every
other line is what the commands printed, stdout and stderr together, followed by `(exit N)` when a command
exits non-zero. Any other fence (```, ```python, ```text, ...) is not run. An HTML comment on the line just
above the fence, `<!-- console: WORD ... -->`, tells how to run it:
  docker  needs the Docker daemon (run with the `docker` group);
  llm     needs the model server and its packages (scripts/ci-setup-model.sh) as well as Docker;
  ray     starts a multi-node Ray cluster on this machine (the `ray` extra) and runs trials on it with Docker;
  varies  the output changes from run to run (times, flaky tasks): --check compares exit statuses only.
Blocks without docker/llm/ray form the `offline` group.
Pages run in chains (`chains()`): the guides in GUIDES form one chain, in that order, so that a guide may use
what an earlier one made; every other page with console blocks (README.md, docs/**/*.md) is a chain of its
own. Each group of a chain runs in order in its own fresh copy (the files `git ls-files` lists, uncommitted
changes included) with one bash process, so a block may use files, variables and ledger runs made by
earlier blocks of its group and chain, never of another group or chain.
--check writes nothing and exits 1 when any command's output (times, hashes and ids masked) or exit status
differs from the page. --page runs only the chains holding those pages (default: every chain).
tests/docs/test_console_examples.py runs every chain's groups.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GROUPS = ("offline", "docker", "llm", "ray")
OPTION = re.compile(r"^<!--\s*console:\s*(?P<words>[\w\s-]*?)\s*-->\s*$")
EXIT = re.compile(r"^\(exit (\d+)\)$")
MARK = "\x1etrialbook-readme"
# The guides that came out of one long README: later ones use runs, files and variables earlier ones made.
GUIDES = tuple(
    f"docs/guides/{name}.md"
    for name in (
        "import", "compare", "honest-numbers", "run", "scale-out", "training", "audit", "swebench-tasks", "validate",
        "checkpoint",
    )
)  # fmt: skip
# Parts of an output that change from run to run without meaning anything: masked before --check compares.
VOLATILE = [
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?([+-]\d\d:\d\d|Z)?"), "<time>"),
    (re.compile(r"\b\d+:\d\d:\d\d\b"), "<elapsed>"),
    (re.compile(r"\b(sha256:)?[0-9a-f]{8,64}\b"), "<hex>"),
    (re.compile(r"\bpid \d+"), "pid <n>"),
    (re.compile(r"/tmp/[\w.-]+"), "<tmp>"),
]


@dataclass
class Command:
    text: str  # as written, continuation lines included, without the `$ ` prompt
    output: list[str] = field(default_factory=list)
    status: int = 0


def chains(root: Path = ROOT) -> dict[str, list[Path]]:
    """Every page with console blocks, in the chains they run in: name -> pages in order."""
    guides = [root / name for name in GUIDES]
    found = {"docs/guides": guides}
    for page in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        if page not in guides and "```console" in page.read_text():
            found[str(page.relative_to(root))] = [page]
    return found


@dataclass
class Block:
    start: int  # index of the opening fence line
    end: int  # index of the closing fence line
    options: set[str]
    commands: list[Command]

    @property
    def group(self) -> str:
        return next((g for g in ("llm", "ray", "docker") if g in self.options), "offline")


def parse(lines: list[str], name: str = "README") -> list[Block]:
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = lines[i].strip()
        if not fence.startswith("```"):
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        if end is None:
            raise SystemExit(f"{name} line {i + 1}: unclosed ``` fence")
        if fence == "```console":
            match = OPTION.match(lines[i - 1]) if i else None
            options = set(match["words"].split()) if match else set()
            unknown = options - {"docker", "llm", "ray", "varies"}
            if unknown:
                raise SystemExit(f"{name} line {i}: unknown console option(s) {sorted(unknown)}")
            blocks.append(Block(i, end, options, _commands(lines[i + 1 : end], i + 2, name)))
        i = end + 1
    return blocks


def _commands(body: list[str], first_line: int, name: str) -> list[Command]:
    commands: list[Command] = []
    k = 0
    while k < len(body):
        line = body[k]
        if line.startswith("$ "):
            text = [line[2:]]
            while text[-1].endswith("\\") and k + 1 < len(body):
                k += 1
                text.append(body[k])
            commands.append(Command("\n".join(text)))
        elif not commands:
            raise SystemExit(f"{name} line {first_line + k}: a console block must start with a `$ ` command")
        elif EXIT.match(line):
            commands[-1].status = int(EXIT.match(line)[1])
        else:
            commands[-1].output.append(line)
        k += 1
    return commands


def fresh_copy(dest: Path) -> None:
    """The files a clone would have: tracked ones plus untracked ones git does not ignore."""
    names = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, names):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def run_group(blocks: list[Block], workdir: Path, timeout: float) -> list[list[Command]]:
    """Runs every command of the blocks in one bash process in workdir; returns the commands with real output."""
    script = ["exec 2>&1 </dev/null"]
    n = 0
    for block in blocks:
        for command in block.commands:
            script += [command.text, f"printf '\\n{MARK} {n} %s\\n' \"$?\""]
            n += 1
    env = dict(os.environ)
    for var in ("TRIALBOOK_DB", "VIRTUAL_ENV"):
        env.pop(var, None)
    bindir = str(Path(sys.executable).parent)  # the venv's `trialbook`, as after `. .venv/bin/activate`
    env.update(
        PATH=f"{bindir}:{env.get('PATH', '')}",
        PYTHONPATH=str(workdir / "src"),
        COLUMNS="120",
        TRIALBOOK_PROGRESS_EVERY="3600",  # no progress line in a page's run, however slow the machine
        NO_COLOR="1",
        TERM="dumb",
        PYTHONDONTWRITEBYTECODE="1",
    )
    proc = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=workdir,
        env=env,
        capture_output=True,
        timeout=timeout,
    )
    chunks = re.split(rf"\n?{MARK} (\d+) (\d+)\n", proc.stdout.decode(errors="replace"))
    results: dict[int, tuple[list[str], int]] = {}
    for k in range(1, len(chunks) - 1, 3):
        text = chunks[k - 1].rstrip("\n")
        results[int(chunks[k])] = (text.split("\n") if text else [], int(chunks[k + 1]))
    out: list[list[Command]] = []
    n = 0
    for block in blocks:
        ran = []
        for command in block.commands:
            if n not in results:
                raise SystemExit(f"the page's commands stopped at `{command.text}`:\n{chunks[-1][-2000:]}")
            lines, status = results[n]
            ran.append(Command(command.text, [line.rstrip() for line in lines], status))
            n += 1
        out.append(ran)
    return out


def render(commands: list[Command]) -> list[str]:
    lines: list[str] = []
    for command in commands:
        lines += [f"$ {command.text.split(chr(10))[0]}", *command.text.split("\n")[1:], *command.output]
        if command.status:
            lines.append(f"(exit {command.status})")
    return lines


def mask(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        for pattern, repl in VOLATILE:
            line = pattern.sub(repl, line)
        out.append(line)
    return out


def differences(block: Block, ran: list[Command]) -> list[str]:
    problems = []
    for want, got in zip(block.commands, ran, strict=True):
        if want.status != got.status:
            problems.append(f"`{want.text}`: exit {got.status}, the page says {want.status}\n" + "\n".join(got.output))
        elif "varies" not in block.options and mask(want.output) != mask(got.output):
            diff = difflib.unified_diff(want.output, got.output, "page", "now", lineterm="", n=1)
            problems.append(f"`{want.text}`: output differs\n" + "\n".join(diff))
    return problems


def chain_blocks(pages: list[Path], group: str) -> list[tuple[Path, Block]]:
    """The blocks of one group on the pages of one chain, in order, each with its page."""
    return [
        (page, block)
        for page in pages
        for block in parse(page.read_text().split("\n"), str(page.relative_to(ROOT)))
        if block.group == group
    ]


def check_chain(pages: list[Path], group: str, workdir: Path, timeout: float) -> tuple[list[str], dict]:
    """Runs a chain's group in workdir: (the differences, each with its page; {(page, start): (end, new body)})."""
    chosen = chain_blocks(pages, group)
    if not chosen:
        return [], {}
    fresh_copy(workdir)
    ran = run_group([block for _, block in chosen], workdir, timeout)
    problems, replacements = [], {}
    for (page, block), commands in zip(chosen, ran, strict=True):
        name = page.relative_to(ROOT)
        problems += [f"{name} line {block.start + 1}: {p}" for p in differences(block, commands)]
        replacements[page, block.start] = (block.end, render(commands))
    return problems, replacements


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--group", action="append", choices=GROUPS, help="default: offline and docker")
    parser.add_argument("--check", action="store_true", help="compare with the pages instead of writing them")
    parser.add_argument("--page", "--readme", action="append", type=Path, help="default: every page")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args(argv)
    wanted = {page.resolve() for page in args.page or []}
    chosen = [pages for pages in chains().values() if not wanted or wanted & {p.resolve() for p in pages}]
    if wanted - {p.resolve() for pages in chosen for p in pages}:
        parser.error(f"no console blocks on {', '.join(sorted(map(str, wanted)))}")
    problems: list[str] = []
    replacements: dict[tuple[Path, int], tuple[int, list[str]]] = {}
    for pages in chosen:
        for group in args.group or ["offline", "docker"]:
            with tempfile.TemporaryDirectory(prefix=f"readme-{group}-") as tmp:
                found, new = check_chain(pages, group, Path(tmp), args.timeout)
            problems += found
            replacements.update(new)
    if args.check:
        for problem in problems:
            print(problem, end="\n\n")
        print(f"{len(problems)} command(s) differ from what they print now" if problems else "pages up to date")
        return 1 if problems else 0
    for page in {page for page, _ in replacements}:
        lines = page.read_text().split("\n")
        for (where, start), (end, body) in sorted(replacements.items(), key=lambda kv: -kv[0][1]):
            if where == page:
                lines[start + 1 : end] = body
        page.write_text("\n".join(lines))
    print(f"rewrote {len(replacements)} console block(s) ({len(problems)} had changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
