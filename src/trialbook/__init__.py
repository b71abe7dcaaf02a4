"""trialbook: run coding-agent trials, keep every trial in one ledger, and tell improvement from noise."""

__version__ = "0.1.0"
