/*
 * nnvts sample driver in C: ADD and MUL on TENSOR_FLOAT32, spoken over the
 * nnvts protocol (docs/protocol.md).  It exists to prove that a driver in
 * another language can be tested by the harness: it maps the harness's
 * memory pools from the descriptors it receives (so tensor data is shared,
 * never copied through the socket), validates models and requests as the
 * HAL requires, reports every other operation unsupported (the harness
 * then skips those cases), and honours deadlines between operations.
 *
 * Single-threaded: calls are served in order; an asynchronous execution
 * runs to completion right after its launch reply, then its completion is
 * sent.  The socket is descriptor 3 (or NNVTS_SOCKET_FD).  It speaks protocol
 * revisions 2 and 3 (whichever the harness agrees on) and grants the "batch"
 * feature: a BATCH's calls are served one after the other by ``serve``, their
 * replies collected by ``wire_send`` into one answer (docs/protocol.md §5.4).
 * Asked for "aidl:4", it grants it: it then validates by AIDL v4's rules
 * (``aidl_rules``, model.c) and serves reusable executions (REUSABLE_*, §5.5);
 * otherwise it is a HAL 1.3 driver, as it always was.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "model.h"
#include "wire.h"

#define DEVICE_NAME "nnvts-sample_c"
#define NAME_PREFIX "nnvts-"
#define DEFAULT_NAME "sample_c"
#define MAX_NAME 64
#define VERSION_STRING "nnvts-sample-c/0.1"
#define DEVICE_TYPE_ACCELERATOR 4
#define NO_TIMING UINT64_MAX
#define MAX_RANK 8

static int sock = 3;
/* The device name: DEVICE_NAME unless the harness opened the driver with option name=... (OPEN). */
static char device_name[sizeof NAME_PREFIX + MAX_NAME] = DEVICE_NAME;

/* ---- pools ----------------------------------------------------------------------------------- */

static struct pool **pools;
static size_t npools, cap_pools;

struct pool *pool_lookup(uint32_t id)
{
    for (size_t i = 0; i < npools; i++)
        if (pools[i]->id == id)
            return pools[i];
    return NULL;
}

static void pool_drop(struct pool *p)
{
    if (p->addr)
        munmap(p->addr, p->size);
    if (p->fd >= 0)
        close(p->fd);
    free(p);
}

static void pool_release(uint32_t id)
{
    for (size_t i = 0; i < npools; i++) {
        if (pools[i]->id == id) {
            pool_drop(pools[i]);
            pools[i] = pools[--npools];
            return;
        }
    }
}

static int pool_declare(uint32_t id, const uint8_t *name, uint32_t name_len, uint64_t size, int fd)
{
    pool_release(id);
    struct pool *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    p->id = id;
    memcpy(p->name, name, name_len < sizeof p->name - 1 ? name_len : sizeof p->name - 1);
    p->size = size;
    p->fd = fd;
    if (fd >= 0 && size > 0) {
        /* An AIDL client gives input memory read-only (a descriptor opened O_RDONLY): map it so. */
        int flags = fcntl(fd, F_GETFL);
        int prot = flags != -1 && (flags & O_ACCMODE) == O_RDONLY ? PROT_READ : PROT_READ | PROT_WRITE;
        void *addr = mmap(NULL, size, prot, MAP_SHARED, fd, 0);
        if (addr == MAP_FAILED)
            p->unmappable = 1; /* reported as GENERAL_FAILURE when used, as the sample driver does */
        else
            p->addr = addr;
    }
    if (npools == cap_pools) {
        cap_pools = cap_pools ? cap_pools * 2 : 16;
        pools = realloc(pools, cap_pools * sizeof *pools);
        if (!pools)
            abort();
    }
    pools[npools++] = p;
    return 0;
}

/* ---- handles (prepared models, fenced-execution callbacks) ----------------------------------- */

enum kind { K_PREPARED = 1, K_CALLBACK, K_EXECUTION };

/* Whether OPEN granted "aidl:4": the REUSABLE_* kinds are served only then (docs/protocol.md §5.5). */
static int aidl_granted;

struct prepared {
    struct arena arena;
    struct model model;     /* main subgraph only; arrays live in the arena */
    uint8_t **constants;    /* per operand of main: its bytes (copied at preparation), or NULL */
};

struct callback {
    int64_t status;
    uint64_t launched[2], fenced[2];
};

/*
 * A reusable execution (AIDL v4 IExecution): its request and timing fixed at creation.  Its prepared model and
 * pools are named by handle and id and looked up at each run (the harness keeps them while the execution lives;
 * one released meanwhile is GENERAL_FAILURE, never a dangling pointer), and the inputs are read from the pools
 * as they are then.  One run at a time holds by construction: this driver serves one call at a time.
 */
struct reusable {
    struct arena arena;
    uint32_t prepared;  /* handle of its prepared model */
    struct request q;
    uint32_t *pool_ids; /* per request pool: its id (0 for a driver-buffer token) */
    int measure;
};

static void reusable_free(struct reusable *e)
{
    arena_free(&e->arena);
    free(e);
}

struct handle {
    uint32_t id;
    enum kind kind;
    void *object;
};

static struct handle *handles;
static size_t nhandles, cap_handles;
static uint32_t next_handle = 1;

static uint32_t handle_add(enum kind kind, void *object)
{
    if (nhandles == cap_handles) {
        cap_handles = cap_handles ? cap_handles * 2 : 16;
        handles = realloc(handles, cap_handles * sizeof *handles);
        if (!handles)
            abort();
    }
    handles[nhandles++] = (struct handle){next_handle, kind, object};
    return next_handle++;
}

static void *handle_get(uint32_t id, enum kind kind)
{
    for (size_t i = 0; i < nhandles; i++)
        if (handles[i].id == id && handles[i].kind == kind)
            return handles[i].object;
    return NULL;
}

