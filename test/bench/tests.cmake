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
