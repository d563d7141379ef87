/*
 * Decoding models and requests, and validating them the way the HAL's
 * ValidateHal does (Android's frameworks/ml/nn/common/ValidateHal.cpp).  Operation signatures are
 * checked for the operations this driver knows (ADD, MUL); any other
 * operation gets the operation-independent checks only.
 */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ----------------------------------------------------------------------------------- */

struct arena_block {
    struct arena_block *next;
    max_align_t align[];
};

void *arena_alloc(struct arena *a, size_t size)
{
    struct arena_block *b = malloc(sizeof *b + (size ? size : 1));
    if (!b)
        return NULL;
    b->next = a->head;
    a->head = b;
    memset(b->align, 0, size);
    return b->align;
}

void arena_free(struct arena *a)
{
    while (a->head) {
        struct arena_block *next = a->head->next;
        free(a->head);
        a->head = next;
    }
}

/* ---- decoding -------------------------------------------------------------------------------- */

static int64_t *read_i64_list(struct reader *r, struct arena *a, uint32_t *n)
{
    *n = rd_count(r, 8);
    int64_t *v = arena_alloc(a, *n * sizeof *v);
    if (!v) {
        r->err = "out of memory";
        return NULL;
    }
    for (uint32_t i = 0; i < *n; i++)
        v[i] = rd_i64(r);
    return v;
}

static int read_pool_ref(struct reader *r, struct pool_ref *ref)
{
    uint8_t tag = rd_u8(r);
    memset(ref, 0, sizeof *ref);
    if (tag == 1) {
        ref->is_token = 1;
        ref->token = rd_i64(r);
    } else if (tag == 0) {
        uint32_t id = rd_u32(r);
        if (!r->err && !(ref->pool = pool_lookup(id)))
            r->err = "a pool id that was never declared";
    } else if (!r->err) {
        r->err = "unknown pool tag";
    }
    return r->err == NULL;
}

static int read_subgraph(struct reader *r, struct arena *a, struct subgraph *g)
{
    g->noperands = rd_count(r, 60);
    g->operands = arena_alloc(a, g->noperands * sizeof *g->operands);
    for (uint32_t i = 0; g->operands && i < g->noperands && !r->err; i++) {
        struct operand *o = &g->operands[i];
        o->type = rd_i64(r);
        o->dims = read_i64_list(r, a, &o->rank);
        o->consumers = rd_i64(r);
        o->scale = rd_f64(r);
        o->zero_point = rd_i64(r);
        o->lifetime = rd_i64(r);
        o->pool_index = rd_i64(r);
        o->offset = rd_i64(r);
        o->length = rd_i64(r);
        o->extra_tag = rd_u8(r);
        if (o->extra_tag == 1) {
            o->nscales = rd_count(r, 8);
            o->scales = arena_alloc(a, o->nscales * sizeof *o->scales);
            for (uint32_t k = 0; o->scales && k < o->nscales; k++)
                o->scales[k] = rd_f64(r);
            o->channel_dim = rd_i64(r);
        } else if (o->extra_tag == 2) {
            uint32_t n;
            rd_bytes(r, &n);
        } else if (o->extra_tag != 0 && !r->err) {
            r->err = "unknown extra-params tag";
        }
    }
    g->noperations = rd_count(r, 16);
    g->operations = arena_alloc(a, g->noperations * sizeof *g->operations);
    for (uint32_t i = 0; g->operations && i < g->noperations && !r->err; i++) {
        struct operation *op = &g->operations[i];
        op->type = rd_i64(r);
        op->inputs = read_i64_list(r, a, &op->ninputs);
        op->outputs = read_i64_list(r, a, &op->noutputs);
    }
    g->inputs = read_i64_list(r, a, &g->ninputs);
    g->outputs = read_i64_list(r, a, &g->noutputs);
    if ((!g->operands || !g->operations) && !r->err)
        r->err = "out of memory";
    return r->err == NULL;
}

