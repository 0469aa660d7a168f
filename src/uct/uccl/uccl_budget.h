/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The QPs of a verbs device: a budget that every uccl iface of this process
 * on the device shares (a device has max_qp of them, softverbs per process
 * and device). Each iface's control QP and each conn's data QPs (paths)
 * take from it. A conn asks for its paths and is granted at most a
 * 1/BUDGET_SHARE of the QPs still free, and at least one while any is
 * free: with many peers the paths per conn shrink, down to one, before a
 * conn cannot be made at all. Other processes' QPs on the same device are
 * not counted: a QP the device refuses shrinks the conn too.
 */
#ifndef UCT_UCCL_BUDGET_H_
#define UCT_UCCL_BUDGET_H_

#include <ucs/datastruct/list.h>
#include <ucs/sys/math.h>

#include <pthread.h>

#define UCT_UCCL_BUDGET_SHARE  32   /* a new conn takes <= 1/32 of free QPs */


typedef struct uct_uccl_budget {
    ucs_list_link_t         list;      /* process-wide, by device */
    char                    dev_name[64];
    unsigned                refcount;  /* mds open on the device */
    unsigned                max;       /* the device's max_qp */
    unsigned                used;
    pthread_mutex_t         lock;
} uct_uccl_budget_t;


/* QPs granted to a request for `want` when `free` are left */
static inline unsigned uct_uccl_budget_grant(unsigned free, unsigned want)
{
    if ((free == 0) || (want == 0)) {
        return 0;
    }
    return ucs_max(1, ucs_min(want, free / UCT_UCCL_BUDGET_SHARE));
}

/* The budget of device dev_name, shared by the process: max_qp QPs, or
 * the lowest max_qp of its users */
uct_uccl_budget_t *uct_uccl_budget_get(const char *dev_name, unsigned max_qp);
void uct_uccl_budget_put(uct_uccl_budget_t *budget);

/* Take QPs for a request of `want`: how many were granted (0: none left) */
unsigned uct_uccl_budget_take(uct_uccl_budget_t *budget, unsigned want);
void uct_uccl_budget_give(uct_uccl_budget_t *budget, unsigned count);

/* QPs the device holds for this process in all */
unsigned uct_uccl_budget_max(const uct_uccl_budget_t *budget);

#endif
