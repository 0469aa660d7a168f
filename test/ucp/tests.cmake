# Tests with label 'ucp' (included by test/CTestTestfile.cmake).
#
# Two processes through uccl-run (test/ucp/run2.sh), UCX_TLS from
# UCCL_TEST_TLS (default uccl,self), every byte checked. Sizes 0 B..64 MiB
# (the list is in uc_util.c).
set(UCP_RUN2 ${UCCL_SRCDIR}/test/ucp/run2.sh)
set(UCP_CHECK ${UCCL_BUILDDIR}/test/ucp/ucp_check)

# ucp_add(NAME TIMEOUT [ENV VAR=VALUE...] ARGS UCP_CHECK_ARGS...): one
# run2.sh test of ucp_check (keywords: ctest drops empty arguments).
function(ucp_add name timeout)
    cmake_parse_arguments(T "" "" "ENV;ARGS" ${ARGN})
    add_test(NAME ${name} COMMAND ${UCP_RUN2} ${UCCL_RUN} ${UCP_CHECK}
             ${T_ARGS})
    # run2.sh gives up first, so it can say which side hung
    math(EXPR inner "${timeout} - 15")
    set(env UCCL_TEST_TIMEOUT=${inner} UCCL_TEST_FABRIC=${name} ${T_ENV})
    set_tests_properties(${name} PROPERTIES LABELS "ucp" TIMEOUT ${timeout}
        ENVIRONMENT "${env}")
endfunction()

# Every size with UCX's own protocol choice (eager short/bcopy/zcopy below
# the rendezvous threshold, rendezvous above).
ucp_add(ucp_tag 300 ARGS -t tag)
# Rendezvous with each zero-copy scheme, from UCX_RNDV_THRESH or uccl's
# GET min_zcopy (64 KiB), whichever is larger.
ucp_add(ucp_tag_rndv_put 300 ENV UCX_RNDV_THRESH=8192 UCX_RNDV_SCHEME=put_zcopy
        ARGS -t tag -n 8192)
ucp_add(ucp_tag_rndv_get 300 ENV UCX_RNDV_THRESH=8192 UCX_RNDV_SCHEME=get_zcopy
        ARGS -t tag -n 8192)
ucp_add(ucp_tag_rndv_auto 300 ENV UCX_RNDV_THRESH=8192 UCX_RNDV_SCHEME=auto
        ARGS -t tag -n 8192)
# Eager only (no rendezvous below 64 MiB): bcopy and zcopy fragments.
ucp_add(ucp_tag_eager 300 ENV UCX_RNDV_THRESH=inf ARGS -t tag -m 4M)
ucp_add(ucp_stream 300 ARGS -t stream)
ucp_add(ucp_am 300 ARGS -t am)
ucp_add(ucp_rma 300 ARGS -t rma)
ucp_add(ucp_flush_close 300 ARGS -t flush_close)
# Keepalive every second so a dead peer is noticed quickly also on a lane
# with nothing in flight, and uccl gives up on a silent peer after 3 s (its
# default is 30 s); the test allows 20 s from death to recovery.
# The client kills itself (run2.sh expects exit 137 from it).
ucp_add(ucp_peer_failure 120
        ENV UCX_KEEPALIVE_INTERVAL=1s UCX_UCCL_PEER_TIMEOUT=3s
            UCCL_TEST_VICTIM=client
        ARGS -t peer_failure -e peer -T 20)

# A 64 KiB rendezvous message is read over one device, a 1 MiB one over
# both (softverbs' per-port counters).
add_test(NAME ucp_rndv_devices
         COMMAND ${UCCL_SRCDIR}/test/ucp/rndv_devices.sh ${UCCL_RUN} 23000)
set_tests_properties(ucp_rndv_devices PROPERTIES LABELS "ucp" TIMEOUT 300
    ENVIRONMENT "UCCL_TEST_TIMEOUT=120;UCCL_TEST_FABRIC=ucp_rndv_devices")

add_test(NAME ucp_ucx_info_lanes
         COMMAND ${UCCL_SRCDIR}/test/ucp/ucx_info_lanes.sh ${UCCL_RUN})
set_tests_properties(ucp_ucx_info_lanes PROPERTIES LABELS "ucp" TIMEOUT 150
    SKIP_RETURN_CODE 77 ENVIRONMENT "UCCL_TEST_FABRIC=ucp_ucx_info_lanes")

# The examples, run as examples/README.md says (they check their own data).
foreach(ex uct_pingpong ucp_sendfile)
    add_test(NAME ucp_example_${ex}
             COMMAND ${UCCL_SRCDIR}/test/ucp/run_example.sh ${UCCL_RUN}
                     ${UCCL_BUILDDIR} ${ex})
    set_tests_properties(ucp_example_${ex} PROPERTIES LABELS "ucp"
        TIMEOUT 300 SKIP_RETURN_CODE 77 ENVIRONMENT
        "UCCL_TEST_TIMEOUT=280;UCCL_TEST_FABRIC=ucp_example_${ex}")
endforeach()
