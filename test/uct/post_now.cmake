# uct_post_now: an AM that am_short accepted reaches the peer while the
# sender does not call progress (after each send the sender waits, without
# progress, up to 10 s for the receiver to report it). Regression: uccl
# used to post only from progress, so an MPI rank that left a barrier and
# slept held its last message back and the other rank left the next
# barrier early. The async timer is off: it would also send the message
# within its 10 ms period.
add_test(NAME uct_post_now COMMAND ${UCCL_SRCDIR}/test/uct/post_now.sh)
set_tests_properties(uct_post_now PROPERTIES LABELS "uct" TIMEOUT 90
    ENVIRONMENT "UCCL_RUN=${UCCL_RUN};UCCL_BUILDDIR=${UCCL_BUILDDIR};UCCL_SRCDIR=${UCCL_SRCDIR};SOFTVERBS_FABRIC=t_uct_post_now;UCCL_TEST_TIMEOUT=60;UCX_UCCL_ASYNC_IDLE=inf")
