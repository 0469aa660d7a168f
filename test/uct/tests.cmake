# Tests with label 'uct' (included by test/CTestTestfile.cmake).
#
# ucx_perftest UCT tests over uccl (ucx_perftest -x uccl), in UC and RC mode,
# uct_verify, which checks the data, and uct_order, which checks the order
# in which an ep's operations take effect. Each test has its own port and its
# own SOFTVERBS_FABRIC, so tests can run in parallel.

set(UCT_PAIR ${UCCL_SRCDIR}/test/uct/perftest_pair.sh)
set(UCT_VERIFY ${UCCL_SRCDIR}/test/uct/verify_pair.sh)
set(UCT_PORT 21000)

# uct_perftest(NAME TEST LAYOUT SIZE ITERS [VAR=VALUE...])
function(uct_perftest name test layout size iters)
    math(EXPR port "${UCT_PORT} + 1")
    set(UCT_PORT ${port} PARENT_SCOPE)
    add_test(NAME ${name}
             COMMAND ${UCT_PAIR} ${port} ${test} ${layout} ${size} ${iters})
    set(env "UCCL_RUN=${UCCL_RUN}" "SOFTVERBS_FABRIC=t_${name}"
            "UCCL_TEST_TIMEOUT=100" ${ARGN})
    set_tests_properties(${name} PROPERTIES LABELS "uct" TIMEOUT 120
                         ENVIRONMENT "${env}")
endfunction()

# uct_verify_test(NAME MODE LABEL [VAR=VALUE...]) with client arguments in
# UCT_VERIFY_ARGS
function(uct_verify_test name mode label)
    math(EXPR port "${UCT_PORT} + 1")
    set(UCT_PORT ${port} PARENT_SCOPE)
    add_test(NAME ${name} COMMAND ${UCT_VERIFY} ${port} ${mode}
             ${UCT_VERIFY_ARGS})
    set(env "UCCL_RUN=${UCCL_RUN}" "UCCL_BUILDDIR=${UCCL_BUILDDIR}"
            "SOFTVERBS_FABRIC=t_${name}" "UCCL_TEST_TIMEOUT=150" ${ARGN})
    set_tests_properties(${name} PROPERTIES LABELS "${label}" TIMEOUT 180
                         ENVIRONMENT "${env}")
endfunction()

# test layout size iterations: 8 B .. 16 MiB, every operation and layout
set(UCT_PERFTESTS
    "am_lat short 8 1000"
    "am_lat bcopy 1024 1000"
    "am_lat zcopy 8000 500"
    "am_bw short 8 10000"
    "am_bw bcopy 8000 5000"
    "am_bw zcopy 4096 5000"
    "put_lat short 8 1000"
    "put_lat bcopy 4096 1000"
    "put_bw short 2048 5000"
    "put_bw bcopy 8192 5000"
    "put_bw zcopy 65536 1000"
    "put_bw zcopy 1048576 200"
    "put_bw zcopy 16777216 20"
    "get bcopy 8192 1000"
    "get zcopy 65536 500"
    "get zcopy 16777216 20")

foreach(mode uc rc)
    foreach(t ${UCT_PERFTESTS})
        separate_arguments(args UNIX_COMMAND "${t}")
        list(GET args 0 test)
        list(GET args 1 layout)
        list(GET args 2 size)
        list(GET args 3 iters)
        uct_perftest(uct_${mode}_${test}_${layout}_${size} ${test} ${layout}
                     ${size} ${iters} UCX_UCCL_MODE=${mode})
    endforeach()

    set(UCT_VERIFY_ARGS -n 100 -S 11)
    uct_verify_test(uct_${mode}_verify data uct UCX_UCCL_MODE=${mode})
    # the receive CQ polled without completion timestamps (ibv_poll_cq),
    # as on a device without them
    uct_verify_test(uct_${mode}_verify_plain_cq data uct UCX_UCCL_MODE=${mode}
                    UCX_UCCL_CQ_TIMESTAMP=no)
    # the order in which an ep's operations take effect at the target;
    # loss makes resends overtake
    set(UCT_VERIFY_ARGS -n 400 -S 5)
    uct_verify_test(uct_${mode}_order order uct UCX_UCCL_MODE=${mode})
    set(UCT_VERIFY_ARGS -n 400 -S 6)
    uct_verify_test(uct_${mode}_order_loss order uct UCX_UCCL_MODE=${mode}
                    SOFTVERBS_LOSS=0.01 SOFTVERBS_SEED=3)
    # an ep destroyed with 16 MiB of PUTs and 4 MiB of GETs in flight; the
    # iface goes on
    set(UCT_VERIFY_ARGS -n 50 -S 13 -D)
    uct_verify_test(uct_${mode}_verify_destroy_busy data uct
                    UCX_UCCL_MODE=${mode})
endforeach()

# small queues: the engine must keep work in software, not overflow them
set(UCT_VERIFY_ARGS -n 100 -S 12)
uct_verify_test(uct_uc_verify_small_queues data uct UCX_UCCL_MODE=uc
                UCX_UCCL_TX_QUEUE_LEN=2 UCX_UCCL_NUM_PATHS=2
                UCX_UCCL_MAX_QUEUED=8 UCX_UCCL_CHUNK_SIZE=16k)
