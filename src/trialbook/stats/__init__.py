"""Statistics over the ledger: paired comparisons, power planning, pass@k, multiplicity."""
