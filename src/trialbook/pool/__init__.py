"""Training pools: tasks synthesized from a repository's own code, and the overlap audit against an evaluation set."""
