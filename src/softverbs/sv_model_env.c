/*
 * The fabric model's configuration: parsed from the SOFTVERBS_* model
 * variables (src/softverbs/README.md, "Fabric model variables"), checked
 * when a copy is read back from shared memory, printed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_model_cfg.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const sv_model_var_names[SV_VAR_LAST] = {
    [SV_VAR_LINK_GBPS]    = "SOFTVERBS_LINK_GBPS",
    [SV_VAR_PATH_GBPS]    = "SOFTVERBS_PATH_GBPS",
    [SV_VAR_BUF_BYTES]    = "SOFTVERBS_BUF_BYTES",
    [SV_VAR_DELAY_US]     = "SOFTVERBS_DELAY_US",
    [SV_VAR_PATH_SKEW_US] = "SOFTVERBS_PATH_SKEW_US",
    [SV_VAR_LOSS]         = "SOFTVERBS_LOSS",
    [SV_VAR_PATH_LOSS]    = "SOFTVERBS_PATH_LOSS",
    [SV_VAR_PATH_DOWN]    = "SOFTVERBS_PATH_DOWN",
    [SV_VAR_PATHS]        = "SOFTVERBS_PATHS",
    [SV_VAR_MTU]          = "SOFTVERBS_MTU",
    [SV_VAR_SEED]         = "SOFTVERBS_SEED",
};

static int sv_model_bad(const char *name, const char *value, const char *why)
{
    fprintf(stderr, "softverbs: %s=\"%s\": %s\n", name, value, why);
    return -EINVAL;
}

static int sv_model_parse_double(const char *s, double min, double max,
                                 double *out)
{
    char *end;
    double v;

    errno = 0;
    v     = strtod(s, &end);
    if ((end == s) || (*end != '\0') || errno || !(v >= min) || !(v <= max)) {
        return -1;
    }
    *out = v;
    return 0;
}

/* Unsigned integer with an optional binary k/m/g suffix. */
static int sv_model_parse_size(const char *s, uint64_t max, uint64_t *out)
{
    unsigned long long v;
    unsigned shift = 0;
    char *end;

    if ((*s < '0') || (*s > '9')) {
        return -1;
    }
    errno = 0;
    v     = strtoull(s, &end, 0);
    if (errno || (end == s)) {
        return -1;
    }
    switch (*end) {
    case 'k': case 'K': shift = 10; ++end; break;
    case 'm': case 'M': shift = 20; ++end; break;
    case 'g': case 'G': shift = 30; ++end; break;
    }
    if ((*end != '\0') || (v > (max >> shift))) {
        return -1;
    }
    *out = (uint64_t)v << shift;
    return 0;
}

static double sv_model_gbps_to_ps_per_byte(double gbps)
{
    return (gbps > 0) ? 8000.0 / gbps : 0;
}

/* A rate (ps per byte) the model can serve without overflow: 0 (unlimited)
 * or at least SV_MODEL_MIN_GBPS. */
static int sv_model_rate_ok(double ps_per_byte)
{
    return (ps_per_byte == 0) ||
           ((ps_per_byte > 0) &&
            (ps_per_byte <= sv_model_gbps_to_ps_per_byte(SV_MODEL_MIN_GBPS)));
}

static uint64_t sv_model_prob_thresh(double p)
{
    if (p >= 1.0) {
        return UINT64_MAX;
    }
    return (uint64_t)ldexp(p, 64);
}

/*
 * "RATE[,IDX:RATE...]" for per-port and per-path rates: a bare value is the
 * default for all, IDX:RATE overrides one entry.
 */
