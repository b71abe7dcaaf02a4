"""The daemon connection (sandbox/docker.py SharedPoolAdapter) on the real daemon: the plain calls of containers'
lifecycles share kept-alive connections, while a connection the daemon takes over (the command channel's attach, an
exec's stream) never goes back to that pool, so no later call can read a container's stream as its answer."""

from __future__ import annotations

import secrets
import threading

import pytest

from trialbook.sandbox import BoxSpec, DockerEngine
from trialbook.sandbox.docker import LABEL_RUN, SharedPoolAdapter

pytestmark = pytest.mark.docker

IMAGE = "trialbook-base:bookworm"


def test_lifecycles_share_a_connection_and_taken_over_ones_stay_out(engine):
    tb = DockerEngine()
    adapter = tb.client.api.get_adapter("http+docker://localhost")
    assert isinstance(adapter, SharedPoolAdapter)
    made: list[threading.Thread] = []
    new_conn = adapter.shared._new_conn

    def counted():  # every connection the shared pool opens, and from which thread
        made.append(threading.current_thread())
        return new_conn()

    adapter.shared._new_conn = counted
    run = f"conn-{secrets.token_hex(3)}"
    try:
        for i in range(4):
            box = tb.start(BoxSpec(IMAGE, {LABEL_RUN: run}, 1.0, 256, 128, False), f"tb-{run}-{i}")
            assert box.channel is not None  # attached: a connection the daemon took over
            said = box.exec(["sh", "-c", "echo through-the-channel"], timeout=30)
            assert said.output.strip() == "through-the-channel" and said.exit_code == 0
            # a docker exec: its stream is a taken-over connection too
            trusted = box.exec(["sh", "-c", "echo through-an-exec; exit 3"], timeout=30, trusted=True)
            assert trusted.output.strip() == "through-an-exec" and trusted.exit_code == 3
            # plain calls after both: answered as themselves, never by a container's stream
            state = tb.client.api.inspect_container(box.id)["State"]
            assert state["Running"] is True
            box.remove()
        # four lifecycles, one after another on this thread: one kept-alive connection served all their plain calls
        assert len(made) == 1, made
        plain_idle = [c for c in list(adapter.shared.pool.queue) if c is not None]
        assert len(plain_idle) == 1 and plain_idle[0].sock is not None
    finally:
        tb.clean(run)
    assert tb.containers(run) == []
