/*
 * HAL structures as the sample driver sees them, their decoding, and the
 * validation every driver owes the runtime (Android's ValidateHal.cpp): a
 * malformed model or request is INVALID_ARGUMENT, never a crash.
 */
#ifndef NNVTS_MODEL_H
#define NNVTS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

enum { T_FLOAT32 = 0, T_INT32 = 1, T_UINT32 = 2, T_TENSOR_FLOAT32 = 3, T_TENSOR_INT32 = 4,
       T_TENSOR_QUANT8_ASYMM = 5, T_BOOL = 6, T_TENSOR_QUANT16_SYMM = 7, T_TENSOR_FLOAT16 = 8,
       T_TENSOR_BOOL8 = 9, T_FLOAT16 = 10, T_TENSOR_QUANT8_SYMM_PER_CHANNEL = 11, T_TENSOR_QUANT16_ASYMM = 12,
       T_TENSOR_QUANT8_SYMM = 13, T_TENSOR_QUANT8_ASYMM_SIGNED = 14, T_SUBGRAPH = 15, T_OEM = 10000,
       T_TENSOR_OEM_BYTE = 10001 };
enum { L_TEMPORARY_VARIABLE = 0, L_SUBGRAPH_INPUT, L_SUBGRAPH_OUTPUT, L_CONSTANT_COPY, L_CONSTANT_REFERENCE,
       L_NO_VALUE, L_SUBGRAPH };
enum { OP_ADD = 0, OP_MUL = 18 };

/* Everything decoded from one message lives in an arena, freed at once (or kept by a prepared model). */
struct arena {
    struct arena_block *head;
};
void *arena_alloc(struct arena *a, size_t size);
void arena_free(struct arena *a);

/* A pool the harness declared: mapped once, named by id afterwards. */
struct pool {
    uint32_t id;
    char name[32];
    uint64_t size;
    int fd;
    uint8_t *addr; /* NULL when size is 0 or the mapping failed */
    int unmappable;
};
struct pool *pool_lookup(uint32_t id); /* provided by the driver */

struct pool_ref {
    int is_token;
    int64_t token;
    struct pool *pool;
};

struct operand {
    int64_t type;
    int64_t *dims;
    uint32_t rank;
    int64_t consumers;
    double scale;
    int64_t zero_point;
    int64_t lifetime;
    int64_t pool_index, offset, length;
    uint8_t extra_tag; /* 0 none, 1 channelQuant, 2 extension */
    uint32_t nscales;
    int64_t channel_dim;
    double *scales;
};

struct operation {
    int64_t type;
    int64_t *inputs, *outputs;
    uint32_t ninputs, noutputs;
};

struct subgraph {
    struct operand *operands;
    struct operation *operations;
    int64_t *inputs, *outputs;
    uint32_t noperands, noperations, ninputs, noutputs;
};

struct model {
    struct subgraph main;
    struct subgraph *referenced;
    uint32_t nreferenced;
    const uint8_t *values; /* points into the message body or the arena */
    uint32_t nvalues;
    struct pool_ref *pools;
    uint32_t npools;
    int relax;
    uint32_t nprefixes;
    int64_t *prefixes;
};

struct argument {
    int no_value;
    int64_t pool_index, offset, length;
    int64_t *dims;
    uint32_t rank;
};

struct request {
    struct argument *inputs, *outputs;
    uint32_t ninputs, noutputs;
    struct pool_ref *pools;
    uint32_t npools;
};

/* Set when the harness granted "aidl:4" (docs/protocol.md §5.3): validate by AIDL v4's rules (no OEM operand or
 * operation types, no numberOfConsumers, 15-bit extension prefixes, operation types up to REVERSE) instead of
 * HAL 1.3's. */
extern int aidl_rules;

int read_model(struct reader *r, struct arena *a, struct model *m);
int read_request(struct reader *r, struct arena *a, struct request *q);

/* NULL when valid, else why (a static buffer, valid until the next call). */
const char *validate_model(const struct model *m);
const char *validate_request(const struct request *q, const struct subgraph *main, int allow_unspecified_output);

/* The one thing this driver computes: ADD and MUL on TENSOR_FLOAT32. */
int operation_supported(const struct subgraph *g, const struct operation *op);

int is_scalar_type(int64_t type);
size_t element_size(int64_t type);

#endif
