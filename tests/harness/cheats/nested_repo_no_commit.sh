#!/bin/bash
# No fix; a repository without a commit nested in the working tree (`git init` in a folder): the harness's git
# refused to index it ("does not have a commit checked out"), an ungraded infra error, a free exit from a failure
mkdir -p /testbed/fixture && cd /testbed/fixture && git init -q && echo data > data.txt
