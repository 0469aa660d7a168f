# Tests with label 'softverbs' (included by test/CTestTestfile.cmake).
#
# Every two-process test gets its own SOFTVERBS_FABRIC so tests can run in
# parallel; the fabric model is configured per test with SOFTVERBS_*.

set(SV_BIN ${UCCL_BUILDDIR}/test/softverbs)
set(SV_RUN ${UCCL_SRCDIR}/test/softverbs/sv_run.sh)

add_test(NAME sv_model COMMAND ${SV_BIN}/sv_model_test)
set_tests_properties(sv_model PROPERTIES LABELS "softverbs" TIMEOUT 60)

# sv_verbs(NAME SUBTEST [VAR=VALUE...])
# A fabric keeps the model configuration of the run that created it, so the
# name carries a hash of the variables: changing them gives a fresh fabric.
function(sv_verbs name sub)
    add_test(NAME ${name} COMMAND ${SV_RUN} ${SV_BIN}/sv_verbs_test ${sub})
    string(MD5 h "${ARGN}")
    string(SUBSTRING "${h}" 0 8 h)
    # SVT_SHM_CHECK: the run must leave nothing of its fabric in /dev/shm
    set(env "SOFTVERBS_LIB=${SOFTVERBS_LIB}" "SOFTVERBS_FABRIC=t_${name}_${h}"
            "SVT_TIMEOUT=100" "SVT_SHM_CHECK=1" ${ARGN})
    set_tests_properties(${name} PROPERTIES LABELS "softverbs" TIMEOUT 120
                         ENVIRONMENT "${env}")
endfunction()

# each verb and QP type, model off (fast path) ...
foreach(sub rc_write rc_write_imm rc_send rc_read uc ud srq inline_unsig
            bad_keys)
    sv_verbs(sv_${sub} ${sub})
endforeach()
# ... and through the timed model: rates, delay, several paths
foreach(sub rc_write rc_send rc_read uc ud srq)
    sv_verbs(sv_${sub}_model ${sub} SOFTVERBS_LINK_GBPS=25
             SOFTVERBS_DELAY_US=5 SOFTVERBS_PATH_SKEW_US=10)
endforeach()

sv_verbs(sv_order order SOFTVERBS_LINK_GBPS=20 SOFTVERBS_DELAY_US=5
         SOFTVERBS_PATH_SKEW_US=20)
sv_verbs(sv_loss loss SOFTVERBS_LOSS=0.05 SOFTVERBS_SEED=1234)
sv_verbs(sv_rc_loss rc_loss SOFTVERBS_LOSS=0.01 SOFTVERBS_SEED=99)
# 1 Gbit/s: the sender must compute every packet's fate faster than the link
# drains it, even under ASan on a busy 2-core machine
sv_verbs(sv_rate rate SOFTVERBS_LINK_GBPS=1 SVT_RATE_MSGS=64)
sv_verbs(sv_reorder reorder SOFTVERBS_PATHS=8 SOFTVERBS_DELAY_US=2
         SOFTVERBS_PATH_SKEW_US=50)
sv_verbs(sv_killed_peer killed_peer)
# RC QPs on a core path that is down resend; the others go on at once,
# and the stalled ones flush at once when moved to ERR
sv_verbs(sv_stalled_path stalled_path SOFTVERBS_LINK_GBPS=10
         SOFTVERBS_PATHS=8 SOFTVERBS_PATH_DOWN=3:0-100000000)
# a READ whose request the timer resent until its path came back holds up
# no later READ's response (path back after 6 of the NIC's 7 retries)
sv_verbs(sv_late_read late_read SOFTVERBS_LINK_GBPS=10
         SOFTVERBS_PATHS=8 SOFTVERBS_PATH_DOWN=3:0-400)
# a signaled RC completion retires the unsignaled WRs before it: it comes
# no sooner than their resends on a lossy fabric
sv_verbs(sv_unsig_order unsig_order SOFTVERBS_LINK_GBPS=10
         SOFTVERBS_LOSS=0.2)
# the PSN a responder reports counts the packets it executed, and stays
# once it is in ERR (what a transport replacing a QP pair relies on)
sv_verbs(sv_rq_psn rq_psn)
# errors move QPs to ERR inside; ibv_qp.state follows only modify/query
sv_verbs(sv_qp_state qp_state)
# a local fault (unmapped source) is the requester's, not the responder's
sv_verbs(sv_unmapped_src unmapped_src)
sv_verbs(sv_unmapped_src_self unmapped_src_self)
# completion channels across two processes (a blocking ibv_get_cq_event)
sv_verbs(sv_comp_channel comp_channel)
# a doorbell's WRITEs are copied as one batch; model off and on
sv_verbs(sv_batch batch)
sv_verbs(sv_batch_model batch SOFTVERBS_LINK_GBPS=25 SOFTVERBS_DELAY_US=5)
# UC losses inside a batched chain place a packet prefix, nothing after it
sv_verbs(sv_batch_loss batch_loss SOFTVERBS_LOSS=0.01 SOFTVERBS_SEED=21)
# send completions: RC when the ACK is back, UC when the packet left; a
# delay far above scheduling noise (the checks are lower bounds only)
sv_verbs(sv_ack_time ack_time SOFTVERBS_DELAY_US=200)
sv_verbs(sv_ack_time_skew ack_time SOFTVERBS_DELAY_US=200
         SOFTVERBS_PATH_SKEW_US=100 SOFTVERBS_LINK_GBPS=10)