int read_model(struct reader *r, struct arena *a, struct model *m)
{
    memset(m, 0, sizeof *m);
    read_subgraph(r, a, &m->main);
    m->nreferenced = rd_count(r, 24);
    m->referenced = arena_alloc(a, m->nreferenced * sizeof *m->referenced);
    for (uint32_t i = 0; m->referenced && i < m->nreferenced && !r->err; i++)
        read_subgraph(r, a, &m->referenced[i]);
    m->values = rd_bytes(r, &m->nvalues);
    m->npools = rd_count(r, 5);
    m->pools = arena_alloc(a, m->npools * sizeof *m->pools);
    for (uint32_t i = 0; m->pools && i < m->npools && !r->err; i++)
        read_pool_ref(r, &m->pools[i]);
    m->relax = rd_bool(r);
    m->nprefixes = rd_count(r, 12);
    m->prefixes = arena_alloc(a, m->nprefixes * sizeof *m->prefixes);
    for (uint32_t i = 0; m->prefixes && i < m->nprefixes && !r->err; i++) {
        uint32_t n;
        rd_bytes(r, &n); /* the extension name: this driver supports none */
        m->prefixes[i] = rd_i64(r);
    }
    return r->err == NULL;
}

static void read_arguments(struct reader *r, struct arena *a, struct argument **out, uint32_t *n)
{
    *n = rd_count(r, 29);
    *out = arena_alloc(a, *n * sizeof **out);
    for (uint32_t i = 0; *out && i < *n && !r->err; i++) {
        struct argument *arg = &(*out)[i];
        arg->no_value = rd_bool(r);
        arg->pool_index = rd_i64(r);
        arg->offset = rd_i64(r);
        arg->length = rd_i64(r);
        arg->dims = read_i64_list(r, a, &arg->rank);
    }
}

int read_request(struct reader *r, struct arena *a, struct request *q)
{
    memset(q, 0, sizeof *q);
    read_arguments(r, a, &q->inputs, &q->ninputs);
    read_arguments(r, a, &q->outputs, &q->noutputs);
    q->npools = rd_count(r, 5);
    q->pools = arena_alloc(a, q->npools * sizeof *q->pools);
    for (uint32_t i = 0; q->pools && i < q->npools && !r->err; i++)
        read_pool_ref(r, &q->pools[i]);
    return r->err == NULL;
}

/* ---- operand types --------------------------------------------------------------------------- */

int is_scalar_type(int64_t t)
{
    return t == T_FLOAT32 || t == T_INT32 || t == T_UINT32 || t == T_BOOL || t == T_FLOAT16 || t == T_SUBGRAPH
        || t == T_OEM;
}

size_t element_size(int64_t t)
{
    switch (t) {
    case T_FLOAT32: case T_INT32: case T_UINT32: case T_TENSOR_FLOAT32: case T_TENSOR_INT32: return 4;
    case T_TENSOR_QUANT16_SYMM: case T_TENSOR_FLOAT16: case T_FLOAT16: case T_TENSOR_QUANT16_ASYMM: return 2;
    case T_SUBGRAPH: return 0;
    default: return 1;
    }
}

static int is_extension(int64_t t) { return t > 0xFFFF; }

static int known_prefix(const struct model *m, int64_t t)
{
    for (uint32_t i = 0; i < m->nprefixes; i++)
        if (m->prefixes[i] == (t >> 16))
            return 1;
    return 0;
}

static int is_uint32(int64_t v) { return v >= 0 && v <= 0xFFFFFFFFLL; }

int aidl_rules;

/* OEM operand and operation types are HAL 1.3's; AIDL has none (OperandType.aidl, OperationType.aidl). */
static int oem_allowed(void) { return !aidl_rules; }
/* The highest operation type of the interface spoken: HAL 1.3's 101 (RESIZE_NEAREST_NEIGHBOR), AIDL v4's 105
 * (REVERSE; BATCH_MATMUL, PACK, MIRROR_PAD came between). */
static int64_t max_operation_type(void) { return aidl_rules ? 105 : 101; }

/* ---- model validation ------------------------------------------------------------------------ */

static char why[320];

#define INVALID(...) do { snprintf(why, sizeof why, __VA_ARGS__); return why; } while (0)

static uint64_t pool_size(const struct pool_ref *ref)
{
    return ref->is_token ? 0 : ref->pool->size;
}

