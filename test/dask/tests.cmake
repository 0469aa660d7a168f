# Tests with label 'dask' (included by test/CTestTestfile.cmake): uccl's
# `ucp` Python package (ucx-py's API) and Debian's Dask over ucx:// on it,
# each through test/dask/run.sh (uccl-run, UCX_TLS=uccl,self,tcp, a fabric
# of its own). Small in CPU: one thread per Dask worker, two workers.
set(DASK_RUN ${UCCL_SRCDIR}/test/dask/run.sh ${UCCL_HAVE_PYTHON} ${UCCL_RUN}
    ${UCCL_PYTHON})

# dask_add(NAME TIMEOUT SCRIPT [ARGS...] [ENV VAR=VALUE...])
function(dask_add name timeout script)
    cmake_parse_arguments(T "" "" "ENV" ${ARGN})
    add_test(NAME ${name}
             COMMAND ${DASK_RUN} ${UCCL_SRCDIR}/test/dask/${script}
                     ${T_UNPARSED_ARGUMENTS})
    # run.sh gives up first, so the Dask processes go with it
    math(EXPR inner "${timeout} - 20")
    set(env UCCL_TEST_TIMEOUT=${inner} UCCL_TEST_FABRIC=${name} ${T_ENV})
    set_tests_properties(${name} PROPERTIES LABELS "dask" TIMEOUT ${timeout}
        SKIP_RETURN_CODE 77 ENVIRONMENT "${env}")
endfunction()

# The binding: 0 B..64 MiB, concurrency, cancellation, close from either
# side, a killed peer, bad arguments, lanes, idle CPU, init/reset.
dask_add(dask_ucp_binding 300 ucp_binding.py)
# A real ucx-py installed elsewhere takes precedence.
dask_add(dask_ucp_precedence 120 ucp_precedence.py)
# Scheduler and two workers on ucx://: reductions, 256 MiB between the
# workers, the lanes of Dask's endpoints; clean and at 1% packet loss.
dask_add(dask_cluster 300 dask_cluster.py compute)
dask_add(dask_cluster_loss 300 dask_cluster.py compute
         ENV SOFTVERBS_LOSS=0.01)
# A worker killed mid-run: reported, the computation and the cluster go on.
dask_add(dask_cluster_kill 300 dask_cluster.py kill)

# The example, run as examples/README.md says.
dask_add(dask_example 300 ../../examples/dask_uccl.py)
