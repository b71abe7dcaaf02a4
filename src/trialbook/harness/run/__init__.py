"""A run's lifecycle: its config, start-up, execution of its trials, progress, lock and files, resume and rerun."""
