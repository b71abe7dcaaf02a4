"""Where a run's trials run: a thread pool on one backend, several engines, or a Ray cluster."""
