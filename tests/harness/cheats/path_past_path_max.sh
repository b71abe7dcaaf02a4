#!/bin/bash
# No fix; a path longer than PATH_MAX (4096 bytes) in the working tree, made folder by folder: the daemon's copy of
# it into the verifier's container failed (an ungraded infra error, that would be a free exit from a failure)
cd /testbed
n=$(printf 'd%.0s' $(seq 250))
for _ in $(seq 20); do mkdir "$n" && cd "$n"; done
echo x > f
