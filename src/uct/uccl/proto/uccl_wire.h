/*
 * uccl wire formats: every byte uccl puts on the fabric is described here.
 *
 * Byte order: all multi-byte fields are little-endian (host order on the
 * supported x86-64/aarch64-le hosts; a big-endian build fails below). The
 * one exception is the 32-bit immediate, which verbs carries as __be32:
 * use uct_uccl_imm_to_wire()/uct_uccl_imm_from_wire() on wr.imm_data and
 * wc.imm_data.
 *
 * Three families:
 *  1. the immediate of every data-QP work request (chunk sequence number);
 *  2. headers at the start of SENDs on data QPs (they land in SRQ bounce
 *     buffers): AM, GET request/done (UC mode), retransmitted WRITE chunk;
 *  3. control packets on the UD control QP (after the 40-byte GRH): conn
 *     request/reply, ACK (variable SACK tail), credit, batch (of ACKs and
 *     credits), disconnect, keepalive. Each starts with
 *     uct_uccl_ctl_hdr_t.
 *
 * Sequence numbers (CSNs) live in a 24-bit serial space, see
 * uccl_seq.h. Every receive path validates with a uct_uccl_wire_*_check()
 * before touching any other field.
 */
#ifndef UCT_UCCL_WIRE_H_
#define UCT_UCCL_WIRE_H_

#include <ucs/type/status.h>
#include <ucs/sys/compiler_def.h>
#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "uccl wire formats are little-endian, host must be too");

#define UCT_UCCL_WIRE_VERSION     9
#define UCT_UCCL_WIRE_MAGIC       0x4c434355u /* "UCCL" */
#define UCT_UCCL_WIRE_MAX_PATHS   256
/* Control QPs a side sends its conns' records from besides its own (the
 * one its address names, which receives): a core path that is down
 * takes only some of them */
#define UCT_UCCL_WIRE_CTL_ALT     3
/* Largest control packet: 4096-byte UD MTU minus the 40-byte GRH */
#define UCT_UCCL_WIRE_CTL_MAX     (4096 - 40)
/* Widest SACK window (chunks); see uccl_sack.h */
#define UCT_UCCL_WIRE_SACK_MAX_BITS 16384
/* SACK words an ACK may carry: window plus one word for the aligned base */
#define UCT_UCCL_WIRE_SACK_MAX_WORDS (UCT_UCCL_WIRE_SACK_MAX_BITS / 64 + 1)
#define UCT_UCCL_CONN_ID_NONE     UINT32_MAX
/* Q_Key of the UD control QPs. Known to all: what binds a control packet
 * to its conn is the conn's token (see the conn packet) */
#define UCT_UCCL_WIRE_QKEY        0x1ee7a330u


/* ---------------------------------------------------------------------- */
/* 1. Immediate data of data-QP work requests                              */
/* ---------------------------------------------------------------------- */
/*
 *  31    28 27   26   24 23                                0
 * +--------+----+-------+-----------------------------------+
 * |  0000  |LAST| kind  |     CSN (chunk sequence number)   |
 * +--------+----+-------+-----------------------------------+
 *
 * The QPN that received it names (conn, path); the CSN names the chunk in
 * the sending conn's stream. LAST marks the final chunk of an operation.
 * Reserved bits must be zero.
 */
#define UCT_UCCL_IMM_CSN_MASK     0x00ffffffu
#define UCT_UCCL_IMM_KIND_SHIFT   24
#define UCT_UCCL_IMM_KIND_MASK    0x7u
#define UCT_UCCL_IMM_LAST         (1u << 27)
#define UCT_UCCL_IMM_RSVD_MASK    0xf0000000u

