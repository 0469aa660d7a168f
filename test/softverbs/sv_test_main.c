/*
 * sv_verbs_test SUBTEST: run one two-process verbs test (sv_test_run.c).
 */
#include "sv_test.h"

static const svt_case_t svt_cases[] = {
    { "rc_write",     svt_rc_write,
      "RC RDMA WRITE: multi-SGE, chain, unaligned, zero-length" },
    { "rc_write_imm", svt_rc_write_imm,
      "RC WRITE_WITH_IMM: receive completion with imm, byte_len, qp_num" },
    { "rc_send",      svt_rc_send,
      "RC SEND / SEND_WITH_IMM into multi-SGE receive buffers" },
    { "rc_read",      svt_rc_read,     "RC RDMA READ into a multi-SGE list" },
    { "uc",           svt_uc,          "UC WRITE, WRITE_WITH_IMM and SEND" },
    { "ud",           svt_ud,          "UD SEND with AH and 40-byte GRH" },
    { "srq",          svt_srq,
      "SRQ and one CQ shared by several RC and UC QPs" },
    { "inline_unsig", svt_inline_unsig,
      "inline sends and unsignaled completions" },
    { "order",        svt_order,       "ordering on one QP" },
    { "loss",         svt_loss,
      "UC message loss rate within 3 sigma of SOFTVERBS_LOSS" },
    { "rc_loss",      svt_rc_loss,     "RC delivers everything under loss" },
    { "rate",         svt_rate,
      "bulk RC WRITE achieves SOFTVERBS_LINK_GBPS within 5%" },
    { "reorder",      svt_reorder,
      "many QPs over several paths: completions reordered across QPs" },
    { "bad_keys",     svt_bad_keys,
      "wrong rkey/lkey/bounds/access: error completions and QP in ERR" },
    { "killed_peer",  svt_killed_peer,
      "kill -9 the target mid-transfer: RETRY_EXC_ERR, no hang" },
    { "qp_state",     svt_qp_state_field,
      "internal moves to ERR leave ibv_qp.state to modify/query" },
    { "unmapped_src", svt_unmapped_src,
      "sending from an unmapped registered buffer: the sender's error" },
    { "unmapped_src_self", svt_unmapped_src_self,
      "the same on a loopback QP pair within one process" },
    { "batch",        svt_batch,
      "a chain's WRITEs copied as one batch: order, data, errors" },
    { "batch_loss",   svt_batch_loss,
      "UC losses inside a batched chain: whole or a packet prefix" },
    { "comp_channel", svt_comp_channel,
      "completion channels: blocking wait, re-arm, solicited-only" },
    { "doorbell",     svt_doorbell,
      "a chain of 16 WRs is one doorbell in the SOFTVERBS_STATS dump" },
    { "ack_time",     svt_ack_time,
      "RC completes when the ACK is back, UC when the packet left" },
    { "late_ack",     svt_late_ack,
      "an answer later than the ACK timeout: resends, then RETRY_EXC" },
    { "stalled_path", svt_stalled_path,
      "RC QPs resending on a dead path hold up neither link nor CQ" },
    { "late_read",    svt_late_read,
      "a READ's response after timer resends holds up no link" },
    { "rq_psn",       svt_rq_psn,
      "an RC target's rq_psn counts what it executed, and stays in ERR" },
    { "unsig_order",  svt_unsig_order,
      "a signaled RC completion comes after the unsignaled WRs before it" },
};

int main(int argc, char **argv)
{
    return svt_main(argc, argv, svt_cases,
                    sizeof(svt_cases) / sizeof(svt_cases[0]));
}
