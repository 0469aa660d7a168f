# uct_contract: what UCX's own UCT gtest holds uccl to (test/gtest runs
# that suite from .ci/run; these run with every build). One process per
# test, its own fabric; see test/uct/uct_contract.c for what each checks.
foreach(t am_limits tx_max_bufs am_align connecting async_am peer_close
          destroy flush_deferred many_eps idle_eps rx_bound many_peers)
    add_test(NAME uct_contract_${t}
             COMMAND ${UCCL_RUN} ${UCCL_BUILDDIR}/test/uct/uct_contract ${t} 7)
    set_tests_properties(uct_contract_${t} PROPERTIES LABELS "uct"
        TIMEOUT 120
        ENVIRONMENT "SOFTVERBS_FABRIC=t_uct_contract_${t}")
endforeach()
# GET sources made unreadable after their GETs, with loss so that replies
# whose ACKs were lost are sent again
add_test(NAME uct_contract_get_freed
         COMMAND ${UCCL_RUN} ${UCCL_BUILDDIR}/test/uct/uct_contract get_freed 7)
set_tests_properties(uct_contract_get_freed PROPERTIES LABELS "uct"
    TIMEOUT 120
    ENVIRONMENT "SOFTVERBS_FABRIC=t_uct_contract_get_freed;SOFTVERBS_LOSS=0.05;SOFTVERBS_SEED=11")
