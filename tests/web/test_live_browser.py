"""The live training page in a real browser (Debian's chromium through Playwright) against `trialbook serve`:
while `sim replay` writes a run step by step, the page redraws itself without reloading, and shows the
epoch-boundary drain alert within one step of the stall; its script runs under the page's CSP with no
console error."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from trialbook.importers.replay import replay
from trialbook.ledger.store import Ledger
from trialbook.records import Run
from trialbook.training.sim_rollouts import RolloutConfig, generate

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]  # fmt: skip
SHOTS = Path(__file__).resolve().parents[2] / ".ci" / "artifacts" / "web"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Ledger]]:
    db = str(tmp_path / "live.db")
    ledger = Ledger(db)
    with ledger.transaction() as conn:
        ledger.create_run(conn, Run(name="live", kind="train", config={"staleness": 3}))
    proc = subprocess.Popen(
        [sys.executable, "-c", "from trialbook.cli import main; main()", "serve", "--db", db, "--port", "0"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    line = proc.stderr.readline() if proc.stderr else ""
    m = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
    assert m, line
    yield m.group(1), ledger
    proc.terminate()
    proc.wait(timeout=30)


def test_live_page_updates_without_reload_and_shows_the_drain(served: tuple[str, Ledger], tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"no {CHROMIUM}: run scripts/ci-setup-browser.sh")
    url, ledger = served
    roll, steps = tmp_path / "roll.jsonl", tmp_path / "steps.jsonl"
    (stall,) = generate(RolloutConfig(pool=64, epochs=2, incomplete=16), roll, steps).stall_steps
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )  # fmt: skip
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda msg: msg.type == "error" and errors.append(msg.text))
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        loads: list[str] = []
        page.on("load", lambda _: loads.append(page.url))
        res = page.goto(f"{url}/training/live?run=live&interval=0.2")
        assert res is not None and res.status == 200
        assert page.locator("#current-step").inner_text() == "-"
        page.evaluate("window.sameDocument = 1")  # gone if the page reloads
        writer = threading.Thread(target=replay, args=(ledger, roll, steps, "live", 2000.0), kwargs={"create": False})
        writer.start()
        drain = page.locator("#alerts li[data-rule=epoch_boundary_drain]")
        drain.wait_for(timeout=30_000)
        step_then = page.locator("#current-step").inner_text()
        assert step_then in (str(stall - 1), str(stall))  # within one step of the stall's start
        assert f"step {stall}" in drain.inner_text() and "cross-epoch prefetch would save" in drain.inner_text()
        writer.join(timeout=60)
        expect(page.locator("#current-step")).to_have_text("8", timeout=10_000)
        assert page.evaluate("window.sameDocument") == 1 and len(loads) == 1  # redrawn in place, never reloaded
        assert "SLOW (epoch boundary)" in page.locator("#waits").inner_text()
        assert page.locator("#staleness tr").count() == 5  # header + 0..3 versions behind
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "training-live.png"))
        assert errors == []
        context.close()


def test_compare_controls_in_the_browser(cli, db: str, tmp_path: Path) -> None:
    """The metric and exclude-repo controls of the compare form, used as a person would: pick, type, submit."""
    import orjson
    from playwright.sync_api import sync_playwright

    tasks = [f"django__django-{i}" for i in range(20)] + [f"sympy__sympy-{i}" for i in range(3)]
    for name, reward in (("base", 0.5), ("cand", 0.75)):
        f = tmp_path / f"{name}.jsonl"
        f.write_bytes(b"".join(orjson.dumps({"task_id": t, "outcome": "unresolved", "reward": reward}) + b"\n"
                               for t in tasks))  # fmt: skip
        assert cli("import", "jsonl", str(f), "--run", name).exit_code == 0
    proc = subprocess.Popen(
        [sys.executable, "-c", "from trialbook.cli import main; main()", "serve", "--db", db, "--port", "0"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        m = re.search(r"(http://127\.0\.0\.1:\d+)/", proc.stderr.readline() if proc.stderr else "")
        assert m
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS
            )
            page = context.new_page()
            errors: list[str] = []
            page.on("console", lambda msg: msg.type == "error" and errors.append(msg.text))
            page.goto(f"{m.group(1)}/compare")
            page.select_option("#compare-form select[name=base]", "base")
            page.select_option("#compare-form select[name=cand]", ["cand"])
            page.select_option("#metric", "reward")
            page.fill("#exclude-repo", "sympy")
            page.click("#compare-form button")
            page.wait_for_url("**/compare?*")
            cells = page.locator("#comparisons tr").nth(1).locator("td")
            assert cells.nth(1).inner_text() == "1"  # the look: its family's first (stats/looks.py)
            assert cells.nth(3).inner_text() == "20" and cells.nth(6).inner_text() == "+25.00"
            assert "sympy/sympy (3 tasks)" in page.locator("#excluded").inner_text()
            assert page.locator("#metric").input_value() == "reward"  # the form keeps what was asked
            assert page.locator("#legend").count() == 1
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "compare-controls.png"))
            assert errors == []
            context.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_compare_page_agrees_with_the_cli_around_an_unrelated_compare(cli, db: str, tmp_path: Path) -> None:
    """The page shows the numbers `compare` prints (the family's look, its level and interval), before and after
    an unrelated `compare A C`, and says so when the look is not recorded yet (the page records none)."""
    import json

    import numpy as np
    from playwright.sync_api import sync_playwright

    from trialbook.stats.synthetic import simulate_run, write_jsonl

    rng = np.random.default_rng(5)
    p = rng.beta(0.5, 0.5, 120)
    for name, q in (("a", p), ("b", np.clip(p + 0.15, 0, 1)), ("c", p)):
        assert cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", simulate_run(q, 1, rng))),
                   "--run", name).exit_code == 0  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-c", "from trialbook.cli import main; main()", "serve", "--db", db, "--port", "0"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        m = re.search(r"(http://127\.0\.0\.1:\d+)/", proc.stderr.readline() if proc.stderr else "")
        assert m
        with sync_playwright() as pw:
            context = pw.chromium.launch_persistent_context(
                str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=FLAGS
            )
            page = context.new_page()

            def shown() -> tuple[str, str]:
                page.goto(f"{m.group(1)}/compare?base=a&cand=b")
                cells = page.locator("#comparisons tr").nth(1).locator("td")
                return cells.nth(1).inner_text(), cells.nth(7).inner_text()

            look, ci = shown()
            assert look == "1" and "not recorded" in page.locator("#family").inner_text()
            row = json.loads(cli("compare", "a", "b", "--json").stdout)
            lo, hi = row["comparisons"][0]["ci_adjusted_pp"]
            printed = f"[{lo:+.2f}, {hi:+.2f}]"
            assert shown() == ("1", printed) == (look, ci)
            assert "not recorded" not in page.locator("#family").inner_text()
            assert json.loads(cli("compare", "a", "c", "--json").stdout)["looks"]["look"] == {"c": 2}
            assert shown() == ("1", printed)
            again = json.loads(cli("compare", "a", "b", "--json").stdout)["comparisons"][0]["ci_adjusted_pp"]
            assert again == [lo, hi]
            context.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
