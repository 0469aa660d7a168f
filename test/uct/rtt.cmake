# uct_rtt (label uct): the RTT samples the congestion control gets when a
# CPU is slow to poll, on a fabric of 1 ms one way (2 ms RTT). The client
# sleeps after each PUT before it polls (client_slow) or the server sleeps
# 20 ms after each progress call (server_slow). With completion
# timestamps (raw, or the wall clock) both sleeps are left out: the mean
# sample is the fabric's 2 ms (1.5..10 ms allowed). Without them the
# client's sleep counts in: of its 50 ms at least 30 must stay in the
# sample (the server's wait for its poll is taken out of it, and a loaded
# machine makes that wait milliseconds long). (Without them the server's
# sleep is taken out with all the time since its previous poll, which
# leaves no sample, or as much as the client itself was late to poll the
# ACK: that depends on the machine's load, so it is not a test.) The async
# timer is off: it would poll for the sleeping side.
set(UCT_RTT_PORT 21900)
set(UCT_RTT_ENV "UCCL_RUN=${UCCL_RUN}" "UCCL_BUILDDIR=${UCCL_BUILDDIR}"
    "UCCL_TEST_TIMEOUT=100" "UCX_UCCL_MODE=uc" "UCX_UCCL_ASYNC_IDLE=inf"
    "UCX_UCCL_RTO_INIT=100ms" "SOFTVERBS_DELAY_US=1000")
# uct_rtt_test(NAME CQ_TIMESTAMP CQ_TS LO_US HI_US SERVER_ARGS CLIENT_ARGS)
function(uct_rtt_test name cfg cq_ts lo hi server_args client_args)
    math(EXPR port "${UCT_RTT_PORT} + 1")
    set(UCT_RTT_PORT ${port} PARENT_SCOPE)
    separate_arguments(cargs UNIX_COMMAND "${client_args}")
    add_test(NAME ${name}
             COMMAND ${UCCL_SRCDIR}/test/uct/rtt_pair.sh ${port} ${cq_ts}
                     ${lo} ${hi} ${cargs})
    set(env ${UCT_RTT_ENV} "SOFTVERBS_FABRIC=t_${name}"
            "UCX_UCCL_CQ_TIMESTAMP=${cfg}" "UCCL_SERVER_ARGS=${server_args}")
    set_tests_properties(${name} PROPERTIES LABELS "uct" TIMEOUT 120
                         ENVIRONMENT "${env}")
endfunction()

uct_rtt_test(uct_rtt_client_slow_ts yes raw 1500 10000 "" "-n 40 -w 20")
uct_rtt_test(uct_rtt_client_slow_wallclock wallclock wallclock 1500 10000
             "" "-n 40 -w 20")
uct_rtt_test(uct_rtt_client_slow_plain no none 30000 1000000000 ""
             "-n 40 -w 50")
uct_rtt_test(uct_rtt_server_slow_ts yes raw 1500 10000 "-r 20" "-n 40")

# UCX_UCCL_CQ_TIMESTAMP against devices with both, one or no kind of
# timestamps (SOFTVERBS_CQ_TS): what each value picks, and a clear error
# for what the device lacks
add_test(NAME uct_cq_ts_config COMMAND ${UCCL_SRCDIR}/test/uct/cq_ts_config.sh)
set_tests_properties(uct_cq_ts_config PROPERTIES LABELS "uct" TIMEOUT 300
    ENVIRONMENT "UCCL_RUN=${UCCL_RUN};SOFTVERBS_FABRIC=t_cq_ts_config")
