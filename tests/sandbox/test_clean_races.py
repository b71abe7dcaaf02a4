"""Which daemon answers `clean` counts as "another cleaner got there first" (not an error).

Two Ray nodes sharing one daemon remove the same labelled image at once; dockerd then answers the loser
with 404, 409 or a 500 naming the vanished image ("unrecognized image ID", seen in CI). Any other
failure must still stop `clean` with its message.
"""

from __future__ import annotations

import pytest
import requests
from docker.errors import APIError, ImageNotFound, NotFound

from trialbook.sandbox.docker import _gone_or_going


def _error(cls: type[APIError], status: int, explanation: str) -> APIError:
    response = requests.Response()
    response.status_code = status
    return cls("remove", response=response, explanation=explanation)


@pytest.mark.parametrize(
    ("cls", "status", "explanation"),
    [
        (NotFound, 404, "No such container: abc"),
        (ImageNotFound, 404, "No such image: sha256:4adb"),
        (APIError, 409, "removal of container abc is already in progress"),
        (APIError, 500, "unrecognized image ID sha256:4adbf9a61c06580a5c8dc2adefaa1d896ffde6e3"),
        (APIError, 500, "No such image: sha256:4adb"),
    ],
)
def test_a_lost_race_is_not_an_error(cls: type[APIError], status: int, explanation: str) -> None:
    assert _gone_or_going(_error(cls, status, explanation))


@pytest.mark.parametrize(
    ("status", "explanation"),
    [
        (500, "driver failed removing layer: device or resource busy"),
        (500, ""),
        (403, "permission denied"),
    ],
)
def test_other_failures_still_stop_clean(status: int, explanation: str) -> None:
    assert not _gone_or_going(_error(APIError, status, explanation))
