# Tests with label 'fault' (included by test/CTestTestfile.cmake).
#
# uccl under faults: 1% packet loss (ucx_perftest and the data-checking
# uct_verify), counters showing selective retransmission and chained
# posting, a peer killed mid-transfer, malformed control packets, tiny
# queues. Each test has its own port and SOFTVERBS_FABRIC.

set(FLT_PAIR ${UCCL_SRCDIR}/test/uct/perftest_pair.sh)
set(FLT_VERIFY ${UCCL_SRCDIR}/test/uct/verify_pair.sh)
set(FLT_COUNTERS ${UCCL_SRCDIR}/test/fault/uccl_counters.sh)
set(FLT_PORT 22000)

function(flt_env name)
    set(env "UCCL_RUN=${UCCL_RUN}" "UCCL_BUILDDIR=${UCCL_BUILDDIR}"
            "SOFTVERBS_FABRIC=f_${name}" "UCCL_TEST_TIMEOUT=200"
            "SOFTVERBS_SEED=7" ${ARGN})
    set_tests_properties(${name} PROPERTIES LABELS "fault" TIMEOUT 240
                         ENVIRONMENT "${env}")
endfunction()

# flt_down(VAR PATH FIRST LAST EVERY LENGTH): in VAR, SOFTVERBS_PATH_DOWN
# windows of LENGTH ms on core path PATH, one every EVERY ms from FIRST
# to LAST (ms since the fabric's creation)
function(flt_down var path first last every length)
    set(windows "")
    foreach(ms RANGE ${first} ${last} ${every})
        math(EXPR end "${ms} + ${length}")
        list(APPEND windows "${path}:${ms}-${end}")
    endforeach()
    string(REPLACE ";" "," windows "${windows}")
    set(${var} "${windows}" PARENT_SCOPE)
endfunction()

# flt_perftest(NAME TEST LAYOUT SIZE ITERS [VAR=VALUE...])
function(flt_perftest name test layout size iters)
    math(EXPR port "${FLT_PORT} + 1")
    set(FLT_PORT ${port} PARENT_SCOPE)
    add_test(NAME ${name}
             COMMAND ${FLT_PAIR} ${port} ${test} ${layout} ${size} ${iters})
    flt_env(${name} ${ARGN})
endfunction()

# flt_verify(NAME MODE "CLIENT ARGS" [VAR=VALUE...])
function(flt_verify name mode args)
    math(EXPR port "${FLT_PORT} + 1")
    set(FLT_PORT ${port} PARENT_SCOPE)
    separate_arguments(args UNIX_COMMAND "${args}")
    add_test(NAME ${name} COMMAND ${FLT_VERIFY} ${port} ${mode} ${args})
    flt_env(${name} ${ARGN})
endfunction()

set(FLT_PERFTESTS
    "am_lat short 8 500"
    "am_bw bcopy 4096 2000"
    "am_bw zcopy 8000 1000"
    "put_lat short 8 500"
    "put_bw bcopy 8192 2000"
    "put_bw zcopy 1048576 40"
    "get bcopy 8192 500"
    "get zcopy 1048576 40")

