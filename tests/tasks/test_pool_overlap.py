"""`tasks overlap`: a pool with planted overlaps against the real SWE-bench Verified rows flags each plant by what it
shares, a clean pool shares nothing, the exclusion list names what the evaluation's patches change, and `compare
--split` reads the audit's report to reproduce a planted in-overlap / out-of-overlap difference."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from paths import INSTANCES
from trialbook.pool.overlap import audit, exclusions, touched
from trialbook.pool.suite import problem_statement
from trialbook.pool.synthesize import solve_sh, write_task_folder
from trialbook.stats.synthetic import write_jsonl

ROWS = [json.loads(x) for x in INSTANCES.read_text().splitlines() if x.strip()]
BY_ID = {r["instance_id"]: r for r in ROWS}


def _task(root: Path, name: str, repo: str, patch: str, tests: list[str], statement: str) -> None:
    config = {"repo": repo, "FAIL_TO_PASS": tests[:1], "PASS_TO_PASS": tests[1:]}
    write_task_folder(root / name, {
        "instruction.md": statement,
        "task.toml": f'[metadata]\nrepo = "{repo}"\n',
        "tests/config.json": json.dumps(config),
        "tests/test.sh": "#!/bin/bash\ntrue\n",
        "solution/solve.sh": solve_sh(patch),
    })  # fmt: skip


CLEAN_PATCH = """diff --git a/addict/addict.py b/addict/addict.py
--- a/addict/addict.py
+++ b/addict/addict.py
@@ -52,6 +52,7 @@ class Dict(dict):
         else:
             self_type = type(self).__name__
+            msg = "unsupported operand type(s) for +: '{}' and '{}'"
             raise TypeError(msg.format(self_type, other_type))
"""


def _clean(root: Path, n: int = 3) -> None:
    for i in range(n):
        tests = [f"test_addict.py::DictTests::test_{i}", "test_addict.py::DictTests::test_other"]
        _task(root, f"mewwts__addict-{i:08d}", "mewwts/addict", CLEAN_PATCH, tests,
              problem_statement("mewwts/addict", tests[:1], "E   NameError: name 'msg' is not defined"))  # fmt: skip


def _same_function_patch(row: dict[str, object]) -> str:
    """The row's patch with every added line replaced: the same function changed, another change."""
    out = []
    for line in str(row["patch"]).splitlines():
        out.append(line[: len(line) - len(line.lstrip("+ "))] + "pass  # another change" if line[:1] == "+"
                   and not line.startswith("+++") else line)  # fmt: skip
    return "\n".join(out) + "\n"


def test_planted_overlaps_are_each_flagged_and_a_clean_pool_is_not(tmp_path):
    pool = tmp_path / "pool"
    _clean(pool)
    copied = BY_ID["psf__requests-2317"]
    tests = json.loads(copied["FAIL_TO_PASS"]) if isinstance(copied["FAIL_TO_PASS"], str) else copied["FAIL_TO_PASS"]
    _task(pool, "copied", copied["repo"], copied["patch"], tests, copied["problem_statement"])
    same_fn = BY_ID["pylint-dev__pylint-7080"]
    _task(pool, "same-function", same_fn["repo"], _same_function_patch(same_fn), ["tests/test_x.py::test_new"],
          "Completely different words about an unrelated crash in a formatter.")  # fmt: skip
    near = BY_ID["sphinx-doc__sphinx-8595"]
    statement = str(near["problem_statement"]).replace("autodoc", "auto-doc", 1) + "\nThanks!"
    _task(pool, "near-statement", "someone/else", CLEAN_PATCH.replace("addict/", "other/"), ["t.py::a"], statement)

    r = audit(pool, INSTANCES)
    kinds = {(p.pool, p.eval): set(p.kinds) for p in r.pairs}
    assert kinds[("copied", "psf__requests-2317")] == {
        "same_patch", "same_function", "same_file", "same_test", "similar_statement"}  # fmt: skip
    assert {"same_function", "same_file"} <= kinds[("same-function", "pylint-dev__pylint-7080")]
    assert not {"same_patch", "same_test", "similar_statement"} & kinds[("same-function", "pylint-dev__pylint-7080")]
    assert kinds[("near-statement", "sphinx-doc__sphinx-8595")] == {"similar_statement"}
    assert r.pool_in_overlap == ["copied", "near-statement", "same-function"]
    assert not any(p.pool.startswith("mewwts__") for p in r.pairs)
    assert set(r.repos_shared) == {"psf/requests", "pylint-dev/pylint"}
    assert {"psf__requests-2317", "pylint-dev__pylint-7080", "sphinx-doc__sphinx-8595"} <= set(r.in_overlap)
    assert len(r.in_overlap) + len(r.out_of_overlap) == 500

    clean = tmp_path / "clean"
    _clean(clean)
    r = audit(clean, INSTANCES)
    assert r.pairs == [] and r.repos_shared == [] and r.in_overlap == [] and len(r.out_of_overlap) == 500
    assert r.max_similarity < 0.1


