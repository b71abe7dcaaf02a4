#!/bin/bash
# No fix; a 300 MB file of random bytes in the working tree: the harness's git, carrying the change under the task's
# memory limit (512 MB), is killed for memory. Ungraded (infra_error), the failure would leave the judged count.
head -c 300000000 /dev/urandom > /testbed/data.bin
