"""How to install and test a pool repository: its test paths, the test dependencies installed beside it, and
extra pytest arguments. Built in for the six repositories of the shared pool (at their SWE-smith profile
commits); any other repository gets pytest and its `tests`/`test` folder, and the CLI options override each field."""

from __future__ import annotations

from dataclasses import dataclass, field

from trialbook.errors import UserError


@dataclass(frozen=True)
class Profile:
    tests: list[str]
    pip: list[str] = field(default_factory=lambda: ["pytest"])
    pytest_args: list[str] = field(default_factory=list)


# `-o addopts=`: the repository's own pytest options ask for plugins (coverage) the verifier does not need
PROFILES: dict[str, Profile] = {
    "msiemens/tinydb": Profile(["tests"], ["pytest", "pyyaml"], ["-o", "addopts="]),
    "mewwts/addict": Profile(["test_addict.py"]),
    "Suor/funcy": Profile(["tests"], ["pytest", "whatever==0.7"]),
    "andialbrecht/sqlparse": Profile(["tests"]),
    "kayak/pypika": Profile(["pypika/tests"], ["pytest", "parameterized==0.7.0"]),
    "0b01001001/spectree": Profile(["tests"], ["pytest", "flask", "falcon", "starlette", "requests"]),
}


def profile_for(repo: str, tests: list[str] | None, pip: list[str] | None, pytest_args: list[str] | None) -> Profile:
    known = PROFILES.get(repo, Profile(["tests"]))
    chosen = Profile(
        tests or known.tests, pip or known.pip, pytest_args if pytest_args is not None else known.pytest_args
    )
    for t in chosen.tests:
        if t.startswith(("/", "-")) or ".." in t.split("/"):
            raise UserError(f"--test {t!r} must be a path inside the repository")
    return chosen
