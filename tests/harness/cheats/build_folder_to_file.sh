#!/bin/bash
# No fix; the image's build/ folder (untracked, ignored by its .gitignore, as a real image's build artifacts are)
# turned into a file: git apply will not write a file over a folder it does not track. Ungraded (infra_error),
# the failure would leave the judged count.
rm -rf /testbed/build && echo "not a folder" > /testbed/build
