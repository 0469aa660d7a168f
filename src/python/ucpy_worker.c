/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Worker: one UCP context and worker with TAG, STREAM and WAKEUP, its event
 * fd for an event loop, progress without the GIL, and drain(): what the UCX
 * callbacks recorded, as tuples for Python.
 */
#include "ucpy.h"

#include <string.h>

#define UCPY_PROGRESS_ROUNDS  64   /* ucp_worker_progress calls, at most */
#define UCPY_CLOSE_ROUNDS     1000 /* progress calls to finish forced closes */
#define UCPY_TAG_MASK_ALL     UINT64_MAX


void ucpy_worker_lock(ucpy_worker_t *w)
{
    if (pthread_mutex_trylock(&w->lock) == 0) {
        return;
    }
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&w->lock);
    Py_END_ALLOW_THREADS
}

void ucpy_worker_unlock(ucpy_worker_t *w)
{
    pthread_mutex_unlock(&w->lock);
}

/* With the lock held: 0 if the worker is usable, else raises */
int ucpy_worker_check_open(ucpy_worker_t *w)
{
    if (w->worker == NULL) {
        ucpy_raise_closed("the UCX worker");
        return -1;
    }
    return 0;
}

/* Python converters with range checks (the "K"/"I" formats do none) */
static int ucpy_conv_u64(PyObject *obj, void *out)
{
    unsigned long long v = PyLong_AsUnsignedLongLong(obj);

    if ((v == (unsigned long long)-1) && PyErr_Occurred()) {
        return 0;
    }
    *(uint64_t*)out = v;
    return 1;
}

static int ucpy_conv_port(PyObject *obj, void *out)
{
    long v = PyLong_AsLong(obj);

    if ((v == -1) && PyErr_Occurred()) {
        return 0;
    }
    if ((v < 0) || (v > UINT16_MAX)) {
        PyErr_Format(PyExc_ValueError, "port %ld is not in 0..65535", v);
        return 0;
    }
    *(unsigned*)out = v;
    return 1;
}


static PyObject *ucpy_worker_new(PyTypeObject *type, PyObject *args,
                                 PyObject *kwds)
{
    pthread_mutexattr_t attr;
    ucpy_worker_t *w;

    w = (ucpy_worker_t*)type->tp_alloc(type, 0);
    if (w == NULL) {
        return NULL;
    }
    w->efd = -1;
    /* recursive: a finalizer run by the GC while the lock is held may
     * close an endpoint */
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&w->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    ucs_list_head_init(&w->inflight);
    ucs_list_head_init(&w->done);
    ucs_list_head_init(&w->errs);
    ucs_list_head_init(&w->conns);
    ucs_list_head_init(&w->eps);
    ucs_list_head_init(&w->listeners);
    return (PyObject*)w;
}

/* UCX configuration: the environment (UCX_*), then `options` (names
 * without the UCX_ prefix) on top */
ucp_config_t *ucpy_worker_read_config(PyObject *options)
{
    PyObject *key, *value;
    const char *k, *v;
    ucp_config_t *config;
    ucs_status_t status;
    Py_ssize_t pos = 0;

    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        ucpy_raise_status(status, "cannot read the UCX configuration");
        return NULL;
    }
    while ((options != NULL) && PyDict_Next(options, &pos, &key, &value)) {
        if (!PyUnicode_Check(key) || !PyUnicode_Check(value)) {
            PyErr_SetString(PyExc_TypeError,
                            "UCX options must map str to str");
            goto err;
        }
        k = PyUnicode_AsUTF8(key);
        v = PyUnicode_AsUTF8(value);
        if ((k == NULL) || (v == NULL)) {
            goto err;
        }
        status = ucp_config_modify(config, k, v);
        if (status != UCS_OK) {
            ucpy_raise_status(status, "UCX option %s=%s", k, v);
            goto err;
        }
    }
    return config;

err:
    ucp_config_release(config);
    return NULL;
}

static int ucpy_worker_init(ucpy_worker_t *w, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"options", NULL};
    ucp_params_t params = {
        .field_mask = UCP_PARAM_FIELD_FEATURES,
        .features   = UCP_FEATURE_TAG | UCP_FEATURE_STREAM |
                      UCP_FEATURE_WAKEUP
    };
    ucp_worker_params_t wparams = {
        .field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        /* every call is serialized by the worker's lock */
        .thread_mode = UCS_THREAD_MODE_SERIALIZED
    };
    PyObject *options = NULL;
    ucp_config_t *config;
    ucs_status_t status;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O!", kwlist, &PyDict_Type,
                                     &options)) {
        return -1;
    }
    if (w->context != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Worker is already initialized");
        return -1;
    }

    config = ucpy_worker_read_config(options);
    if (config == NULL) {
        return -1;
    }
    status = ucp_init(&params, config, &w->context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        ucpy_raise_status(status, "ucp_init");
        return -1;
    }

    status = ucp_worker_create(w->context, &wparams, &w->worker);
    if (status != UCS_OK) {
        ucpy_raise_status(status, "ucp_worker_create");
        goto err_cleanup;
    }
    status = ucp_worker_get_efd(w->worker, &w->efd);
    if (status != UCS_OK) {
        ucpy_raise_status(status, "ucp_worker_get_efd");
        goto err_destroy;
    }
    return 0;

