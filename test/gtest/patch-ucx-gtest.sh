#!/bin/sh
#
# patch-ucx-gtest.sh DIR: add uccl to a copy of UCX's test/gtest in DIR:
# next to tcp in the transport list of the generic UCT tests
# (uct/uct_test.h) and to the memory domain components of uct/test_md.cc.
#
set -eu
dir=$1
sed -i 's/^\(    tcp, *\\\)$/\1\n    uccl,                    \\/' \
    "$dir/uct/uct_test.h"
sed -i 's/^\( *\)rdmacm \\$/\1rdmacm, \\\n\1uccl \\/' "$dir/uct/test_md.cc"
grep -q '^    uccl, ' "$dir/uct/uct_test.h" &&
    grep -q '^ *uccl \\$' "$dir/uct/test_md.cc" || {
    echo "patch-ucx-gtest.sh: cannot add uccl to the test lists in $dir" >&2
    exit 1
}