static void handle_release(uint32_t id)
{
    for (size_t i = 0; i < nhandles; i++) {
        if (handles[i].id != id)
            continue;
        if (handles[i].kind == K_PREPARED) {
            struct prepared *pm = handles[i].object;
            arena_free(&pm->arena);
            free(pm);
        } else if (handles[i].kind == K_EXECUTION) {
            reusable_free(handles[i].object);
        } else {
            free(handles[i].object);
        }
        handles[i] = handles[--nhandles];
        return;
    }
}

/* ---- replies --------------------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the harness's time.monotonic_ns() clock */
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct shape {
    int64_t dims[MAX_RANK];
    uint32_t rank;
    int sufficient;
};

static void write_shapes(struct writer *w, const struct shape *shapes, uint32_t n)
{
    wr_u32(w, n);
    for (uint32_t i = 0; i < n; i++) {
        wr_u32(w, shapes[i].rank);
        for (uint32_t k = 0; k < shapes[i].rank; k++)
            wr_i64(w, shapes[i].dims[k]);
        wr_u8(w, (uint8_t)shapes[i].sufficient);
    }
}

/* A HAL error: message, output shapes (only with OUTPUT_INSUFFICIENT_SIZE), no timing. */
static void send_error(uint32_t seq, uint16_t code, uint16_t status, const char *message, const struct shape *shapes,
                       uint32_t nshapes)
{
    struct writer w;
    wr_init(&w);
    wr_str(&w, message);
    write_shapes(&w, shapes, nshapes);
    wr_u8(&w, 0);
    wire_send(sock, seq, code, status, &w);
    wr_free(&w);
}

static void send_protocol_error(uint32_t seq, uint16_t code, const char *message)
{
    struct writer w;
    wr_init(&w);
    wr_str(&w, message);
    wire_send(sock, seq, code, S_PROTOCOL_ERROR, &w);
    wr_free(&w);
}

/* ---- execution ------------------------------------------------------------------------------- */

struct tensor {
    float *data;
    int64_t dims[MAX_RANK];
    uint32_t rank;
    size_t count;
    int known;
};

struct outcome {
    uint16_t status;
    const char *message;
    struct shape shapes[16];
    uint32_t nshapes;
    uint64_t on_device_us, in_driver_us;
};

static size_t count_of(const int64_t *dims, uint32_t rank)
{
    size_t n = 1;
    for (uint32_t k = 0; k < rank; k++)
        n *= (size_t)dims[k];
    return n;
}

static const uint8_t *pool_bytes(const struct request *q, const struct argument *a, uint16_t *status,
                                 const char **why)
{
    const struct pool_ref *ref = &q->pools[a->pool_index];
    if (ref->is_token) {
        *status = S_INVALID_ARGUMENT;
        *why = "unknown memory token (this driver has no memory domains)";
        return NULL;
    }
    if (ref->pool->unmappable || (!ref->pool->addr && a->length > 0)) {
        *status = S_GENERAL_FAILURE;
        *why = "a request pool cannot be mapped";
        return NULL;
    }
    return ref->pool->addr + a->offset;
}

/* out = act(a op b) with numpy-style broadcasting of the two inputs. */
static const char *binary(int64_t op, const struct tensor *a, const struct tensor *b, int32_t activation,
                          struct tensor *out)
{
    uint32_t rank = a->rank > b->rank ? a->rank : b->rank;
    int64_t sa[MAX_RANK], sb[MAX_RANK];
    for (uint32_t i = 0; i < rank; i++) {
        int64_t da = i + a->rank >= rank ? a->dims[i + a->rank - rank] : 1;
        int64_t db = i + b->rank >= rank ? b->dims[i + b->rank - rank] : 1;
        if (da != db && da != 1 && db != 1)
            return "input shapes cannot be broadcast";
        out->dims[i] = da == 1 ? db : da;
        sa[i] = da == 1 ? 0 : 1;
        sb[i] = db == 1 ? 0 : 1;
    }
    out->rank = rank;
    out->count = count_of(out->dims, rank);
    if (activation < 0 || activation > 3)
        return "invalid fused activation";
    /* Element strides, 0 along broadcast axes. */
    int64_t stride_a = 1, stride_b = 1;
    for (int i = (int)rank - 1; i >= 0; i--) {
        int64_t da = (uint32_t)i + a->rank >= rank ? a->dims[i + a->rank - rank] : 1;
        int64_t db = (uint32_t)i + b->rank >= rank ? b->dims[i + b->rank - rank] : 1;
        int64_t step_a = sa[i] ? stride_a : 0, step_b = sb[i] ? stride_b : 0;
        stride_a *= da;
        stride_b *= db;
        sa[i] = step_a;
        sb[i] = step_b;
    }
    out->data = malloc((out->count ? out->count : 1) * sizeof(float));
    if (!out->data)
        return "out of memory";
    int64_t index[MAX_RANK] = {0};
    int64_t ia = 0, ib = 0;
    for (size_t n = 0; n < out->count; n++) {
        float x = a->data[ia], y = b->data[ib];
        float v = op == OP_ADD ? x + y : x * y;
        if (activation == 1)
            v = v < 0 ? 0 : v;
        else if (activation == 2)
            v = v < -1 ? -1 : (v > 1 ? 1 : v);
        else if (activation == 3)
            v = v < 0 ? 0 : (v > 6 ? 6 : v);
        out->data[n] = v;
        for (int k = (int)rank - 1; k >= 0; k--) {
            ia += sa[k];
            ib += sb[k];
            if (++index[k] < out->dims[k])
                break;
            ia -= sa[k] * out->dims[k];
            ib -= sb[k] * out->dims[k];
            index[k] = 0;
        }
    }
    out->known = 1;
    return NULL;
}

