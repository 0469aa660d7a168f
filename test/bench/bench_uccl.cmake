add_test(NAME bench_uccl_vs_softverbs
         COMMAND ${UCCL_SRCDIR}/test/bench/uccl_vs_softverbs.sh ${UCCL_BUILDDIR})
set_tests_properties(bench_uccl_vs_softverbs PROPERTIES LABELS "bench"
                     TIMEOUT 1200)
