/* `splice.TextSplice` in C: the same class, read, matched and written in one call without a Python object per
 * piece but the bytes written. `splice.py` is the reference; tests/test_splice.py holds the two equal. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>

#define MAX_SPLICED (1 << 16)
#define MAX_PENDING (1 << 20)

typedef struct {
    PyObject_HEAD
    PyObject *cycle;
    PyObject *before; /* b"data: " + the upstream frame's bytes before the string */
    PyObject *after;
    PyObject *prefix;
    PyObject *suffix;
    char *text; /* the spliced strings' insides, still escaped */
    Py_ssize_t text_len;
    Py_ssize_t text_cap;
    char *out; /* the client's chunks for the pieces of this read, written at its end (flush) */
    Py_ssize_t out_len;
    Py_ssize_t out_cap;
    int armed;
    Py_ssize_t count;
    double last_at;
} TextSplice;

static PyObject *orjson_loads, *monotonic;
static PyObject *str_flow, *str_write_paused, *str_disconnected, *str_response_complete, *str_transport, *str_write;

static int hex_digit(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static int continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

/* Whether s[0:n] is a JSON string, not empty, in the bytes orjson writes for its value. */
static int canonical_string(const unsigned char *s, Py_ssize_t n) {
    if (n < 3 || n >= MAX_SPLICED || s[0] != '"' || s[n - 1] != '"') return 0;
    Py_ssize_t i = 1, end = n - 1;
    while (i < end) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x80) {
            if (c == '"') return 0;
            if (c != '\\') {
                i++;
                continue;
            }
            if (i + 1 >= end) return 0;
            switch (s[i + 1]) {
            case '"': case '\\': case 'b': case 'f': case 'n': case 'r': case 't':
                i += 2;
                continue;
            case 'u': {
                if (i + 6 > end || s[i + 2] != '0' || s[i + 3] != '0') return 0;
                int high = hex_digit(s[i + 4]), low = hex_digit(s[i + 5]);
                if (high < 0 || high > 1 || low < 0) return 0;
                int value = high * 16 + low;
                if (value == 8 || value == 9 || value == 10 || value == 12 || value == 13) return 0;
                i += 6;
                continue;
            }
            default:
                return 0;
            }
        }
        if (c < 0x20) return 0;
        /* UTF-8, as strict as a decoder: no overlong forms, no surrogates, nothing past U+10FFFF */
        Py_ssize_t more;
        unsigned char low = 0x80, high = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) more = 1;
        else if (c == 0xE0) { more = 2; low = 0xA0; }
        else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) more = 2;
        else if (c == 0xED) { more = 2; high = 0x9F; }
        else if (c == 0xF0) { more = 3; low = 0x90; }
        else if (c >= 0xF1 && c <= 0xF3) more = 3;
        else if (c == 0xF4) { more = 3; high = 0x8F; }
        else return 0;
        if (i + more >= end) return 0;
        if (s[i + 1] < low || s[i + 1] > high) return 0;
        for (Py_ssize_t k = 2; k <= more; k++)
            if (!continuation(s[i + k])) return 0;
        i += more + 1;
    }
    return 1;
}

static PyObject *canonical(PyObject *module, PyObject *arg) {
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "canonical() takes bytes");
        return NULL;
    }
    return PyBool_FromLong(canonical_string((const unsigned char *)PyBytes_AS_STRING(arg), PyBytes_GET_SIZE(arg)));
}

static int TextSplice_init(TextSplice *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"cycle", NULL};
    PyObject *cycle;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O", names, &cycle)) return -1;
    Py_INCREF(cycle);
    Py_XSETREF(self->cycle, cycle);
    PyObject *empty = PyBytes_FromStringAndSize("", 0);
    if (empty == NULL) return -1;
    Py_INCREF(empty); Py_XSETREF(self->before, empty);
    Py_INCREF(empty); Py_XSETREF(self->after, empty);
    Py_INCREF(empty); Py_XSETREF(self->prefix, empty);
    Py_XSETREF(self->suffix, empty);
    self->armed = 0;
    self->count = 0;
    self->text_len = 0;
    self->out_len = 0;
    self->last_at = 0.0;
    return 0;
}

static int TextSplice_traverse(TextSplice *self, visitproc visit, void *arg) {
    Py_VISIT(self->cycle);
    return 0;
}

static int TextSplice_clear(TextSplice *self) {
    Py_CLEAR(self->cycle);
    return 0;
}