typedef enum {
    UCT_UCCL_KIND_PUT      = 0, /* WRITE_WITH_IMM: PUT chunk, final buffer */
    UCT_UCCL_KIND_GET_RESP = 1, /* WRITE_WITH_IMM: GET data written back */
    UCT_UCCL_KIND_AM       = 2, /* SEND: uct_uccl_am_hdr_t + payload */
    UCT_UCCL_KIND_GET_REQ  = 3, /* SEND: uct_uccl_get_req_t (UC mode) */
    UCT_UCCL_KIND_GET_DONE = 4, /* SEND: uct_uccl_get_done_t (UC mode) */
    UCT_UCCL_KIND_RETX     = 5, /* SEND: uct_uccl_retx_hdr_t + payload */
    UCT_UCCL_KIND_GET_DATA = 6, /* SEND: uct_uccl_get_data_t + payload */
    UCT_UCCL_KIND_LAST
} uct_uccl_kind_t;

static inline uint32_t
uct_uccl_imm_pack(uint32_t csn, uct_uccl_kind_t kind, int last)
{
    return (csn & UCT_UCCL_IMM_CSN_MASK) |
           ((uint32_t)kind << UCT_UCCL_IMM_KIND_SHIFT) |
           (last ? UCT_UCCL_IMM_LAST : 0);
}

static inline uint32_t uct_uccl_imm_csn(uint32_t imm)
{
    return imm & UCT_UCCL_IMM_CSN_MASK;
}

static inline uct_uccl_kind_t uct_uccl_imm_kind(uint32_t imm)
{
    return (uct_uccl_kind_t)((imm >> UCT_UCCL_IMM_KIND_SHIFT) &
                             UCT_UCCL_IMM_KIND_MASK);
}

static inline int uct_uccl_imm_last(uint32_t imm)
{
    return !!(imm & UCT_UCCL_IMM_LAST);
}

