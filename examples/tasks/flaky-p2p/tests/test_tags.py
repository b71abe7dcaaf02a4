from tags import normalize, unique


def test_normalize():
    assert normalize("  Bug ") == "bug"


def test_unique_keeps_first_seen_order():
    # Flaky: passes only when the hash seed happens to put "beta" before "alpha" in the set.
    assert unique(["beta", "alpha", "beta"]) == ["beta", "alpha"]
