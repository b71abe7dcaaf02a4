"""Trajectories as training data: a trial's model calls (the gateway's records) as turns of token ids, a loss
mask, logprobs and weight versions, with the token-exactness audit.

Multi-turn RL trains on ONE sequence per episode: turn 1's prompt, its completion, the observation tokens the
next prompt adds, turn 2's completion, ... The loss mask is 1 on the policy's (completion) tokens and 0 on
prompt/observation tokens; logprobs are the engine's, aligned to the sequence (None off the mask). That
sequence is the one the model saw only if every turn's prompt extends the previous prompt plus its
completion (`extends`). A turn that does not (the agent or a template re-tokenized the history: the drift that
TRL #5224, verl #6719 and rLLM #272 each fixed) is a broken prefix: the episode is then split at it into
segments, each a sequence of its own, and the trial is tagged `broken_prefix`.

Stored per trial as the artifact `tokens.json` (ARTIFACT) in a compact form: the first prompt in full, then
per turn only the observation ids it adds (a broken turn keeps its full prompt); logprobs to 6 decimals.
The summary (turns, breaks, weight versions, staleness) goes into the trial's `extra.rollout`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from trialbook.extra_schema import RolloutSummary, read_extra, with_extra

ARTIFACT = "tokens.json"
TAG = "broken_prefix"
FORMAT = 1


@dataclass
class Turn:
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float | None]
    wv_start: int | None = None
    wv_end: int | None = None
    source: str = "returned"
    finish_reason: str | None = None
    extends: bool = True  # the prompt starts with the previous turn's prompt + completion (always, for turn 0)


@dataclass
class Segment:
    """One training sequence: turns whose prefixes hold, flattened."""

    first_turn: int
    input_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float | None]


@dataclass
class Trajectory:
    turns: list[Turn]
    model: str = ""
    engine: str = ""
    broken: list[int] = field(default_factory=list)  # turns whose prompt does not extend the one before

    @classmethod
    def of(cls, turns: Sequence[Turn], model: str = "", engine: str = "") -> Trajectory:
        t = cls(list(turns), model, engine)
        t.audit()
        return t

    @classmethod
    def from_calls(cls, calls: Iterable[Any]) -> Trajectory:
        """From the gateway's `Call` records (in call order): the policy's turns only (a side call, such as a
        title or a small-model helper, is no turn of the episode)."""
        calls = [c for c in calls if getattr(c, "role", "policy") != "side"]
        turns = [
            Turn(list(c.prompt_ids), list(c.completion_ids), list(c.logprobs), c.wv_start, c.wv_end, c.source,
                 c.finish_reason)
            for c in calls
        ]  # fmt: skip
        return cls.of(turns, calls[0].model if calls else "", calls[0].engine if calls else "")

    def audit(self) -> list[int]:
        """Mark each turn's `extends`; returns the broken turns' indexes."""
        self.broken = []
        for k, turn in enumerate(self.turns):
            turn.extends = k == 0 or extends(self.turns[k - 1], turn)
            if not turn.extends:
                self.broken.append(k)
        return self.broken

    @property
    def exact(self) -> bool:
        return bool(self.turns) and all(t.source in ("returned", "engine-tokenizer") for t in self.turns)

    @property
    def wv_first(self) -> int | None:
        known = [v for t in self.turns for v in (t.wv_start, t.wv_end) if v is not None]
        return min(known) if known else None

    @property
    def wv_last(self) -> int | None:
        known = [v for t in self.turns for v in (t.wv_start, t.wv_end) if v is not None]
        return max(known) if known else None

    def segments(self) -> list[Segment]:
        out: list[Segment] = []
        for k, turn in enumerate(self.turns):
            if k == 0 or not turn.extends:
                out.append(Segment(k, list(turn.prompt_ids), [0] * len(turn.prompt_ids),
                                   [None] * len(turn.prompt_ids)))  # fmt: skip
            else:
                seg = out[-1]
                obs = turn.prompt_ids[len(seg.input_ids) :]
                seg.input_ids += obs
                seg.loss_mask += [0] * len(obs)
                seg.logprobs += [None] * len(obs)
            seg = out[-1]
            seg.input_ids += turn.completion_ids
            seg.loss_mask += [1] * len(turn.completion_ids)
            lp = list(turn.logprobs) + [None] * (len(turn.completion_ids) - len(turn.logprobs))
            seg.logprobs += lp[: len(turn.completion_ids)]
        return out

    def summary(self, step: int | None) -> RolloutSummary:
        """What goes into the trial's `extra.rollout` (JSON-ready)."""
        first = self.wv_first
        return RolloutSummary(
            turns=len(self.turns),
            exact=self.exact,
            prefix_breaks=len(self.broken),
            broken_turns=list(self.broken),
            wv_first=first,
            wv_last=self.wv_last,
            staleness=None if step is None or first is None else step - first,
            policy_tokens=sum(len(t.completion_ids) for t in self.turns),
            model=self.model,
            engine=self.engine,
        )

    def dumps(self) -> str:
        """The compact artifact text (`loads` is its inverse)."""
        rows = []
        for k, t in enumerate(self.turns):
            lp = [None if v is None else round(v, 6) for v in t.logprobs]
            row: dict[str, Any] = {"out": t.completion_ids, "lp": lp, "wv": [t.wv_start, t.wv_end], "src": t.source,
                                   "fin": t.finish_reason}  # fmt: skip
            if k == 0 or not t.extends:
                row["prompt"] = t.prompt_ids
            else:
                prev = self.turns[k - 1]
                row["obs"] = t.prompt_ids[len(prev.prompt_ids) + len(prev.completion_ids) :]
            rows.append(row)
        doc = {"format": FORMAT, "model": self.model, "engine": self.engine, "turns": rows}
        return json.dumps(doc, separators=(",", ":"))

    @classmethod
    def loads(cls, text: str) -> Trajectory:
        doc = json.loads(text)
        if doc.get("format") != FORMAT:
            raise ValueError(f"{ARTIFACT}: unknown format {doc.get('format')!r}")
        turns: list[Turn] = []
        for row in doc["turns"]:
            if "prompt" in row:
                prompt = list(row["prompt"])
            else:
                prev = turns[-1]
                prompt = prev.prompt_ids + prev.completion_ids + list(row["obs"])
            wv = row.get("wv") or [None, None]
            turns.append(Turn(prompt, list(row["out"]), list(row["lp"]), wv[0], wv[1], row.get("src", ""),
                              row.get("fin")))  # fmt: skip
        return cls.of(turns, doc.get("model", ""), doc.get("engine", ""))


def extends(prev: Turn, turn: Turn) -> bool:
    """Token-exactness: `turn`'s prompt starts with `prev`'s prompt followed by `prev`'s completion."""
    n, m = len(prev.prompt_ids), len(prev.completion_ids)
    p = turn.prompt_ids
    return len(p) >= n + m and p[:n] == prev.prompt_ids and p[n : n + m] == prev.completion_ids


def tagged(extra: dict[str, Any], traj: Trajectory, step: int | None) -> dict[str, Any]:
    """`extra` with the trajectory's summary under `rollout` and the broken-prefix tag when it has one."""
    tags = [t for t in read_extra(extra).tags if t != TAG]
    return with_extra(extra, rollout=traj.summary(step), tags=[*tags, TAG] if traj.broken else tags)