static const char *check_pool(const struct pool_ref *ref, int allow_tokens, const char *where, uint32_t i)
{
    if (ref->is_token) {
        if (!allow_tokens)
            INVALID("%s %u: driver-allocated buffer tokens are only valid in requests", where, i);
        if (ref->token <= 0 || !is_uint32(ref->token))
            INVALID("%s %u: memory token %lld must be a positive uint32", where, i, (long long)ref->token);
        return NULL;
    }
    const char *name = ref->pool->name;
    if (strcmp(name, "ashmem") && strcmp(name, "mmap_fd") && strcmp(name, "hardware_buffer_blob")
        && strcmp(name, "hardware_buffer"))
        INVALID("%s %u: unsupported memory kind '%s'", where, i, name);
    if (ref->pool->fd < 0)
        INVALID("%s %u: memory of kind '%s' has no handle", where, i, name);
    return NULL;
}

static const char *check_operand(const struct model *m, const struct operand *o, uint32_t i)
{
    int64_t t = o->type;
    if (!((t >= 0 && t <= 15) || (oem_allowed() && (t == T_OEM || t == T_TENSOR_OEM_BYTE))
          || (is_extension(t) && is_uint32(t))))
        INVALID("operand %u: invalid operand type %lld", i, (long long)t);
    if (is_extension(t) && !known_prefix(m, t))
        INVALID("operand %u: extension prefix %lld is not declared by the model", i, (long long)(t >> 16));
    if (o->lifetime < L_TEMPORARY_VARIABLE || o->lifetime > L_SUBGRAPH)
        INVALID("operand %u: invalid lifetime %lld", i, (long long)o->lifetime);
    for (uint32_t k = 0; k < o->rank; k++)
        if (!is_uint32(o->dims[k]))
            INVALID("operand %u: dimension %u is not a uint32", i, k);
    int constant = o->lifetime == L_CONSTANT_COPY || o->lifetime == L_CONSTANT_REFERENCE;
    if (!is_extension(t)) {
        if (is_scalar_type(t) && o->rank)
            INVALID("operand %u: a scalar cannot have dimensions", i);
        if (!is_scalar_type(t) && !o->rank && constant)
            INVALID("operand %u: constant tensor must have a known rank", i);
    }
    if (!isfinite(o->scale))
        INVALID("operand %u: scale is not finite", i);
    switch (t) {
    case T_TENSOR_INT32:
        if (o->scale < 0 || o->zero_point != 0)
            INVALID("operand %u: TENSOR_INT32 needs a non-negative scale and zeroPoint 0", i);
        break;
    case T_TENSOR_QUANT8_ASYMM:
        if (o->scale <= 0 || o->zero_point < 0 || o->zero_point > 255)
            INVALID("operand %u: TENSOR_QUANT8_ASYMM needs scale > 0 and zeroPoint in [0, 255]", i);
        break;
    case T_TENSOR_QUANT8_ASYMM_SIGNED:
        if (o->scale <= 0 || o->zero_point < -128 || o->zero_point > 127)
            INVALID("operand %u: TENSOR_QUANT8_ASYMM_SIGNED needs scale > 0 and zeroPoint in [-128, 127]", i);
        break;
    case T_TENSOR_QUANT16_ASYMM:
        if (o->scale <= 0 || o->zero_point < 0 || o->zero_point > 65535)
            INVALID("operand %u: TENSOR_QUANT16_ASYMM needs scale > 0 and zeroPoint in [0, 65535]", i);
        break;
    case T_TENSOR_QUANT8_SYMM: case T_TENSOR_QUANT16_SYMM:
        if (o->scale <= 0 || o->zero_point != 0)
            INVALID("operand %u: symmetric quantized types need scale > 0 and zeroPoint 0", i);
        break;
    case T_OEM: case T_TENSOR_OEM_BYTE:
        break;
    default:
        if (o->scale != 0 || o->zero_point != 0)
            INVALID("operand %u: this type must have scale 0 and zeroPoint 0", i);
    }
    if (t == T_TENSOR_QUANT8_SYMM_PER_CHANNEL) {
        if (o->extra_tag != 1)
            INVALID("operand %u: TENSOR_QUANT8_SYMM_PER_CHANNEL needs channelQuant parameters", i);
        if (o->channel_dim < 0 || o->channel_dim >= (int64_t)o->rank || o->dims[o->channel_dim] == 0
            || o->nscales != (uint64_t)o->dims[o->channel_dim])
            INVALID("operand %u: channelQuant does not match the dimensions", i);
        for (uint32_t k = 0; k < o->nscales; k++)
            if (!(o->scales[k] > 0))
                INVALID("operand %u: channelQuant scale %u must be positive", i, k);
    } else if (is_extension(t) ? o->extra_tag == 1 : o->extra_tag != 0) {
        INVALID("operand %u: unexpected extraParams", i);
    }
    if (!is_uint32(o->pool_index) || !is_uint32(o->offset) || !is_uint32(o->length))
        INVALID("operand %u: location fields must be uint32", i);
    switch (o->lifetime) {
    case L_CONSTANT_COPY:
        if (o->pool_index != 0 || o->offset + o->length > (int64_t)m->nvalues)
            INVALID("operand %u: CONSTANT_COPY outside operandValues", i);
        break;
    case L_CONSTANT_REFERENCE:
        if (o->pool_index >= (int64_t)m->npools
            || (uint64_t)(o->offset + o->length) > pool_size(&m->pools[o->pool_index]))
            INVALID("operand %u: CONSTANT_REFERENCE outside its pool", i);
        break;
    case L_SUBGRAPH:
        if (o->pool_index != 0 || o->length != 0 || o->offset >= (int64_t)m->nreferenced)
            INVALID("operand %u: bad SUBGRAPH reference", i);
        break;
    default:
        if (o->pool_index || o->offset || o->length)
            INVALID("operand %u: this lifetime needs an all-zero location", i);
    }
    if ((t == T_SUBGRAPH) != (o->lifetime == L_SUBGRAPH))
        INVALID("operand %u: SUBGRAPH type and SUBGRAPH lifetime go together", i);
    if (constant && !is_extension(t) && t != T_OEM && t != T_TENSOR_OEM_BYTE) {
        int64_t size = (int64_t)element_size(t);
        for (uint32_t k = 0; k < o->rank; k++)
            size *= o->dims[k];
        if (o->length != size)
            INVALID("operand %u: constant needs %lld bytes, location length is %lld", i, (long long)size,
                    (long long)o->length);
    }
    if (!aidl_rules && !is_uint32(o->consumers))
        INVALID("operand %u: numberOfConsumers is not a uint32", i);
    return NULL;
}