/* An INT32 scalar (the fused activation): a constant, or a model input read from its pool. */
static int read_int32(const struct prepared *pm, const struct request *q, int64_t index, int32_t *value,
                      struct outcome *o)
{
    if (pm->constants[index]) {
        memcpy(value, pm->constants[index], 4);
        return 1;
    }
    for (uint32_t p = 0; p < pm->model.main.ninputs; p++) {
        if (pm->model.main.inputs[p] != index)
            continue;
        const struct argument *a = &q->inputs[p];
        if (a->no_value || a->length < 4)
            break;
        const uint8_t *bytes = pool_bytes(q, a, &o->status, &o->message);
        if (!bytes)
            return 0;
        memcpy(value, bytes, 4);
        return 1;
    }
    o->status = S_GENERAL_FAILURE;
    o->message = "the fused activation has no value";
    return 0;
}

static void execute(const struct prepared *pm, const struct request *q, int measure, int64_t deadline,
                    int has_deadline, struct outcome *o)
{
    uint64_t start = now_ns();
    const struct subgraph *g = &pm->model.main;
    struct tensor *state = calloc(g->noperands ? g->noperands : 1, sizeof *state);
    memset(o, 0, sizeof *o);
    if (!state) {
        o->status = S_GENERAL_FAILURE;
        o->message = "out of memory";
        return;
    }
    /* Inputs: copied out of the shared pool, so a harness writing it meanwhile cannot tear an operation. */
    for (uint32_t p = 0; p < g->ninputs && !o->status; p++) {
        const struct operand *operand = &g->operands[g->inputs[p]];
        const struct argument *a = &q->inputs[p];
        if (a->no_value || operand->type != T_TENSOR_FLOAT32)
            continue;
        struct tensor *t = &state[g->inputs[p]];
        t->rank = a->rank ? a->rank : operand->rank;
        if (t->rank > MAX_RANK) {
            o->status = S_GENERAL_FAILURE;
            o->message = "rank above 8";
            break;
        }
        memcpy(t->dims, a->rank ? a->dims : operand->dims, t->rank * sizeof(int64_t));
        t->count = count_of(t->dims, t->rank);
        if ((int64_t)(t->count * sizeof(float)) > a->length) {
            o->status = S_INVALID_ARGUMENT;
            o->message = "an input's length is smaller than its dimensions need";
            break;
        }
        const uint8_t *bytes = pool_bytes(q, a, &o->status, &o->message);
        if (!bytes)
            break;
        t->data = malloc((t->count ? t->count : 1) * sizeof(float));
        if (!t->data) {
            o->status = S_GENERAL_FAILURE;
            o->message = "out of memory";
            break;
        }
        memcpy(t->data, bytes, t->count * sizeof(float));
        t->known = 1;
    }
    for (uint32_t k = 0; k < g->noperands && !o->status; k++) {
        const struct operand *operand = &g->operands[k];
        if (pm->constants[k] && operand->type == T_TENSOR_FLOAT32) {
            state[k].rank = operand->rank;
            memcpy(state[k].dims, operand->dims, operand->rank * sizeof(int64_t));
            state[k].count = count_of(operand->dims, operand->rank);
            state[k].data = (float *)pm->constants[k];
            state[k].known = 2; /* borrowed: not freed */
        }
    }
    uint64_t device_start = now_ns();
    for (uint32_t i = 0; i < g->noperations && !o->status; i++) {
        /* Like Android's CpuExecutor: the deadline is checked before every operation. */
        if (has_deadline && (int64_t)now_ns() >= deadline) {
            o->status = S_MISSED_DEADLINE_TRANSIENT;
            o->message = "the deadline passed during the execution";
            break;
        }
        const struct operation *op = &g->operations[i];
        const struct tensor *a = &state[op->inputs[0]], *b = &state[op->inputs[1]];
        int32_t activation = 0;
        if (!a->known || !b->known) {
            o->status = S_GENERAL_FAILURE;
            o->message = "an operation input has no value";
            break;
        }
        if (!read_int32(pm, q, op->inputs[2], &activation, o))
            break;
        const char *problem = binary(op->type, a, b, activation, &state[op->outputs[0]]);
        if (problem) {
            o->status = S_GENERAL_FAILURE;
            o->message = problem;
        }
    }
    uint64_t device_end = now_ns();
    if (!o->status) {
        o->nshapes = g->noutputs < 16 ? g->noutputs : 16;
        int sufficient = 1;
        for (uint32_t p = 0; p < o->nshapes; p++) {
            const struct tensor *t = &state[g->outputs[p]];
            o->shapes[p].rank = t->rank;
            memcpy(o->shapes[p].dims, t->dims, t->rank * sizeof(int64_t));
            o->shapes[p].sufficient = q->outputs[p].no_value
                                      || (int64_t)(t->count * sizeof(float)) <= q->outputs[p].length;
            sufficient &= o->shapes[p].sufficient;
        }
        if (!sufficient) {
            o->status = S_OUTPUT_INSUFFICIENT_SIZE;
            o->message = "an output buffer is too small";
        }
        for (uint32_t p = 0; p < o->nshapes && !o->status; p++) {
            const struct argument *arg = &q->outputs[p];
            if (arg->no_value)
                continue;
            uint8_t *bytes = (uint8_t *)pool_bytes(q, arg, &o->status, &o->message);
            if (bytes && state[g->outputs[p]].count)
                memcpy(bytes, state[g->outputs[p]].data, state[g->outputs[p]].count * sizeof(float));
        }
        if (o->status && o->status != S_OUTPUT_INSUFFICIENT_SIZE)
            o->nshapes = 0;
    }
    for (uint32_t k = 0; k < g->noperands; k++)
        if (state[k].known == 1)
            free(state[k].data);
    free(state);
    uint64_t end = now_ns();
    o->on_device_us = measure && !o->status ? (device_end - device_start) / 1000 : NO_TIMING;
    o->in_driver_us = measure && !o->status ? (end - start) / 1000 : NO_TIMING;
}