static void TextSplice_dealloc(TextSplice *self) {
    PyObject_GC_UnTrack(self);
    TextSplice_clear(self);
    Py_CLEAR(self->before);
    Py_CLEAR(self->after);
    Py_CLEAR(self->prefix);
    Py_CLEAR(self->suffix);
    PyMem_Free(self->text);
    PyMem_Free(self->out);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *TextSplice_arm(TextSplice *self, PyObject *args) {
    PyObject *before, *after, *prefix, *suffix;
    if (!PyArg_ParseTuple(args, "SSSS", &before, &after, &prefix, &suffix)) return NULL;
    PyObject *head = PyBytes_FromStringAndSize("data: ", 6);
    if (head == NULL) return NULL;
    PyBytes_Concat(&head, before);
    if (head == NULL) return NULL;
    Py_XSETREF(self->before, head);
    Py_INCREF(after); Py_XSETREF(self->after, after);
    Py_INCREF(prefix); Py_XSETREF(self->prefix, prefix);
    Py_INCREF(suffix); Py_XSETREF(self->suffix, suffix);
    self->armed = 1;
    Py_RETURN_NONE;
}

/* Whether the attribute `name` of `owner` is true; -1 on an error. */
static int attribute_is_true(PyObject *owner, PyObject *name) {
    PyObject *value = PyObject_GetAttr(owner, name);
    if (value == NULL) return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

/* 1 when the client takes a piece without a wait, as uvicorn's `send` would write it at once; -1 on an error. */
static int client_ready(PyObject *cycle) {
    PyObject *flow = PyObject_GetAttr(cycle, str_flow);
    if (flow == NULL) return -1;
    int paused = attribute_is_true(flow, str_write_paused);
    Py_DECREF(flow);
    if (paused != 0) return paused < 0 ? -1 : 0;
    int gone = attribute_is_true(cycle, str_disconnected);
    if (gone != 0) return gone < 0 ? -1 : 0;
    int complete = attribute_is_true(cycle, str_response_complete);
    if (complete != 0) return complete < 0 ? -1 : 0;
    return 1;
}

/* Room for `size` more bytes in the buffer (*data, *len, *cap); NULL (and MemoryError) if there is none. */
static char *room(char **data, Py_ssize_t *len, Py_ssize_t *cap, Py_ssize_t size) {
    if (*len + size > *cap) {
        Py_ssize_t grown_cap = *cap ? *cap : 256;
        while (grown_cap < *len + size) grown_cap *= 2;
        char *grown = PyMem_Realloc(*data, grown_cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        *data = grown;
        *cap = grown_cap;
    }
    char *at = *data + *len;
    *len += size;
    return at;
}

/* `size` in lowercase hex and CRLF, an HTTP chunk's size line, into `line` (24 bytes hold any); its length. */
static int hex_line(char *line, Py_ssize_t size) {
    char digits[16];
    int n = 0;
    do {
        digits[n++] = "0123456789abcdef"[size & 15];
        size >>= 4;
    } while (size > 0);
    for (int i = 0; i < n; i++) line[i] = digits[n - 1 - i];
    line[n] = '\r';
    line[n + 1] = '\n';
    return n + 2;
}

/* The client's chunks so far go out, in one write; -1 on an error. */
static int flush_out(TextSplice *self) {
    if (self->out_len == 0) return 0;
    PyObject *out = PyBytes_FromStringAndSize(self->out, self->out_len);
    self->out_len = 0;
    if (self->out_cap > 65536) {
        PyMem_Free(self->out);
        self->out = NULL;
        self->out_cap = 0;
    }
    if (out == NULL) return -1;
    PyObject *transport = PyObject_GetAttr(self->cycle, str_transport);
    if (transport == NULL) {
        Py_DECREF(out);
        return -1;
    }
    PyObject *written = PyObject_CallMethodOneArg(transport, str_write, out);
    Py_DECREF(transport);
    Py_DECREF(out);
    if (written == NULL) return -1;
    Py_DECREF(written);
    PyObject *now = PyObject_CallNoArgs(monotonic); /* Python's own clock, whatever it is on this platform */
    if (now == NULL) return -1;
    self->last_at = PyFloat_AsDouble(now);
    Py_DECREF(now);
    return 0;
}

static PyObject *TextSplice_flush(TextSplice *self, PyObject *unused) {
    if (flush_out(self) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *decline(TextSplice *self) {
    self->armed = 0;
    if (flush_out(self) < 0) return NULL; /* what was taken goes out before the piece the relay writes */
    Py_RETURN_FALSE;
}

static PyObject *TextSplice_took(TextSplice *self, PyObject *piece) {
    if (!self->armed) Py_RETURN_FALSE;
    if (!PyBytes_Check(piece)) return decline(self);
    const char *p = PyBytes_AS_STRING(piece);
    Py_ssize_t n = PyBytes_GET_SIZE(piece), stop;
    if (n >= 2 && p[n - 1] == '\n' && p[n - 2] == '\n') stop = n - 2;
    else if (n >= 4 && memcmp(p + n - 4, "\r\n\r\n", 4) == 0) stop = n - 4;
    else return decline(self);
    Py_ssize_t before_len = PyBytes_GET_SIZE(self->before), after_len = PyBytes_GET_SIZE(self->after);
    Py_ssize_t string_len = stop - after_len - before_len;
    if (string_len < 3 || memcmp(p, PyBytes_AS_STRING(self->before), before_len) != 0
        || memcmp(p + stop - after_len, PyBytes_AS_STRING(self->after), after_len) != 0)
        return decline(self);
    const char *string = p + before_len;
    if (!canonical_string((const unsigned char *)string, string_len) || self->text_len + string_len > MAX_PENDING)
        return decline(self);
    int ready = client_ready(self->cycle);
    if (ready < 0) return NULL;
    if (!ready) return decline(self);

    Py_ssize_t prefix_len = PyBytes_GET_SIZE(self->prefix), suffix_len = PyBytes_GET_SIZE(self->suffix);
    Py_ssize_t body_len = prefix_len + string_len + suffix_len;
    char size_line[24];
    int size_len = hex_line(size_line, body_len);
    char *o = room(&self->out, &self->out_len, &self->out_cap, size_len + body_len + 2);
    char *kept = o == NULL ? NULL : room(&self->text, &self->text_len, &self->text_cap, string_len - 2);
    if (kept == NULL) return NULL;
    memcpy(o, size_line, size_len);
    o += size_len;
    memcpy(o, PyBytes_AS_STRING(self->prefix), prefix_len);
    memcpy(o + prefix_len, string, string_len);
    memcpy(o + prefix_len + string_len, PyBytes_AS_STRING(self->suffix), suffix_len);
    memcpy(o + body_len, "\r\n", 2);
    memcpy(kept, string + 1, string_len - 2);
    self->count++;
    Py_RETURN_TRUE;
}

static PyObject *TextSplice_taken(TextSplice *self, PyObject *unused) {
    Py_ssize_t count = self->count;
    self->count = 0;
    if (!count) return Py_BuildValue("(nsd)", (Py_ssize_t)0, "", self->last_at);
    /* the insides of canonical strings, joined, are one: decoded as it */
    PyObject *string = PyBytes_FromStringAndSize(NULL, self->text_len + 2);
    if (string == NULL) return NULL;
    char *s = PyBytes_AS_STRING(string);
    s[0] = '"';
    memcpy(s + 1, self->text, self->text_len);
    s[self->text_len + 1] = '"';
    self->text_len = 0;
    if (self->text_cap > 4096) {
        PyMem_Free(self->text);
        self->text = NULL;
        self->text_cap = 0;
    }
    PyObject *text = PyObject_CallOneArg(orjson_loads, string);
    Py_DECREF(string);
    if (text == NULL) return NULL;
    PyObject *result = Py_BuildValue("(nOd)", count, text, self->last_at);
    Py_DECREF(text);
    return result;
}

static PyMemberDef TextSplice_members[] = {
    {"armed", T_BOOL, offsetof(TextSplice, armed), 0, NULL},
    {"count", T_PYSSIZET, offsetof(TextSplice, count), READONLY, NULL},
    {"last_at", T_DOUBLE, offsetof(TextSplice, last_at), READONLY, NULL},
    {NULL},
};

static PyMethodDef TextSplice_methods[] = {
    {"arm", (PyCFunction)TextSplice_arm, METH_VARARGS, NULL},
    {"took", (PyCFunction)TextSplice_took, METH_O, NULL},
    {"flush", (PyCFunction)TextSplice_flush, METH_NOARGS, NULL},
    {"taken", (PyCFunction)TextSplice_taken, METH_NOARGS, NULL},
    {NULL},
};

static PyTypeObject TextSpliceType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gateway.server.stream._splice.TextSplice",
    .tp_basicsize = sizeof(TextSplice),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)TextSplice_init,
    .tp_dealloc = (destructor)TextSplice_dealloc,
    .tp_traverse = (traverseproc)TextSplice_traverse,
    .tp_clear = (inquiry)TextSplice_clear,
    .tp_members = TextSplice_members,
    .tp_methods = TextSplice_methods,
};

static PyMethodDef module_methods[] = {
    {"canonical", canonical, METH_O, NULL},
    {NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_splice", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit__splice(void) {
    if (PyType_Ready(&TextSpliceType) < 0) return NULL;
    PyObject *orjson = PyImport_ImportModule("orjson");
    if (orjson == NULL) return NULL;
    orjson_loads = PyObject_GetAttrString(orjson, "loads");
    Py_DECREF(orjson);
    if (orjson_loads == NULL) return NULL;
    PyObject *time = PyImport_ImportModule("time");
    if (time == NULL) return NULL;
    monotonic = PyObject_GetAttrString(time, "monotonic");
    Py_DECREF(time);
    if (monotonic == NULL) return NULL;
    str_flow = PyUnicode_InternFromString("flow");
    str_write_paused = PyUnicode_InternFromString("write_paused");
    str_disconnected = PyUnicode_InternFromString("disconnected");
    str_response_complete = PyUnicode_InternFromString("response_complete");
    str_transport = PyUnicode_InternFromString("transport");
    str_write = PyUnicode_InternFromString("write");
    if (!str_flow || !str_write_paused || !str_disconnected || !str_response_complete || !str_transport || !str_write)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&TextSpliceType);
    if (PyModule_AddObject(m, "TextSplice", (PyObject *)&TextSpliceType) < 0) {
        Py_DECREF(&TextSpliceType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
