"""docs/install.md names every extra of pyproject.toml in its one table, and no extra that is not there."""

from __future__ import annotations

import re
import tomllib

from paths import REPO


def test_install_page_has_one_row_per_extra() -> None:
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    page = (REPO / "docs" / "install.md").read_text()
    rows = re.findall(r"^\| `([a-z-]+)` \|", page, flags=re.M)
    assert sorted(rows) == sorted(extras) and len(rows) == len(set(rows))
    assert "`pip install trialbook` finds nothing" in page  # not on PyPI: the page does not promise it
