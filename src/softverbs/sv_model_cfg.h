/*
 * The fabric model's configuration (private to sv_model*.c): what the
 * SOFTVERBS_* model variables say, parsed once by the process that creates
 * a fabric and kept in the fabric's shared memory; every process uses its
 * own checked copy of it.
 */
#ifndef SV_MODEL_CFG_H_
#define SV_MODEL_CFG_H_

#include "sv_model.h"

#include <stdint.h>
#include <stdio.h>

#define SV_MODEL_MAX_WINDOWS 64
#define SV_MODEL_STR_LEN     256
#define SV_MODEL_DEF_MTU     4096
#define SV_MODEL_DEF_PATHS   8
#define SV_MODEL_DEF_SEED    1
#define SV_MODEL_MIN_GBPS    1e-6        /* 1 kbit/s */
#define SV_MODEL_MAX_GBPS    1e6
#define SV_MODEL_MAX_US      1e7         /* delay and skew */
#define SV_MODEL_MAX_BUF     (1ull << 40)

/* Raw variable strings, kept to print the configuration and to warn a
 * process whose environment disagrees with the fabric it joins. */
enum {
    SV_VAR_LINK_GBPS,
    SV_VAR_PATH_GBPS,
    SV_VAR_BUF_BYTES,
    SV_VAR_DELAY_US,
    SV_VAR_PATH_SKEW_US,
    SV_VAR_LOSS,
    SV_VAR_PATH_LOSS,
    SV_VAR_PATH_DOWN,
    SV_VAR_PATHS,
    SV_VAR_MTU,
    SV_VAR_SEED,
    SV_VAR_LAST
};


typedef struct sv_model_window {
    uint64_t start_ps, end_ps;
    uint32_t path;
    uint32_t pad;
} sv_model_window_t;

/* Written once by the fabric creator, read-only afterwards. */
typedef struct sv_model_cfg {
    uint64_t          seed;
    uint64_t          epoch_ns;
    uint64_t          buf_bytes;      /* 0: unlimited (lossless fabric) */
    uint64_t          loss_thresh;    /* P(drop) scaled to 2^64 */
    uint32_t          mtu;
    uint32_t          npaths;
    uint32_t          nwindows;
    uint32_t          active;
    double            port_ps_per_byte[SV_MODEL_MAX_PORTS]; /* 0: unlimited */
    double            path_ps_per_byte[SV_MODEL_MAX_PATHS];
    uint64_t          path_delay_ps[SV_MODEL_MAX_PATHS];
    uint64_t          path_loss_thresh[SV_MODEL_MAX_PATHS];
    sv_model_window_t windows[SV_MODEL_MAX_WINDOWS];
    char              raw[SV_VAR_LAST][SV_MODEL_STR_LEN];
} sv_model_cfg_t;

extern const char *const sv_model_var_names[SV_VAR_LAST];

/* The configuration of this process's environment: 0, or -EINVAL after a
 * line on stderr naming the variable. */
int  sv_model_parse(sv_model_cfg_t *cfg);
/* A joiner's environment that asks for something else: one line each. */
void sv_model_check_env(const sv_model_cfg_t *cfg);
/* Is a copy read from shared memory one the parser could have made (every
 * bound the data path relies on)? Terminates its strings. */
int  sv_model_cfg_valid(sv_model_cfg_t *cfg);
void sv_model_cfg_print(FILE *stream, const sv_model_cfg_t *cfg);

#endif
