/* Compiled loops for the prioritized buffer's segment trees (segment_tree.py holds the numpy versions).
 *
 * A batch of 64 leaf updates or prefix-sum searches is about 1,000 scalar steps: a few microseconds in C, where the
 * vectorised numpy walk costs one call per level per operation (50-60 us a search at 100k items). The arrays stay
 * owned by the Python objects; these functions read and write them through the buffer protocol, check every index
 * against the array they address, and raise (never crash) on a wrong dtype, shape or index.
 *
 *   sum_set(tree, idx, values)        leaves idx := values, then every ancestor recomputed as the exact sum of its two
 *                                     children (no accumulated rounding, unlike adding deltas)
 *   sum_find(tree, targets, out)      out[k] := the leaf where the prefix sum crosses targets[k], never a zero leaf
 *   min_set(leaves, idx, values, minimum, holders) -> (minimum, holders)
 *                                     leaves idx := values; the overall minimum and how many leaves hold it, found
 *                                     again by one pass only when every holder was raised
 *
 * `tree` is the heap-layout float64 array of 2 * capacity nodes (root at 1, leaves at capacity..2 * capacity - 1),
 * capacity a power of two; `idx` is int64, `values`, `targets` and `leaves` float64, `out` int64.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { KIND_FLOAT64, KIND_INT64 };
enum { BLOCK = 64 };  /* leaves or targets handled together, level by level */

/* A C-contiguous one-dimensional buffer of 8-byte items of the given kind; 0 and an exception on anything else. */
static int get_buffer(PyObject *obj, Py_buffer *view, int kind, int writable, const char *name) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) != 0) {
        return 0;
    }
    const char *format = view->format ? view->format : "B";
    if (format[0] == '<' || format[0] == '=' || format[0] == '@') {
        format++;
    }
    int ok = view->ndim == 1 && view->itemsize == 8 && format[1] == '\0' &&
             (kind == KIND_FLOAT64 ? format[0] == 'd' : (format[0] == 'q' || format[0] == 'l'));
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s must be a one-dimensional %s array", name,
                     kind == KIND_FLOAT64 ? "float64" : "int64");
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

/* The three array arguments of a call, acquired together: `specs` gives each one's kind, whether it is written, and
 * its name for errors. On failure the ones acquired are released and 0 is returned with the exception set. */
typedef struct {
    int kind;
    int writable;
    const char *name;
} ArraySpec;

static int get_buffers(PyObject *const objs[3], Py_buffer views[3], const ArraySpec specs[3]) {
    for (int i = 0; i < 3; i++) {
        if (!get_buffer(objs[i], &views[i], specs[i].kind, specs[i].writable, specs[i].name)) {
            while (i-- > 0) {
                PyBuffer_Release(&views[i]);
            }
            return 0;
        }
    }
    return 1;
}

static void release_buffers(Py_buffer views[3]) {
    for (int i = 2; i >= 0; i--) {
        PyBuffer_Release(&views[i]);
    }
}

/* The number of leaves of a heap-layout tree of `nodes` nodes; -1 and an exception if it is not 2 * a power of two. */
static Py_ssize_t tree_capacity(Py_ssize_t nodes) {
    Py_ssize_t capacity = nodes / 2;
    if (nodes < 2 || nodes % 2 || (capacity & (capacity - 1))) {
        PyErr_SetString(PyExc_ValueError, "tree must hold 2 * capacity nodes, capacity a power of two");
        return -1;
    }
    return capacity;
}

static int check_indices(const int64_t *idx, Py_ssize_t n, Py_ssize_t capacity) {
    for (Py_ssize_t k = 0; k < n; k++) {
        if (idx[k] < 0 || idx[k] >= capacity) {
            PyErr_Format(PyExc_IndexError, "segment tree index %lld out of range [0, %zd)", (long long)idx[k],
                         capacity);
            return 0;
        }
    }
    return 1;
}

