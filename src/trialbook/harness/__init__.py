"""Running trials: one trial, a run's lifecycle, where trials run, and the workflows built on runs."""
