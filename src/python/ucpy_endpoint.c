/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Endpoint: a UCP endpoint (client-server, error handling PEER), its tag
 * and stream sends, stream receives, close, and ucp_ep_print_info (the
 * lanes UCP chose).
 */
#include "ucpy.h"

#include <structmember.h>

#define UCPY_ENDPOINT_NAME  "the UCX endpoint"


/* UCX error callback (from progress, lock held, no Python): recorded once */
static void ucpy_endpoint_err_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    ucpy_endpoint_t *e = arg;

    if (e->err_queued || (e->ep == NULL)) {
        return;
    }
    e->err_status = status;
    e->err_queued = 1;
    ucs_list_add_tail(&e->worker->errs, &e->err_link);
}

ucpy_endpoint_t *ucpy_endpoint_create(ucpy_worker_t *w,
                                      ucp_ep_params_t *params)
{
    ucpy_endpoint_t *e;
    ucs_status_t status;

    e = PyObject_New(ucpy_endpoint_t, &ucpy_endpoint_type);
    if (e == NULL) {
        return NULL;
    }
    Py_INCREF(w);
    e->worker     = w;
    e->ep         = NULL;
    e->handle     = 0;
    e->err_status = UCS_OK;
    e->err_queued = 0;
    ucs_list_head_init(&e->err_link);
    ucs_list_head_init(&e->link);

    if (params->err_mode == UCP_ERR_HANDLING_MODE_PEER) {
        params->field_mask     |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params->err_handler.cb  = ucpy_endpoint_err_cb;
        params->err_handler.arg = e;
    }

    ucpy_worker_lock(w);
    if (ucpy_worker_check_open(w) != 0) {
        ucpy_worker_unlock(w);
        Py_DECREF(e);
        return NULL;
    }
    status = ucp_ep_create(w->worker, params, &e->ep);
    if (status == UCS_OK) {
        e->handle = (uintptr_t)e->ep;
        ucs_list_add_tail(&w->eps, &e->link);
    }
    ucpy_worker_unlock(w);
    if (status != UCS_OK) {
        e->ep = NULL;
        Py_DECREF(e);
        ucpy_raise_status(status, "ucp_ep_create");
        return NULL;
    }
    return e;
}

/* Lock held: the endpoint leaves the worker's lists; no callback of it
 * comes after ucp_ep_close_nbx */
static ucp_ep_h ucpy_endpoint_detach(ucpy_endpoint_t *e)
{
    ucp_ep_h ep = e->ep;

    e->ep = NULL;
    ucs_list_del(&e->link);
    ucs_list_head_init(&e->link);
    if (e->err_queued) {
        e->err_queued = 0;
        ucs_list_del(&e->err_link);
        ucs_list_head_init(&e->err_link);
    }
    return ep;
}

/* Lock held: close without waiting; UCP frees the request when done */
void ucpy_endpoint_force_close(ucpy_endpoint_t *e)
{
    ucp_request_param_t param = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
        .flags        = UCP_EP_CLOSE_FLAG_FORCE
    };
    ucs_status_ptr_t sp;

    if (e->ep == NULL) {
        return;
    }
    sp = ucp_ep_close_nbx(ucpy_endpoint_detach(e), &param);
    if (UCS_PTR_IS_PTR(sp)) {
        ucp_request_free(sp);
    }
}

/* Lock held: 0 if the endpoint is usable, else raises */
static int ucpy_endpoint_check_open(ucpy_endpoint_t *e)
{
    if ((ucpy_worker_check_open(e->worker) != 0)) {
        return -1;
    }
    if (e->ep == NULL) {
        ucpy_raise_closed(UCPY_ENDPOINT_NAME);
        return -1;
    }
    return 0;
}

typedef ucs_status_ptr_t (*ucpy_post_fn_t)(ucpy_endpoint_t *e,
                                           ucpy_request_t *req,
                                           uint64_t tag,
                                           const ucp_request_param_t *param);