foreach(mode uc rc)
    foreach(t ${FLT_PERFTESTS})
        separate_arguments(args UNIX_COMMAND "${t}")
        list(GET args 0 test)
        list(GET args 1 layout)
        list(GET args 2 size)
        list(GET args 3 iters)
        flt_perftest(fault_${mode}_loss_${test}_${layout}_${size} ${test}
                     ${layout} ${size} ${iters} UCX_UCCL_MODE=${mode}
                     SOFTVERBS_LOSS=0.01)
    endforeach()

    if(mode STREQUAL "rc")
        # a 10 ms stall floor below a 67 ms ACK timeout resets the paths of
        # WRITEs whose completion a loss holds up, after they landed and the
        # peer answered them: they are done, not written again over the
        # newer PUTs to the same place (which hung the ping-pong on an old
        # value)
        flt_perftest(fault_rc_loss_put_lat_stall_min put_lat short 8 500
                     UCX_UCCL_MODE=rc SOFTVERBS_LOSS=0.01
                     UCX_UCCL_RC_ACK_TIMEOUT=67ms UCX_UCCL_RC_STALL_MIN=10ms
                     UCCL_EXPECT_COUNTERS=rc_landed)
        # a 4 ms ACK timeout and a 25 ms stall floor (6 of them, auto):
        # the NIC resends a lost packet before the stall rule fires, so no
        # path is reset (with a 10 ms floor below a 67 ms ACK timeout a
        # burst's AMs behind a loss were reset and sent again, lost again,
        # and the run could livelock)
        flt_perftest(fault_rc_loss_am_bw_nic_resends am_bw bcopy 4096 2000
                     UCX_UCCL_MODE=rc SOFTVERBS_LOSS=0.01
                     UCX_UCCL_RC_ACK_TIMEOUT=4ms UCX_UCCL_RC_STALL_MIN=auto
                     UCCL_EXPECT_ZERO_COUNTERS=rc_path_resets)
    endif()

    # every byte checked under loss, and the losses were repaired: UC by
    # uccl's resends, found from SACK information; RC by the NIC
    if(mode STREQUAL "uc")
        set(repaired UCX_UCCL_STATS_DUMP=y
            "UCCL_EXPECT_CLIENT_COUNTERS=retx fast_retx"
            UCCL_EXPECT_SV_COUNTERS=msg_drops)
    else()
        set(repaired UCCL_EXPECT_SV_COUNTERS=rc_resends)
    endif()
    flt_verify(fault_${mode}_loss_verify data "-n 100 -S 21"
               UCX_UCCL_MODE=${mode} SOFTVERBS_LOSS=0.01 ${repaired})
    # the same with the receive CQ polled without completion timestamps
    flt_verify(fault_${mode}_loss_verify_plain_cq data "-n 100 -S 21"
               UCX_UCCL_MODE=${mode} SOFTVERBS_LOSS=0.01 ${repaired}
               UCX_UCCL_CQ_TIMESTAMP=no)
    # a receive queue that runs dry (the server stops progressing for a
    # while; UC drops and resends, RC waits), tiny send queues, with loss;
    # the fixed window, which overruns the queue (a delay-based one may
    # keep within it, and then the test sees no srq_empty)
    flt_verify(fault_${mode}_srq_empty_verify data "-n 100 -S 22"
               UCX_UCCL_MODE=${mode} SOFTVERBS_LOSS=0.01 UCX_UCCL_CC=fixed
               UCX_UCCL_SRQ_SIZE=64 UCX_UCCL_SRQ_FLOW=n UCX_UCCL_TX_QUEUE_LEN=4
               UCX_UCCL_STATS_DUMP=y UCCL_SERVER_ARGS=-P200
               UCCL_EXPECT_COUNTERS=srq_empty UCX_UCCL_ASYNC_IDLE=inf)
    # the server computes (no progress calls) for 8 s while the client
    # streams AMs, far beyond the client's peer timeout (3 s: a loaded
    # machine may hold the async thread back for a second): the server's
    # async timer ACKs them and keeps its AMs for later, in order; UC: up
    # to a bound, then it says it is busy, and the client waits
    if(mode STREQUAL "uc")
        set(paused "UCCL_EXPECT_COUNTERS=async_passes defer_full")
    else()
        set(paused UCCL_EXPECT_COUNTERS=async_passes)
    endif()
    flt_verify(fault_${mode}_async_pause_verify data "-n 100 -S 23"
               UCX_UCCL_MODE=${mode} UCX_UCCL_PEER_TIMEOUT=3s
               UCX_UCCL_MAX_RETRIES=3 UCX_UCCL_STATS_DUMP=y
               UCCL_SERVER_ARGS=-P8000 ${paused})
    # the same pause, 3 s: the server's CQs are armed for its peer's
    # solicited WRs, which wake its async thread at once (no waiting for
    # the ASYNC_IDLE tick); every byte checked
    flt_verify(fault_${mode}_async_wake_verify data "-n 100 -S 24"
               UCX_UCCL_MODE=${mode} UCX_UCCL_STATS_DUMP=y
               UCCL_SERVER_ARGS=-P3000 UCCL_EXPECT_COUNTERS=async_wakes)
    # the peer dies mid-transfer: ep error within seconds, no hang
    flt_verify(fault_${mode}_peer_killed kill "-T 10"
               UCX_UCCL_MODE=${mode} UCCL_SERVER_ARGS=-K300
               UCX_UCCL_PEER_TIMEOUT=3s)
    # the same, and the error handler destroys the failed ep (as UCP does)
    # while the engine walks its conns
    flt_verify(fault_${mode}_peer_killed_destroy kill "-T 10 -X"
               UCX_UCCL_MODE=${mode} UCCL_SERVER_ARGS=-K300
               UCX_UCCL_PEER_TIMEOUT=3s)
    # the peer dies while nothing is in flight: only uct_ep_check's probe
    # can notice (UCP's keepalive on an idle lane, a rendezvous waiting);
    # the dead peer's passive conn on the client is probed and reaped
    flt_verify(fault_${mode}_peer_killed_idle idle "-T 10 -W 5"
               UCX_UCCL_MODE=${mode} UCCL_SERVER_ARGS=-K1000
               UCX_UCCL_PEER_TIMEOUT=3s UCX_UCCL_IDLE_TIMEOUT=1s
               UCX_UCCL_STATS_DUMP=y
               UCCL_EXPECT_CLIENT_COUNTERS=peers_lost)
