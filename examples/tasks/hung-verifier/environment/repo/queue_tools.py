"""Queue helpers."""

import queue


def drain(q):
    return [q.get_nowait()]


def make_queue(items):
    q = queue.Queue()
    for item in items:
        q.put(item)
    return q
