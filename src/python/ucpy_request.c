/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Requests: one posted UCP operation and the user buffer it holds. The
 * buffer stays exported (Py_buffer) until UCP is done with it, also when
 * the Python side stopped waiting (a cancelled task), so UCX never writes
 * into or reads from freed memory.
 */
#include "ucpy.h"

#include <structmember.h>


void ucpy_request_release_view(ucpy_request_t *req)
{
    if (req->has_view) {
        req->has_view = 0;
        PyBuffer_Release(&req->view);
    }
}

/* The object's bytes: any contiguous buffer (C or Fortran order) */
static int ucpy_request_get_view(ucpy_request_t *req, PyObject *buffer,
                                 int writable)
{
    int flags = PyBUF_ANY_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);

    if (!PyObject_CheckBuffer(buffer)) {
        PyErr_Format(PyExc_TypeError,
                     "a host memory object with the buffer protocol is "
                     "required, not '%.100s'", Py_TYPE(buffer)->tp_name);
        return -1;
    }
    if (PyObject_GetBuffer(buffer, &req->view, flags) != 0) {
        if (PyErr_ExceptionMatches(PyExc_BufferError) ||
            PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError,
                         "the buffer of '%.100s' must be contiguous%s",
                         Py_TYPE(buffer)->tp_name,
                         writable ? " and writable" : "");
        }
        return -1;
    }
    req->has_view = 1;
    req->size     = req->view.len;
    return 0;
}

ucpy_request_t *ucpy_request_new(ucpy_worker_t *w, ucpy_req_kind_t kind,
                                 PyObject *buffer, int writable)
{
    ucpy_request_t *req;

    req = PyObject_New(ucpy_request_t, &ucpy_request_type);
    if (req == NULL) {
        return NULL;
    }
    Py_INCREF(w);
    req->worker   = w;
    req->ucx_req  = NULL;
    req->kind     = kind;
    req->done     = 0;
    req->status   = UCS_INPROGRESS;
    req->size     = 0;
    req->length   = 0;
    req->has_view = 0;
    ucs_list_head_init(&req->link);

    if ((buffer != NULL) &&
        (ucpy_request_get_view(req, buffer, writable) != 0)) {
        Py_DECREF(req);
        return NULL;
    }
    return req;
}

/* UCP callbacks: no Python here (see ucpy.h). The worker's lock is held by
 * the thread that called into UCP. */
static void ucpy_request_complete(ucpy_request_t *req, void *ucx_req,
                                  ucs_status_t status, size_t length)
{
    req->status  = status;
    req->length  = length;
    req->done    = 1;
    req->ucx_req = NULL;
    ucp_request_free(ucx_req);
    ucs_list_del(&req->link);
    ucs_list_add_tail(&req->worker->done, &req->link);
}

static void ucpy_send_cb(void *ucx_req, ucs_status_t status, void *arg)
{
    ucpy_request_complete(arg, ucx_req, status, 0);
}

static void ucpy_tag_recv_cb(void *ucx_req, ucs_status_t status,
                             const ucp_tag_recv_info_t *info, void *arg)
{
    ucpy_request_complete(arg, ucx_req, status,
                          (status == UCS_OK) ? info->length : 0);
}

static void ucpy_stream_recv_cb(void *ucx_req, ucs_status_t status,
                                size_t length, void *arg)
{
    ucpy_request_complete(arg, ucx_req, status, length);
}

void ucpy_request_param(ucpy_request_t *req, ucp_request_param_t *param)
{
    memset(param, 0, sizeof(*param));
    param->op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                          UCP_OP_ATTR_FIELD_USER_DATA;
    param->user_data    = req;
    switch (req->kind) {
    case UCPY_REQ_TAG_RECV:
        /* the length of an immediate completion is not reported by every
         * UCX (1.13 ignores recv_info): always through the callback */
        param->cb.recv       = ucpy_tag_recv_cb;
        param->op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        break;
    case UCPY_REQ_STREAM_RECV:
        param->cb.recv_stream = ucpy_stream_recv_cb;
        param->op_attr_mask  |= UCP_OP_ATTR_FIELD_FLAGS;
        param->flags          = UCP_STREAM_RECV_FLAG_WAITALL;
        break;
    default:
        param->cb.send = ucpy_send_cb;
        break;
    }
    if (req->has_view) {
        /* host memory only: no memory type detection */
        param->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        param->memory_type   = UCS_MEMORY_TYPE_HOST;
    }
}