static void send_outcome(uint32_t seq, uint16_t code, const struct outcome *o)
{
    if (o->status) {
        send_error(seq, code, o->status, o->message, o->shapes, o->status == S_OUTPUT_INSUFFICIENT_SIZE ? o->nshapes : 0);
        return;
    }
    struct writer w;
    wr_init(&w);
    write_shapes(&w, o->shapes, o->nshapes);
    wr_u64(&w, o->on_device_us);
    wr_u64(&w, o->in_driver_us);
    wire_send(sock, seq, code, S_NONE, &w);
    wr_free(&w);
}

/* ---- calls ----------------------------------------------------------------------------------- */

static void write_perf(struct writer *w, double exec_time, double power_usage)
{
    wr_f64(w, exec_time);
    wr_f64(w, power_usage);
}

static void capabilities(struct writer *w)
{
    write_perf(w, 1.0, 1.0); /* relaxed float32->float16, scalar and tensor */
    write_perf(w, 1.0, 1.0);
    wr_u32(w, 15); /* every fundamental operand type except SUBGRAPH, sorted */
    for (int64_t t = 0; t <= 14; t++) {
        wr_i64(w, t);
        if (t == T_TENSOR_FLOAT32 || t == T_FLOAT32)
            write_perf(w, 0.5, 0.5);
        else
            write_perf(w, 1.0, 1.0);
    }
    write_perf(w, 1.0, 1.0); /* IF */
    write_perf(w, 1.0, 1.0); /* WHILE */
}

static struct prepared *prepare(const struct model *m, struct arena *arena, const char **why)
{
    struct prepared *pm = calloc(1, sizeof *pm);
    if (!pm) {
        *why = "out of memory";
        return NULL;
    }
    pm->arena = *arena; /* the decoded model's arrays now belong to the prepared model */
    arena->head = NULL;
    pm->model = *m;
    pm->model.referenced = NULL;
    pm->model.nreferenced = 0;
    const struct subgraph *g = &m->main;
    pm->constants = arena_alloc(&pm->arena, g->noperands * sizeof *pm->constants);
    for (uint32_t k = 0; pm->constants && k < g->noperands; k++) {
        const struct operand *o = &g->operands[k];
        const uint8_t *src = NULL;
        if (o->lifetime == L_CONSTANT_COPY)
            src = m->values + o->offset;
        else if (o->lifetime == L_CONSTANT_REFERENCE)
            src = m->pools[o->pool_index].pool->addr ? m->pools[o->pool_index].pool->addr + o->offset : NULL;
        else
            continue;
        if (!src && o->length) {
            *why = "a constant pool cannot be mapped";
            arena_free(&pm->arena);
            free(pm);
            return NULL;
        }
        /* Copied: the harness may release the model's pools once preparation returns. */
        pm->constants[k] = arena_alloc(&pm->arena, (size_t)o->length);
        if (pm->constants[k] && o->length)
            memcpy(pm->constants[k], src, (size_t)o->length);
    }
    pm->model.values = NULL;
    pm->model.pools = NULL;
    pm->model.npools = 0;
    return pm;
}

struct fences {
    uint32_t n;
    uint8_t *tags;
    int *fds;
};

static void read_fences(struct reader *r, struct arena *a, struct fences *f)
{
    f->n = rd_count(r, 1);
    f->tags = arena_alloc(a, f->n);
    f->fds = arena_alloc(a, f->n * sizeof *f->fds);
    for (uint32_t i = 0; f->tags && f->fds && i < f->n && !r->err; i++) {
        f->tags[i] = rd_u8(r);
        f->fds[i] = f->tags[i] == 3 ? rd_fd(r) : -1;
        if (f->tags[i] > 3 && !r->err)
            r->err = "unknown fence tag";
    }
}

/* A null fence is INVALID_ARGUMENT; one signalled in error (or that errs while waited on) GENERAL_FAILURE. */
static uint16_t wait_fences(const struct fences *f, const char **why)
{
    for (uint32_t i = 0; i < f->n; i++) {
        if (f->tags[i] == 0) {
            *why = "a wait fence is the null handle";
            return S_INVALID_ARGUMENT;
        }
    }
    for (uint32_t i = 0; i < f->n; i++) {
        uint64_t value = 1;
        if (f->tags[i] == 2)
            value = 2;
        if (f->tags[i] == 3) {
            struct pollfd pfd = {f->fds[i], POLLIN, 0};
            while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
                ;
            if (read(f->fds[i], &value, sizeof value) != sizeof value)
                value = 2;
        }
        if (value != 1) {
            *why = "a wait fence signalled an error";
            return S_GENERAL_FAILURE;
        }
    }
    return S_NONE;
}

/* Whether ``value`` (``n`` bytes) is a name this driver accepts: 1 to MAX_NAME of [A-Za-z0-9_.-]. */
static int good_name(const uint8_t *value, uint32_t n)
{
    if (n == 0 || n > MAX_NAME)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t c = value[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '-'))
            return 0;
    }
    return 1;
}

/*
 * OPEN (revision 2, or 3 with features): the driver options.  This driver accepts one, ``name``: the device
 * name after "nnvts-".  An unknown option or a bad name is INVALID_ARGUMENT and changes nothing.  The reply
 * names the revision, the device name as opened, and the options accepted (docs/protocol.md §5.3); at
 * revision 3 also the features granted: "batch" when asked for (BATCH, §5.4).
 */
