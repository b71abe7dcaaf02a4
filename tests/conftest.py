"""Shared fixtures: a fresh SQLite ledger per test, the real shared data, and an in-process CLI."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from trialbook.cli import load
from trialbook.errors import TrialbookError

app = load()  # every area's commands

# A test that uses one of these fixtures needs that service, so it carries the marker without saying so;
# tests that start the service themselves (a module-level llama server, say) set `pytestmark` instead.
FIXTURE_MARKERS = {"engine": "docker", "pg": "postgres", "llama": "llm"}


# Modules whose service tests bound a wall time (a hung verifier stopped within its timeout plus a grace, a quick
# image tree indexed within 0.4 s): scripts/test.sh runs them on one worker after the others, which run on two
TIMING_MODULES = {
    "tests/agents/test_mini_scripted_exits.py",
    "tests/agents/test_own_agents_docker.py",
    "tests/harness/test_carry_timeout.py",
    "tests/harness/test_harness_docker.py",
    "tests/harness/test_hung_with_change.py",
    "tests/sandbox/test_channel.py",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture in getattr(item, "fixturenames", ()):
            if fixture in FIXTURE_MARKERS:
                item.add_marker(FIXTURE_MARKERS[fixture])
        if item.nodeid.split("::", 1)[0] in TIMING_MODULES:
            item.add_marker("timing")


# `pytest -n 2 --dist loadfile` (scripts/test.sh's docker part) gives each worker whole modules (module-scoped
# fixtures such as a Ray cluster; the `pg` database named after the module), and these modules to one worker as one
# unit, one after the other in collection order:
# - the ones that build SWE-bench images: two workers would debootstrap the same suite at once and retag
#   trialbook-swe-base:<suite> under a build whose lock recorded the other's id; and a later module finds what an
#   earlier one built by its content hash instead of building it again;
# - the ones that start Ray clusters on this machine: the scale-out page's transcript ends with `ray stop`, which
#   stops every Ray process of the machine, the other module's cluster too.
# (Not `--dist loadgroup` with xdist_group marks: xdist 3.8 renames the node ids for it, which pytest 9's node ids
# no longer allow.)
SAME_WORKER = {
    "tests/harness/test_grade_reverify_docker.py": "swebench-builds",
    "tests/tasks/test_swebench_build_docker.py": "swebench-builds",
    "tests/tasks/test_swebench_lock_docker.py": "swebench-builds",
    "tests/tasks/test_swebench_official_docker.py": "swebench-builds",
    "tests/tasks/test_swebench_sphinx_story.py": "swebench-builds",
    "tests/docs/test_console_examples.py": "ray-clusters",
    "tests/harness/test_ray_cluster.py": "ray-clusters",
}


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ModulesAndUnits(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = super()._split_scope(nodeid)
            return SAME_WORKER.get(module, module)

    return ModulesAndUnits(config, log)  # type: ignore[arg-type]


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "ledger.db")


@pytest.fixture
def cli(db: str):
    """Run `trialbook ARGS --db <fresh ledger>` in-process, as `trialbook.cli.main` would."""
    runner = CliRunner()

    def invoke(*args: str, use_db: bool = True) -> CliResult:
        argv = [*args, "--db", db] if use_db else list(args)
        res = runner.invoke(app, argv)
        if isinstance(res.exception, TrialbookError):
            return CliResult(res.exception.exit_code, res.stdout, f"error: {res.exception}\n")
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            raise res.exception
        return CliResult(res.exit_code, res.stdout, res.stderr)

    return invoke


PG_SERVER = os.environ.get("TRIALBOOK_TEST_PG", "postgresql://trialbook:trialbook@127.0.0.1:5432/trialbook_test")


@pytest.fixture
def pg(request: pytest.FixtureRequest) -> str:
    """A fresh, empty database on the real PostgreSQL test server (scripts/ci-setup-postgres.sh),
    named after the test module so modules never drop each other's tables."""
    import psycopg

    name = "tb_" + request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    try:
        with psycopg.connect(PG_SERVER, autocommit=True) as conn:
            for tries_left in reversed(range(20)):
                try:
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                    break
                except psycopg.errors.InsufficientPrivilege:
                    # an autovacuum worker in the database (after the previous test's writes): FORCE may not end it
                    # (it has no role the test's user belongs to) but it ends within moments
                    if not tries_left:
                        raise
                    time.sleep(0.5)
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        pytest.fail(f"no PostgreSQL at {PG_SERVER}: run scripts/ci-setup-postgres.sh ({str(exc).splitlines()[0]})")
    return PG_SERVER.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(scope="session")
def engine():
    """The real Docker daemon with the base image (scripts/docker-up.sh provides both)."""
    import docker

    try:
        client = docker.from_env()
        client.ping()
        client.images.get("trialbook-base:bookworm")
    except Exception as exc:  # a real failure, not a skip: these tests need the daemon
        pytest.fail(f"Docker daemon + trialbook-base:bookworm required (run scripts/docker-up.sh): {exc}")
    return client
