# Tests with label 'bench' (included by test/CTestTestfile.cmake).

# softverbs (model off) 1 MiB RDMA WRITE stream beside UCX's cma transport
add_test(NAME bench_sv_write_vs_cma
         COMMAND ${UCCL_SRCDIR}/test/bench/sv_write_vs_cma.sh)
set_tests_properties(bench_sv_write_vs_cma PROPERTIES LABELS "bench"
                     TIMEOUT 1200 ENVIRONMENT "SOFTVERBS_LIB=${SOFTVERBS_LIB}")
add_test(NAME bench_uccl_clean
         COMMAND ${UCCL_SRCDIR}/test/bench/uccl_clean.sh ${UCCL_BUILDDIR})
set_tests_properties(bench_uccl_clean PROPERTIES LABELS "bench"
                     TIMEOUT 3600)
# instructions per chunk and per round trip on each side, work apart from
# polling (callgrind)
add_test(NAME bench_uccl_callgrind
         COMMAND ${UCCL_SRCDIR}/test/bench/uccl_callgrind.sh ${UCCL_BUILDDIR})
set_tests_properties(bench_uccl_callgrind PROPERTIES LABELS "bench"
                     TIMEOUT 3600)
# the congestion control scenarios (issue 14): incast, ECMP, a path down
# or slow, loss; every UCX_UCCL_CC algorithm beside rc_verbs
add_test(NAME bench_cc_scenarios
         COMMAND ${UCCL_SRCDIR}/test/bench/cc_scenarios.sh ${UCCL_BUILDDIR}
                 ${UCCL_BUILDDIR}/cc_scenarios)
set_tests_properties(bench_cc_scenarios PROPERTIES LABELS "bench"
                     TIMEOUT 3600)