static void open_driver(uint32_t seq, struct reader *r, struct writer *w)
{
    uint16_t reply = M_OPEN | CODE_REPLY;
    char name[MAX_NAME + 1] = DEFAULT_NAME, why[160];
    uint32_t revision = rd_u32(r), noptions = rd_count(r, 8);
    for (uint32_t i = 0; i < noptions && !r->err; i++) {
        uint32_t nkey, nvalue;
        const uint8_t *key = rd_bytes(r, &nkey), *value = rd_bytes(r, &nvalue);
        if (r->err)
            break;
        if (nkey == 4 && memcmp(key, "name", 4) == 0) {
            if (!good_name(value, nvalue)) {
                send_error(seq, reply, S_INVALID_ARGUMENT,
                           "option name: expected 1 to 64 letters, digits, '_', '.' or '-'", NULL, 0);
                return;
            }
            memcpy(name, value, nvalue);
            name[nvalue] = 0;
        } else {
            snprintf(why, sizeof why, "unknown option '%.*s' (accepted: name=" DEFAULT_NAME ")",
                     (int)(nkey > 64 ? 64 : nkey), (const char *)key);
            send_error(seq, reply, S_INVALID_ARGUMENT, why, NULL, 0);
            return;
        }
    }
    /* Revision 3: the features asked for; this driver grants "batch" (BATCH messages, §5.4) and "aidl:4" (AIDL
     * v4's rules and reusable executions, §5.3, §5.5).  Not "execute_async": AIDL has no asynchronous execute,
     * so with aidl:4 granted the harness sends it no EXECUTE_ASYNC (§6); as a HAL 1.3 driver it serves them. */
    int batch = 0, aidl = 0, batch_config = 0;
    uint32_t nfeatures = revision >= FEATURES_REVISION ? rd_count(r, 4) : 0;
    for (uint32_t i = 0; i < nfeatures && !r->err; i++) {
        uint32_t n;
        const uint8_t *feature = rd_bytes(r, &n);
        if (!r->err && n == 5 && memcmp(feature, "batch", 5) == 0)
            batch = 1;
        if (!r->err && n == 6 && memcmp(feature, "aidl:4", 6) == 0)
            aidl = 1;
        if (!r->err && n == 12 && memcmp(feature, "batch_config", 12) == 0)
            batch_config = 1; /* PREPARE_MODEL_WITH_CONFIG inside a BATCH (§5.4) */
    }
    if (!rd_end(r)) {
        send_protocol_error(seq, reply, r->err ? r->err : "malformed OPEN");
        return;
    }
    if (revision < OPTIONS_REVISION || revision > PROTOCOL_REVISION) {
        send_protocol_error(seq, reply, "unsupported protocol revision");
        return;
    }
    snprintf(device_name, sizeof device_name, NAME_PREFIX "%s", name);
    aidl_granted = aidl_rules = aidl; /* none granted: HAL 1.3 */
    wr_u32(w, revision);
    wr_str(w, device_name);
    wr_u8(w, 0); /* only the options listed */
    wr_u32(w, 1);
    wr_str(w, "name");
    wr_u8(w, 1); /* has a default */
    wr_str(w, DEFAULT_NAME);
    wr_str(w, "the device name after nnvts- (1 to 64 letters, digits, _ . -)");
    if (revision >= FEATURES_REVISION) {
        batch_config &= batch;
        /* the features granted: those asked for that this driver serves */
        wr_u32(w, (uint32_t)(batch + aidl + batch_config));
        if (batch)
            wr_str(w, "batch");
        if (aidl)
            wr_str(w, "aidl:4");
        if (batch_config)
            wr_str(w, "batch_config");
    }
    wire_send(sock, seq, reply, S_NONE, w);
}

/*
 * A validated request executed synchronously or fenced, and answered: EXECUTE, EXECUTE_FENCED and the reusable
 * executions' runs (REUSABLE_EXECUTE, REUSABLE_EXECUTE_FENCED, docs/protocol.md §5.5) share it.  Fenced: wait for
 * the fences, run now, return no fence (the work is done) and a callback.
 */
static void run_and_answer(uint32_t seq, uint16_t reply, int fenced, const struct prepared *pm,
                           const struct request *q, const struct fences *fences, int measure, int has_deadline,
                           int64_t deadline, int has_duration, int64_t duration, uint64_t launched, struct writer *w)
{
    const char *why = NULL;
    struct outcome o;
    if (has_deadline && (int64_t)now_ns() >= deadline) {
        send_error(seq, reply, S_MISSED_DEADLINE_PERSISTENT, "deadline passed before execution", NULL, 0);
        return;
    }
    if (!fenced) {
        execute(pm, q, measure, deadline, has_deadline, &o);
        send_outcome(seq, reply, &o);
        return;
    }
    uint16_t status = wait_fences(fences, &why);
    if (status) {
        send_error(seq, reply, status, why, NULL, 0);
        return;
    }
    uint64_t fenced_at = now_ns();
    if (has_duration) {
        int64_t limit = (int64_t)fenced_at + duration;
        if (!has_deadline || limit < deadline)
            deadline = limit;
        has_deadline = 1;
    }
    execute(pm, q, 0, deadline, has_deadline, &o);
    if (o.status) {
        send_outcome(seq, reply, &o);
        return;
    }
    struct callback *cb = calloc(1, sizeof *cb);
    if (!cb)
        abort();
    uint64_t end = now_ns();
    cb->launched[0] = cb->launched[1] = cb->fenced[0] = cb->fenced[1] = NO_TIMING;
    if (measure) {
        cb->launched[0] = (end - fenced_at) / 1000;
        cb->launched[1] = (end - launched) / 1000;
        cb->fenced[0] = cb->fenced[1] = (end - fenced_at) / 1000;
    }
    wr_u8(w, 0); /* no sync fence: the work is done */
    wr_u32(w, handle_add(K_CALLBACK, cb));
    wire_send(sock, seq, reply, S_NONE, w);
}

/* One call (its preamble applied): decode, answer with wire_send (captured while a BATCH is served). */
/* The hints trailer of a *_WITH_CONFIG kind (docs/protocol.md §5.5): this driver knows no hint, so it reads
 * and ignores them all, as PrepareModelConfig.aidl and ExecutionConfig.aidl require. */
static void skip_hints(struct reader *r)
{
    uint32_t n = rd_count(r, 12), len;
    for (uint32_t i = 0; i < n; i++) {
        rd_i64(r);
        rd_bytes(r, &len);
    }
    n = rd_count(r, 12);
    for (uint32_t i = 0; i < n; i++) {
        rd_bytes(r, &len);
        rd_i64(r);
    }
}