static int sv_model_parse_rates(const char *name, const char *value,
                                unsigned count, double *ps_per_byte)
{
    char buf[SV_MODEL_STR_LEN], *tok, *save, *colon, *end;
    unsigned long idx;
    unsigned i;
    double gbps;

    strcpy(buf, value);
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        colon = strchr(tok, ':');
        if (colon == NULL) {
            if (sv_model_parse_double(tok, 0, SV_MODEL_MAX_GBPS, &gbps) ||
                !sv_model_rate_ok(sv_model_gbps_to_ps_per_byte(gbps))) {
                return sv_model_bad(name, value, "rate must be 0 or "
                                    "1e-6..1e6 Gbit/s");
            }
            for (i = 0; i < count; ++i) {
                ps_per_byte[i] = sv_model_gbps_to_ps_per_byte(gbps);
            }
            continue;
        }
        *colon = '\0';
        errno  = 0;
        idx    = strtoul(tok, &end, 10);
        if ((end == tok) || (*end != '\0') || errno || (idx >= count)) {
            return sv_model_bad(name, value, "index out of range");
        }
        if (sv_model_parse_double(colon + 1, 0, SV_MODEL_MAX_GBPS, &gbps) ||
            !sv_model_rate_ok(sv_model_gbps_to_ps_per_byte(gbps))) {
            return sv_model_bad(name, value, "rate must be 0 or "
                                "1e-6..1e6 Gbit/s");
        }
        ps_per_byte[idx] = sv_model_gbps_to_ps_per_byte(gbps);
    }
    return 0;
}

/* "PATH:PROB,..." */
static int sv_model_parse_path_loss(sv_model_cfg_t *cfg, const char *value)
{
    const char *name = sv_model_var_names[SV_VAR_PATH_LOSS];
    char buf[SV_MODEL_STR_LEN], *tok, *save, *colon, *end;
    unsigned long path;
    double p;

    strcpy(buf, value);
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        colon = strchr(tok, ':');
        if (colon == NULL) {
            return sv_model_bad(name, value, "expected path:probability,...");
        }
        *colon = '\0';
        errno  = 0;
        path   = strtoul(tok, &end, 10);
        if ((end == tok) || (*end != '\0') || errno ||
            (path >= cfg->npaths)) {
            return sv_model_bad(name, value, "path out of range");
        }
        if (sv_model_parse_double(colon + 1, 0, 1, &p)) {
            return sv_model_bad(name, value, "probability must be 0..1");
        }
        cfg->path_loss_thresh[path] = sv_model_prob_thresh(p);
    }
    return 0;
}

/* "PATH:START_MS-END_MS,..." relative to the fabric epoch */
static int sv_model_parse_path_down(sv_model_cfg_t *cfg, const char *value)
{
    const char *name = sv_model_var_names[SV_VAR_PATH_DOWN];
    char buf[SV_MODEL_STR_LEN], *tok, *save, *colon, *dash, *end;
    sv_model_window_t *w;
    unsigned long path;
    double start, stop;

    strcpy(buf, value);
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        colon = strchr(tok, ':');
        dash  = (colon != NULL) ? strchr(colon, '-') : NULL;
        if (dash == NULL) {
            return sv_model_bad(name, value,
                                "expected path:start_ms-end_ms,...");
        }
        *colon = '\0';
        *dash  = '\0';
        errno  = 0;
        path   = strtoul(tok, &end, 10);
        if ((end == tok) || (*end != '\0') || errno ||
            (path >= cfg->npaths)) {
            return sv_model_bad(name, value, "path out of range");
        }
        if (sv_model_parse_double(colon + 1, 0, 1e10, &start) ||
            sv_model_parse_double(dash + 1, 0, 1e10, &stop) ||
            (stop < start)) {
            return sv_model_bad(name, value,
                                "window must be start_ms-end_ms, start<=end");
        }
        if (cfg->nwindows == SV_MODEL_MAX_WINDOWS) {
            return sv_model_bad(name, value, "too many windows (max 64)");
        }
        w           = &cfg->windows[cfg->nwindows++];
        w->path     = path;
        w->start_ps = (uint64_t)(start * 1e9);
        w->end_ps   = (uint64_t)(stop * 1e9);
    }
    return 0;
}

static int sv_model_is_active(const sv_model_cfg_t *cfg)
{
    int active = (cfg->loss_thresh != 0) || (cfg->nwindows != 0);
    unsigned i;

    for (i = 0; i < SV_MODEL_MAX_PORTS; ++i) {
        active |= (cfg->port_ps_per_byte[i] != 0);
    }
    for (i = 0; i < cfg->npaths; ++i) {
        active |= (cfg->path_ps_per_byte[i] != 0) ||
                  (cfg->path_delay_ps[i] != 0) ||
                  (cfg->path_loss_thresh[i] != 0);
    }
    return active;
}

