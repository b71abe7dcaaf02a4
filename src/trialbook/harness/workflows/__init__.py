"""Commands built on runs: validate, grade and reverify, quickstart."""