/* The older kind a *_WITH_CONFIG kind extends (its body comes first), or 0 for any other kind. */
static uint16_t config_base(uint16_t code)
{
    switch (code) {
    case M_PREPARE_MODEL_WITH_CONFIG: return M_PREPARE_MODEL;
    case M_EXECUTE_WITH_CONFIG: return M_EXECUTE;
    case M_EXECUTE_FENCED_WITH_CONFIG: return M_EXECUTE_FENCED;
    default: return 0;
    }
}

static void serve(uint32_t seq, uint16_t code, const struct reader *args)
{
    struct reader r = *args;
    uint16_t reply = (uint16_t)(code | CODE_REPLY);
    struct arena arena = {0};
    struct writer w;
    wr_init(&w);
    /* A *_WITH_CONFIG kind is served as the kind it extends, its hints skipped before the end of the body. */
    int with_config = config_base(code) != 0;
    if (with_config) {
        if (!aidl_granted) {
            send_protocol_error(seq, reply, "the *_WITH_CONFIG kinds need the aidl:4 feature, not granted");
            goto out;
        }
        code = config_base(code);
    }

    switch (code) {
    case M_HELLO: {
        uint32_t version = rd_u32(&r), n;
        rd_bytes(&r, &n);
        if (!rd_end(&r))
            break;
        if (version != PROTOCOL_VERSION) {
            send_protocol_error(seq, reply, "unsupported protocol version");
            goto out;
        }
        wr_u32(&w, PROTOCOL_VERSION);
        wr_str(&w, device_name);
        wr_u32(&w, 1); /* no device flags (no priority scheduling); the revision it speaks */
        wr_str(&w, REVISION_FLAG);
        wire_send(sock, seq, reply, S_NONE, &w);
        goto out;
    }
    case M_OPEN:
        open_driver(seq, &r, &w);
        goto out;
    case M_GET_STATUS:
    case M_GET_TYPE:
        if (!rd_end(&r))
            break;
        wr_i64(&w, code == M_GET_TYPE ? DEVICE_TYPE_ACCELERATOR : 0);
        wire_send(sock, seq, reply, S_NONE, &w);
        goto out;
    case M_GET_VERSION_STRING:
        if (!rd_end(&r))
            break;
        wr_str(&w, VERSION_STRING);
        wire_send(sock, seq, reply, S_NONE, &w);
        goto out;
    case M_GET_CAPABILITIES:
        if (!rd_end(&r))
            break;
        capabilities(&w);
        wire_send(sock, seq, reply, S_NONE, &w);
        goto out;
    case M_GET_SUPPORTED_EXTENSIONS:
        if (!rd_end(&r))
            break;
        wr_u32(&w, 0);
        wire_send(sock, seq, reply, S_NONE, &w);
        goto out;
    case M_GET_NUMBER_OF_CACHE_FILES_NEEDED:
        if (!rd_end(&r))
            break;
        wr_i64(&w, 0);
        wr_i64(&w, 0);
        wire_send(sock, seq, reply, S_NONE, &w);
        goto out;
    case M_GET_SUPPORTED_OPERATIONS: {
        struct model m;
        read_model(&r, &arena, &m);
        if (!rd_end(&r))
            break;
        const char *why = validate_model(&m);
        if (why) {
            send_error(seq, reply, S_INVALID_ARGUMENT, why, NULL, 0);
            goto out;
        }
        wr_u32(&w, m.main.noperations);
        for (uint32_t i = 0; i < m.main.noperations; i++)
            wr_u8(&w, (uint8_t)operation_supported(&m.main, &m.main.operations[i]));
        wire_send(sock, seq, reply, S_NONE, &w);
        goto out;
    }
    case M_PREPARE_MODEL: {
        struct model m;
        read_model(&r, &arena, &m);
        int64_t preference = rd_i64(&r), priority = rd_i64(&r);
        int has_deadline = rd_bool(&r);
        int64_t deadline = has_deadline ? rd_i64(&r) : 0;
        uint32_t n = rd_count(&r, 4), len;
        for (uint32_t i = 0; i < n; i++)
            rd_fd(&r); /* model cache: this driver does not cache */
        n = rd_count(&r, 4);
        for (uint32_t i = 0; i < n; i++)
            rd_fd(&r);
        rd_bytes(&r, &len);
        if (with_config)
            skip_hints(&r);
        if (!rd_end(&r))
            break;
        const char *why = validate_model(&m);
        if (!why && (preference < 0 || preference > 2))
            why = "invalid execution preference";
        if (!why && (priority < 0 || priority > 2))
            why = "invalid priority";
        for (uint32_t i = 0; !why && i < m.main.noperations; i++)
            if (!operation_supported(&m.main, &m.main.operations[i]))
                why = "the model has operations this driver does not support";
        if (why) {
            send_error(seq, reply, S_INVALID_ARGUMENT, why, NULL, 0);
            goto out;
        }
        if (has_deadline && (int64_t)now_ns() >= deadline) {
            send_error(seq, reply, S_MISSED_DEADLINE_PERSISTENT, "deadline passed before preparation", NULL, 0);
            goto out;
        }
        struct prepared *pm = prepare(&m, &arena, &why);
        if (!pm) {
            send_error(seq, reply, S_GENERAL_FAILURE, why, NULL, 0);
            goto out;
        }
        wr_u32(&w, handle_add(K_PREPARED, pm));
        wire_send(sock, seq, reply, S_NONE, &w);
        goto out;
    }
    case M_PREPARE_MODEL_FROM_CACHE:
        send_error(seq, reply, S_GENERAL_FAILURE, "compilation caching not supported", NULL, 0);
        goto out;
    case M_ALLOCATE:
        send_error(seq, reply, S_GENERAL_FAILURE, "memory domains not supported", NULL, 0);
        goto out;
    case M_EXECUTE:
    case M_EXECUTE_ASYNC:
    case M_EXECUTE_FENCED: {
        uint64_t launched = now_ns();
        struct prepared *pm = handle_get(rd_u32(&r), K_PREPARED);
        struct request q;
        struct fences fences = {0};
        read_request(&r, &arena, &q);
        if (code == M_EXECUTE_FENCED)
            read_fences(&r, &arena, &fences);
        int64_t measure = rd_i64(&r);
        int has_deadline = rd_bool(&r);
        int64_t deadline = has_deadline ? rd_i64(&r) : 0;
        if (rd_bool(&r))
            rd_i64(&r); /* loop timeout: no WHILE here */
        int has_duration = 0;
        int64_t duration = 0;
        if (code == M_EXECUTE_FENCED && (has_duration = rd_bool(&r)))
            duration = rd_i64(&r);
        if (with_config)
            skip_hints(&r);
        if (!rd_end(&r))
            break;
        if (!pm) {
            send_protocol_error(seq, reply, "not a live prepared-model handle");
            goto out;
        }
        /* Fenced executions must know every output size up front (Android's SampleDriver.cpp). */
        const char *why = validate_request(&q, &pm->model.main, code != M_EXECUTE_FENCED);
        if (why) {
            send_error(seq, reply, S_INVALID_ARGUMENT, why, NULL, 0);
            goto out;
        }
        if (code == M_EXECUTE_ASYNC) {
            struct outcome o;
            int missed = has_deadline && (int64_t)now_ns() >= deadline;
            wire_send(sock, seq, reply, S_NONE, &w); /* the launch status */
            uint16_t notify = (uint16_t)(M_EXECUTE_ASYNC | CODE_NOTIFY);
            if (missed) {
                send_error(seq, notify, S_MISSED_DEADLINE_PERSISTENT, "deadline passed before execution", NULL, 0);
                goto out;
            }
            execute(pm, &q, measure == 1, deadline, has_deadline, &o);
            send_outcome(seq, notify, &o);
            goto out;
        }
        run_and_answer(seq, reply, code == M_EXECUTE_FENCED, pm, &q, &fences, measure == 1, has_deadline, deadline,
                       has_duration, duration, launched, &w);
        goto out;
    }
    case M_REUSABLE_CREATE: {
        if (!aidl_granted) {
            send_protocol_error(seq, reply, "REUSABLE_CREATE needs the aidl:4 feature, not granted");
            goto out;
        }
        uint32_t id = rd_u32(&r);
        struct reusable *e = calloc(1, sizeof *e);
        if (!e)
            abort();
        read_request(&r, &e->arena, &e->q);
        int64_t measure = rd_i64(&r);
        if (rd_bool(&r))
            rd_i64(&r); /* loop timeout: no WHILE here */
        if (!rd_end(&r)) {
            reusable_free(e);
            break;
        }
        struct prepared *pm = handle_get(id, K_PREPARED);
        if (!pm) {
            reusable_free(e);
            send_protocol_error(seq, reply, "not a live prepared-model handle");
            goto out;
        }
        /* Refused at creation (IPreparedModel.aidl allows this or a refusal of every run); output sizes may
         * still be unknown here: a fenced run checks them, as EXECUTE_FENCED does. */
        const char *why = validate_request(&e->q, &pm->model.main, 1);
        if (why) {
            reusable_free(e);
            send_error(seq, reply, S_INVALID_ARGUMENT, why, NULL, 0);
            goto out;
        }
        e->prepared = id;
        e->measure = measure == 1;
        e->pool_ids = arena_alloc(&e->arena, e->q.npools * sizeof *e->pool_ids);
        if (!e->pool_ids)
            abort();
        for (uint32_t i = 0; i < e->q.npools; i++)
            e->pool_ids[i] = e->q.pools[i].is_token ? 0 : e->q.pools[i].pool->id;
        wr_u32(&w, handle_add(K_EXECUTION, e));
        wire_send(sock, seq, reply, S_NONE, &w);
        goto out;
    }
    case M_REUSABLE_EXECUTE:
    case M_REUSABLE_EXECUTE_FENCED: {
        uint64_t launched = now_ns();
        int fenced = code == M_REUSABLE_EXECUTE_FENCED;
        if (!aidl_granted) {
            send_protocol_error(seq, reply, "REUSABLE_EXECUTE needs the aidl:4 feature, not granted");
            goto out;
        }
        struct reusable *e = handle_get(rd_u32(&r), K_EXECUTION);
        struct fences fences = {0};
        if (fenced)
            read_fences(&r, &arena, &fences);
        int has_deadline = rd_bool(&r);
        int64_t deadline = has_deadline ? rd_i64(&r) : 0;
        int has_duration = 0;
        int64_t duration = 0;
        if (fenced && (has_duration = rd_bool(&r)))
            duration = rd_i64(&r);
        if (!rd_end(&r))
            break;
        if (!e) {
            send_protocol_error(seq, reply, "not a live execution handle");
            goto out;
        }
        struct prepared *pm = handle_get(e->prepared, K_PREPARED);
        const char *why = pm ? NULL : "the execution's prepared model was released";
        for (uint32_t i = 0; !why && i < e->q.npools; i++) {
            if (e->q.pools[i].is_token)
                continue;
            if (!(e->q.pools[i].pool = pool_lookup(e->pool_ids[i])))
                why = "a pool of the execution's request was released";
        }
        if (why) {
            send_error(seq, reply, S_GENERAL_FAILURE, why, NULL, 0);
            goto out;
        }
        if ((why = validate_request(&e->q, &pm->model.main, !fenced))) {
            send_error(seq, reply, S_INVALID_ARGUMENT, why, NULL, 0);
            goto out;
        }
        run_and_answer(seq, reply, fenced, pm, &e->q, &fences, e->measure, has_deadline, deadline, has_duration,
                       duration, launched, &w);
        goto out;
    }
    case M_FENCED_GET_EXECUTION_INFO: {
        struct callback *cb = handle_get(rd_u32(&r), K_CALLBACK);
        if (!rd_end(&r))
            break;
        if (!cb) {
            send_protocol_error(seq, reply, "not a live callback handle");
            goto out;
        }
        wr_i64(&w, cb->status);
        wr_u64(&w, cb->launched[0]);
        wr_u64(&w, cb->launched[1]);
        wr_u64(&w, cb->fenced[0]);
        wr_u64(&w, cb->fenced[1]);
        wire_send(sock, seq, reply, S_NONE, &w);
        goto out;
    }
    case M_BUFFER_COPY_TO:
    case M_BUFFER_COPY_FROM:
        send_protocol_error(seq, reply, "no buffers exist: memory domains are not supported");
        goto out;
    case M_CLOSE:
        if (!rd_end(&r))
            break;
        wire_send(sock, seq, reply, S_NONE, &w);
        goto out;
    default:
        send_protocol_error(seq, reply, "unknown request code");
        goto out;
    }
    send_protocol_error(seq, reply, r.err ? r.err : "malformed request");
out:
    wr_free(&w);
    arena_free(&arena);
}


