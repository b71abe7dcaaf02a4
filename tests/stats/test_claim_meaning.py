"""What a claim means: the lower bound of its CI beside each claim, and no shrunken estimate (issue 58: the
sceptical prior's estimate printed +2.9 at a true +10 pp over 100 tasks; it is no longer printed)."""

from __future__ import annotations

import json


def test_claim_lines_show_the_lower_bound_and_no_shrunken_estimate(cli, tmp_path):
    for run, solved in (("base", 10), ("cand", 30)):
        lines = [f'{{"task_id": "t{i}", "attempt": 0, "resolved": {str(i < solved).lower()}}}' for i in range(60)]
        (tmp_path / f"{run}.jsonl").write_text("\n".join(lines) + "\n")
        assert cli("import", "jsonl", str(tmp_path / f"{run}.jsonl"), "--run", run).exit_code == 0
    (row,) = json.loads(cli("compare", "base", "cand", "--json").stdout)["comparisons"]
    assert row["claim"] and row["lower_bound_pp"] == row["ci_adjusted_pp"][0] > 0
    assert "shrunk_pp" not in row
    text = " ".join(cli("compare", "base", "cand").stdout.split())
    lb = row["lower_bound_pp"]
    assert f"cand claims {row['diff_pp']:+.2f} pp: gain at least {lb:+.2f} pp (lower CI bound;" in text
    assert "shrunk" not in text
    assert "- cand claims" in cli("compare", "base", "cand", "--markdown").stdout