/* ADD and MUL: two tensors of one type, an INT32 fused activation, an output of the same type. */
static const char *check_signature(const struct subgraph *g, const struct operation *op, uint32_t i)
{
    if (op->type != OP_ADD && op->type != OP_MUL)
        return NULL;
    const char *name = op->type == OP_ADD ? "ADD" : "MUL";
    if (op->ninputs != 3 || op->noutputs != 1)
        INVALID("operation %u (%s): needs 3 inputs and 1 output, has %u and %u", i, name, op->ninputs,
                op->noutputs);
    int64_t t = g->operands[op->inputs[0]].type;
    if (t != T_TENSOR_FLOAT32 && t != T_TENSOR_FLOAT16 && t != T_TENSOR_QUANT8_ASYMM
        && t != T_TENSOR_QUANT8_ASYMM_SIGNED && t != T_TENSOR_INT32)
        INVALID("operation %u (%s): input 0 has an unsupported operand type %lld", i, name, (long long)t);
    if (g->operands[op->inputs[1]].type != t || g->operands[op->outputs[0]].type != t)
        INVALID("operation %u (%s): inputs and output must share one operand type", i, name);
    if (g->operands[op->inputs[2]].type != T_INT32)
        INVALID("operation %u (%s): input 2 (fused activation) must be an INT32 scalar", i, name);
    for (uint32_t k = 0; k < 3; k++)
        if (g->operands[op->inputs[k]].lifetime == L_NO_VALUE)
            INVALID("operation %u (%s): input %u is required", i, name, k);
    return NULL;
}

static const char *check_io(const struct subgraph *g, const int64_t *idx, uint32_t n, int64_t lifetime,
                            const char *what)
{
    for (uint32_t p = 0; p < n; p++) {
        if (idx[p] < 0 || idx[p] >= (int64_t)g->noperands)
            INVALID("subgraph %s %u is operand %lld, out of range", what, p, (long long)idx[p]);
        if (g->operands[idx[p]].lifetime != lifetime)
            INVALID("subgraph %s %u (operand %lld) has the wrong lifetime", what, p, (long long)idx[p]);
        for (uint32_t q = 0; q < p; q++)
            if (idx[q] == idx[p])
                INVALID("subgraph %ss list operand %lld twice", what, (long long)idx[p]);
    }
    for (uint32_t k = 0; k < g->noperands; k++) {
        if (g->operands[k].lifetime != lifetime)
            continue;
        int listed = 0;
        for (uint32_t p = 0; p < n && !listed; p++)
            listed = idx[p] == (int64_t)k;
        if (!listed)
            INVALID("operand %u has the lifetime of a subgraph %s but is not listed", k, what);
    }
    return NULL;
}