uct_verify_test(uct_rc_verify_small_queues data uct UCX_UCCL_MODE=rc
                UCX_UCCL_TX_QUEUE_LEN=2 UCX_UCCL_NUM_PATHS=1
                UCX_UCCL_MAX_QUEUED=8 UCX_UCCL_SRQ_SIZE=64)

# RC mode's chunks: 256 KiB by default (CHUNK_SIZE=auto), an explicit
# UCX_UCCL_CHUNK_SIZE wins; every zero-copy PUT and GET cut at that size
# (the client's chunk count exact), every byte checked
set(UCT_VERIFY_ARGS -n 100 -S 11 -C 262144)
uct_verify_test(uct_rc_chunk_auto data uct UCX_UCCL_MODE=rc
                UCX_UCCL_STATS_DUMP=y UCCL_EXPECT_CHUNKS=y)
set(UCT_VERIFY_ARGS -n 100 -S 11 -C 65536)
uct_verify_test(uct_rc_chunk_user data uct UCX_UCCL_MODE=rc
                UCX_UCCL_CHUNK_SIZE=64k UCX_UCCL_STATS_DUMP=y
                UCCL_EXPECT_CHUNKS=y)
set(UCT_VERIFY_ARGS -n 100 -S 11 -C 1048576)
uct_verify_test(uct_rc_chunk_user_1m data uct UCX_UCCL_MODE=rc
                UCX_UCCL_CHUNK_SIZE=1m UCX_UCCL_STATS_DUMP=y
                UCCL_EXPECT_CHUNKS=y)

# every congestion control algorithm carries the data test on a clean
# fabric, and RTT samples reached it (UC: send to ACK; RC: post to
# completion). eqds: the client asked for credit and was granted bytes
# beyond its speculative ones, the server heard the requests and granted
# (in ACKs in UC, in CREDIT records in RC).
foreach(mode uc rc)
    foreach(cc fixed swift timely eqds)
        set(UCT_VERIFY_ARGS -n 100 -S 43)
        if(cc STREQUAL "eqds")
            set(expect "UCCL_EXPECT_COUNTERS=cc_rx_granted credit_req_rx"
                "UCCL_EXPECT_CLIENT_COUNTERS=cc_samples cc_granted credit_req_tx")
        else()
            set(expect UCCL_EXPECT_CLIENT_COUNTERS=cc_samples)
        endif()
        uct_verify_test(uct_${mode}_cc_${cc}_verify data uct
                        UCX_UCCL_MODE=${mode} UCX_UCCL_CC=${cc}
                        UCX_UCCL_STATS_DUMP=y ${expect})
    endforeach()
endforeach()
# the same without completion timestamps: samples from the poll's time
set(UCT_VERIFY_ARGS -n 100 -S 43)
uct_verify_test(uct_uc_cc_swift_verify_plain_cq data uct UCX_UCCL_MODE=uc
                UCX_UCCL_CC=swift UCX_UCCL_CQ_TIMESTAMP=no
                UCX_UCCL_STATS_DUMP=y UCCL_EXPECT_CLIENT_COUNTERS=cc_samples)

# pacing is enforced: timely limited to 100 Mbit/s (its lowest rate too) sends an AM stream at no
# more than that, waiting on the pacing timer; the fixed window is faster
math(EXPR UCT_PORT "${UCT_PORT} + 1")
add_test(NAME uct_cc_timely_rate
         COMMAND ${UCCL_SRCDIR}/test/uct/cc_rate.sh ${UCT_PORT} 100 8000 2000)
set_tests_properties(uct_cc_timely_rate PROPERTIES LABELS "uct" TIMEOUT 300
                     ENVIRONMENT "UCCL_RUN=${UCCL_RUN};SOFTVERBS_FABRIC=t_cc_rate")

# UCX_UCCL_CC from the user: good names open the iface, bad ones and bad
# values are refused with one error, never a crash
add_test(NAME uct_cc_config COMMAND ${UCCL_SRCDIR}/test/uct/cc_config.sh)
set_tests_properties(uct_cc_config PROPERTIES LABELS "uct" TIMEOUT 300
                     ENVIRONMENT "UCCL_RUN=${UCCL_RUN};SOFTVERBS_FABRIC=t_cc_config")

# Peers whose receive buffers cannot hold our largest AM (RC mode, the
# server's SEG_SIZE smaller): the connection is refused with one error
# and the operation fails, no crash; equal settings work
math(EXPR UCT_PORT "${UCT_PORT} + 2")
add_test(NAME uct_seg_mismatch
         COMMAND ${UCCL_SRCDIR}/test/uct/seg_mismatch.sh ${UCT_PORT})
set_tests_properties(uct_seg_mismatch PROPERTIES LABELS "uct" TIMEOUT 150
    ENVIRONMENT "UCCL_RUN=${UCCL_RUN};SOFTVERBS_FABRIC=t_seg_mismatch")
