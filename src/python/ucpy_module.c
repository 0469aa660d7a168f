/**
 * Copyright (C) uccl contributors. See file LICENSE for terms.
 *
 * The module: types, status constants, the UCX version, and how a UCX
 * status becomes a Python exception (the classes live in ucp/exceptions.py,
 * which registers its factory here).
 */
#include "ucpy.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define UCPY_MSG_MAX  512

/* exceptions.py's _from_status(status, message) -> exception instance */
static PyObject *ucpy_error_factory;


PyObject *ucpy_raise_status(ucs_status_t status, const char *fmt, ...)
{
    char msg[UCPY_MSG_MAX];
    PyObject *exc;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if ((n >= 0) && ((size_t)n < sizeof(msg))) {
        snprintf(msg + n, sizeof(msg) - n, ": %s", ucs_status_string(status));
    }

    if (ucpy_error_factory == NULL) {
        PyErr_SetString(PyExc_RuntimeError, msg);
        return NULL;
    }
    exc = PyObject_CallFunction(ucpy_error_factory, "is", (int)status, msg);
    if (exc != NULL) {
        PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* An operation on something already closed */
PyObject *ucpy_raise_closed(const char *what)
{
    return ucpy_raise_status(UCS_ERR_NOT_CONNECTED, "%s is closed", what);
}

static PyObject *ucpy_set_error_factory(PyObject *self, PyObject *func)
{
    if (!PyCallable_Check(func)) {
        PyErr_SetString(PyExc_TypeError, "the error factory must be callable");
        return NULL;
    }
    Py_INCREF(func);
    Py_XSETREF(ucpy_error_factory, func);
    Py_RETURN_NONE;
}

static PyObject *ucpy_get_version(PyObject *self, PyObject *unused)
{
    unsigned major, minor, release;

    ucp_get_version(&major, &minor, &release);
    return Py_BuildValue("(III)", major, minor, release);
}

static PyObject *ucpy_status_string(PyObject *self, PyObject *arg)
{
    long status = PyLong_AsLong(arg);

    if ((status == -1) && PyErr_Occurred()) {
        return NULL;
    }
    if ((status > 0) || (status < INT8_MIN)) {
        PyErr_Format(PyExc_ValueError, "%ld is not a UCX status", status);
        return NULL;
    }
    return PyUnicode_FromString(ucs_status_string((ucs_status_t)status));
}


#define UCPY_CONFIG_PREFIX  "UCX_"

/* read_config(options=None) -> {NAME: value}: the configuration a Worker
 * with these options would get (environment first, options on top) */
static PyObject *ucpy_read_config(PyObject *self, PyObject *args)
{
    PyObject *options = NULL, *dict, *value;
    char *text = NULL, *line, *save, *eq;
    size_t size = 0;
    ucp_config_t *config;
    FILE *stream;
    int ret = 0;

    if (!PyArg_ParseTuple(args, "|O!", &PyDict_Type, &options)) {
        return NULL;
    }
    config = ucpy_worker_read_config(options);
    if (config == NULL) {
        return NULL;
    }
    stream = open_memstream(&text, &size);
    if (stream == NULL) {
        ucp_config_release(config);
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    ucp_config_print(config, stream, NULL, UCS_CONFIG_PRINT_CONFIG);
    fclose(stream);
    ucp_config_release(config);

    dict = PyDict_New();
    for (line = strtok_r(text, "\n", &save); (dict != NULL) && (line != NULL);
         line = strtok_r(NULL, "\n", &save)) {
        eq = strchr(line, '=');
        if ((strncmp(line, UCPY_CONFIG_PREFIX,
                     strlen(UCPY_CONFIG_PREFIX)) != 0) || (eq == NULL)) {
            continue;              /* comments and blank lines */
        }
        *eq   = '\0';
        value = PyUnicode_DecodeUTF8(eq + 1, strlen(eq + 1), "replace");
        ret   = (value == NULL) ? -1 :
                PyDict_SetItemString(dict, line + strlen(UCPY_CONFIG_PREFIX),
                                     value);
        Py_XDECREF(value);
        if (ret != 0) {
            Py_CLEAR(dict);
        }
    }
    free(text);
    return dict;
}

int ucpy_sockaddr_parse(const char *ip, unsigned port,
                        struct sockaddr_storage *ss, socklen_t *len)
{
    struct sockaddr_in *in4   = (struct sockaddr_in*)ss;
    struct sockaddr_in6 *in6  = (struct sockaddr_in6*)ss;

    memset(ss, 0, sizeof(*ss));
    if (port > UINT16_MAX) {
        PyErr_Format(PyExc_ValueError, "port %u out of range", port);
        return -1;
    }
    if (inet_pton(AF_INET, ip, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port   = htons(port);
        *len            = sizeof(*in4);
        return 0;
    }
    if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port   = htons(port);
        *len             = sizeof(*in6);
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "'%s' is not a numeric IP address", ip);
    return -1;
}

PyObject *ucpy_sockaddr_str(const struct sockaddr_storage *ss)
{
    char host[INET6_ADDRSTRLEN];
    const void *addr;
    unsigned port;

    if (ss->ss_family == AF_INET) {
        addr = &((const struct sockaddr_in*)ss)->sin_addr;
        port = ntohs(((const struct sockaddr_in*)ss)->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        addr = &((const struct sockaddr_in6*)ss)->sin6_addr;
        port = ntohs(((const struct sockaddr_in6*)ss)->sin6_port);
    } else {
        Py_RETURN_NONE;
    }
    if (inet_ntop(ss->ss_family, addr, host, sizeof(host)) == NULL) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(sI)", host, port);
}

PyObject *ucpy_print_to_str(ucpy_print_fn_t fn, void *obj)
{
    PyObject *str;
    char *text  = NULL;
    size_t size = 0;
    FILE *stream;

    stream = open_memstream(&text, &size);
    if (stream == NULL) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    fn(obj, stream);
    fclose(stream);
    str = PyUnicode_DecodeUTF8(text, size, "replace");
    free(text);
    return str;
}


static PyMethodDef ucpy_methods[] = {
    {"get_version", ucpy_get_version, METH_NOARGS,
     "get_version() -> (major, minor, release) of the UCX library in use"},
    {"read_config", ucpy_read_config, METH_VARARGS,
     "read_config(options=None) -> {NAME: value} without the UCX_ prefix"},
    {"status_string", ucpy_status_string, METH_O,
     "status_string(status) -> UCX's text for a status code"},
    {"_set_error_factory", ucpy_set_error_factory, METH_O,
     "_set_error_factory(f): f(status, message) makes the exceptions raised"},
    {NULL}
};

static struct PyModuleDef ucpy_module = {
    PyModuleDef_HEAD_INIT,
    .m_name    = "ucp._libucp",
    .m_doc     = "UCP (UCX) binding used by the ucp package",
    .m_size    = -1,
    .m_methods = ucpy_methods
};

static int ucpy_add_type(PyObject *m, PyTypeObject *type, const char *name)
{
    if (PyType_Ready(type) != 0) {
        return -1;
    }
    Py_INCREF(type);
    if (PyModule_AddObject(m, name, (PyObject*)type) != 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

#define UCPY_ADD_INT(_m, _name, _value) \
    if (PyModule_AddIntConstant(_m, _name, _value) != 0) { \
        goto err; \
    }

PyMODINIT_FUNC PyInit__libucp(void)
{
    PyObject *m = PyModule_Create(&ucpy_module);

    if (m == NULL) {
        return NULL;
    }
    if ((ucpy_add_type(m, &ucpy_worker_type, "Worker") != 0) ||
        (ucpy_add_type(m, &ucpy_endpoint_type, "Endpoint") != 0) ||
        (ucpy_add_type(m, &ucpy_listener_type, "Listener") != 0) ||
        (ucpy_add_type(m, &ucpy_request_type, "Request") != 0) ||
        (ucpy_add_type(m, &ucpy_conn_request_type, "ConnRequest") != 0)) {
        goto err;
    }

    UCPY_ADD_INT(m, "EV_DONE", UCPY_EV_DONE);
    UCPY_ADD_INT(m, "EV_ERROR", UCPY_EV_ERROR);
    UCPY_ADD_INT(m, "EV_CONN", UCPY_EV_CONN);
    UCPY_ADD_INT(m, "UCS_OK", UCS_OK);
    UCPY_ADD_INT(m, "UCS_ERR_CANCELED", UCS_ERR_CANCELED);
    UCPY_ADD_INT(m, "UCS_ERR_MESSAGE_TRUNCATED", UCS_ERR_MESSAGE_TRUNCATED);
    UCPY_ADD_INT(m, "UCS_ERR_CONNECTION_RESET", UCS_ERR_CONNECTION_RESET);
    UCPY_ADD_INT(m, "UCS_ERR_NOT_CONNECTED", UCS_ERR_NOT_CONNECTED);
    UCPY_ADD_INT(m, "UCS_ERR_UNREACHABLE", UCS_ERR_UNREACHABLE);
    UCPY_ADD_INT(m, "UCS_ERR_ENDPOINT_TIMEOUT", UCS_ERR_ENDPOINT_TIMEOUT);
    UCPY_ADD_INT(m, "UCS_ERR_INVALID_PARAM", UCS_ERR_INVALID_PARAM);
    UCPY_ADD_INT(m, "UCS_ERR_NO_ELEM", UCS_ERR_NO_ELEM);
    UCPY_ADD_INT(m, "UCS_ERR_BUSY", UCS_ERR_BUSY);
    return m;

err:
    Py_DECREF(m);
    return NULL;
}