endforeach()

# a path that is down for the whole run and one that loses a fifth of its
# packets: UC resends on other paths
flt_verify(fault_uc_path_down_verify data "-n 100 -S 31" UCX_UCCL_MODE=uc
           SOFTVERBS_PATH_DOWN=2:0-100000000 SOFTVERBS_PATH_LOSS=5:0.2
           UCX_UCCL_STATS_DUMP=y UCCL_EXPECT_CLIENT_COUNTERS=retx
           UCCL_EXPECT_SV_COUNTERS=msg_drops)
# UC chunks grow on a clean conn and shrink at its first resend: one path
# of 32 loses 5% of its packets, so a conn goes clean for RTOs between
# losses; every byte checked, and the client's conns grew their chunks and
# cut them back (UCX_UCCL_UC_CHUNK_MAX)
flt_verify(fault_uc_chunk_adapt_verify data "-n 300 -S 33" UCX_UCCL_MODE=uc
           UCX_UCCL_UC_CHUNK_MAX=256k
           SOFTVERBS_PATH_LOSS=5:0.05 UCX_UCCL_STATS_DUMP=y
           "UCCL_EXPECT_CLIENT_COUNTERS=retx chunk_grows chunk_shrinks"
           UCCL_EXPECT_SV_COUNTERS=msg_drops)
# the same under fixed (the default, eqds: a resend cut before the
# chunks shrank, 256 KiB, asks for the credit it needs, not a chunk of
# the conn's size now)
flt_verify(fault_uc_chunk_adapt_verify_fixed data "-n 300 -S 33"
           UCX_UCCL_MODE=uc UCX_UCCL_CC=fixed UCX_UCCL_UC_CHUNK_MAX=256k
           SOFTVERBS_PATH_LOSS=5:0.05 UCX_UCCL_STATS_DUMP=y
           "UCCL_EXPECT_CLIENT_COUNTERS=retx chunk_grows chunk_shrinks"
           UCCL_EXPECT_SV_COUNTERS=msg_drops)
# RC: a path down for 1 s mid-transfer (the run takes ~3 s at 1 Gbit/s):
# the QPs whose WRs stall there get new QP pairs (uccl_reset.c) before
# their NIC gives up, and what the old ones held goes again on the other
# paths, every byte checked. The outage comes back every 3 s: the windows
# count from the fabric's creation, and a loaded machine can start the
# transfer after the first one ended.
flt_down(down 2 800 27800 3000 1000)
flt_verify(fault_rc_path_down_verify data "-n 500 -S 32" UCX_UCCL_MODE=rc
           SOFTVERBS_LINK_GBPS=1 SOFTVERBS_PATH_DOWN=${down}
           UCX_UCCL_STATS_DUMP=y
           "UCCL_EXPECT_CLIENT_COUNTERS=rc_path_resets rc_redo"
           UCCL_EXPECT_SV_COUNTERS=rc_timeouts)
# uct_order with a path down for the whole run (its QPs stall at their
# first use, not the control QPs'; new pairs may hash to it again): what
# an old QP held goes again in the order the target must see (AMs after
# PUTs, fences, GETs)
flt_verify(fault_rc_path_down_order order "-n 400 -S 5" UCX_UCCL_MODE=rc
           SOFTVERBS_LINK_GBPS=2 SOFTVERBS_PATH_DOWN=2:0-100000000
           UCX_UCCL_STATS_DUMP=y
           "UCCL_EXPECT_CLIENT_COUNTERS=rc_path_resets rc_redo")

