# Tests with label 'mpi' (included by test/CTestTestfile.cmake).
#
# Open MPI jobs through uccl-run (pml ucx, osc ucx), UCX_TLS from
# UCCL_TEST_TLS (default uccl,self), each under timeout(1) in run_mpi.sh.
# mpi_check covers point-to-point, the collectives and one-sided operations;
# its sizes per operation are listed in mpi_check_*.c and printed by the
# test. Every job goes to 64 MiB buffers but the killed-rank one, which
# only needs traffic in flight when the rank dies.
if(UCCL_MPICC)
    set(MPI_RUN ${UCCL_SRCDIR}/test/mpi/run_mpi.sh)
    set(MPI_CHECK ${UCCL_BUILDDIR}/test/mpi/mpi_check)
    # Sanitizer builds: Open MPI's own allocations are not ours to report.
    set(MPI_ENV "ASAN_OPTIONS=detect_leaks=0")

    # mpi_add(NAME NP TIMEOUT [ENV VAR=VALUE...] [ARGS PROG_ARGS...])
    # (ctest drops empty arguments, so nothing here is positional-optional)
    function(mpi_add name np timeout)
        cmake_parse_arguments(T "" "" "ENV;ARGS" ${ARGN})
        add_test(NAME ${name} COMMAND ${MPI_RUN} ${UCCL_RUN} ${np} ${MPI_CHECK}
                 ${T_ARGS})
        math(EXPR inner "${timeout} - 20")
        set(env ${MPI_ENV} UCCL_TEST_TIMEOUT=${inner} UCCL_TEST_FABRIC=${name}
            ${T_ENV})
        set_tests_properties(${name} PROPERTIES LABELS "mpi"
            TIMEOUT ${timeout} PROCESSORS 2 ENVIRONMENT "${env}")
    endfunction()

    mpi_add(mpi_np2 2 300)
    mpi_add(mpi_np4 4 300)
    mpi_add(mpi_np8 8 400)
    # 1% of packets lost in the softverbs fabric (no effect on tcp).
    mpi_add(mpi_np4_loss 4 400 ENV SOFTVERBS_LOSS=0.01 SOFTVERBS_SEED=7)
    # the same with each congestion control besides the default (eqds)
    foreach(cc fixed swift timely)
        mpi_add(mpi_np4_loss_cc_${cc} 4 400 ENV SOFTVERBS_LOSS=0.01
                SOFTVERBS_SEED=7 UCX_UCCL_CC=${cc})
    endforeach()
    # One-sided ordering and atomicity (osc ucx over emulated atomics), with
    # 3 ranks where a third one reads what another wrote; RC mode and loss.
    mpi_add(mpi_osc_np2 2 120 ARGS -f osc)
    mpi_add(mpi_osc_np3 3 120 ARGS -f osc)
    mpi_add(mpi_osc_np4_rc 4 150 ENV UCX_UCCL_MODE=rc ARGS -f osc)
    mpi_add(mpi_osc_np4_loss 4 150 ENV SOFTVERBS_LOSS=0.01 SOFTVERBS_SEED=9
            ARGS -f osc)
    # Rank 1 computes 8 s (no MPI call) with sends to it outstanding, far
    # past the peer timeout (3 s: a loaded machine may hold the async
    # thread back for a second): its async timer keeps it alive, data
    # checked.
    mpi_add(mpi_np2_compute 2 200 ENV UCX_UCCL_PEER_TIMEOUT=3s
            UCX_UCCL_MAX_RETRIES=3 ARGS -m 1M -c 8)
    # Rank 1 SIGKILLs itself; mpirun lets the others go on (recovery on:
    # ORTE's parameter for Open MPI 4, PRRTE's for Open MPI 5) and each
    # must see its sends to rank 1 fail: uccl's peer failure handling (2 s
    # peer timeout here) reaches MPI as an error.
    mpi_add(mpi_killed_rank 4 150 ENV UCCL_TEST_EXPECT=peer-failure
            OMPI_MCA_orte_enable_recovery=1
            PRTE_MCA_state_base_recoverable=1 UCX_UCCL_PEER_TIMEOUT=2s
            ARGS -k 1)

    add_test(NAME mpi_netns COMMAND ${UCCL_SRCDIR}/test/mpi/netns.sh
             ${UCCL_RUN} ${MPI_CHECK})
    set_tests_properties(mpi_netns PROPERTIES LABELS "mpi" TIMEOUT 300
        SKIP_RETURN_CODE 77 RUN_SERIAL ON ENVIRONMENT
        "${MPI_ENV};UCCL_TEST_TIMEOUT=270;UCCL_TEST_FABRIC=mpi_netns")
endif()

# The MPI example, run as examples/README.md says.
if(UCCL_MPICC)
    add_test(NAME mpi_example_allreduce_bw
             COMMAND ${UCCL_SRCDIR}/test/ucp/run_example.sh ${UCCL_RUN}
                     ${UCCL_BUILDDIR} mpi_allreduce_bw)
    set_tests_properties(mpi_example_allreduce_bw PROPERTIES LABELS "mpi"
        TIMEOUT 300 PROCESSORS 2 ENVIRONMENT
        "${MPI_ENV};UCCL_TEST_TIMEOUT=280;UCCL_TEST_FABRIC=mpi_example_ar")
endif()
