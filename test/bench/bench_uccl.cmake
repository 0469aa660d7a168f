add_test(NAME bench_uccl_vs_softverbs
         COMMAND ${UCCL_SRCDIR}/test/bench/uccl_vs_softverbs.sh ${UCCL_BUILDDIR})
set_tests_properties(bench_uccl_vs_softverbs PROPERTIES LABELS "bench"
                     TIMEOUT 1200)
add_test(NAME bench_uccl_loss_ratio
         COMMAND ${UCCL_SRCDIR}/test/bench/uccl_loss_ratio.sh ${UCCL_BUILDDIR})
set_tests_properties(bench_uccl_loss_ratio PROPERTIES LABELS "bench"
                     TIMEOUT 1200)
