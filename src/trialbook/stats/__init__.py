"""Statistics over the ledger: one kernel (t and cluster intervals), task selection, paired comparison, power."""
