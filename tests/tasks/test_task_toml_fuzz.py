"""A fuzz test of task.toml (issue 47): keys known, misspelt and invented, in every section, with values of every
TOML type (huge integers, nan and inf, strings, dates, arrays, tables) and raw bytes. Loading a task either gives a
TaskSpec that uses what the file says, or one ValueError line (the task's InvalidTaskError): never a traceback,
never a key silently ignored."""

from __future__ import annotations

import datetime as dt
import json
import math
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paths import EXAMPLES
from trialbook.errors import InputWarning
from trialbook.tasks import TaskSpec, load_task
from trialbook.tasks.loader import HARBOR_ONLY, KNOWN_SCHEMA, _known, unknown_keys

SECTIONS = ("agent", "verifier", "environment")
KNOWN = sorted({k for s in ("", *SECTIONS) for k in _known(s)})
TYPOS = ["timeout_secs", "memory_mbs", "cpu", "pid_limit", "isolaton", "docker-image", "Timeout_sec", ""]

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=6)
scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),  # TOML's integers are 64-bit
    st.floats(),  # nan and inf included
    text,
    st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31)),
    st.dates(),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
                      max_leaves=5)  # fmt: skip
keys = st.one_of(st.sampled_from(KNOWN), st.sampled_from(TYPOS), text)
tables = st.dictionaries(keys, values, max_size=4)
documents = st.fixed_dictionaries(
    {},
    optional={
        **{s: st.one_of(tables, values) for s in SECTIONS},
        "metadata": st.one_of(tables, values),
        "version": st.one_of(st.sampled_from(["1.0", "1.1", "1.2", "2.0", "1", "x"]), values),
    },
).flatmap(lambda doc: st.dictionaries(keys, values, max_size=2).map(lambda extra: {**extra, **doc}))


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, list):
        return "[" + ", ".join(map(toml_value, v)) + "]"
    return "{" + ", ".join(f"{toml_value(str(k))} = {toml_value(x)}" for k, x in v.items()) + "}"


def toml_text(doc: dict[str, Any]) -> str:
    """`doc` as TOML (every table inline, every key quoted)."""
    return "".join(f"{toml_value(k)} = {toml_value(v)}\n" for k, v in doc.items())


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz") / "t"
    shutil.copytree(EXAMPLES / "plain-bugfix", folder)
    return folder


def _load(task: Path, data: bytes) -> TaskSpec | str:
    (task / "task.toml").write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)  # a warning is checked as one more outcome below
        try:
            return load_task(task)
        except InputWarning as warning:
            return f"warning: {warning}"
        except ValueError as exc:
            return str(exc)


def _one_line(message: str) -> None:
    assert message and "\n" not in message and "Traceback" not in message, message


def test_the_generator_writes_toml_that_reads_back():
    import tomllib

    doc = {"agent": {"timeout_sec": 5.5, "x y": [1, "a", dt.date(2020, 1, 2)]}, "version": "1.1", "n": float("nan")}
    back = tomllib.loads(toml_text(doc))
    assert back["agent"] == doc["agent"] and back["version"] == "1.1" and math.isnan(back["n"])


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=documents)
def test_any_task_toml_loads_as_written_or_is_one_line(task, doc):
    import tomllib

    data = toml_text(doc).encode()
    raw = tomllib.loads(data.decode())  # the generator writes valid TOML
    got = _load(task, data)
    if isinstance(got, str):
        _one_line(got)
        if got.startswith("warning: "):  # only a task declaring a newer schema has keys ignored
            assert "newer than 1.1; keys ignored: " in got and unknown_keys(raw)
        else:
            assert got.startswith("invalid task.toml: "), got
        return
    assert not unknown_keys(raw)  # loaded: no key left unread ...
    for section, field, used in (("agent", "timeout_sec", got.agent_timeout), ("verifier", "timeout_sec",
                                 got.verifier_timeout), ("environment", "cpus", got.cpus),
                                 ("environment", "memory_mb", got.memory_mb)):  # fmt: skip
        given_value = raw.get(section, {}).get(field)
        if given_value is not None:  # ... and each value used as written
            assert used == given_value and math.isfinite(used), (section, field, used)
    assert set(raw.get("environment", {})) - set(_known("environment")) == set()
    assert HARBOR_ONLY[""] >= set(raw) - {"agent", "verifier", "environment", "metadata"}


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=64) | st.text(max_size=40).map(lambda t: ("[agent]\n" + t).encode(errors="replace")))
def test_any_bytes_as_task_toml_load_or_are_one_line(task, data):
    got = _load(task, data)
    if isinstance(got, str):
        _one_line(got)
        assert got.startswith(("invalid task.toml: ", "task.toml is not UTF-8 text", "warning: ")), got


def test_a_newer_schema_is_the_only_way_past_an_unknown_key(task):
    newer = ".".join(map(str, (KNOWN_SCHEMA[0], KNOWN_SCHEMA[1] + 1)))
    for version, ok in (("1.0", False), ("1.1", False), (newer, True), ("2", True)):
        got = _load(task, f'version = "{version}"\n[agent]\nturn_limit = 3\n'.encode())
        assert isinstance(got, str) and got.startswith("warning: " if ok else "invalid task.toml: "), (version, got)