def test_exclusions_name_the_functions_the_evaluation_changes(tmp_path):
    text = exclusions(INSTANCES)
    assert "psf/requests:requests/sessions.py::request\n" in text  # 2317's fix is in Session.request
    files, functions, _ = touched(str(BY_ID["psf__requests-2317"]["patch"]))
    assert files == {"requests/sessions.py"} and functions == {"requests/sessions.py::request"}
    assert len(text.splitlines()) > 500


def test_compare_split_reads_the_overlap_report(cli, tmp_path):
    rows = ROWS[:60]
    eval_path = tmp_path / "eval.jsonl"
    eval_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pool = tmp_path / "pool"
    for r in rows[:20]:  # the training pool holds 20 evaluation tasks: memorised ones
        tests = json.loads(r["FAIL_TO_PASS"]) if isinstance(r["FAIL_TO_PASS"], str) else r["FAIL_TO_PASS"] or []
        _task(pool, f"copy-{r['instance_id']}", r["repo"], r["patch"], tests, r["problem_statement"])
    _clean(pool)
    out = cli("tasks", "overlap", str(pool), str(eval_path), "--json", use_db=False)
    assert out.exit_code == 0, out.stderr
    report = tmp_path / "overlap.json"
    report.write_text(out.stdout)
    in_ids = set(json.loads(out.stdout)["in_overlap"])
    assert in_ids >= {r["instance_id"] for r in rows[:20]}
    rng = np.random.default_rng(7)
    base, cand = [], []
    for r in rows:
        tid = r["instance_id"]
        for a in range(2):
            ok = bool(rng.random() < 0.3)
            base.append({"task_id": tid, "attempt": a, "resolved": ok})
            cand.append({"task_id": tid, "attempt": a, "resolved": True if tid in in_ids else ok})
    for name, lines in (("base", base), ("ckpt", cand)):
        assert cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", lines)), "--run", name).exit_code == 0
    res = json.loads(cli("compare", "base", "ckpt", "--split", str(report), "--json").stdout)
    subsets = {x["subset"]: x for x in res["comparisons"]}
    assert subsets["in"]["tasks_paired"] == len(in_ids) and subsets["out"]["tasks_paired"] == 60 - len(in_ids)
    assert subsets["out"]["diff_pp"] == 0 and subsets["in"]["diff_pp"] > 40
    (gap,) = res["split"]["gaps"]
    assert gap["ci_pp"][0] > 0  # the planted memorisation: in-overlap gain minus out-of-overlap gain, CI above 0


def test_bad_input_is_one_line_and_exit_2(cli, tmp_path):
    cases = [
        (("tasks", "overlap", str(tmp_path / "nope"), str(INSTANCES)), "no such tasks folder or JSONL file"),
        (("tasks", "overlap", str(tmp_path), str(INSTANCES)), "no task folders"),
        (("tasks", "overlap", str(INSTANCES), str(INSTANCES), "--threshold", "0"), "--threshold must be in (0, 1]"),
        (("tasks", "synthesize", str(tmp_path / "nope"), "--out", str(tmp_path / "o")), "is not a folder"),
        (("tasks", "synthesize", str(tmp_path), "--out", str(tmp_path / "o"), "--repo", "x"), "OWNER/NAME"),
        (("tasks", "synthesize", f"{tmp_path}@abc", "--out", str(tmp_path / "o")), "abc"),
    ]
    for args, message in cases:
        r = cli(*args, use_db=False)
        assert r.exit_code == 2, (args, r.stdout, r.stderr)
        assert message in r.stderr and "Traceback" not in r.stderr + r.stdout
        assert len(r.stderr.strip().splitlines()) == 1
