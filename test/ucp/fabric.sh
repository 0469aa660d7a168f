# Sourced by the ucp and mpi test scripts: the softverbs fabric of one test.
# A SOFTVERBS_FABRIC the user set is used as it is and left alone. Otherwise
# the test gets a fabric of its own (UCCL_TEST_FABRIC, set by tests.cmake,
# or PREFIX<pid>): its model variables (SOFTVERBS_LOSS ...) take effect, no
# other test shares it, and uccl_fabric_cleanup removes it and the segments
# of its ports at exit.

# uccl_fabric_setup PREFIX
uccl_fabric_setup() {
    uccl_own_fabric=0
    if [ -z "${SOFTVERBS_FABRIC:-}" ]; then
        SOFTVERBS_FABRIC=${UCCL_TEST_FABRIC:-$1$$}
        uccl_own_fabric=1
    fi
    export SOFTVERBS_FABRIC
}

uccl_fabric_cleanup() {
    [ "${uccl_own_fabric:-0}" = 1 ] || return 0
    rm -f "/dev/shm/softverbs.$SOFTVERBS_FABRIC" \
          "/dev/shm/softverbs.$SOFTVERBS_FABRIC".*
}