/* UCS_OK if reserved bits are clear and the kind is known */
static inline ucs_status_t uct_uccl_imm_check(uint32_t imm)
{
    if (ucs_unlikely((imm & UCT_UCCL_IMM_RSVD_MASK) ||
                     (uct_uccl_imm_kind(imm) >= UCT_UCCL_KIND_LAST))) {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

/* verbs carries imm_data in network order */
static inline uint32_t uct_uccl_imm_to_wire(uint32_t imm)
{
    return htobe32(imm);
}

static inline uint32_t uct_uccl_imm_from_wire(uint32_t wire)
{
    return be32toh(wire);
}


/* ---------------------------------------------------------------------- */
/* 2. Headers of SENDs on data QPs (into SRQ bounce buffers)               */
/* ---------------------------------------------------------------------- */
/*
 * Each starts with a type byte equal to the imm kind; the receiver checks
 * both agree and that the completion's byte_len matches the header.
 */

/* Active message: header then `length` payload bytes. Its CSN orders it:
 * in UC mode the receiver hands it to UCX once every chunk before it
 * arrived (uccl_order.h). With UCT_UCCL_AM_F_ACK an ACK record follows
 * the payload (a uct_uccl_ack_t without SACK words, unaligned, checked as
 * a control packet): the AM carries an ACK its sender owes the receiver's
 * iface, for any conn between the two, and no ACK packet goes. */
#define UCT_UCCL_AM_F_ACK  0x1
typedef struct UCS_S_PACKED uct_uccl_am_hdr {
    uint8_t  type;       /* UCT_UCCL_KIND_AM */
    uint8_t  am_id;      /* < UCT_AM_ID_MAX */
    uint16_t flags;      /* UCT_UCCL_AM_F_* */
    uint32_t length;     /* payload bytes after the header */
} uct_uccl_am_hdr_t;


/* GET in UC mode: the peer's engine reads [remote_addr, +length) (its
 * memory, rkey its key) and WRITEs it to reply_addr/reply_rkey as
 * GET_RESP chunks in its own CSN stream, then sends GET_DONE. With
 * UCT_UCCL_GET_F_SEND (GET bcopy) the data comes back instead in one
 * GET_DATA SEND into a receive buffer: the requester exposes no memory,
 * reply_addr and reply_rkey are 0, and length fits the requester's receive
 * buffer. Ordered like an AM: it reads what every PUT sent before it
 * wrote. A requester that grants credit (receiver-driven cc) sends it
 * once its own pacer scheduled the reply's bytes: the request is the
 * grant, and the responder sends the reply without asking for credit. */
#define UCT_UCCL_GET_F_SEND  0x1
typedef struct UCS_S_PACKED uct_uccl_get_req {
    uint8_t  type;       /* UCT_UCCL_KIND_GET_REQ */
    uint8_t  flags;      /* UCT_UCCL_GET_F_* */
    uint8_t  rsvd0[2];
    uint32_t rkey;       /* responder's rkey for remote_addr */
    uint64_t remote_addr;
    uint64_t length;
    uint64_t reply_addr; /* requester's buffer */
    uint32_t reply_rkey;
    uint32_t rsvd1;
    uint64_t op_id;      /* opaque to the responder, echoed in GET_DONE */
} uct_uccl_get_req_t;

/* Sent by the responder once every GET_RESP chunk was acknowledged and no
 * send of it is still reading the source (so the source's owner may free it
 * as soon as the requester completes). The requester acknowledges a chunk
 * only once its data landed, so it completes op_id when this arrives. */
typedef struct UCS_S_PACKED uct_uccl_get_done {
    uint8_t  type;       /* UCT_UCCL_KIND_GET_DONE */
    uint8_t  rsvd0[3];
    int32_t  status;     /* ucs_status_t of the read (bad rkey/range) */
    uint64_t op_id;
    uint64_t length;     /* bytes written back */
} uct_uccl_get_done_t;

/* The reply to a GET_REQ with UCT_UCCL_GET_F_SEND: the requested bytes
 * follow the header when status is UCS_OK (length equals the request's),
 * none otherwise. The requester completes op_id when it arrives. */
typedef struct UCS_S_PACKED uct_uccl_get_data {
    uint8_t  type;       /* UCT_UCCL_KIND_GET_DATA */
    uint8_t  rsvd0[3];
    int32_t  status;     /* ucs_status_t of the read */
    uint64_t op_id;
    uint32_t length;     /* payload bytes after the header */
    uint32_t rsvd1;
} uct_uccl_get_data_t;

/* A lost WRITE chunk resent as a SEND with two SGEs: this header, then the
 * original payload. The receiver records imm's CSN and copies the payload
 * to remote_addr only if the CSN was still missing, after checking rkey
 * covers [remote_addr, +length). */
typedef struct UCS_S_PACKED uct_uccl_retx_hdr {
    uint8_t  type;       /* UCT_UCCL_KIND_RETX */
    uint8_t  rsvd0[3];
    uint32_t imm;        /* original immediate (host order): CSN/kind/LAST */
    uint64_t remote_addr;
    uint32_t rkey;
    uint32_t length;     /* payload bytes after the header */
} uct_uccl_retx_hdr_t;

_Static_assert(sizeof(uct_uccl_am_hdr_t) == 8, "am hdr size");
_Static_assert(sizeof(uct_uccl_get_req_t) == 48, "get req size");
_Static_assert(sizeof(uct_uccl_get_done_t) == 24, "get done size");
_Static_assert(sizeof(uct_uccl_retx_hdr_t) == 24, "retx hdr size");
_Static_assert(sizeof(uct_uccl_get_data_t) == 24, "get data size");

/*
 * Validate a SEND received on a data QP: buf/len are the bounce buffer and
 * the completion's byte_len, imm the host-order immediate. Checks the imm,
 * that the header type matches the imm kind, that len covers the header and
 * equals header + payload where a payload follows, and reserved fields.
 * Returns UCS_OK or UCS_ERR_INVALID_PARAM / UCS_ERR_MESSAGE_TRUNCATED.
 */
ucs_status_t uct_uccl_wire_data_check(const void *buf, size_t len,
                                      uint32_t imm);


/* ---------------------------------------------------------------------- */
/* 3. Control packets on the UD control QP                                 */
/* ---------------------------------------------------------------------- */

typedef enum {
    UCT_UCCL_CTL_CONN_REQ   = 1,
    UCT_UCCL_CTL_CONN_REP   = 2,
    UCT_UCCL_CTL_ACK        = 3, /* one conn's ACK; only inside a batch */
    UCT_UCCL_CTL_ACK_BATCH  = 4, /* several ACKs and CREDITs in one SEND */
    UCT_UCCL_CTL_DISCONNECT = 5,
    UCT_UCCL_CTL_KEEPALIVE  = 6, /* liveness probe; echoed with REPLY flag */
    UCT_UCCL_CTL_CREDIT     = 7, /* receiver-driven cc: request and grant */
    UCT_UCCL_CTL_PATH_RESET = 8, /* RC: a new QP pair for a failed path */
    UCT_UCCL_CTL_LAST
} uct_uccl_ctl_type_t;

/* Common header: first bytes of every control packet and of every record
 * in a batch. length is the whole packet/record, header included. */
typedef struct UCS_S_PACKED uct_uccl_ctl_hdr {
    uint8_t  type;       /* uct_uccl_ctl_type_t */
    uint8_t  version;    /* UCT_UCCL_WIRE_VERSION */
    uint16_t length;
} uct_uccl_ctl_hdr_t;

typedef enum {
    UCT_UCCL_MODE_UC = 0,
    UCT_UCCL_MODE_RC = 1
} uct_uccl_mode_t;

/*
 * CONN_REQ (initiator -> passive) and CONN_REP (passive -> initiator).
 * A REQ is retried until a REP arrives; the passive side recognises a
 * duplicate by (iface_uuid, src_conn_id, token) and resends the same REP.
 * The REP carries the passive side's own values (its QPNs, its ids), with
 * dst_conn_id = the initiator's src_conn_id and status != 0 on rejection.
 * Both sides' data QPs use `psn` as initial PSN for what they send.
 *
 * Binding: each side of a conn draws a random 64-bit token and sends it
 * here; every later control packet to it carries that token (ACK,
 * DISCONNECT, KEEPALIVE) and a REP echoes the REQ's token, so a packet
 * from anyone but the conn's peer (who learnt the token in the set-up) is
 * dropped. The receiver also checks that a packet comes from the peer's
 * port and control QP: the one that sent the REQ or REP, or, once the conn
 * is set up, one of the others the packet names (ctl_alt_qpn).
 */
typedef struct UCS_S_PACKED uct_uccl_conn_pkt {
    uct_uccl_ctl_hdr_t hdr;
    uint32_t magic;        /* UCT_UCCL_WIRE_MAGIC */
    uint64_t iface_uuid;   /* sender iface, random per iface */
    uint64_t token;        /* the sender's: every packet to it carries it */
    uint64_t echo_token;   /* REP: the REQ's token; REQ: 0 */
    uint32_t src_conn_id;  /* sender's id of this conn */
    uint32_t dst_conn_id;  /* receiver's id; CONN_ID_NONE in a REQ */
    int32_t  status;       /* REP: ucs_status_t; REQ: 0 */
    uint8_t  mode;         /* uct_uccl_mode_t */
    uint8_t  flags;        /* zero */
    uint16_t num_paths;    /* 1..UCT_UCCL_WIRE_MAX_PATHS */
    uint16_t mtu;          /* path MTU in bytes (256..4096) */
    uint16_t lid;          /* sender port LID (IB link layer) */
    uint32_t ctl_qpn;      /* sender's UD control QPN (24-bit) */
    uint32_t chunk_size;   /* sender's chunk size, bytes */
    uint32_t rx_buf_size;  /* sender's SRQ bounce buffer size, bytes */
    uint32_t sack_bits;    /* chunks the sender can receive in flight */
    uint32_t init_csn;     /* first CSN the sender will send (24-bit) */
    uint32_t rsvd;         /* zero */
    uint32_t psn;          /* initial PSN of the sender's data QPs */
    uint8_t  gid[16];      /* sender port GID */
    uint32_t ctl_alt_qpn[UCT_UCCL_WIRE_CTL_ALT]; /* the sender's other UD
                                                    control QPNs (24-bit;
                                                    0: none) */
    uint32_t qpn[];        /* num_paths data QPNs (24-bit each) */
} uct_uccl_conn_pkt_t;

/*
 * ACK of one conn's data stream, sent by the data receiver.
 *  cum_csn:  first CSN not yet received (all before it arrived).
 *  sack[j]:  bit b set <=> CSN (cum_csn & ~63) + 64*j + b arrived; bits
 *            for CSNs below cum_csn are meaningless (zero). Trailing zero
 *            words are not sent; sack_words may be 0.
 *  echo_csn/echo_path: the newest arrival that triggered this ACK; the
 *            sender takes the RTT from its own send time of that chunk,
 *            minus rx_delay_ns (time it waited at the receiver).
 *  rx_wait_ns: how long the echoed chunk waited in the receiver's CQ
 *            before the receiver polled it: from its completion's
 *            timestamp, or without timestamps at most the time since
 *            the poll before. The congestion control subtracts it too
 *            (with rx_delay_ns: the chunk's arrival to the ACK's post):
 *            a receiver that runs its engine now and then is not a
 *            congested fabric. The RTO does not (it must cover the
 *            peer's whole response time). Any value is safe: it is
 *            clamped to the sample.
 *  credit:   with UCT_UCCL_ACK_F_CREDIT, the receiver's cumulative grant
 *            to the data sender (receiver-driven cc, see the credit
 *            packet); 0 without the flag.
 *  token:    the data sender's conn token (see the conn packet).
 *  flags:    UCT_UCCL_ACK_F_BUSY: the receiver is alive but refused a chunk
 *            (too much waits for its user): resend it later, not at once.
 *            UCT_UCCL_ACK_F_CREDIT: credit is a grant.
 *            UCT_UCCL_ACK_F_IDLE (with CREDIT): no other sender waits
 *            for the receiver's grants (see the credit packet).
 * Total length = sizeof(uct_uccl_ack_t) + 8 * sack_words.
 */
#define UCT_UCCL_ACK_F_BUSY    0x1
#define UCT_UCCL_ACK_F_CREDIT  0x2
#define UCT_UCCL_ACK_F_IDLE    0x4
typedef struct UCS_S_PACKED uct_uccl_ack {
    uct_uccl_ctl_hdr_t hdr;
    uint32_t dst_conn_id;  /* the data sender's conn id */
    uint64_t token;        /* the data sender's conn token */
    uint32_t cum_csn;
    uint32_t echo_csn;
    uint32_t rx_delay_ns;
    uint32_t credit;
    uint8_t  echo_path;
    uint8_t  flags;        /* UCT_UCCL_ACK_F_* */
    uint16_t sack_words;   /* <= UCT_UCCL_WIRE_SACK_MAX_WORDS */
    uint32_t rx_wait_ns;   /* also keeps sack[] 8-byte aligned */
    uint64_t sack[];
} uct_uccl_ack_t;

/*
 * CREDIT: receiver-driven congestion control between the two ends of a
 * conn, in either direction (each end may send data and receive it):
 *  UCT_UCCL_CREDIT_F_REQUEST: want/spec are the sender's request to the
 *            receiver (uct_uccl_cc_request_t: the cumulative grant it
 *            needs for all it sent and queued, and the bytes it sent or
 *            is about to send on speculative credit), lost, the bytes of
 *            its transmissions judged lost (the receiver stops counting
 *            them as on their way), held, what it holds now (credit not
 *            spent and bytes sent and not acknowledged; saturates), and
 *            seen, the receiver's cumulative grant it had then (with
 *            held, a bound on the receiver's grants not arrived);
 *  UCT_UCCL_CREDIT_F_GRANT: grant is the receiver's cumulative grant to
 *            the sender, when no ACK carries it;
 *  UCT_UCCL_CREDIT_F_IDLE (with GRANT): no other sender waits for the
 *            receiver's grants, so a drained sender may start its next
 *            burst on a full speculative credit (a hint: a sender that
 *            acts on a stale one sends one burst unscheduled).
 * All but held are 32-bit serial numbers (a lost, repeated or reordered
 * record is harmless); a field without its flag is 0, and so is
 * reserved. token is the receiver's conn token, as in an ACK.
 */
#define UCT_UCCL_CREDIT_F_REQUEST  0x1
#define UCT_UCCL_CREDIT_F_GRANT    0x2
#define UCT_UCCL_CREDIT_F_IDLE     0x4
typedef struct UCS_S_PACKED uct_uccl_credit {
    uct_uccl_ctl_hdr_t hdr;
    uint32_t dst_conn_id;
    uint64_t token;
    uint32_t flags;        /* UCT_UCCL_CREDIT_F_*, at least one */
    uint32_t want;
    uint32_t spec;
    uint32_t grant;
    uint32_t lost;
    uint32_t held;
    uint32_t seen;
    uint32_t reserved;
} uct_uccl_credit_t;

/* Several records (ACKs, CREDITs) in one SEND. Each record starts with its
 * own uct_uccl_ctl_hdr_t and its length is a multiple of 8. */
typedef struct UCS_S_PACKED uct_uccl_ack_batch {
    uct_uccl_ctl_hdr_t hdr;
    uint16_t count;        /* records following, >= 1 */
    uint16_t rsvd;
} uct_uccl_ack_batch_t;

typedef struct UCS_S_PACKED uct_uccl_disconnect {
    uct_uccl_ctl_hdr_t hdr;
    uint32_t dst_conn_id;
    uint64_t token;        /* the receiver's conn token */
    uint32_t src_conn_id;
    int32_t  reason;       /* ucs_status_t, UCS_OK for a clean close */
} uct_uccl_disconnect_t;

#define UCT_UCCL_KEEPALIVE_REPLY 0x1
typedef struct UCS_S_PACKED uct_uccl_keepalive {
    uct_uccl_ctl_hdr_t hdr;
    uint32_t dst_conn_id;
    uint64_t token;        /* the receiver's conn token */
    uint32_t src_conn_id;
    uint32_t flags;        /* UCT_UCCL_KEEPALIVE_REPLY */
    uint64_t ts_ns;        /* sender's clock, echoed in the reply */
} uct_uccl_keepalive_t;

/*
 * PATH_RESET (RC): one path's QP pair is replaced by a new pair, which the
 * fabric hashes to another route. The side whose QP failed or stalled
 * asks (REQUEST, `qpn` its new QP); the other moves its old QP of the path
 * to ERR, so nothing the old pair carries lands any more, pairs a new QP
 * with `qpn` and answers (REPLY, `qpn` that QP); the asker moves its own
 * old QP to ERR, pairs its new one and confirms (CONFIRM, `qpn` 0), after
 * which the answerer sends on the new pair. REQUEST and REPLY are repeated
 * until the next step is seen; `gen` numbers the asker's resets of the
 * path, so repeats are recognised. REPLY and CONFIRM carry, with
 * UCT_UCCL_PATH_RESET_F_PSN, the rq_psn of the sender's old QP once it is
 * in ERR: how far it executed what the receiver's old QP sent, so a WRITE
 * flushed there that landed is not written again (after a newer one).
 */
typedef enum {
    UCT_UCCL_PATH_RESET_REQUEST = 0,
    UCT_UCCL_PATH_RESET_REPLY   = 1,
    UCT_UCCL_PATH_RESET_CONFIRM = 2,
    UCT_UCCL_PATH_RESET_LAST
} uct_uccl_path_reset_step_t;

enum {
    UCT_UCCL_PATH_RESET_F_PSN   = UCS_BIT(0)  /* `psn` is set */
};

typedef struct UCS_S_PACKED uct_uccl_path_reset {
    uct_uccl_ctl_hdr_t hdr;
    uint32_t dst_conn_id;
    uint64_t token;        /* the receiver's conn token */
    uint32_t src_conn_id;
    uint16_t path;         /* < the conn's number of paths */
    uint8_t  step;         /* uct_uccl_path_reset_step_t */
    uint8_t  flags;        /* UCT_UCCL_PATH_RESET_F_*; none in a REQUEST */
    uint32_t gen;          /* the asker's reset of this path */
    uint32_t qpn;          /* 24-bit; 0 in a CONFIRM */
    uint32_t psn;          /* 24-bit; 0 without F_PSN */
} uct_uccl_path_reset_t;

_Static_assert(sizeof(uct_uccl_ctl_hdr_t) == 4, "ctl hdr size");
_Static_assert(sizeof(uct_uccl_conn_pkt_t) == 108, "conn pkt size");
_Static_assert(sizeof(uct_uccl_conn_pkt_t) +
               4 * UCT_UCCL_WIRE_MAX_PATHS <= UCT_UCCL_WIRE_CTL_MAX,
               "conn pkt with all paths must fit one UD MTU");
_Static_assert(sizeof(uct_uccl_ack_t) == 40, "ack size");

/* The ACK record an AM with UCT_UCCL_AM_F_ACK carries: after its payload,
 * so the payload keeps the alignment the receiver gave it */
static inline void *uct_uccl_wire_am_ack_ptr(const uct_uccl_am_hdr_t *am)
{
    return (char*)(am + 1) + am->length;
}

/* A copy of that record (it is unaligned) */
static inline void uct_uccl_wire_am_ack(const uct_uccl_am_hdr_t *am,
                                        uct_uccl_ack_t *ack)
{
    memcpy(ack, uct_uccl_wire_am_ack_ptr(am), sizeof(*ack));
}
_Static_assert(offsetof(uct_uccl_ack_t, sack) % 8 == 0, "sack alignment");
_Static_assert(sizeof(uct_uccl_ack_batch_t) == 8, "ack batch size");
_Static_assert(sizeof(uct_uccl_disconnect_t) == 24, "disconnect size");
_Static_assert(sizeof(uct_uccl_keepalive_t) == 32, "keepalive size");
_Static_assert(sizeof(uct_uccl_credit_t) == 48, "credit size");
_Static_assert(sizeof(uct_uccl_path_reset_t) == 36, "path reset size");

static inline size_t uct_uccl_wire_conn_size(unsigned num_paths)
{
    return sizeof(uct_uccl_conn_pkt_t) + 4 * (size_t)num_paths;
}

static inline size_t uct_uccl_wire_ack_size(unsigned sack_words)
{
    return sizeof(uct_uccl_ack_t) + 8 * (size_t)sack_words;
}

/* SACK words that fit an ACK alone in a control packet of `max_bytes`
 * inside a batch (what the UCT layer passes to uct_uccl_sack_ack_pack) */
static inline unsigned uct_uccl_wire_ack_max_words(size_t max_bytes)
{
    size_t room = max_bytes - sizeof(uct_uccl_ack_batch_t) -
                  sizeof(uct_uccl_ack_t);
    size_t w;

    if (max_bytes < sizeof(uct_uccl_ack_batch_t) + sizeof(uct_uccl_ack_t)) {
        return 0;
    }
    w = room / 8;
    return (w > UCT_UCCL_WIRE_SACK_MAX_WORDS) ? UCT_UCCL_WIRE_SACK_MAX_WORDS :
                                                (unsigned)w;
}

static inline void
uct_uccl_wire_hdr_init(uct_uccl_ctl_hdr_t *hdr, uct_uccl_ctl_type_t type,
                       size_t length)
{
    hdr->type    = type;
    hdr->version = UCT_UCCL_WIRE_VERSION;
    hdr->length  = (uint16_t)length;
}

/* Batch building: init the header, then append records one by one.
 * uct_uccl_wire_batch_add() returns where the next record of `size` bytes
 * goes (size rounded up to 8) or NULL if it does not fit in `max` bytes;
 * the caller fills the record (its own hdr included) right after. */
static inline void uct_uccl_wire_batch_init(uct_uccl_ack_batch_t *b)
{
    uct_uccl_wire_hdr_init(&b->hdr, UCT_UCCL_CTL_ACK_BATCH, sizeof(*b));
    b->count = 0;
    b->rsvd  = 0;
}

static inline void *
uct_uccl_wire_batch_add(uct_uccl_ack_batch_t *b, size_t size, size_t max)
{
    size_t off = b->hdr.length;

    size = (size + 7) & ~(size_t)7;
    if ((off + size > max) || (off + size > UINT16_MAX)) {
        return NULL;
    }
    b->hdr.length = (uint16_t)(off + size);
    ++b->count;
    return (char*)b + off;
}

/* Record iteration of a batch already accepted by uct_uccl_wire_ctl_check */
static inline const uct_uccl_ctl_hdr_t *
uct_uccl_wire_batch_first(const uct_uccl_ack_batch_t *b)
{
    return (const uct_uccl_ctl_hdr_t*)(b + 1);
}

static inline const uct_uccl_ctl_hdr_t *
uct_uccl_wire_batch_next(const uct_uccl_ctl_hdr_t *rec)
{
    return (const uct_uccl_ctl_hdr_t*)((const char*)rec +
                                       ((rec->length + 7) & ~7u));
}

/*
 * What UCX carries to the peer for us: the device and iface addresses
 * (uct_iface_get_device_address / get_address) and a packed memory key.
 */
typedef struct UCS_S_PACKED uct_uccl_device_addr {
    uint16_t lid;
    uint8_t  is_global;
    uint8_t  rsvd;
    uint8_t  gid[16];
} uct_uccl_device_addr_t;

typedef struct UCS_S_PACKED uct_uccl_iface_addr {
    uint32_t ctl_qpn;    /* the iface's UD control QP */
} uct_uccl_iface_addr_t;

#define UCT_UCCL_RKEY_MAGIC    0x6b637275u /* "urck" */
typedef struct UCS_S_PACKED uct_uccl_packed_rkey {
    uint32_t rkey;
    uint32_t magic;      /* UCT_UCCL_RKEY_MAGIC: catches a foreign key */
} uct_uccl_packed_rkey_t;

_Static_assert(sizeof(uct_uccl_device_addr_t) == 20, "device addr size");
_Static_assert(sizeof(uct_uccl_iface_addr_t) == 4, "iface addr size");
_Static_assert(sizeof(uct_uccl_packed_rkey_t) == 8, "packed rkey size");


/*
 * Validate a control packet of `len` received bytes (GRH already skipped).
 * Checks the common header (known type, version, length <= len and at least
 * the type's fixed size), type-specific sizes and fields (magic, path count
 * and MTU of conn packets, SACK word count, 24-bit sequence fields,
 * reserved fields zero) and, for a batch, every record (only ACK and
 * CREDIT records are allowed in a batch, each aligned and inside the
 * batch). A bare ACK or CREDIT outside a batch is accepted too.
 * Returns UCS_OK, UCS_ERR_MESSAGE_TRUNCATED for short packets, or
 * UCS_ERR_INVALID_PARAM / UCS_ERR_UNSUPPORTED (other version).
 */
ucs_status_t uct_uccl_wire_ctl_check(const void *pkt, size_t len);

/* Name of a control type for logs ("?" if unknown) */
const char *uct_uccl_wire_ctl_name(unsigned type);

#endif