# a hostile peer (raw verbs, uccl's wire format wrongly on purpose): the
# victim drops and counts what is wrong and its honest traffic goes on
flt_verify(fault_uc_hostile_peer hostile "-S 41" UCX_UCCL_MODE=uc
           UCX_UCCL_STATS_DUMP=y UCX_UCCL_PEER_TIMEOUT=2s UCX_UCCL_MAX_PEERS=32
           "UCCL_EXPECT_COUNTERS=bad_data forged_ctl unknown_conn order_full get_refused peers_refused")

# only AMs whose carried ACKs are forged (and one that carries no ACK)
flt_verify(fault_uc_hostile_piggy hostile "-S 43 -c piggy" UCX_UCCL_MODE=uc
           UCX_UCCL_STATS_DUMP=y UCX_UCCL_PEER_TIMEOUT=2s
           "UCCL_EXPECT_COUNTERS=bad_data forged_ctl unknown_conn")

# a served GET fails on the server (its buffer was unmapped): its engine
# tells the client, whose ep fails with CONNECTION_RESET within seconds
# rather than after the 30 s peer timeout (UC: in RC the client's own NIC
# reads, and its QP reports the error)
flt_verify(fault_uc_peer_reset reset "-K 300 -T 5"
           UCX_UCCL_MODE=uc UCCL_SERVER_ARGS=-K300)

# selective retransmission and chained posting, from softverbs' counters
math(EXPR FLT_PORT "${FLT_PORT} + 1")
add_test(NAME fault_uc_loss_counters
         COMMAND ${FLT_COUNTERS} ${FLT_PORT} 1048576 100)
flt_env(fault_uc_loss_counters SOFTVERBS_LOSS=0.01)

# on a clean fabric a 1 MiB PUT of 64 KiB chunks is one chain: one
# doorbell, one completion (chunks that grow take more doorbells a
# message: see docs/STATUS.md)
math(EXPR FLT_PORT "${FLT_PORT} + 1")
add_test(NAME fault_uc_chain_counters
         COMMAND ${FLT_COUNTERS} ${FLT_PORT} 1048576 100 chains)
flt_env(fault_uc_chain_counters UCX_UCCL_UC_CHUNK_MAX=64k)

# a client whose chunks grow to 256 KiB, a server whose receive buffers
# hold 64 KiB: the client's resends must fit them (a larger SEND would
# break the server's QP). Chunks grow only after 16 RTOs without a
# resend, so the loss comes in short outages of one path with long quiet
# between them (random loss can keep the chunks small for the whole run):
# every outage in the run then hits grown chunks. Outages of 10 ms, one
# every 100 ms over the run of 4000 MiB (the 20 windows fill
# SOFTVERBS_PATH_DOWN), of the fabric's only core path: a QP's path is a
# hash of its QPNs, and the outages of one path of several can miss every
# data QP of a run (and drop only control packets).
flt_down(down 0 100 2000 100 10)
math(EXPR FLT_PORT "${FLT_PORT} + 1")
add_test(NAME fault_uc_chunk_peer_small
         COMMAND ${UCCL_SRCDIR}/test/fault/uccl_chunk_peer.sh ${FLT_PORT}
                 1048576 4000)
flt_env(fault_uc_chunk_peer_small SOFTVERBS_PATHS=1
        SOFTVERBS_PATH_DOWN=${down})

# in a ping-pong of 1 MiB PUTs, a lost last chunk is found by the empty
# WRITE that ends its chain, not by the tail probe (probes that only
# resent what had arrived, on a loaded machine, do not count)
math(EXPR FLT_PORT "${FLT_PORT} + 1")
add_test(NAME fault_uc_loss_tails
         COMMAND ${FLT_COUNTERS} ${FLT_PORT} 1048576 300 put_lat)
flt_env(fault_uc_loss_tails SOFTVERBS_LOSS=0.01)

# in a ping-pong, a lost message is resent by the tail probe, not the RTO
math(EXPR FLT_PORT "${FLT_PORT} + 1")
add_test(NAME fault_uc_loss_timeouts
         COMMAND ${FLT_COUNTERS} ${FLT_PORT} 8 5000 am_lat)
