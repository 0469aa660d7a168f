/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * Listener: a UCP listener on a socket address. Connection requests arrive
 * through Worker.drain() as ConnRequest objects, each accepted (an
 * Endpoint) or rejected exactly once; one that is dropped is rejected.
 */
#include "ucpy.h"

#include <structmember.h>

#define UCPY_LISTENER_NAME  "the UCX listener"


/* Lock held. reject: tell the client (the listener still exists) */
void ucpy_conn_free(ucpy_conn_t *conn, int reject)
{
    if (reject && (conn->listener->listener != NULL)) {
        ucp_listener_reject(conn->listener->listener, conn->conn_request);
    }
    ucs_list_del(&conn->link);
    free(conn);
}

/* UCX connection handler (from progress, lock held, no Python) */
static void ucpy_listener_conn_cb(ucp_conn_request_h conn_request, void *arg)
{
    ucpy_listener_t *l = arg;
    ucpy_conn_t *conn;

    conn = malloc(sizeof(*conn));
    if (conn == NULL) {
        ucp_listener_reject(l->listener, conn_request);
        return;
    }
    conn->listener     = l;
    conn->conn_request = conn_request;
    ucs_list_add_tail(&l->worker->conns, &conn->link);
}

/* A listener on ip (NULL: every address) and port (0: any free one) */
ucpy_listener_t *ucpy_listener_create(ucpy_worker_t *w, unsigned port,
                                      const char *ip)
{
    ucp_listener_params_t params = {
        .field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                      UCP_LISTENER_PARAM_FIELD_CONN_HANDLER
    };
    struct sockaddr_storage ss;
    ucpy_listener_t *l;
    ucs_status_t status;
    socklen_t len;

    if (ip == NULL) {
        ip = "0.0.0.0";
    }
    if (ucpy_sockaddr_parse(ip, port, &ss, &len) != 0) {
        return NULL;
    }
    l = PyObject_New(ucpy_listener_t, &ucpy_listener_type);
    if (l == NULL) {
        return NULL;
    }
    Py_INCREF(w);
    l->worker   = w;
    l->listener = NULL;
    ucs_list_head_init(&l->link);

    params.sockaddr.addr    = (struct sockaddr*)&ss;
    params.sockaddr.addrlen = len;
    params.conn_handler.cb  = ucpy_listener_conn_cb;
    params.conn_handler.arg = l;

    ucpy_worker_lock(w);
    if (ucpy_worker_check_open(w) != 0) {
        ucpy_worker_unlock(w);
        Py_DECREF(l);
        return NULL;
    }
    status = ucp_listener_create(w->worker, &params, &l->listener);
    if (status == UCS_OK) {
        ucs_list_add_tail(&w->listeners, &l->link);
    }
    ucpy_worker_unlock(w);
    if (status != UCS_OK) {
        l->listener = NULL;
        Py_DECREF(l);
        ucpy_raise_status(status, "cannot listen on %s:%u", ip, port);
        return NULL;
    }
    return l;
}

static PyObject *ucpy_conn_request_make(ucpy_conn_t *conn)
{
    ucp_conn_request_attr_t attr = {
        .field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR
    };
    ucpy_conn_request_t *cr;

    cr = PyObject_New(ucpy_conn_request_t, &ucpy_conn_request_type);
    if (cr == NULL) {
        return NULL;
    }
    cr->listener     = conn->listener;     /* the reference drain() took */
    cr->conn_request = conn->conn_request;
    cr->client       = NULL;
    if (ucp_conn_request_query(conn->conn_request, &attr) == UCS_OK) {
        cr->client = ucpy_sockaddr_str(&attr.client_address);
    }
    if (cr->client == NULL) {
        PyErr_Clear();
        Py_INCREF(Py_None);
        cr->client = Py_None;
    }
    return (PyObject*)cr;
}

