"""One trial: sandbox -> agent -> verifier -> its record and folder, under the error policy."""
