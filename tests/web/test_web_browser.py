"""A real browser (Debian's chromium through Playwright) against `trialbook serve` on a real ledger: imported
SWE-bench and Harbor runs, a simulated training run, and a harness run whose trials ran in Docker with a
trajectory. Every page loads with no console error, every plot is drawn, run -> trial -> compare works.
Screenshots go to .ci/artifacts/web/ (CI keeps them). With TRIALBOOK_DOCS_SHOTS=1 the run also rewrites the
README's screenshots (docs/web-*.png) from the same pages."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import webledger
from webledger import EVAL_RUNS, HOSTILE_RUN, LOGGED, TRAIN_RUN

from paths import EXAMPLES

pytestmark = [pytest.mark.browser, pytest.mark.docker]

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]  # fmt: skip
SHOTS = Path(__file__).resolve().parents[2] / ".ci" / "artifacts" / "web"
DOCS = Path(__file__).resolve().parents[2] / "docs"
DOC_SHOTS = {"runs": "web-runs", "run": "web-run", "trajectory": "web-trial", "compare": "web-compare",
             "training": "web-training", "audit": "web-audit"}  # fmt: skip
VIEWPORT = {"width": 1280, "height": 900}
AGENT_RUN = "docker-agent"
# agent output as hostile as it gets: a script tag, HTML and colour codes, printed inside the sandbox
COMPLETION = (
    "THOUGHT: show something nasty, then apply the fix.\n```bash\n"
    "printf '<script>window.pwned=1</script> <b>bold?</b> \\033[31mred\\033[0m\\n'\n```\n"
)


def _harness_run(db: Path, runs_dir: Path) -> None:
    """Two trials of the example plain-bugfix task run in Docker by the harness, each with a trajectory."""
    from trialbook.rl.rollout import Rollouts

    fix = (EXAMPLES / "plain-bugfix" / "solution" / "solve.sh").read_text()
    rollouts = Rollouts(str(db), AGENT_RUN, EXAMPLES, runs_dir=runs_dir)
    try:
        for attempt, text in enumerate((COMPLETION, f"{COMPLETION}```bash\n{fix}\n```\n")):
            asyncio.run(rollouts.score("plain-bugfix", text, step=0, wv=0, attempt=attempt))
    finally:
        rollouts.close()


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("browser")
    db = webledger.build(folder)
    _harness_run(db, folder / "runs")
    return db


@pytest.fixture(scope="module")
def server(ledger: Path) -> Iterator[str]:
    db = ledger
    proc = subprocess.Popen(
        [sys.executable, "-c", "from trialbook.cli import main; main()", "serve", "--db", str(db), "--port", "0"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    line = proc.stderr.readline() if proc.stderr else ""
    m = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
    assert m, line
    yield m.group(1)
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"no {CHROMIUM}: run scripts/ci-setup-browser.sh")
    profile = tmp_path_factory.mktemp("chromium-profile")  # a fresh profile every session
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=FLAGS, viewport=VIEWPORT
        )
        yield context
        context.close()


class Page:
    """A tab that records console errors and uncaught exceptions."""

    def __init__(self, context: object) -> None:
        self.page = context.new_page()  # type: ignore[attr-defined]
        self.errors: list[str] = []
        self.page.on("console", lambda msg: msg.type == "error" and self.errors.append(msg.text))
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def open(self, url: str, shot: str) -> object:
        res = self.page.goto(url)
        assert res is not None and res.status == 200, (url, res and res.status)
        self.page.wait_for_load_state("load")
        self.check(shot)
        return self.page

    def check(self, shot: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{shot}.png"), full_page=False)
        if os.environ.get("TRIALBOOK_DOCS_SHOTS") and shot in DOC_SHOTS:
            self.page.set_viewport_size({"width": 1100, "height": 760})
            self.page.screenshot(path=str(DOCS / f"{DOC_SHOTS[shot]}.png"), full_page=False)
            self.page.set_viewport_size(VIEWPORT)
        assert self.errors == [], (self.page.url, self.errors)

    def first_trial(self, shot: str) -> object:
        """From a run page, click its first trial and check the trial page."""
        self.page.locator("#trials a").first.click()
        self.page.wait_for_url("**/trials/*")
        self.check(shot)
        return self.page

    def plot(self, selector: str) -> None:
        svg = self.page.locator(f"{selector} svg")
        box = svg.bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 50, (selector, box)
        assert svg.locator("path").count() > 5, selector  # axes, lines, markers: something was drawn


def test_every_page_loads_without_console_errors_and_plots_render(server: str, browser: object) -> None:
    tab = Page(browser)
    page = tab.open(server + "/", "runs")
    assert page.locator("#runs tr").count() >= len(EVAL_RUNS) + 3  # header + every run
    tab.open(f"{server}/runs/{LOGGED}", "run")
    page = tab.open(f"{server}/training?run={TRAIN_RUN}&bucket=2", "training")  # 5 buckets of its 9 weight versions
    for plot in ("#pass-plot", "#share-plot", "#enc-plot", "#step-plot"):
        tab.plot(plot)
    tab.open(f"{server}/audit?run={LOGGED}", "audit")
    tab.plot("#sig-plot")
    cands = "&".join(f"cand={c}" for c in (EVAL_RUNS[0], *EVAL_RUNS[2:]))
    page = tab.open(f"{server}/compare?base={EVAL_RUNS[1]}&{cands}", "compare")
    tab.plot("#forest-plot")
    assert page.locator("#comparisons tr").count() == 4  # header + 3 candidates


def test_navigation_run_trial_compare(server: str, browser: object) -> None:
    tab = Page(browser)
    page = tab.open(server + "/", "nav-runs")
    page.click(f"#runs a:text-is('{EVAL_RUNS[1]}')")
    page.wait_for_url(f"**/runs/{EVAL_RUNS[1]}")
    tab.first_trial("nav-trial")
    assert page.locator("#outcome").inner_text() in ("resolved", "unresolved")
    page.click("#run-link")
    page.wait_for_url(f"**/runs/{EVAL_RUNS[1]}")
    page.select_option("#compare-form select[name=cand]", [EVAL_RUNS[2], EVAL_RUNS[3]])
    page.click("#compare-form button")
    page.wait_for_url("**/compare?*")
    tab.check("nav-compare")
    tab.plot("#forest-plot")
    page.locator("a.cand-trial").first.click()
    page.wait_for_url("**/trials/*")
    tab.check("nav-compare-trial")
    assert "run " in page.locator("header").inner_text()


def test_docker_trajectory_turn_by_turn_and_hostile_output_stays_text(server: str, browser: object) -> None:
    tab = Page(browser)
    tab.open(f"{server}/runs/{AGENT_RUN}", "agent-run")
    page = tab.first_trial("trajectory")
    turns = page.locator("#trajectory .turn")
    assert turns.count() >= 2  # the assistant message and its action
    assert "<script>window.pwned=1</script>" in page.locator("#trajectory").inner_text()
    artifacts = page.locator("pre.artifact")
    log = " ".join(artifacts.nth(i).text_content() or "" for i in range(artifacts.count()))
    assert "<script>window.pwned=1</script> <b>bold?</b> red" in log  # agent.log: as text, colour codes gone
    assert page.evaluate("window.pwned") is None
    assert page.locator("b:text-is('bold?')").count() == 0
    page.click("#next")
    page.wait_for_url("**/trials/*")
    tab.check("trajectory-next")
    assert page.locator("#outcome").inner_text() == "resolved"
    assert page.locator("#tests").count() == 1 or page.locator("#verifier-log").count() == 1


def test_hostile_verifier_log_stays_text_in_the_browser(server: str, browser: object) -> None:
    """The imported log's <script>, <img onerror> and <b> show as characters; nothing runs, nothing is bold."""
    tab = Page(browser)
    tab.open(f"{server}/runs/{HOSTILE_RUN}", "hostile-run")
    page = tab.first_trial("hostile-trial")
    log = page.locator("#verifier-log")
    text = log.inner_text()
    assert "<script>document.title='pwned'; window.pwned = 1;</script>" in text
    assert '<img src=x onerror="window.pwned=2"> <b>not bold</b> &amp; raw' in text
    assert "FAILED tests/test_x.py::test_y - AssertionError" in text and "\x1b" not in text and "[31m" not in text
    assert log.locator("*").count() == 0  # no element was made from the log: it is one text node
    assert page.evaluate("window.pwned") is None and page.title() != "pwned"


def test_html_report_opens_offline_with_every_plot(ledger: Path, browser: object, tmp_path: Path) -> None:
    """`report --html` in the browser from a file: nothing but the file itself is requested, every plot is drawn."""
    out = tmp_path / "report.html"
    webledger.tb("report", "--html", str(out), "--compare", ",".join(EVAL_RUNS[1:]), "--train", TRAIN_RUN,
                 "--audit", LOGGED, "--db", str(ledger))  # fmt: skip
    tab = Page(browser)
    requests: list[str] = []
    tab.page.on("request", lambda req: requests.append(req.url))
    tab.open(out.as_uri(), "html-report")
    assert requests == [out.as_uri()]
    for plot in ("#forest-plot", "#pass-plot", "#share-plot", "#enc-plot", "#step-plot", "#sig-plot"):
        tab.plot(plot)
