# uct_pending: the pending queue is fair across the eps between two ifaces
# (UCX's gtest pending_fairness criterion) and keeps each ep's order, in UC
# and RC mode; see test/uct/uct_pending.c.
foreach(mode uc rc)
    add_test(NAME uct_pending_fair_${mode}
             COMMAND ${UCCL_RUN} ${UCCL_BUILDDIR}/test/uct/uct_pending 7)
    set_tests_properties(uct_pending_fair_${mode} PROPERTIES LABELS "uct"
        TIMEOUT 120
        ENVIRONMENT
        "SOFTVERBS_FABRIC=t_uct_pending_${mode};UCX_UCCL_MODE=${mode}")
endforeach()
