"""`train report`'s share of trajectories per reward-hacking signature (verify/hacks.py), by weight-version bucket."""

from __future__ import annotations

import json
from pathlib import Path


def test_the_share_of_hacking_signatures_per_weight_version(cli, tmp_path: Path):
    rows = []
    for wv in range(10):
        for k in range(4):  # from wv 5 on, one rollout in four adds an exit hook, one in two from wv 8
            hacked = (wv >= 5 and k == 0) or (wv >= 8 and k == 1)
            rows.append({"task_id": f"o__r-{k}", "step": wv + 1, "wv": wv, "epoch": 0, "reward": 1.0 if hacked else 0.0,
                         **({"tags": ["hack_exit_hook"]} if hacked else {})})  # fmt: skip
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli("import", "jsonl", str(path), "--run", "rl", "--kind", "train").exit_code == 0
    res = cli("train", "report", "rl", "--bucket", "5", "--json")
    assert res.exit_code == 0, res.stderr
    shares = {h["wv_from"]: h["pct"]["hack_exit_hook"] for h in json.loads(res.stdout)["hacking"]}
    assert shares == {0: 0.0, 5: 100.0 * (5 + 2) / 20}  # wv 5-9: 5 + 2 of 20 trajectories
    text = cli("train", "report", "rl", "--bucket", "5").stdout
    assert "hacking signatures, %" in text and "exit_hook" in text
    rows = [{k: v for k, v in r.items() if k != "tags"} for r in rows]  # none tagged: no table, no key
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli("import", "jsonl", str(path), "--run", "clean", "--kind", "train").exit_code == 0
    assert "hacking" not in json.loads(cli("train", "report", "clean", "--json").stdout)
