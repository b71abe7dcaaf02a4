"""`train watch`: read the run again every `interval` seconds, raise each new alert once (printed, and
POSTed to `--webhook` when given), until stopped, `--once`, or `--until RULE` sees that rule fire."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from trialbook.errors import UserError
from trialbook.ledger.store import Ledger
from trialbook.training import alerts
from trialbook.training.live import LiveState, SignatureCache, live_state
from trialbook.training.prefetch import PrefetchEstimate


@dataclass
class Watcher:
    ledger: Ledger
    run: str
    bucket: int = 5
    max_staleness: int | None = None
    thresholds: alerts.Thresholds = field(default_factory=alerts.Thresholds)
    webhook: str | None = None
    seen: set[str] = field(default_factory=set)
    raised: list[alerts.Alert] = field(default_factory=list)
    webhook_errors: list[str] = field(default_factory=list)
    signatures: SignatureCache = field(default_factory=SignatureCache)
    _prefetch: PrefetchEstimate | None = None
    _prefetch_done: bool = False
    state: LiveState | None = None

    def __post_init__(self) -> None:
        if self.bucket < 1:
            raise UserError(f"--bucket must be at least 1, got {self.bucket}")
        if self.webhook is not None and not self.webhook.startswith(("http://", "https://")):
            raise UserError(f"--webhook must be an http:// or https:// URL, got {self.webhook!r}")
        self.ledger.get_run(self.run)  # an unknown run: one line, before any refresh

    def prefetch(self) -> PrefetchEstimate | None:
        """The simulator's estimate, computed once (on the first drain) from the run as it then stands."""
        if not self._prefetch_done and self.state is not None and self.state.median_wait_s:
            from trialbook.training.load import load_durations, load_trajectories
            from trialbook.training.prefetch import estimate

            run_id = self.ledger.get_run(self.run).id
            data = load_trajectories(self.ledger, run_id)
            self._prefetch = estimate(data, load_durations(self.ledger, run_id), self.state.median_wait_s)
            self._prefetch_done = True
        return self._prefetch

    def refresh(self) -> list[alerts.Alert]:
        """Read the run now; the alerts not raised before (each sent to the webhook)."""
        self.state = live_state(self.ledger, self.run, bucket=self.bucket, max_staleness=self.max_staleness,
                                signatures=self.signatures)  # fmt: skip
        new = []
        for a in alerts.evaluate(self.state, self.thresholds, alerts.Context(prefetch=self.prefetch)):
            if a.key in self.seen:
                continue
            self.seen.add(a.key)
            self.raised.append(a)
            new.append(a)
            if self.webhook:
                problem = alerts.post(self.webhook, self.run, a)
                if problem:
                    self.webhook_errors.append(f"webhook {self.webhook}: {problem} (alert {a.key})")
        return new


def watch_training(
    w: Watcher,
    interval: float,
    show: Callable[[Watcher, list[alerts.Alert]], None],
    once: bool = False,
    until: str | None = None,
    timeout: float | None = None,
) -> bool:
    """Refresh and `show` until done; True unless `--until RULE` timed out before the rule fired."""
    if until is not None and until not in alerts.BY_NAME:
        raise UserError(f"--until {until}: no such alert (one of {', '.join(alerts.BY_NAME)})")
    if interval <= 0:
        raise UserError(f"--interval must be above 0, got {interval}")
    start = time.monotonic()
    while True:
        new = w.refresh()
        show(w, new)
        if once or (until is not None and any(a.rule == until for a in w.raised)):
            return True
        if timeout is not None and time.monotonic() - start > timeout:
            return until is None
        time.sleep(interval)