/* What UCP returned for a posted request (worker lock held): completed
 * now, in flight, or an error (raised). Returns the request or NULL. */
PyObject *ucpy_request_submitted(ucpy_request_t *req, ucs_status_ptr_t sp,
                                 const char *what)
{
    ucs_status_t status;

    if (UCS_PTR_IS_PTR(sp)) {
        Py_INCREF(req);                      /* UCP's, until drained */
        if (!req->done) {
            req->ucx_req = sp;
            ucs_list_add_tail(&req->worker->inflight, &req->link);
        } /* else the callback ran already (NO_IMM_CMPL): in `done` */
        return (PyObject*)req;
    }

    status = UCS_PTR_STATUS(sp);
    if (status != UCS_OK) {
        ucpy_request_release_view(req);
        Py_DECREF(req);
        return ucpy_raise_status(status, "%s failed", what);
    }

    req->done   = 1;
    req->status = UCS_OK;
    ucpy_request_release_view(req);
    return (PyObject*)req;
}

/* Before the worker goes: ask UCP to complete what it can */
void ucpy_request_cancel_all(ucpy_worker_t *w)
{
    ucpy_request_t *req, *tmp;

    ucs_list_for_each_safe(req, tmp, &w->inflight, link) {
        ucp_request_cancel(w->worker, req->ucx_req);
    }
}

/* After the worker is gone: what UCP never completed ends as cancelled */
void ucpy_request_abandon_all(ucpy_worker_t *w)
{
    ucpy_request_t *req;

    while (!ucs_list_is_empty(&w->inflight)) {
        req = ucs_list_head(&w->inflight, ucpy_request_t, link);
        req->ucx_req = NULL;
        req->status  = UCS_ERR_CANCELED;
        req->done    = 1;
        ucs_list_del(&req->link);
        ucs_list_add_tail(&w->done, &req->link);
    }
}


static PyObject *ucpy_request_cancel(ucpy_request_t *req, PyObject *unused)
{
    ucpy_worker_t *w = req->worker;

    ucpy_worker_lock(w);
    if (!req->done && (req->ucx_req != NULL) && (w->worker != NULL)) {
        /* may complete it at once: the callback only records that */
        ucp_request_cancel(w->worker, req->ucx_req);
    }
    ucpy_worker_unlock(w);
    Py_RETURN_NONE;
}

static void ucpy_request_dealloc(ucpy_request_t *req)
{
    ucpy_request_release_view(req);
    Py_XDECREF(req->worker);
    PyObject_Free(req);
}

static PyObject *ucpy_request_repr(ucpy_request_t *req)
{
    static const char *kinds[] = {
        [UCPY_REQ_TAG_SEND]    = "tag_send",
        [UCPY_REQ_TAG_RECV]    = "tag_recv",
        [UCPY_REQ_STREAM_SEND] = "stream_send",
        [UCPY_REQ_STREAM_RECV] = "stream_recv",
        [UCPY_REQ_CLOSE]       = "close"
    };

    return PyUnicode_FromFormat("<ucp._libucp.Request %s %s>",
                                kinds[req->kind],
                                req->done ?
                                ucs_status_string((ucs_status_t)req->status) :
                                            "in flight");
}

static PyMethodDef ucpy_request_methods[] = {
    {"cancel", (PyCFunction)ucpy_request_cancel, METH_NOARGS,
     "cancel(): ask UCP to cancel (only unmatched tag receives can be)"},
    {NULL}
};

static PyMemberDef ucpy_request_members[] = {
    {"done", T_INT, offsetof(ucpy_request_t, done), READONLY,
     "1 once UCP completed the operation"},
    {"status", T_INT, offsetof(ucpy_request_t, status), READONLY,
     "UCX status of the completed operation"},
    {"size", T_PYSSIZET, offsetof(ucpy_request_t, size), READONLY,
     "bytes of the buffer"},
    {"length", T_PYSSIZET, offsetof(ucpy_request_t, length), READONLY,
     "bytes received"},
    {NULL}
};

PyTypeObject ucpy_request_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name      = "ucp._libucp.Request",
    .tp_basicsize = sizeof(ucpy_request_t),
    .tp_dealloc   = (destructor)ucpy_request_dealloc,
    .tp_repr      = (reprfunc)ucpy_request_repr,
    .tp_flags     = Py_TPFLAGS_DEFAULT,
    .tp_doc       = "A posted UCP operation (made by Endpoint/Worker methods)",
    .tp_methods   = ucpy_request_methods,
    .tp_members   = ucpy_request_members
};