static const char *check_subgraph(const struct model *m, const struct subgraph *g)
{
    const char *e;
    for (uint32_t i = 0; i < g->noperands; i++)
        if ((e = check_operand(m, &g->operands[i], i)))
            return e;
    for (uint32_t i = 0; i < g->noperations; i++) {
        const struct operation *op = &g->operations[i];
        int64_t t = op->type;
        if (!((t >= 0 && t <= max_operation_type()) || (oem_allowed() && t == 10000)
              || (is_extension(t) && is_uint32(t) && known_prefix(m, t))))
            INVALID("operation %u: invalid operation type %lld", i, (long long)t);
        for (uint32_t k = 0; k < op->ninputs; k++)
            if (op->inputs[k] < 0 || op->inputs[k] >= (int64_t)g->noperands)
                INVALID("operation %u: input %u is operand %lld, out of range", i, k, (long long)op->inputs[k]);
        for (uint32_t k = 0; k < op->noutputs; k++) {
            if (op->outputs[k] < 0 || op->outputs[k] >= (int64_t)g->noperands)
                INVALID("operation %u: output %u is operand %lld, out of range", i, k,
                        (long long)op->outputs[k]);
            int64_t lifetime = g->operands[op->outputs[k]].lifetime;
            if (lifetime != L_TEMPORARY_VARIABLE && lifetime != L_SUBGRAPH_OUTPUT)
                INVALID("operation %u: output %u must be a temporary or a subgraph output", i, k);
        }
        if ((e = check_signature(g, op, i)))
            return e;
    }
    if ((e = check_io(g, g->inputs, g->ninputs, L_SUBGRAPH_INPUT, "input")))
        return e;
    if ((e = check_io(g, g->outputs, g->noutputs, L_SUBGRAPH_OUTPUT, "output")))
        return e;
    /* Execution order, single writers, consumer counts, everything written. */
    char *known = calloc(g->noperands + 1, 1);
    int64_t *uses = calloc(g->noperands + 1, sizeof *uses);
    const char *bad = NULL;
    if (!known || !uses) {
        bad = "out of memory";
        goto done;
    }
    for (uint32_t k = 0; k < g->noperands; k++) {
        int64_t l = g->operands[k].lifetime;
        known[k] = l == L_SUBGRAPH_INPUT || l == L_CONSTANT_COPY || l == L_CONSTANT_REFERENCE || l == L_NO_VALUE
                   || l == L_SUBGRAPH;
    }
    for (uint32_t i = 0; i < g->noperations && !bad; i++) {
        const struct operation *op = &g->operations[i];
        for (uint32_t k = 0; k < op->ninputs && !bad; k++) {
            if (!known[op->inputs[k]]) {
                snprintf(why, sizeof why, "operation %u reads operand %lld before it is written", i,
                         (long long)op->inputs[k]);
                bad = why;
            }
            uses[op->inputs[k]]++;
        }
        for (uint32_t k = 0; k < op->noutputs && !bad; k++) {
            if (known[op->outputs[k]]) {
                snprintf(why, sizeof why, "operation %u writes operand %lld, which is already written", i,
                         (long long)op->outputs[k]);
                bad = why;
            }
            known[op->outputs[k]] = 1;
        }
    }
    for (uint32_t k = 0; k < g->noperands && !bad; k++) {
        if (!aidl_rules && g->operands[k].consumers != uses[k]) { /* AIDL has no numberOfConsumers */
            snprintf(why, sizeof why, "operand %u declares %lld consumers, %lld operation inputs read it", k,
                     (long long)g->operands[k].consumers, (long long)uses[k]);
            bad = why;
        } else if (!known[k]) {
            snprintf(why, sizeof why, "operand %u is never written", k);
            bad = why;
        }
    }
done:
    free(known);
    free(uses);
    return bad;
}