/* A connection request as a ConnRequest; rejected if that fails */
PyObject *ucpy_conn_event(ucpy_worker_t *w, ucpy_conn_t *conn)
{
    PyObject *cr = ucpy_conn_request_make(conn), *item;

    if (cr == NULL) {
        ucpy_worker_lock(w);
        if (conn->listener->listener != NULL) {
            ucp_listener_reject(conn->listener->listener,
                                conn->conn_request);
        }
        ucpy_worker_unlock(w);
        Py_DECREF(conn->listener);
        free(conn);
        return NULL;
    }
    item = Py_BuildValue("(iON)", UCPY_EV_CONN, conn->listener, cr);
    free(conn);
    return item;
}

/* Lock held: the connections it has not reported yet are rejected */
void ucpy_listener_destroy(ucpy_listener_t *l)
{
    ucpy_conn_t *conn, *tmp;

    if (l->listener == NULL) {
        return;
    }
    ucs_list_for_each_safe(conn, tmp, &l->worker->conns, link) {
        if (conn->listener == l) {
            ucpy_conn_free(conn, 1);
        }
    }
    ucp_listener_destroy(l->listener);
    l->listener = NULL;
    ucs_list_del(&l->link);
    ucs_list_head_init(&l->link);
}

static PyObject *ucpy_listener_close(ucpy_listener_t *l, PyObject *unused)
{
    ucpy_worker_lock(l->worker);
    ucpy_listener_destroy(l);
    ucpy_worker_unlock(l->worker);
    Py_RETURN_NONE;
}

/* (ip, port) the listener is bound to */
static PyObject *ucpy_listener_address(ucpy_listener_t *l, void *closure)
{
    ucp_listener_attr_t attr = {
        .field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR
    };
    ucs_status_t status;

    ucpy_worker_lock(l->worker);
    if (l->listener == NULL) {
        ucpy_worker_unlock(l->worker);
        return ucpy_raise_closed(UCPY_LISTENER_NAME);
    }
    status = ucp_listener_query(l->listener, &attr);
    ucpy_worker_unlock(l->worker);
    if (status != UCS_OK) {
        return ucpy_raise_status(status, "ucp_listener_query");
    }
    return ucpy_sockaddr_str(&attr.sockaddr);
}

static PyObject *ucpy_listener_is_open(ucpy_listener_t *l, void *closure)
{
    return PyBool_FromLong(l->listener != NULL);
}

/* Lock held: the request if it is this listener's and unused, else
 * raises */
static ucp_conn_request_h ucpy_listener_take(ucpy_listener_t *l,
                                             PyObject *obj)
{
    ucpy_conn_request_t *cr = (ucpy_conn_request_t*)obj;
    ucp_conn_request_h conn_request;

    if (!PyObject_TypeCheck(obj, &ucpy_conn_request_type)) {
        PyErr_SetString(PyExc_TypeError, "a ConnRequest is required");
        return NULL;
    }
    if (cr->listener != l) {
        PyErr_SetString(PyExc_ValueError,
                        "the ConnRequest belongs to another listener");
        return NULL;
    }
    if (cr->conn_request == NULL) {
        PyErr_SetString(PyExc_ValueError,
                        "the ConnRequest was accepted or rejected already");
        return NULL;
    }
    if ((l->listener == NULL) || (l->worker->worker == NULL)) {
        ucpy_raise_closed(UCPY_LISTENER_NAME);
        return NULL;
    }
    conn_request     = cr->conn_request;
    cr->conn_request = NULL;
    return conn_request;
}

