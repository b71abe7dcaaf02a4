"""The leak scan's reading, without Docker (verify/leaks.py): which lines of a solution are looked for, how the
container's output is read, and when a place is a hit."""

from __future__ import annotations

from pathlib import Path

from trialbook.verify import leaks

SOLVE = """#!/bin/bash
cd /testbed
git apply -v - <<'EOF_GOLD_PATCH'
diff --git a/pkg/core.py b/pkg/core.py
--- a/pkg/core.py
+++ b/pkg/core.py
@@ -1,3 +1,6 @@
 import os
-    return None
+import os
+    # a comment only
+    x = 1
+    return normalize_path(value, strict=True)
+    raise PathError(f"no such path: {value}")
+    cache[value] = normalize_path(value)
EOF_GOLD_PATCH
"""


def test_a_diffs_added_lines_less_the_short_the_common_and_comments(tmp_path: Path) -> None:
    (tmp_path / "solve.sh").write_text(SOLVE)
    assert leaks.gold_lines(tmp_path) == [
        "return normalize_path(value, strict=True)",
        'raise PathError(f"no such path: {value}")',
        "cache[value] = normalize_path(value)",
    ]


def test_a_script_without_a_diff_gives_its_here_documents(tmp_path: Path) -> None:
    (tmp_path / "solve.sh").write_text("cat > a.py <<'PY'\ndef f(values):\n    return sorted(values)[0]\nPY\nrm -f b\n")
    assert leaks.gold_lines(tmp_path) == ["def f(values):", "return sorted(values)[0]"]


def _output(*parts: str) -> bytes:
    return "\n".join(parts).replace("@@", leaks.MARK + " ").encode()


def test_a_place_is_a_hit_with_enough_lines_not_at_base() -> None:
    lines = ["alpha_line_one()", "beta_line_two()", "gamma_line_three()", "delta_line_four()"]
    out = _output(
        "@@base", "    return alpha_line_one()  # at HEAD already",
        "@@git", "@@obj aaaa", "x = beta_line_two()", "gamma_line_three()", "delta_line_four()",
        "@@obj bbbb", "beta_line_two()", "gamma_line_three()",
        "@@files", "/usr/x.py\0delta_line_four()",
        "/opt/y.py\0beta_line_two() gamma_line_three() delta_line_four()",
        "@@archives", "/root/w.whl!m.py\0alpha_line_one()", "@@note archive /z.whl not read: BadZipFile",
    )  # fmt: skip
    found = leaks.parse(out)
    distinct, hits = leaks.judge(lines, found)
    assert distinct == lines[1:] and leaks.threshold(3) == 3
    assert hits == [("file", "/opt/y.py", 3), ("git", "aaaa", 3)]
    assert found.notes == ["archive /z.whl not read: BadZipFile"]


def test_a_hit_blob_is_named_by_what_reaches_it() -> None:
    where = b"a1 commit c1\na1 ref refs/tags/v2\nb2 commit \nc3 commit c3\n"
    named = leaks.describe_blobs(where)
    assert named == {"a1": "in commit c1, reached by refs/tags/v2", "b2": "unreachable: no ref or reflog reaches it",
                     "c3": "in commit c3, reached by the reflog only"}  # fmt: skip


def test_the_threshold() -> None:
    assert [leaks.threshold(n) for n in (1, 2, 3, 4, 10, 11, 50)] == [1, 2, 3, 3, 3, 4, 15]