/* Posts one buffer operation on the endpoint */
static PyObject *ucpy_endpoint_post(ucpy_endpoint_t *e, ucpy_req_kind_t kind,
                                    PyObject *buffer, uint64_t tag,
                                    ucpy_post_fn_t post, const char *what)
{
    ucp_request_param_t param;
    ucpy_request_t *req;
    PyObject *ret;

    req = ucpy_request_new(e->worker, kind, buffer,
                           kind == UCPY_REQ_STREAM_RECV);
    if (req == NULL) {
        return NULL;
    }
    ucpy_request_param(req, &param);

    ucpy_worker_lock(e->worker);
    if (ucpy_endpoint_check_open(e) != 0) {
        ucpy_worker_unlock(e->worker);
        Py_DECREF(req);
        return NULL;
    }
    ret = ucpy_request_submitted(req, post(e, req, tag, &param), what);
    ucpy_worker_unlock(e->worker);
    return ret;
}

static ucs_status_ptr_t ucpy_post_tag_send(ucpy_endpoint_t *e,
                                           ucpy_request_t *req, uint64_t tag,
                                           const ucp_request_param_t *param)
{
    return ucp_tag_send_nbx(e->ep, req->view.buf, req->view.len, tag, param);
}

static ucs_status_ptr_t ucpy_post_stream_send(ucpy_endpoint_t *e,
                                              ucpy_request_t *req,
                                              uint64_t tag,
                                              const ucp_request_param_t *param)
{
    return ucp_stream_send_nbx(e->ep, req->view.buf, req->view.len, param);
}

static ucs_status_ptr_t ucpy_post_stream_recv(ucpy_endpoint_t *e,
                                              ucpy_request_t *req,
                                              uint64_t tag,
                                              const ucp_request_param_t *param)
{
    return ucp_stream_recv_nbx(e->ep, req->view.buf, req->view.len,
                               &req->length, param);
}

static PyObject *ucpy_endpoint_tag_send(ucpy_endpoint_t *e, PyObject *args,
                                        PyObject *kwds)
{
    static char *kwlist[] = {"buffer", "tag", NULL};
    unsigned long long tag;
    PyObject *buffer, *tag_obj;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!", kwlist, &buffer,
                                     &PyLong_Type, &tag_obj)) {
        return NULL;
    }
    tag = PyLong_AsUnsignedLongLong(tag_obj);
    if ((tag == (unsigned long long)-1) && PyErr_Occurred()) {
        return NULL;
    }
    return ucpy_endpoint_post(e, UCPY_REQ_TAG_SEND, buffer, tag,
                              ucpy_post_tag_send, "tag send");
}

static PyObject *ucpy_endpoint_stream_send(ucpy_endpoint_t *e,
                                           PyObject *buffer)
{
    return ucpy_endpoint_post(e, UCPY_REQ_STREAM_SEND, buffer, 0,
                              ucpy_post_stream_send, "stream send");
}

/* Completes when the whole buffer is filled */
static PyObject *ucpy_endpoint_stream_recv(ucpy_endpoint_t *e,
                                           PyObject *buffer)
{
    return ucpy_endpoint_post(e, UCPY_REQ_STREAM_RECV, buffer, 0,
                              ucpy_post_stream_recv, "stream receive");
}

/* close(force=False) -> Request, or None if already closed. Flush mode
 * lets what was sent arrive first; force drops it. */
