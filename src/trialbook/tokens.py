"""Random hex tokens (nonces, unique names) from the OS's random source, read in blocks.

`secrets.token_hex` makes one getrandom syscall a token; on this machine's kernel one costs ~0.5 ms, and with a
thousand trials in flight each syscall also waits for the GIL (benchmarks/bench_scale.py): a trial drew nine. The
bytes here are the same `os.urandom` bytes, read POOL at a time under a lock and each handed out once; they stay in
the harness's memory, where the nonces they become already are.
"""

from __future__ import annotations

import os
import threading

POOL = 4096  # bytes read from the OS at a time
_lock = threading.Lock()
_pool = b""


def token_hex(nbytes: int) -> str:
    """`nbytes` random bytes as 2 * nbytes hex digits, as `secrets.token_hex(nbytes)`."""
    global _pool
    with _lock:
        if len(_pool) < nbytes:
            _pool = os.urandom(max(POOL, nbytes))
        data, _pool = _pool[:nbytes], _pool[nbytes:]
    return data.hex()


def _forget() -> None:  # a forked child must not hand out its parent's bytes again
    global _pool
    _pool = b""


os.register_at_fork(after_in_child=_forget)