static PyObject *ucpy_listener_accept(ucpy_listener_t *l, PyObject *args,
                                      PyObject *kwds)
{
    static char *kwlist[] = {"conn_request", "error_handling", NULL};
    ucp_ep_params_t params = {
        .field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
    };
    int error_handling = 1;
    PyObject *obj;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|p", kwlist, &obj,
                                     &error_handling)) {
        return NULL;
    }
    ucpy_worker_lock(l->worker);
    params.conn_request = ucpy_listener_take(l, obj);
    ucpy_worker_unlock(l->worker);
    if (params.conn_request == NULL) {
        return NULL;
    }
    params.err_mode = error_handling ? UCP_ERR_HANDLING_MODE_PEER :
                                       UCP_ERR_HANDLING_MODE_NONE;
    return (PyObject*)ucpy_endpoint_create(l->worker, &params);
}

static PyObject *ucpy_listener_reject(ucpy_listener_t *l, PyObject *obj)
{
    ucp_conn_request_h conn_request;
    ucs_status_t status;

    ucpy_worker_lock(l->worker);
    conn_request = ucpy_listener_take(l, obj);
    status = (conn_request != NULL) ?
             ucp_listener_reject(l->listener, conn_request) : UCS_OK;
    ucpy_worker_unlock(l->worker);
    if (conn_request == NULL) {
        return NULL;
    }
    if (status != UCS_OK) {
        return ucpy_raise_status(status, "ucp_listener_reject");
    }
    Py_RETURN_NONE;
}

static void ucpy_listener_dealloc(ucpy_listener_t *l)
{
    if (l->listener != NULL) {
        ucpy_worker_lock(l->worker);
        ucpy_listener_destroy(l);
        ucpy_worker_unlock(l->worker);
    }
    Py_XDECREF(l->worker);
    PyObject_Free(l);
}

static PyMethodDef ucpy_listener_methods[] = {
    {"accept", (PyCFunction)ucpy_listener_accept,
     METH_VARARGS | METH_KEYWORDS,
     "accept(conn_request, error_handling=True) -> Endpoint"},
    {"reject", (PyCFunction)ucpy_listener_reject, METH_O,
     "reject(conn_request)"},
    {"close", (PyCFunction)ucpy_listener_close, METH_NOARGS,
     "close(): stop listening"},
    {NULL}
};

static PyGetSetDef ucpy_listener_getset[] = {
    {"address", (getter)ucpy_listener_address, NULL,
     "(ip, port) the listener is bound to", NULL},
    {"is_open", (getter)ucpy_listener_is_open, NULL,
     "False once closed", NULL},
    {NULL}
};

PyTypeObject ucpy_listener_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name      = "ucp._libucp.Listener",
    .tp_basicsize = sizeof(ucpy_listener_t),
    .tp_dealloc   = (destructor)ucpy_listener_dealloc,
    .tp_flags     = Py_TPFLAGS_DEFAULT,
    .tp_doc       = "A UCP listener (made by Worker.listen)",
    .tp_methods   = ucpy_listener_methods,
    .tp_getset    = ucpy_listener_getset
};


static void ucpy_conn_request_dealloc(ucpy_conn_request_t *cr)
{
    ucpy_listener_t *l = cr->listener;

    if (cr->conn_request != NULL) {
        ucpy_worker_lock(l->worker);
        if ((l->listener != NULL) && (l->worker->worker != NULL)) {
            ucp_listener_reject(l->listener, cr->conn_request);
        }
        ucpy_worker_unlock(l->worker);
    }
    Py_XDECREF(cr->client);
    Py_XDECREF(l);
    PyObject_Free(cr);
}

static PyMemberDef ucpy_conn_request_members[] = {
    {"client", T_OBJECT, offsetof(ucpy_conn_request_t, client), READONLY,
     "(ip, port) of the client, or None"},
    {NULL}
};

PyTypeObject ucpy_conn_request_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name      = "ucp._libucp.ConnRequest",
    .tp_basicsize = sizeof(ucpy_conn_request_t),
    .tp_dealloc   = (destructor)ucpy_conn_request_dealloc,
    .tp_flags     = Py_TPFLAGS_DEFAULT,
    .tp_doc       = "A connection request a Listener received",
    .tp_members   = ucpy_conn_request_members
};