int sv_model_parse(sv_model_cfg_t *cfg)
{
    char (*raw)[SV_MODEL_STR_LEN] = cfg->raw;
    double delay_us = 0, skew_us = 0, loss = 0;
    const char *name, *value;
    uint64_t v;
    unsigned i;
    int ret;

    for (i = 0; i < SV_VAR_LAST; ++i) {
        name  = sv_model_var_names[i];
        value = getenv(name);
        if ((value == NULL) || (*value == '\0')) {
            continue;
        }
        if (strlen(value) >= SV_MODEL_STR_LEN) {
            return sv_model_bad(name, value, "value too long");
        }
        strcpy(raw[i], value);
    }

    cfg->mtu = SV_MODEL_DEF_MTU;
    if (raw[SV_VAR_MTU][0]) {
        if (sv_model_parse_size(raw[SV_VAR_MTU], 4096, &v) ||
            (v < 256) || (v & (v - 1))) {
            return sv_model_bad(sv_model_var_names[SV_VAR_MTU],
                                raw[SV_VAR_MTU],
                                "must be 256, 512, 1024, 2048 or 4096");
        }
        cfg->mtu = v;
    }

    cfg->npaths = SV_MODEL_DEF_PATHS;
    if (raw[SV_VAR_PATHS][0]) {
        if (sv_model_parse_size(raw[SV_VAR_PATHS], SV_MODEL_MAX_PATHS, &v) ||
            (v == 0)) {
            return sv_model_bad(sv_model_var_names[SV_VAR_PATHS],
                                raw[SV_VAR_PATHS], "must be 1..256");
        }
        cfg->npaths = v;
    }

    cfg->seed = SV_MODEL_DEF_SEED;
    if (raw[SV_VAR_SEED][0] &&
        sv_model_parse_size(raw[SV_VAR_SEED], UINT64_MAX, &cfg->seed)) {
        return sv_model_bad(sv_model_var_names[SV_VAR_SEED], raw[SV_VAR_SEED],
                            "must be an unsigned integer");
    }

    if (raw[SV_VAR_BUF_BYTES][0] &&
        sv_model_parse_size(raw[SV_VAR_BUF_BYTES], SV_MODEL_MAX_BUF,
                            &cfg->buf_bytes)) {
        return sv_model_bad(sv_model_var_names[SV_VAR_BUF_BYTES],
                            raw[SV_VAR_BUF_BYTES],
                            "must be a byte count (k/m/g suffix ok), "
                            "0 = unlimited");
    }

    if (raw[SV_VAR_DELAY_US][0] &&
        sv_model_parse_double(raw[SV_VAR_DELAY_US], 0, SV_MODEL_MAX_US,
                              &delay_us)) {
        return sv_model_bad(sv_model_var_names[SV_VAR_DELAY_US],
                            raw[SV_VAR_DELAY_US], "must be 0..1e7 us");
    }
    if (raw[SV_VAR_PATH_SKEW_US][0] &&
        sv_model_parse_double(raw[SV_VAR_PATH_SKEW_US], 0, SV_MODEL_MAX_US,
                              &skew_us)) {
        return sv_model_bad(sv_model_var_names[SV_VAR_PATH_SKEW_US],
                            raw[SV_VAR_PATH_SKEW_US], "must be 0..1e7 us");
    }
    /* path p is p/(P-1) of the skew slower than path 0 */
    for (i = 0; i < cfg->npaths; ++i) {
        cfg->path_delay_ps[i] = (uint64_t)(delay_us * 1e6) +
                                ((cfg->npaths > 1) ?
                                 (uint64_t)(skew_us * 1e6 * i /
                                            (cfg->npaths - 1)) : 0);
    }

    if (raw[SV_VAR_LOSS][0]) {
        if (sv_model_parse_double(raw[SV_VAR_LOSS], 0, 1, &loss)) {
            return sv_model_bad(sv_model_var_names[SV_VAR_LOSS],
                                raw[SV_VAR_LOSS], "probability must be 0..1");
        }
        cfg->loss_thresh = sv_model_prob_thresh(loss);
    }

    if (raw[SV_VAR_LINK_GBPS][0]) {
        ret = sv_model_parse_rates(sv_model_var_names[SV_VAR_LINK_GBPS],
                                   raw[SV_VAR_LINK_GBPS], SV_MODEL_MAX_PORTS,
                                   cfg->port_ps_per_byte);
        if (ret) {
            return ret;
        }
    }
    if (raw[SV_VAR_PATH_GBPS][0]) {
        ret = sv_model_parse_rates(sv_model_var_names[SV_VAR_PATH_GBPS],
                                   raw[SV_VAR_PATH_GBPS], cfg->npaths,
                                   cfg->path_ps_per_byte);
        if (ret) {
            return ret;
        }
    }
    if (raw[SV_VAR_PATH_LOSS][0]) {
        ret = sv_model_parse_path_loss(cfg, raw[SV_VAR_PATH_LOSS]);
        if (ret) {
            return ret;
        }
    }
    if (raw[SV_VAR_PATH_DOWN][0]) {
        ret = sv_model_parse_path_down(cfg, raw[SV_VAR_PATH_DOWN]);
        if (ret) {
            return ret;
        }
    }

    cfg->active = sv_model_is_active(cfg);
    return 0;
}

