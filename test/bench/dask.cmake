# Benchmark (label 'bench'): Dask worker-to-worker transfer rate over ucx://
# on uccl against Dask's tcp://, in one run (test/bench/dask_transfer.py,
# through test/dask/run.sh).
add_test(NAME bench_dask_transfer
         COMMAND ${UCCL_SRCDIR}/test/dask/run.sh ${UCCL_HAVE_PYTHON}
                 ${UCCL_RUN} ${UCCL_PYTHON}
                 ${UCCL_SRCDIR}/test/bench/dask_transfer.py)
set_tests_properties(bench_dask_transfer PROPERTIES LABELS "bench"
    TIMEOUT 1200 SKIP_RETURN_CODE 77 ENVIRONMENT
    "UCCL_TEST_TIMEOUT=1150;UCCL_TEST_FABRIC=bench_dask_transfer")