/* The calls a BATCH may hold: answered once, with no descriptor (docs/protocol.md §5.4). */
static int batchable(uint32_t code)
{
    switch (code) {
    case M_GET_STATUS: case M_GET_TYPE: case M_GET_VERSION_STRING: case M_GET_CAPABILITIES:
    case M_GET_SUPPORTED_EXTENSIONS: case M_GET_SUPPORTED_OPERATIONS: case M_GET_NUMBER_OF_CACHE_FILES_NEEDED:
    case M_PREPARE_MODEL: case M_PREPARE_MODEL_FROM_CACHE: case M_ALLOCATE: case M_EXECUTE:
    case M_FENCED_GET_EXECUTION_INFO: case M_BUFFER_COPY_TO: case M_BUFFER_COPY_FROM:
    case M_PREPARE_MODEL_WITH_CONFIG: /* aidl:4 only: serve() refuses it, alone, without the grant */
        return 1;
    default:
        return 0;
    }
}

/*
 * BATCH (revision 3, feature "batch"): list<(u32 code, bytes arguments)>.  Each call is served in order
 * as if it had come alone (the preamble applied once, before); each answer (u32 status, bytes body) is
 * collected and all go back in one reply.  The whole list is checked before any call is served.
 */
static void serve_batch(uint32_t seq, struct reader *r)
{
    uint16_t reply = M_BATCH | CODE_REPLY;
    struct reader scan = *r;
    uint32_t n = rd_count(&scan, 8), len;
    for (uint32_t i = 0; i < n && !scan.err; i++) {
        rd_u32(&scan);
        rd_bytes(&scan, &len);
    }
    if (!rd_end(&scan) || n > MAX_BATCH_ITEMS) {
        send_protocol_error(seq, reply, scan.err ? scan.err : "malformed BATCH (more than 64 calls?)");
        return;
    }
    struct writer answers;
    wr_init(&answers);
    rd_count(r, 8);
    wr_u32(&answers, n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t code = rd_u32(r);
        const uint8_t *data = rd_bytes(r, &len);
        struct reader item = {data, len, 0, NULL, r->fds, r->nfds};
        wire_batch = &answers;
        wire_batch_answers = 0;
        if (!batchable(code))
            send_protocol_error(seq, (uint16_t)(code | CODE_REPLY), "this call cannot be batched");
        else
            serve(seq, (uint16_t)code, &item);
        if (wire_batch_answers != 1) /* never: every batchable call answers once, without descriptors */
            abort();
        wire_batch = NULL;
    }
    wire_send(sock, seq, reply, S_NONE, &answers);
    wr_free(&answers);
}

