from queue_tools import drain, make_queue


def test_drain_returns_all():
    assert drain(make_queue([1, 2, 3])) == [1, 2, 3]


def test_worker_finishes():
    # Waits for a worker that never starts: blocks forever (no timeout), like a deadlocked test.
    q = make_queue([])
    q.get()