static PyObject *ucpy_endpoint_close(ucpy_endpoint_t *e, PyObject *args,
                                     PyObject *kwds)
{
    static char *kwlist[] = {"force", NULL};
    ucp_request_param_t param;
    ucpy_request_t *req;
    ucs_status_ptr_t sp;
    PyObject *ret;
    int force = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|p", kwlist, &force)) {
        return NULL;
    }
    req = ucpy_request_new(e->worker, UCPY_REQ_CLOSE, NULL, 0);
    if (req == NULL) {
        return NULL;
    }
    ucpy_request_param(req, &param);
    if (force) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
        param.flags         = UCP_EP_CLOSE_FLAG_FORCE;
    }

    ucpy_worker_lock(e->worker);
    if ((e->ep == NULL) || (e->worker->worker == NULL)) {
        ucpy_worker_unlock(e->worker);
        Py_DECREF(req);
        Py_RETURN_NONE;
    }
    sp = ucp_ep_close_nbx(ucpy_endpoint_detach(e), &param);
    if (UCS_PTR_IS_ERR(sp)) {
        /* the endpoint is gone all the same: report the status */
        req->done   = 1;
        req->status = UCS_PTR_STATUS(sp);
        ret         = (PyObject*)req;
    } else {
        ret = ucpy_request_submitted(req, sp, "close");
    }
    ucpy_worker_unlock(e->worker);
    return ret;
}

static void ucpy_endpoint_print(void *ep, FILE *stream)
{
    ucp_ep_print_info(ep, stream);
}

static PyObject *ucpy_endpoint_info(ucpy_endpoint_t *e, PyObject *unused)
{
    PyObject *str;

    ucpy_worker_lock(e->worker);
    if (ucpy_endpoint_check_open(e) != 0) {
        ucpy_worker_unlock(e->worker);
        return NULL;
    }
    str = ucpy_print_to_str(ucpy_endpoint_print, e->ep);
    ucpy_worker_unlock(e->worker);
    return str;
}

static PyObject *ucpy_endpoint_is_open(ucpy_endpoint_t *e, void *closure)
{
    return PyBool_FromLong(e->ep != NULL);
}

static void ucpy_endpoint_dealloc(ucpy_endpoint_t *e)
{
    if (e->ep != NULL) {
        ucpy_worker_lock(e->worker);
        if (e->worker->worker != NULL) {
            ucpy_endpoint_force_close(e);
        }
        ucpy_worker_unlock(e->worker);
    }
    Py_XDECREF(e->worker);
    PyObject_Free(e);
}

static PyMethodDef ucpy_endpoint_methods[] = {
    {"tag_send", (PyCFunction)ucpy_endpoint_tag_send,
     METH_VARARGS | METH_KEYWORDS, "tag_send(buffer, tag) -> Request"},
    {"stream_send", (PyCFunction)ucpy_endpoint_stream_send, METH_O,
     "stream_send(buffer) -> Request"},
    {"stream_recv", (PyCFunction)ucpy_endpoint_stream_recv, METH_O,
     "stream_recv(buffer) -> Request (done when the buffer is full)"},
    {"close", (PyCFunction)ucpy_endpoint_close, METH_VARARGS | METH_KEYWORDS,
     "close(force=False) -> Request, or None if already closed"},
    {"info", (PyCFunction)ucpy_endpoint_info, METH_NOARGS,
     "info() -> ucp_ep_print_info text (configuration and lanes)"},
    {NULL}
};

static PyMemberDef ucpy_endpoint_members[] = {
    {"handle", T_ULONGLONG, offsetof(ucpy_endpoint_t, handle), READONLY,
     "the ucp_ep_h as an integer (kept after close, as an id)"},
    {NULL}
};

static PyGetSetDef ucpy_endpoint_getset[] = {
    {"is_open", (getter)ucpy_endpoint_is_open, NULL,
     "False once closed", NULL},
    {NULL}
};

PyTypeObject ucpy_endpoint_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name      = "ucp._libucp.Endpoint",
    .tp_basicsize = sizeof(ucpy_endpoint_t),
    .tp_dealloc   = (destructor)ucpy_endpoint_dealloc,
    .tp_flags     = Py_TPFLAGS_DEFAULT,
    .tp_doc       = "A UCP endpoint (made by Worker.connect or "
                    "Listener.accept)",
    .tp_methods   = ucpy_endpoint_methods,
    .tp_members   = ucpy_endpoint_members,
    .tp_getset    = ucpy_endpoint_getset
};