/* A process joining an existing fabric gets the creator's model: say so if
 * its own environment asked for something else. */
void sv_model_check_env(const sv_model_cfg_t *cfg)
{
    const char *value;
    unsigned i;

    for (i = 0; i < SV_VAR_LAST; ++i) {
        value = getenv(sv_model_var_names[i]);
        if ((value != NULL) && (*value != '\0') &&
            strcmp(value, cfg->raw[i])) {
            fprintf(stderr, "softverbs: %s=\"%s\" ignored: the fabric was "
                    "created with \"%s\"\n", sv_model_var_names[i], value,
                    cfg->raw[i]);
        }
    }
}

int sv_model_cfg_valid(sv_model_cfg_t *cfg)
{
    const uint64_t max_delay_ps = (uint64_t)(2 * SV_MODEL_MAX_US * 1e6);
    unsigned i;

    if ((cfg->mtu < 256) || (cfg->mtu > 4096) || (cfg->mtu & (cfg->mtu - 1)) ||
        (cfg->npaths == 0) || (cfg->npaths > SV_MODEL_MAX_PATHS) ||
        (cfg->nwindows > SV_MODEL_MAX_WINDOWS) ||
        (cfg->buf_bytes > SV_MODEL_MAX_BUF)) {
        return 0;
    }
    for (i = 0; i < SV_MODEL_MAX_PORTS; ++i) {
        if (!sv_model_rate_ok(cfg->port_ps_per_byte[i])) {
            return 0;
        }
    }
    for (i = 0; i < SV_MODEL_MAX_PATHS; ++i) {
        if (!sv_model_rate_ok(cfg->path_ps_per_byte[i]) ||
            (cfg->path_delay_ps[i] > max_delay_ps)) {
            return 0;
        }
    }
    for (i = 0; i < SV_VAR_LAST; ++i) {
        cfg->raw[i][SV_MODEL_STR_LEN - 1] = '\0';
    }
    cfg->active = sv_model_is_active(cfg);
    return 1;
}

void sv_model_cfg_print(FILE *stream, const sv_model_cfg_t *cfg)
{
    static const char *defaults[SV_VAR_LAST] = {
        [SV_VAR_LINK_GBPS]    = "0 (unlimited)",
        [SV_VAR_PATH_GBPS]    = "0 (unlimited)",
        [SV_VAR_BUF_BYTES]    = "0 (unlimited, lossless)",
        [SV_VAR_DELAY_US]     = "0",
        [SV_VAR_PATH_SKEW_US] = "0",
        [SV_VAR_LOSS]         = "0",
        [SV_VAR_PATH_LOSS]    = "(none)",
        [SV_VAR_PATH_DOWN]    = "(none)",
        [SV_VAR_PATHS]        = "8",
        [SV_VAR_MTU]          = "4096",
        [SV_VAR_SEED]         = "1",
    };
    unsigned i;

    for (i = 0; i < SV_VAR_LAST; ++i) {
        fprintf(stream, "%s=%s%s\n", sv_model_var_names[i],
                cfg->raw[i][0] ? cfg->raw[i] : defaults[i],
                cfg->raw[i][0] ? "" : " [default]");
    }
    fprintf(stream, "model: %s, mtu %u, %u paths, seed %llu\n",
            cfg->active ? "active" : "off (fast path)", cfg->mtu, cfg->npaths,
            (unsigned long long)cfg->seed);
}