const char *validate_model(const struct model *m)
{
    const char *e;
    if (m->main.noperations == 0 || m->main.noperands == 0)
        return "main subgraph must have at least one operation and one operand";
    for (uint32_t i = 0; i < m->npools; i++)
        if ((e = check_pool(&m->pools[i], 0, "pool", i)))
            return e;
    for (uint32_t i = 0; i < m->nprefixes; i++)
        if (m->prefixes[i] < 0 || m->prefixes[i] > (aidl_rules ? 0x7FFF : 0xFFFF))
            return aidl_rules ? "extension prefix does not fit AIDL's 15 bits" : "extension prefix is not a uint16";
    if ((e = check_subgraph(m, &m->main)))
        return e;
    for (uint32_t i = 0; i < m->nreferenced; i++)
        if ((e = check_subgraph(m, &m->referenced[i])))
            return e;
    return NULL;
}

/* ---- request validation ---------------------------------------------------------------------- */

static const char *check_arguments(const struct request *q, const struct argument *args, uint32_t n,
                                   const struct subgraph *g, const int64_t *idx, uint32_t nidx,
                                   int allow_unspecified, const char *what)
{
    if (n != nidx)
        INVALID("request has %u %ss, the model has %u", n, what, nidx);
    for (uint32_t p = 0; p < n; p++) {
        const struct argument *a = &args[p];
        const struct operand *o = &g->operands[idx[p]];
        if (!is_uint32(a->pool_index) || !is_uint32(a->offset) || !is_uint32(a->length))
            INVALID("request %s %u: location fields must be uint32", what, p);
        for (uint32_t k = 0; k < a->rank; k++)
            if (!is_uint32(a->dims[k]))
                INVALID("request %s %u: dimension %u is not a uint32", what, p, k);
        if (a->no_value) {
            if (a->pool_index || a->offset || a->length || a->rank)
                INVALID("request %s %u: has no value, so location and dimensions must be empty", what, p);
            continue;
        }
        if (a->pool_index >= (int64_t)q->npools)
            INVALID("request %s %u: pool index %lld out of range", what, p, (long long)a->pool_index);
        if ((uint64_t)(a->offset + a->length) > pool_size(&q->pools[a->pool_index]))
            INVALID("request %s %u: offset + length exceeds the pool", what, p);
        if (!a->rank) {
            if (!allow_unspecified)
                for (uint32_t k = 0; k < o->rank; k++)
                    if (o->dims[k] == 0)
                        INVALID("request %s %u: dimensions are not fully specified", what, p);
            continue;
        }
        if (is_scalar_type(o->type))
            INVALID("request %s %u: a scalar cannot take dimensions", what, p);
        if (o->rank && a->rank != o->rank)
            INVALID("request %s %u: rank %u differs from the model's %u", what, p, a->rank, o->rank);
        for (uint32_t k = 0; k < a->rank; k++) {
            if (o->rank && o->dims[k] != 0 && a->dims[k] != o->dims[k])
                INVALID("request %s %u: dimension %u conflicts with the model", what, p, k);
            if (a->dims[k] == 0 && !allow_unspecified)
                INVALID("request %s %u: dimension %u is 0 (unspecified)", what, p, k);
        }
    }
    return NULL;
}

const char *validate_request(const struct request *q, const struct subgraph *g, int allow_unspecified_output)
{
    const char *e;
    if ((e = check_arguments(q, q->inputs, q->ninputs, g, g->inputs, g->ninputs, 0, "input")))
        return e;
    if ((e = check_arguments(q, q->outputs, q->noutputs, g, g->outputs, g->noutputs, allow_unspecified_output,
                             "output")))
        return e;
    for (uint32_t i = 0; i < q->npools; i++)
        if ((e = check_pool(&q->pools[i], 1, "request pool", i)))
            return e;
    return NULL;
}

int operation_supported(const struct subgraph *g, const struct operation *op)
{
    if (op->type != OP_ADD && op->type != OP_MUL)
        return 0;
    return op->ninputs == 3 && op->noutputs == 1 && g->operands[op->inputs[0]].type == T_TENSOR_FLOAT32
           && g->operands[op->inputs[1]].type == T_TENSOR_FLOAT32
           && g->operands[op->outputs[0]].type == T_TENSOR_FLOAT32;
}
