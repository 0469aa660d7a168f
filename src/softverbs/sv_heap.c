/*
 * The heap of each port segment this process owns: rings and queues live
 * there, at offsets peers can map. Page-aligned chunks in power-of-two size
 * classes, a bump pointer and free lists kept in this process (the segment
 * holds no allocator state anyone else could corrupt).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sv_fabric.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

/* Heap of each port this process owns: bump pointer + free lists by size. */
#define SV_HEAP_CLASSES 40
typedef struct sv_heap_free {
    struct sv_heap_free *next;
    uint64_t             off;
} sv_heap_free_t;

typedef struct sv_heap {
    pthread_mutex_t  lock;
    int              fd;
    void            *base;      /* where the segment is mapped */
    uint64_t         bump, size;
    sv_heap_free_t  *free[SV_HEAP_CLASSES];
} sv_heap_t;

static sv_heap_t *sv_heaps[SV_MODEL_MAX_PORTS];

int sv_heap_create(unsigned port, int fd, void *base, uint64_t size)
{
    sv_heap_t *h = calloc(1, sizeof(*h));

    if (h == NULL) {
        return -ENOMEM;
    }
    pthread_mutex_init(&h->lock, NULL);
    h->fd   = fd;
    h->base = base;
    h->size = size;
    h->bump = SV_SEG_HEAP_START;
    sv_heaps[port] = h;
    return 0;
}

void sv_heap_destroy(unsigned port)
{
    sv_heap_t *h = sv_heaps[port];
    sv_heap_free_t *e;
    int c;

    if (h == NULL) {
        return;
    }
    for (c = 0; c < SV_HEAP_CLASSES; ++c) {
        while ((e = h->free[c]) != NULL) {
            h->free[c] = e->next;
            free(e);
        }
    }
    sv_heaps[port] = NULL;
    free(h);
}

static int sv_heap_class(size_t bytes, size_t *rounded)
{
    size_t s = 4096;
    int c = 0;

    while (s < bytes) {
        s <<= 1;
        ++c;
    }
    *rounded = s;
    return c;
}

uint64_t sv_heap_alloc(unsigned port, size_t bytes)
{
    sv_heap_t *h = sv_heaps[port];
    sv_heap_free_t *e;
    uint64_t off = 0;
    size_t sz;
    int c;

    if ((h == NULL) || (bytes == 0)) {
        return 0;
    }
    c = sv_heap_class(bytes, &sz);
    if (c >= SV_HEAP_CLASSES) {
        return 0;
    }
    pthread_mutex_lock(&h->lock);
    if ((e = h->free[c]) != NULL) {
        h->free[c] = e->next;
        off        = e->off;
        free(e);
    } else if (h->bump + sz <= h->size) {
        /* reserve the pages now: ENOSPC here beats SIGBUS later */
        if (posix_fallocate(h->fd, h->bump, sz) == 0) {
            off      = h->bump;
            h->bump += sz;
        }
    }
    pthread_mutex_unlock(&h->lock);
    if (off != 0) {
        memset((char*)h->base + off, 0, sz);
    }
    return off;
}

void sv_heap_free(unsigned port, uint64_t off, size_t bytes)
{
    sv_heap_t *h = sv_heaps[port];
    sv_heap_free_t *e;
    size_t sz;
    int c;

    if ((h == NULL) || (off == 0)) {
        return;
    }
    c = sv_heap_class(bytes, &sz);
    e = malloc(sizeof(*e));
    if (e == NULL) {
        return;        /* leak a chunk of shm rather than fail */
    }
    pthread_mutex_lock(&h->lock);
    e->off     = off;
    e->next    = h->free[c];
    h->free[c] = e;
    pthread_mutex_unlock(&h->lock);
}