static PyObject *sum_set(PyObject *self, PyObject *args) {
    static const ArraySpec specs[3] = {
        {KIND_FLOAT64, 1, "tree"}, {KIND_INT64, 0, "idx"}, {KIND_FLOAT64, 0, "values"}};
    PyObject *objs[3];
    Py_buffer views[3];
    if (!PyArg_ParseTuple(args, "OOO:sum_set", &objs[0], &objs[1], &objs[2]) || !get_buffers(objs, views, specs)) {
        return NULL;
    }
    Py_buffer tree_view = views[0], idx_view = views[1], values_view = views[2];
    PyObject *result = NULL;
    double *tree = (double *)tree_view.buf;
    const int64_t *idx = (const int64_t *)idx_view.buf;
    const double *values = (const double *)values_view.buf;
    Py_ssize_t n = idx_view.shape[0];
    Py_ssize_t capacity = tree_capacity(tree_view.shape[0]);
    if (capacity < 0) {
        goto done;
    }
    if (values_view.shape[0] != n) {
        PyErr_Format(PyExc_ValueError, "sum_set got %zd indices and %zd values", n, values_view.shape[0]);
        goto done;
    }
    if (!check_indices(idx, n, capacity)) {
        goto done;
    }
    /* Level by level for blocks of leaves: the loads of one level are independent of each other, so their cache
     * misses overlap (a leaf at a time, each ancestor waits for the one below). A parent shared by two leaves of a
     * block is recomputed twice, to the same value. Every level is finished before the one above reads it. */
    for (Py_ssize_t start = 0; start < n; start += BLOCK) {
        Py_ssize_t count = n - start < BLOCK ? n - start : BLOCK;
        Py_ssize_t node[BLOCK];
        for (Py_ssize_t k = 0; k < count; k++) {
            node[k] = (Py_ssize_t)idx[start + k] + capacity;
            tree[node[k]] = values[start + k];
        }
        for (Py_ssize_t width = capacity; width > 1; width >>= 1) {
            for (Py_ssize_t k = 0; k < count; k++) {
                Py_ssize_t parent = node[k] >> 1;
                tree[parent] = tree[2 * parent] + tree[2 * parent + 1];
                node[k] = parent;
            }
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    release_buffers(views);
    return result;
}

static PyObject *sum_find(PyObject *self, PyObject *args) {
    static const ArraySpec specs[3] = {
        {KIND_FLOAT64, 0, "tree"}, {KIND_FLOAT64, 0, "targets"}, {KIND_INT64, 1, "out"}};
    PyObject *objs[3];
    Py_buffer views[3];
    if (!PyArg_ParseTuple(args, "OOO:sum_find", &objs[0], &objs[1], &objs[2]) || !get_buffers(objs, views, specs)) {
        return NULL;
    }
    Py_buffer tree_view = views[0], targets_view = views[1], out_view = views[2];
    PyObject *result = NULL;
    const double *tree = (const double *)tree_view.buf;
    const double *targets = (const double *)targets_view.buf;
    int64_t *out = (int64_t *)out_view.buf;
    Py_ssize_t n = targets_view.shape[0];
    Py_ssize_t capacity = tree_capacity(tree_view.shape[0]);
    if (capacity < 0) {
        goto done;
    }
    if (out_view.shape[0] != n) {
        PyErr_Format(PyExc_ValueError, "sum_find got %zd targets and room for %zd results", n, out_view.shape[0]);
        goto done;
    }
    if (!(tree[1] > 0)) {
        PyErr_SetString(PyExc_ValueError, "find_prefixsum_idx: the tree holds no mass (every leaf is 0)");
        goto done;
    }
    /* Every node on the way holds mass (the root does, and a node's sum is exactly its children's), so one child at
     * least does: go right when the target is past the left child's mass or the left child has none, unless the
     * right child has none. A target at or beyond the total ends at the last leaf with mass, a negative one at the
     * first, as in the numpy walk. The targets of a block walk down together, one level at a time, so that their
     * (independent) cache misses overlap. */
    for (Py_ssize_t start = 0; start < n; start += BLOCK) {
        Py_ssize_t count = n - start < BLOCK ? n - start : BLOCK;
        Py_ssize_t node[BLOCK];
        double r[BLOCK];
        for (Py_ssize_t k = 0; k < count; k++) {
            node[k] = 1;
            r[k] = targets[start + k];
        }
        for (Py_ssize_t width = capacity; width > 1; width >>= 1) {
            for (Py_ssize_t k = 0; k < count; k++) {
                Py_ssize_t left = 2 * node[k];
                double left_mass = tree[left];
                int right = (r[k] >= left_mass || !(left_mass > 0)) && tree[left + 1] > 0;
                r[k] -= right ? left_mass : 0.0;
                node[k] = left + right;
            }
        }
        for (Py_ssize_t k = 0; k < count; k++) {
            out[start + k] = (int64_t)(node[k] - capacity);
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    release_buffers(views);
    return result;
}

static PyObject *min_set(PyObject *self, PyObject *args) {
    static const ArraySpec specs[3] = {
        {KIND_FLOAT64, 1, "leaves"}, {KIND_INT64, 0, "idx"}, {KIND_FLOAT64, 0, "values"}};
    PyObject *objs[3];
    Py_buffer views[3];
    double minimum;
    Py_ssize_t holders;
    if (!PyArg_ParseTuple(args, "OOOdn:min_set", &objs[0], &objs[1], &objs[2], &minimum, &holders) ||
        !get_buffers(objs, views, specs)) {
        return NULL;
    }
    Py_buffer leaves_view = views[0], idx_view = views[1], values_view = views[2];
    PyObject *result = NULL;
    double *leaves = (double *)leaves_view.buf;
    const int64_t *idx = (const int64_t *)idx_view.buf;
    const double *values = (const double *)values_view.buf;
    Py_ssize_t n = idx_view.shape[0], capacity = leaves_view.shape[0];
    if (values_view.shape[0] != n) {
        PyErr_Format(PyExc_ValueError, "min_set got %zd indices and %zd values", n, values_view.shape[0]);
        goto done;
    }
    if (!check_indices(idx, n, capacity)) {
        goto done;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        double old = leaves[idx[k]], value = values[k];
        leaves[idx[k]] = value;
        if (value < minimum) {  /* a new minimum: this leaf is its only holder so far */
            minimum = value;
            holders = 1;
        } else {
            if (old == minimum) {
                holders--;
            }
            if (value == minimum) {
                holders++;
            }
        }
    }
    if (holders <= 0) {  /* every holder of the minimum was raised: one pass over the leaves */
        minimum = INFINITY;
        holders = 0;
        for (Py_ssize_t i = 0; i < capacity; i++) {
            if (leaves[i] < minimum) {
                minimum = leaves[i];
                holders = 1;
            } else if (leaves[i] == minimum) {
                holders++;
            }
        }
    }
    result = Py_BuildValue("dn", minimum, holders);
done:
    release_buffers(views);
    return result;
}

static PyMethodDef methods[] = {
    {"sum_set", sum_set, METH_VARARGS, "sum_set(tree, idx, values): set leaves and recompute their ancestors."},
    {"sum_find", sum_find, METH_VARARGS, "sum_find(tree, targets, out): the leaf of each prefix-sum target."},
    {"min_set", min_set, METH_VARARGS,
     "min_set(leaves, idx, values, minimum, holders) -> (minimum, holders): set leaves, keep the minimum."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_segtree", "Compiled loops for the prioritized buffer's segment trees.", -1, methods,
};

PyMODINIT_FUNC PyInit__segtree(void) { return PyModule_Create(&module); }
