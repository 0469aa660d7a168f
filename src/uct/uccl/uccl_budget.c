/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 */
#include "uccl_budget.h"

#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/string.h>
#include <string.h>

static UCS_LIST_HEAD(uct_uccl_budgets);
static pthread_mutex_t uct_uccl_budgets_lock = PTHREAD_MUTEX_INITIALIZER;

uct_uccl_budget_t *uct_uccl_budget_get(const char *dev_name, unsigned max_qp)
{
    uct_uccl_budget_t *budget;

    pthread_mutex_lock(&uct_uccl_budgets_lock);
    ucs_list_for_each(budget, &uct_uccl_budgets, list) {
        if (!strcmp(budget->dev_name, dev_name)) {
            pthread_mutex_lock(&budget->lock);
            budget->max = ucs_min(budget->max, max_qp);
            pthread_mutex_unlock(&budget->lock);
            ++budget->refcount;
            goto out;
        }
    }

    budget = ucs_calloc(1, sizeof(*budget), "uccl_budget");
    if (budget != NULL) {
        ucs_strncpy_zero(budget->dev_name, dev_name,
                         sizeof(budget->dev_name));
        budget->refcount = 1;
        budget->max      = max_qp;
        pthread_mutex_init(&budget->lock, NULL);
        ucs_list_add_tail(&uct_uccl_budgets, &budget->list);
    }
out:
    pthread_mutex_unlock(&uct_uccl_budgets_lock);
    return budget;
}

void uct_uccl_budget_put(uct_uccl_budget_t *budget)
{
    pthread_mutex_lock(&uct_uccl_budgets_lock);
    if (--budget->refcount == 0) {
        ucs_list_del(&budget->list);
        if (budget->used != 0) {
            ucs_warn("uccl: %s: %u QPs still counted", budget->dev_name,
                     budget->used);
        }
        pthread_mutex_destroy(&budget->lock);
        ucs_free(budget);
    }
    pthread_mutex_unlock(&uct_uccl_budgets_lock);
}

unsigned uct_uccl_budget_take(uct_uccl_budget_t *budget, unsigned want)
{
    unsigned granted;

    pthread_mutex_lock(&budget->lock);
    /* a later user may have lowered max below what is used */
    granted = uct_uccl_budget_grant((budget->max > budget->used) ?
                                    budget->max - budget->used : 0, want);
    budget->used += granted;
    pthread_mutex_unlock(&budget->lock);
    return granted;
}

void uct_uccl_budget_give(uct_uccl_budget_t *budget, unsigned count)
{
    pthread_mutex_lock(&budget->lock);
    ucs_assert(budget->used >= count);
    budget->used -= count;
    pthread_mutex_unlock(&budget->lock);
}

unsigned uct_uccl_budget_max(const uct_uccl_budget_t *budget)
{
    return budget->max;
}
