"""The error policy's old home: the table, `classify` and `rule_for` live in `trialbook.outcomes`."""

from __future__ import annotations

from trialbook.outcomes import POLICY, RETRYABLE, STILL_GRADED, UNEXPECTED, Rule, classify, policy_rows, rule_for

__all__ = ["POLICY", "RETRYABLE", "STILL_GRADED", "UNEXPECTED", "Rule", "classify", "policy_rows", "rule_for"]