# an answer 4 ms after the post against ACK timeouts of 2.1 and 16.8 ms;
# the expiries and the packets resent, from the SOFTVERBS_STATS dumps
add_test(NAME sv_late_ack
         COMMAND ${UCCL_SRCDIR}/test/softverbs/sv_stats_expect.sh
                 ${SV_BIN}/sv_verbs_test late_ack 2)
set_tests_properties(sv_late_ack PROPERTIES LABELS "softverbs" TIMEOUT 120
    ENVIRONMENT "SOFTVERBS_LIB=${SOFTVERBS_LIB};SOFTVERBS_FABRIC=t_sv_late_ack;SOFTVERBS_DELAY_US=2000")

# three sender processes into one receiving port (port 0, the receiver's,
# at 1 Gbit/s, the senders' at 8): queue depth and drops read with
# softverbs-stat; lossless, then tail drop at a 16 KiB buffer
function(sv_incast mode buf)
    add_test(NAME sv_incast_${mode}
             COMMAND ${SV_RUN} ${SV_BIN}/sv_incast_test ${mode})
    set_tests_properties(sv_incast_${mode} PROPERTIES LABELS "softverbs"
        TIMEOUT 120 ENVIRONMENT "SOFTVERBS_LIB=${SOFTVERBS_LIB};\
SOFTVERBS_FABRIC=t_sv_incast_${mode};SVT_TIMEOUT=100;SVT_SHM_CHECK=1;\
SVT_STAT_TOOL=${UCCL_BUILDDIR}/softverbs-stat;SOFTVERBS_LINK_GBPS=8,0:1;\
SOFTVERBS_BUF_BYTES=${buf}")
endfunction()
sv_incast(lossless 0)
sv_incast(taildrop 16384)

# a hostile fabric member (sv_hostile.c) rewrites what the victim shares:
# the victim sees clean errors only, then fresh objects deliver data
function(sv_hostile sub)
    add_test(NAME sv_hostile_${sub}
             COMMAND ${SV_RUN} ${SV_BIN}/sv_hostile_test ${sub})
    set_tests_properties(sv_hostile_${sub} PROPERTIES LABELS "softverbs"
        TIMEOUT 120 ENVIRONMENT "SOFTVERBS_LIB=${SOFTVERBS_LIB};\
SOFTVERBS_FABRIC=t_sv_hostile_${sub};SVT_TIMEOUT=100;SVT_SHM_CHECK=1")
endfunction()
foreach(sub rq_sizes srq_sizes cqe_forge mr_forge port_forge model_forge
            dead_claimer fuzz)
    sv_hostile(${sub})
endforeach()

# other users are kept out (root: it switches users with setpriv)
add_test(NAME sv_hostile_perm
         COMMAND ${UCCL_SRCDIR}/test/softverbs/sv_hostile_perm.sh
                 ${SV_BIN}/sv_fabric_tool)
set_tests_properties(sv_hostile_perm PROPERTIES LABELS "softverbs"
    TIMEOUT 200 SKIP_RETURN_CODE 77
    ENVIRONMENT "SOFTVERBS_LIB=${SOFTVERBS_LIB};SOFTVERBS_FABRIC=t_sv_perm")

# a fabric left by killed processes is re-created with the next run's model;
# clean runs leave nothing in /dev/shm
add_test(NAME sv_fabric_life
         COMMAND ${UCCL_SRCDIR}/test/softverbs/sv_fabric_life.sh
                 ${SV_BIN}/sv_verbs_test ${SV_BIN}/sv_fabric_tool)
set_tests_properties(sv_fabric_life PROPERTIES LABELS "softverbs" TIMEOUT 300
    ENVIRONMENT "SOFTVERBS_LIB=${SOFTVERBS_LIB};SOFTVERBS_FABRIC=t_sv_life")
# dead lock holders and corrupt fabric files
add_test(NAME sv_fabric_robust
         COMMAND ${UCCL_SRCDIR}/test/softverbs/sv_fabric_robust.sh
                 ${SV_BIN}/sv_fabric_tool)
set_tests_properties(sv_fabric_robust PROPERTIES LABELS "softverbs"
    TIMEOUT 200
    ENVIRONMENT "SOFTVERBS_LIB=${SOFTVERBS_LIB};SOFTVERBS_FABRIC=t_sv_robust")
# chained posting counted as one doorbell, read from the SOFTVERBS_STATS dump
add_test(NAME sv_doorbell
         COMMAND ${UCCL_SRCDIR}/test/softverbs/sv_stats_expect.sh
                 ${SV_BIN}/sv_verbs_test doorbell 2)
set_tests_properties(sv_doorbell PROPERTIES LABELS "softverbs" TIMEOUT 120
    ENVIRONMENT "SOFTVERBS_LIB=${SOFTVERBS_LIB};SOFTVERBS_FABRIC=t_sv_doorbell")

# UCX's own rc_verbs / ud_verbs and perftest over softverbs; missing tools
# or /dev nodes fail it (77 only with UCX_VERBS_ALLOW_SKIP=1 set by hand)
add_test(NAME sv_ucx_verbs COMMAND ${UCCL_SRCDIR}/test/softverbs/ucx_verbs.sh)
set_tests_properties(sv_ucx_verbs PROPERTIES LABELS "softverbs" TIMEOUT 900
    SKIP_RETURN_CODE 77
    ENVIRONMENT "SOFTVERBS_LIB=${SOFTVERBS_LIB}")
