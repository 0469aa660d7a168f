/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * ucp._libucp: the C half of the `ucp` Python module (the part of ucx-py's
 * API that Dask's UCX comm uses), on UCP's public API only.
 *
 * Threading: UCX callbacks never touch Python. They only record what
 * happened (a request completed, an ep failed, a connection arrived) in the
 * worker's lists, and Worker.drain() turns the records into Python tuples.
 * So ucp_worker_progress runs without the GIL (a Dask worker's compute
 * threads go on while uccl copies), and every UCP call is serialized by
 * the worker's mutex, taken with the GIL released while it waits.
 */
#ifndef UCPY_H_
#define UCPY_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ucp/api/ucp.h>
#include <ucs/datastruct/list.h>

#include <pthread.h>
#include <stdint.h>


/* Kinds of the tuples Worker.drain() returns */
enum {
    UCPY_EV_DONE  = 1,   /* (kind, Request, status, length) */
    UCPY_EV_ERROR = 2,   /* (kind, Endpoint, status) */
    UCPY_EV_CONN  = 3    /* (kind, Listener, ConnRequest) */
};

typedef enum {
    UCPY_REQ_TAG_SEND,
    UCPY_REQ_TAG_RECV,
    UCPY_REQ_STREAM_SEND,
    UCPY_REQ_STREAM_RECV,
    UCPY_REQ_CLOSE
} ucpy_req_kind_t;

typedef struct ucpy_worker   ucpy_worker_t;
typedef struct ucpy_endpoint ucpy_endpoint_t;
typedef struct ucpy_listener ucpy_listener_t;


/* One UCP operation. While UCP owns it, the worker's `inflight` list holds
 * a reference; on completion the callback moves it to `done`, and drain()
 * hands that reference to the tuple it returns. */
typedef struct ucpy_request {
    PyObject_HEAD
    ucpy_worker_t           *worker;     /* strong */
    void                    *ucx_req;    /* UCP's request while in flight */
    ucpy_req_kind_t         kind;
    int                     done;
    int                     status;      /* ucs_status_t (packed: 1 byte) */
    size_t                  size;        /* of the user's buffer */
    size_t                  length;      /* bytes received */
    Py_buffer               view;        /* the user's buffer, held */
    int                     has_view;
    ucs_list_link_t         link;        /* worker's inflight or done */
} ucpy_request_t;


typedef struct ucpy_conn {
    ucs_list_link_t         link;        /* worker's conns */
    ucpy_listener_t         *listener;   /* borrowed: purged on close */
    ucp_conn_request_h      conn_request;
} ucpy_conn_t;


struct ucpy_worker {
    PyObject_HEAD
    ucp_context_h           context;
    ucp_worker_h            worker;      /* NULL once closed */
    int                     efd;
    pthread_mutex_t         lock;
    ucs_list_link_t         inflight;    /* ucpy_request_t */
    ucs_list_link_t         done;        /* ucpy_request_t, completed */
    ucs_list_link_t         errs;        /* ucpy_endpoint_t, failed */
    ucs_list_link_t         conns;       /* ucpy_conn_t, arrived */
    ucs_list_link_t         eps;         /* ucpy_endpoint_t, open */
    ucs_list_link_t         listeners;   /* ucpy_listener_t, open */
};


struct ucpy_endpoint {
    PyObject_HEAD
    ucpy_worker_t           *worker;     /* strong */
    ucp_ep_h                ep;          /* NULL once closed */
    uintptr_t               handle;      /* the ucp_ep_h it had */
    ucs_status_t            err_status;
    int                     err_queued;  /* on the worker's errs */
    ucs_list_link_t         err_link;
    ucs_list_link_t         link;        /* worker's eps */
};


struct ucpy_listener {
    PyObject_HEAD
    ucpy_worker_t           *worker;     /* strong */
    ucp_listener_h          listener;    /* NULL once closed */
    ucs_list_link_t         link;        /* worker's listeners */
};


typedef struct ucpy_conn_request {
    PyObject_HEAD
    ucpy_listener_t         *listener;   /* strong */
    ucp_conn_request_h      conn_request; /* NULL once used */
    PyObject                *client;     /* "ip:port" or None */
} ucpy_conn_request_t;


extern PyTypeObject ucpy_worker_type;
extern PyTypeObject ucpy_endpoint_type;
extern PyTypeObject ucpy_listener_type;
extern PyTypeObject ucpy_request_type;
extern PyTypeObject ucpy_conn_request_type;


/* module (ucpy_module.c) */
PyObject *ucpy_raise_status(ucs_status_t status, const char *fmt, ...);
PyObject *ucpy_raise_closed(const char *what);

/* worker lock: with the GIL held; waits without it */
void ucpy_worker_lock(ucpy_worker_t *w);
void ucpy_worker_unlock(ucpy_worker_t *w);
int ucpy_worker_check_open(ucpy_worker_t *w);
ucp_config_t *ucpy_worker_read_config(PyObject *options);

/* requests (ucpy_request.c) */
ucpy_request_t *ucpy_request_new(ucpy_worker_t *w, ucpy_req_kind_t kind,
                                 PyObject *buffer, int writable);
void ucpy_request_param(ucpy_request_t *req, ucp_request_param_t *param);
PyObject *ucpy_request_submitted(ucpy_request_t *req, ucs_status_ptr_t sp,
                                 const char *what);
void ucpy_request_release_view(ucpy_request_t *req);
void ucpy_request_cancel_all(ucpy_worker_t *w);
void ucpy_request_abandon_all(ucpy_worker_t *w);

/* endpoints and listeners (ucpy_endpoint.c, ucpy_listener.c) */
ucpy_endpoint_t *ucpy_endpoint_create(ucpy_worker_t *w,
                                      ucp_ep_params_t *params);
void ucpy_endpoint_force_close(ucpy_endpoint_t *e);
ucpy_listener_t *ucpy_listener_create(ucpy_worker_t *w, unsigned port,
                                      const char *ip);
void ucpy_listener_destroy(ucpy_listener_t *l);
PyObject *ucpy_conn_event(ucpy_worker_t *w, ucpy_conn_t *conn);
void ucpy_conn_free(ucpy_conn_t *conn, int reject);

/* sockaddr from a numeric IPv4/IPv6 address (Python resolves names) */
int ucpy_sockaddr_parse(const char *ip, unsigned port,
                        struct sockaddr_storage *ss, socklen_t *len);
PyObject *ucpy_sockaddr_str(const struct sockaddr_storage *ss);

/* text printed by UCX into a FILE* */
typedef void (*ucpy_print_fn_t)(void *obj, FILE *stream);
PyObject *ucpy_print_to_str(ucpy_print_fn_t fn, void *obj);

#endif
