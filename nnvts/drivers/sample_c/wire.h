/*
 * The nnvts driver protocol, C side: framing and the primitive encoding
 * (docs/protocol.md).  Everything is little-endian; this file assumes a
 * little-endian host (x86-64, AArch64), which it checks at compile time.
 */
#ifndef NNVTS_WIRE_H
#define NNVTS_WIRE_H

#include <stddef.h>
#include <stdint.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the sample driver reads the little-endian wire format with memcpy: big-endian hosts need byte swaps"
#endif

#define PROTOCOL_VERSION 1
/* The highest protocol revision this driver speaks (HELLO's reply flag "protocol:3"; docs/protocol.md §5.3).
 * It serves revision 2 too (OPEN without features), whichever the harness agrees on. */
#define PROTOCOL_REVISION 3
#define OPTIONS_REVISION 2
#define FEATURES_REVISION 3
#define REVISION_FLAG "protocol:3"
#define MAX_BATCH_ITEMS 64
#define HEADER_SIZE 16
#define MAX_INLINE_BODY (64 * 1024)
#define MAX_FDS 253
#define BODY_IN_FD 0x1
#define CODE_REPLY 0x8000
#define CODE_NOTIFY 0x4000

enum method {
    M_HELLO = 1, M_GET_STATUS, M_GET_TYPE, M_GET_VERSION_STRING, M_GET_CAPABILITIES,
    M_GET_SUPPORTED_EXTENSIONS, M_GET_SUPPORTED_OPERATIONS, M_GET_NUMBER_OF_CACHE_FILES_NEEDED,
    M_PREPARE_MODEL, M_PREPARE_MODEL_FROM_CACHE, M_ALLOCATE, M_EXECUTE, M_EXECUTE_ASYNC,
    M_EXECUTE_FENCED, M_FENCED_GET_EXECUTION_INFO, M_BUFFER_COPY_TO, M_BUFFER_COPY_FROM, M_CLOSE,
    M_OPEN = 24, /* revision 2: the driver options */
    M_BATCH = 25, /* revision 3, feature "batch": several calls in one message (docs/protocol.md §5.4) */
    /* Feature "aidl:4": reusable executions, AIDL v4 IExecution (docs/protocol.md §5.5). */
    M_REUSABLE_CREATE = 26, M_REUSABLE_EXECUTE = 27, M_REUSABLE_EXECUTE_FENCED = 28,
    /* Feature "aidl:4": the *WithConfig calls, an older kind's body + a hints trailer (docs/protocol.md §5.5). */
    M_PREPARE_MODEL_WITH_CONFIG = 29, M_EXECUTE_WITH_CONFIG = 30, M_EXECUTE_FENCED_WITH_CONFIG = 31,
};

/* Reply statuses: ErrorStatus 0-8, then the protocol's own. */
enum status {
    S_NONE = 0, S_DEVICE_UNAVAILABLE = 1, S_GENERAL_FAILURE = 2, S_OUTPUT_INSUFFICIENT_SIZE = 3,
    S_INVALID_ARGUMENT = 4, S_MISSED_DEADLINE_TRANSIENT = 5, S_MISSED_DEADLINE_PERSISTENT = 6,
    S_RESOURCE_EXHAUSTED_TRANSIENT = 7, S_RESOURCE_EXHAUSTED_PERSISTENT = 8,
    S_DRIVER_EXCEPTION = 0x100, S_PROTOCOL_ERROR = 0x101,
};

struct message {
    uint32_t seq;
    uint16_t code;
    uint16_t status;
    uint8_t *body;   /* malloc'd */
    uint32_t length;
    int fds[MAX_FDS];
    int nfds;
};

/* Receive one message; returns 1, 0 at end of stream, -1 on a protocol error (errno-style message in *why). */
int wire_receive(int sock, struct message *msg, const char **why);
void wire_release(struct message *msg);

/* A bounds-checked cursor over a body: the first failed read sets ``err`` and every later read returns 0. */
struct reader {
    const uint8_t *data;
    size_t size, pos;
    const char *err;
    const int *fds;
    int nfds;
};

uint8_t rd_u8(struct reader *r);
int rd_bool(struct reader *r);
uint32_t rd_u32(struct reader *r);
int32_t rd_i32(struct reader *r);
uint64_t rd_u64(struct reader *r);
int64_t rd_i64(struct reader *r);
double rd_f64(struct reader *r);
/* A list length whose items (at least ``item_size`` bytes each) must fit in the rest of the body. */
uint32_t rd_count(struct reader *r, size_t item_size);
/* A byte string: pointer into the body (not copied) and its length. */
const uint8_t *rd_bytes(struct reader *r, uint32_t *length);
int rd_fd(struct reader *r);
int rd_end(struct reader *r);

/* A growing reply body. */
struct writer {
    uint8_t *buf;
    size_t len, cap;
    int fds[4];
    int nfds;
};

void wr_init(struct writer *w);
void wr_free(struct writer *w);
void wr_u8(struct writer *w, uint8_t v);
void wr_u32(struct writer *w, uint32_t v);
void wr_i32(struct writer *w, int32_t v);
void wr_u64(struct writer *w, uint64_t v);
void wr_i64(struct writer *w, int64_t v);
void wr_f64(struct writer *w, double v);
void wr_str(struct writer *w, const char *s);
void wr_fd(struct writer *w, int fd);

/* Send one message (replies and notifications are small: always inline).  While ``wire_batch`` is set (a
 * BATCH being served) the reply is appended to it instead, as ``u32 status, bytes body``, and counted in
 * ``wire_batch_answers``; a reply with descriptors cannot be batched (-1). */
int wire_send(int sock, uint32_t seq, uint16_t code, uint16_t status, const struct writer *body);
extern struct writer *wire_batch;
extern uint32_t wire_batch_answers;

#endif
