"""Benchmark (a simulation, not a timing): 8 null checkpoints through `trialbook compare`, under each dodge.

Run by hand:  python benchmarks/bench_looks.py [--reps 200] [--tasks 150] [--seed 58]
Each replication makes a fresh ledger with a baseline and 8 checkpoints of one arm that is truly no better
(one attempt per task, task difficulty beta(0.5, 0.5) shared by all runs), and compares them one call at a
time, in-process through the CLI, under each dodge of the looks' bookkeeping:

- `fresh-name`: the baseline re-imported under a new name before each look;
- `rename`: the baseline renamed (`runs rename`) between looks;
- `copy`: the baseline imported again as another run, compared from the copy;
- `replace`: the checkpoint re-run under its old name (`import --replace`).

It counts the families with any false claim, and with any CI excluding 0, as printed at each call
(stats/looks.py never revises a printed verdict), against the comparison alone (`--family none`).
The figures go to docs/statistics.md; tests/stats/test_looks.py runs the mechanism once per dodge.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from trialbook.cli import load
from trialbook.stats.synthetic import simulate_run, write_jsonl

DODGES = ("fresh-name", "rename", "copy", "replace")
LOOKS = 8


def family(runner: CliRunner, app, dodge: str, tasks: int, rng: np.random.Generator, tmp: Path) -> dict[str, bool]:
    db = str(tmp / "ledger.db")

    def cli(*args: str) -> str:
        res = runner.invoke(app, [*args, "--db", db])
        if res.exit_code != 0:
            raise RuntimeError(f"{args}: {res.stdout} {res.exception}")
        return res.stdout

    p = rng.beta(0.5, 0.5, tasks)
    base_file = write_jsonl(tmp / "base.jsonl", simulate_run(p, 1, rng))
    cli("import", "jsonl", str(base_file), "--run", "base")
    base = "base"
    out = {"claim": False, "excl": False, "alone_claim": False, "alone_excl": False, "bookkeeping": True}
    family_key: dict[str, str] = {}
    for j in range(1, LOOKS + 1):
        cand = "ckpt" if dodge == "replace" else f"ckpt{j}"
        cand_file = write_jsonl(tmp / f"c{j}.jsonl", simulate_run(p, 1, rng))
        cli("import", "jsonl", str(cand_file), "--run", cand, *(["--replace"] if dodge == "replace" and j > 1 else []))
        if j > 1 and dodge in ("fresh-name", "copy"):
            base = f"{dodge}-{j}"
            cli("import", "jsonl", str(base_file), "--run", base)
        elif j > 1 and dodge == "rename":
            cli("runs", "rename", base, f"base-{j}")
            base = f"base-{j}"
        for key, fam in (("", []), ("alone_", ["--family", "none"])):
            res = json.loads(cli("compare", base, cand, "--min-diff", "0", "--json", *fam))
            (row,) = res["comparisons"]
            if not key:  # the mechanism: look j of one family, judged at 1 - 0.05 / (j (j + 1))
                looks = res["looks"]
                out["bookkeeping"] &= (
                    looks["look"][cand] == j
                    and looks["family"] == family_key.setdefault("key", looks["family"])
                    and abs(row["ci_level"] - (1 - 0.05 / (j * (j + 1)))) < 1e-6
                )
            lo, hi = row["ci_adjusted_pp"]
            out[key + "claim"] |= bool(row["claim"])
            out[key + "excl"] |= lo > 0 or hi < 0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--tasks", type=int, default=150)
    ap.add_argument("--seed", type=int, default=58)
    ap.add_argument("--dodge", choices=DODGES, action="append", help="only these dodges (default: all)")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    runner, app = CliRunner(), load()
    print("| dodge | families | looks numbered 1-8 in one family | false claims | CIs excluding 0 | alone: claims |"
          " alone: CIs excluding 0 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for dodge in args.dodge or DODGES:
        hits = {"claim": 0, "excl": 0, "alone_claim": 0, "alone_excl": 0, "bookkeeping": 0}
        for i in range(args.reps):
            with tempfile.TemporaryDirectory() as tmp:
                for k, v in family(runner, app, dodge, args.tasks, rng, Path(tmp)).items():
                    hits[k] += v
            print(f"{dodge} {i + 1}: " + ", ".join(f"{k} {v}" for k, v in hits.items()), file=sys.stderr, flush=True)
        pct = {k: 100 * v / args.reps for k, v in hits.items()}
        print(f"| {dodge} | {args.reps} | {hits['bookkeeping']} | {pct['claim']:.1f}% | {pct['excl']:.1f}% |"
              f" {pct['alone_claim']:.1f}% | {pct['alone_excl']:.1f}% |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