err_destroy:
    ucp_worker_destroy(w->worker);
    w->worker = NULL;
err_cleanup:
    ucp_cleanup(w->context);
    w->context = NULL;
    return -1;
}

/* With the lock held: listeners, endpoints and requests first, then the
 * worker and the context */
static void ucpy_worker_close_locked(ucpy_worker_t *w)
{
    ucpy_listener_t *l;
    ucpy_endpoint_t *e;
    ucpy_conn_t *conn;
    unsigned i;

    if (w->worker == NULL) {
        return;
    }
    while (!ucs_list_is_empty(&w->listeners)) {
        l = ucs_list_head(&w->listeners, ucpy_listener_t, link);
        ucpy_listener_destroy(l);
    }
    while (!ucs_list_is_empty(&w->eps)) {
        e = ucs_list_head(&w->eps, ucpy_endpoint_t, link);
        ucpy_endpoint_force_close(e);
    }
    ucpy_request_cancel_all(w);
    for (i = 0; (i < UCPY_CLOSE_ROUNDS) && !ucs_list_is_empty(&w->inflight);
         ++i) {
        ucp_worker_progress(w->worker);
    }

    ucp_worker_destroy(w->worker);
    w->worker = NULL;
    w->efd    = -1;
    ucpy_request_abandon_all(w);
    while (!ucs_list_is_empty(&w->conns)) {
        conn = ucs_list_head(&w->conns, ucpy_conn_t, link);
        ucpy_conn_free(conn, 0);
    }
    ucp_cleanup(w->context);
    w->context = NULL;
}

static PyObject *ucpy_worker_close(ucpy_worker_t *w, PyObject *unused)
{
    ucpy_worker_lock(w);
    ucpy_worker_close_locked(w);
    ucpy_worker_unlock(w);
    Py_RETURN_NONE;
}

static void ucpy_worker_dealloc(ucpy_worker_t *w)
{
    ucpy_request_t *req;

    /* nothing refers to the worker: no request is in flight, no endpoint
     * or listener is open; completed requests are only in `done` if
     * nobody drained them */
    ucpy_worker_close_locked(w);
    while (!ucs_list_is_empty(&w->done)) {
        req = ucs_list_extract_head(&w->done, ucpy_request_t, link);
        Py_DECREF(req);
    }
    pthread_mutex_destroy(&w->lock);
    Py_TYPE(w)->tp_free((PyObject*)w);
}

static PyObject *ucpy_worker_fileno(ucpy_worker_t *w, PyObject *unused)
{
    if (w->worker == NULL) {
        return ucpy_raise_closed("the UCX worker");
    }
    return PyLong_FromLong(w->efd);
}

