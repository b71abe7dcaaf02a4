#!/bin/bash
# No fix; paths git refuses to index: `.git.`, `GIT~1` (its NTFS protections), a `.GIT` folder, a `.gitmodules`
# that is a link. The harness's git had failed on them ("invalid path"), an ungraded infra error.
cd /testbed
echo x > .git. && echo x > GIT~1 && mkdir -p a/.GIT && echo x > a/.GIT/config && echo x > 'b::$INDEX_ALLOCATION'
ln -s /etc/passwd .gitmodules && mkdir -p sub && ln -s x sub/.GitModules