static void handle_call(struct message *msg)
{
    struct reader r = {msg->body, msg->length, 0, NULL, msg->fds, msg->nfds};
    uint16_t reply = (uint16_t)(msg->code | CODE_REPLY);

    /* Preamble: pools declared (their descriptors are kept), pools and handles released. */
    uint32_t ndeclared = rd_count(&r, 20);
    for (uint32_t i = 0; i < ndeclared && !r.err; i++) {
        uint32_t id = rd_u32(&r), name_len;
        const uint8_t *name = rd_bytes(&r, &name_len);
        uint64_t size = rd_u64(&r);
        int32_t index = rd_i32(&r);
        if (r.err)
            break;
        int fd = -1;
        if (index >= 0 && index < msg->nfds) {
            fd = msg->fds[index];
            msg->fds[index] = -1; /* owned by the pool now */
        }
        if (pool_declare(id, name, name_len, size, fd) < 0)
            r.err = "out of memory";
    }
    uint32_t nreleased = rd_count(&r, 4);
    for (uint32_t i = 0; i < nreleased && !r.err; i++)
        pool_release(rd_u32(&r));
    nreleased = rd_count(&r, 4);
    for (uint32_t i = 0; i < nreleased && !r.err; i++)
        handle_release(rd_u32(&r));
    if (r.err) {
        send_protocol_error(msg->seq, reply, r.err);
        return;
    }
    if (msg->code == M_BATCH)
        serve_batch(msg->seq, &r);
    else
        serve(msg->seq, msg->code, &r);
}


int main(void)
{
    const char *fd = getenv("NNVTS_SOCKET_FD");
    if (fd)
        sock = atoi(fd);
    for (;;) {
        struct message msg;
        const char *why = NULL;
        int got = wire_receive(sock, &msg, &why);
        if (got == 0)
            return 0; /* the harness hung up */
        if (got < 0) {
            fprintf(stderr, "sample_driver: %s\n", why);
            return 1;
        }
        handle_call(&msg);
        wire_release(&msg);
    }
}
