"""`python -m trialbook`: the same CLI as the `trialbook` command."""

from trialbook.cli import main

if __name__ == "__main__":
    main()