static PyObject *ucpy_worker_progress(ucpy_worker_t *w, PyObject *unused)
{
    unsigned long total = 0;
    unsigned i, n;

    ucpy_worker_lock(w);
    if (ucpy_worker_check_open(w) != 0) {
        ucpy_worker_unlock(w);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (i = 0; i < UCPY_PROGRESS_ROUNDS; ++i) {
        n      = ucp_worker_progress(w->worker);
        total += n;
        if (n == 0) {
            break;
        }
    }
    Py_END_ALLOW_THREADS
    ucpy_worker_unlock(w);
    return PyLong_FromUnsignedLong(total);
}

/* True: armed, the event fd tells of the next event. False: there is work,
 * call progress() first. */
static PyObject *ucpy_worker_arm(ucpy_worker_t *w, PyObject *unused)
{
    ucs_status_t status;

    ucpy_worker_lock(w);
    if (ucpy_worker_check_open(w) != 0) {
        ucpy_worker_unlock(w);
        return NULL;
    }
    status = ucp_worker_arm(w->worker);
    ucpy_worker_unlock(w);
    if (status == UCS_OK) {
        Py_RETURN_TRUE;
    } else if (status == UCS_ERR_BUSY) {
        Py_RETURN_FALSE;
    }
    return ucpy_raise_status(status, "ucp_worker_arm");
}

/* Appends item (a new reference, or NULL on error) to *list; on any error
 * *list becomes NULL and what follows is only released */
static void ucpy_list_take(PyObject **list, PyObject *item)
{
    if ((*list != NULL) && ((item == NULL) ||
                            (PyList_Append(*list, item) != 0))) {
        Py_CLEAR(*list);
    }
    Py_XDECREF(item);
}

/* What the callbacks recorded since the last drain: taken off the worker's
 * lists with the lock held (references taken, no allocation), turned into
 * Python tuples after it is released (allocation may run finalizers that
 * close endpoints). */
static PyObject *ucpy_worker_drain(ucpy_worker_t *w, PyObject *unused)
{
    ucs_list_link_t reqs, errs, conns;
    ucpy_request_t *req;
    ucpy_endpoint_t *e;
    ucpy_conn_t *conn;
    PyObject *list;

    ucs_list_head_init(&reqs);
    ucs_list_head_init(&errs);
    ucs_list_head_init(&conns);

    ucpy_worker_lock(w);
    ucs_list_splice_tail(&reqs, &w->done);
    ucs_list_head_init(&w->done);
    while (!ucs_list_is_empty(&w->errs)) {
        e = ucs_list_extract_head(&w->errs, ucpy_endpoint_t, err_link);
        e->err_queued = 0;
        Py_INCREF(e);
        ucs_list_add_tail(&errs, &e->err_link);
    }
    ucs_list_for_each(conn, &w->conns, link) {
        Py_INCREF(conn->listener);
    }
    ucs_list_splice_tail(&conns, &w->conns);
    ucs_list_head_init(&w->conns);
    ucpy_worker_unlock(w);

    list = PyList_New(0);
    while (!ucs_list_is_empty(&reqs)) {
        req = ucs_list_extract_head(&reqs, ucpy_request_t, link);
        ucs_list_head_init(&req->link);
        ucpy_request_release_view(req);
        /* N: the tuple takes the reference UCP's in-flight use held */
        ucpy_list_take(&list, Py_BuildValue("(iNin)", UCPY_EV_DONE, req,
                                            req->status,
                                            (Py_ssize_t)req->length));
    }
    while (!ucs_list_is_empty(&errs)) {
        e = ucs_list_extract_head(&errs, ucpy_endpoint_t, err_link);
        ucs_list_head_init(&e->err_link);
        ucpy_list_take(&list, Py_BuildValue("(iNi)", UCPY_EV_ERROR, e,
                                            (int)e->err_status));
    }
    while (!ucs_list_is_empty(&conns)) {
        conn = ucs_list_extract_head(&conns, ucpy_conn_t, link);
        ucpy_list_take(&list, ucpy_conn_event(w, conn));
    }
    return list;
}

static PyObject *ucpy_worker_tag_recv(ucpy_worker_t *w, PyObject *args,
                                      PyObject *kwds)
{
    static char *kwlist[] = {"buffer", "tag", "mask", NULL};
    uint64_t tag, mask = UCPY_TAG_MASK_ALL;
    ucp_request_param_t param;
    ucpy_request_t *req;
    ucs_status_ptr_t sp;
    PyObject *buffer, *ret;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO&|O&", kwlist, &buffer,
                                     ucpy_conv_u64, &tag, ucpy_conv_u64,
                                     &mask)) {
        return NULL;
    }
    req = ucpy_request_new(w, UCPY_REQ_TAG_RECV, buffer, 1);
    if (req == NULL) {
        return NULL;
    }
    ucpy_request_param(req, &param);

    ucpy_worker_lock(w);
    if (ucpy_worker_check_open(w) != 0) {
        ucpy_worker_unlock(w);
        Py_DECREF(req);
        return NULL;
    }
    sp  = ucp_tag_recv_nbx(w->worker, req->view.buf, req->view.len, tag,
                           mask, &param);
    ret = ucpy_request_submitted(req, sp, "tag receive");
    ucpy_worker_unlock(w);
    return ret;
}

/* Is a message with this tag waiting (unexpected)? It stays queued. */
static PyObject *ucpy_worker_tag_probe(ucpy_worker_t *w, PyObject *args)
{
    ucp_tag_recv_info_t info;
    ucp_tag_message_h msg;
    uint64_t tag;

    if (!PyArg_ParseTuple(args, "O&", ucpy_conv_u64, &tag)) {
        return NULL;
    }
    ucpy_worker_lock(w);
    if (ucpy_worker_check_open(w) != 0) {
        ucpy_worker_unlock(w);
        return NULL;
    }
    msg = ucp_tag_probe_nb(w->worker, tag, UCPY_TAG_MASK_ALL, 0, &info);
    ucpy_worker_unlock(w);
    return PyBool_FromLong(msg != NULL);
}

static PyObject *ucpy_worker_listen(ucpy_worker_t *w, PyObject *args,
                                    PyObject *kwds)
{
    static char *kwlist[] = {"port", "ip", NULL};
    const char *ip = NULL;
    unsigned port;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|z", kwlist,
                                     ucpy_conv_port, &port, &ip)) {
        return NULL;
    }
    return (PyObject*)ucpy_listener_create(w, port, ip);
}