flt_env(fault_uc_loss_timeouts SOFTVERBS_LOSS=0.01)

# congestion control (UCX_UCCL_CC) under 1% loss, every byte checked: the
# losses are repaired, and the algorithm saw them (swift cuts its window
# on a fast retransmit; timely paces every send and reacts to the RTT
# samples and timeouts the losses bring). RC: the RTT samples of send
# completions reach the algorithm.
# eqds: credit requests and grants are control packets the loss hits
# too; the sender still got grants (and resends a lost request), every
# byte arrives.
foreach(cc fixed swift timely eqds)
    if(cc STREQUAL "fixed")
        set(reacted "")
        set(rc_seen cc_samples)
    elseif(cc STREQUAL "swift")
        set(reacted cc_decr)
        set(rc_seen cc_samples)
    elseif(cc STREQUAL "timely")
        set(reacted "cc_decr cc_paced")
        set(rc_seen cc_samples)
    else()
        set(reacted "cc_granted credit_req_tx")
        set(rc_seen "cc_samples cc_granted credit_req_tx")
    endif()
    flt_verify(fault_uc_cc_${cc}_loss_verify data "-n 100 -S 41"
               UCX_UCCL_MODE=uc UCX_UCCL_CC=${cc} SOFTVERBS_LOSS=0.01
               UCX_UCCL_STATS_DUMP=y
               "UCCL_EXPECT_CLIENT_COUNTERS=retx ${reacted}"
               UCCL_EXPECT_SV_COUNTERS=msg_drops)
    flt_verify(fault_rc_cc_${cc}_loss_verify data "-n 100 -S 42"
               UCX_UCCL_MODE=rc UCX_UCCL_CC=${cc} SOFTVERBS_LOSS=0.01
               UCX_UCCL_STATS_DUMP=y
               "UCCL_EXPECT_CLIENT_COUNTERS=${rc_seen}"
               UCCL_EXPECT_SV_COUNTERS=rc_resends)
endforeach()

# in a clean ping-pong the replies carry the ACKs (held a pass for them)
math(EXPR FLT_PORT "${FLT_PORT} + 1")
add_test(NAME fault_uc_piggy_counters
         COMMAND ${FLT_COUNTERS} ${FLT_PORT} 8 5000 piggy)
flt_env(fault_uc_piggy_counters)
math(EXPR FLT_PORT "${FLT_PORT} + 1")
add_test(NAME fault_uc_piggy_counters_fixed
         COMMAND ${FLT_COUNTERS} ${FLT_PORT} 8 5000 piggy)
flt_env(fault_uc_piggy_counters_fixed UCX_UCCL_CC=fixed)

# under eqds a clean ping-pong of messages above the 8 KiB a drained
# sender may send unscheduled once its peer grants asks for no credit:
# 4 KiB AMs whose replies carry their ACKs (each send would otherwise ask
# before the ACK that frees its credit is handled), 32 KiB PUTs (each
# would wait a round trip for its grant)
foreach(kind am put)
    if(kind STREQUAL "am")
        set(size 4096)
    else()
        set(size 32768)
    endif()
    math(EXPR FLT_PORT "${FLT_PORT} + 1")
    add_test(NAME fault_uc_credit_pingpong_${kind}
             COMMAND ${FLT_COUNTERS} ${FLT_PORT} ${size} 3000 credit_${kind})
    flt_env(fault_uc_credit_pingpong_${kind} UCX_UCCL_CC=eqds)
endforeach()

# a core path down for good 1 s into a transfer, each of 8 in turn: one
# run takes down the path of the control QP pair the conns were set up on,
# and their records (ACKs, credit) still arrive from the other control
# QPs; every byte checked (PEER_TIMEOUT: a stalled conn fails the run)
math(EXPR FLT_PORT "${FLT_PORT} + 1")
add_test(NAME fault_uc_ctl_paths
         COMMAND ${UCCL_SRCDIR}/test/fault/uccl_ctl_paths.sh ${FLT_PORT}
                 -n 500 -S 47)
flt_env(fault_uc_ctl_paths UCX_UCCL_MODE=uc SOFTVERBS_LINK_GBPS=1
        UCX_UCCL_PEER_TIMEOUT=10s UCCL_TEST_TIMEOUT=60)
math(EXPR FLT_PORT "${FLT_PORT} + 8")