static PyObject *ucpy_worker_connect(ucpy_worker_t *w, PyObject *args,
                                     PyObject *kwds)
{
    static char *kwlist[] = {"ip", "port", "error_handling", NULL};
    ucp_ep_params_t params = {
        .field_mask = UCP_EP_PARAM_FIELD_FLAGS |
                      UCP_EP_PARAM_FIELD_SOCK_ADDR |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .flags      = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER
    };
    struct sockaddr_storage ss;
    int error_handling = 1;
    const char *ip;
    socklen_t len;
    unsigned port;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sO&|p", kwlist, &ip,
                                     ucpy_conv_port, &port,
                                     &error_handling)) {
        return NULL;
    }
    if (port == 0) {
        PyErr_SetString(PyExc_ValueError, "cannot connect to port 0");
        return NULL;
    }
    if (ucpy_sockaddr_parse(ip, port, &ss, &len) != 0) {
        return NULL;
    }
    params.sockaddr.addr    = (struct sockaddr*)&ss;
    params.sockaddr.addrlen = len;
    params.err_mode         = error_handling ? UCP_ERR_HANDLING_MODE_PEER :
                                               UCP_ERR_HANDLING_MODE_NONE;
    return (PyObject*)ucpy_endpoint_create(w, &params);
}

static void ucpy_worker_print(void *worker, FILE *stream)
{
    ucp_worker_print_info(worker, stream);
}

static PyObject *ucpy_worker_info(ucpy_worker_t *w, PyObject *unused)
{
    PyObject *str;

    ucpy_worker_lock(w);
    if (ucpy_worker_check_open(w) != 0) {
        ucpy_worker_unlock(w);
        return NULL;
    }
    str = ucpy_print_to_str(ucpy_worker_print, w->worker);
    ucpy_worker_unlock(w);
    return str;
}

static PyObject *ucpy_worker_get_handle(ucpy_worker_t *w, void *closure)
{
    return PyLong_FromVoidPtr(w->worker);
}


static PyMethodDef ucpy_worker_methods[] = {
    {"fileno", (PyCFunction)ucpy_worker_fileno, METH_NOARGS,
     "fileno() -> the worker's event fd (readable: call progress)"},
    {"progress", (PyCFunction)ucpy_worker_progress, METH_NOARGS,
     "progress() -> work done (runs ucp_worker_progress without the GIL)"},
    {"arm", (PyCFunction)ucpy_worker_arm, METH_NOARGS,
     "arm() -> True if armed, False if progress() has work to do first"},
    {"drain", (PyCFunction)ucpy_worker_drain, METH_NOARGS,
     "drain() -> [(EV_*, object, ...)] recorded by UCX callbacks"},
    {"tag_recv", (PyCFunction)ucpy_worker_tag_recv,
     METH_VARARGS | METH_KEYWORDS,
     "tag_recv(buffer, tag, mask=all) -> Request"},
    {"tag_probe", (PyCFunction)ucpy_worker_tag_probe, METH_VARARGS,
     "tag_probe(tag) -> whether a message with the tag is waiting"},
    {"listen", (PyCFunction)ucpy_worker_listen, METH_VARARGS | METH_KEYWORDS,
     "listen(port, ip=None) -> Listener (port 0: any free port)"},
    {"connect", (PyCFunction)ucpy_worker_connect,
     METH_VARARGS | METH_KEYWORDS,
     "connect(ip, port, error_handling=True) -> Endpoint (numeric ip)"},
    {"info", (PyCFunction)ucpy_worker_info, METH_NOARGS,
     "info() -> ucp_worker_print_info text"},
    {"close", (PyCFunction)ucpy_worker_close, METH_NOARGS,
     "close(): close listeners and endpoints, destroy worker and context"},
    {NULL}
};

static PyGetSetDef ucpy_worker_getset[] = {
    {"handle", (getter)ucpy_worker_get_handle, NULL,
     "the ucp_worker_h as an integer (0 once closed)", NULL},
    {NULL}
};

PyTypeObject ucpy_worker_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name      = "ucp._libucp.Worker",
    .tp_basicsize = sizeof(ucpy_worker_t),
    .tp_dealloc   = (destructor)ucpy_worker_dealloc,
    .tp_flags     = Py_TPFLAGS_DEFAULT,
    .tp_doc       = "Worker(options=None): a UCP context and worker",
    .tp_methods   = ucpy_worker_methods,
    .tp_getset    = ucpy_worker_getset,
    .tp_init      = (initproc)ucpy_worker_init,
    .tp_new       = ucpy_worker_new
};
