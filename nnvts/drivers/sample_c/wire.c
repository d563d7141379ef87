/* Framing over a SOCK_SEQPACKET Unix socket and the primitive encoding (docs/protocol.md). */
#define _GNU_SOURCE
#include "wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static uint8_t record[HEADER_SIZE + MAX_INLINE_BODY + 1];

static void close_fds(const int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

int wire_receive(int sock, struct message *msg, const char **why)
{
    union {
        struct cmsghdr align;
        char space[CMSG_SPACE(MAX_FDS * sizeof(int))];
    } control;
    struct iovec iov = {record, sizeof record};
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = control.space;
    mh.msg_controllen = sizeof control.space;

    ssize_t n;
    do {
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    memset(msg, 0, sizeof *msg);
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < count && msg->nfds < MAX_FDS; i++)
                memcpy(&msg->fds[msg->nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        }
    }
    if (n <= 0) {
        close_fds(msg->fds, msg->nfds);
        if (n == 0)
            return 0;
        *why = "recvmsg failed";
        return -1;
    }
    if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || n < HEADER_SIZE) {
        close_fds(msg->fds, msg->nfds);
        *why = "truncated or short record";
        return -1;
    }
    uint32_t length, seq;
    uint16_t code, status, nfds, flags;
    memcpy(&length, record, 4);
    memcpy(&seq, record + 4, 4);
    memcpy(&code, record + 8, 2);
    memcpy(&status, record + 10, 2);
    memcpy(&nfds, record + 12, 2);
    memcpy(&flags, record + 14, 2);
    msg->seq = seq;
    msg->code = code;
    msg->status = status;
    if (nfds != msg->nfds) {
        close_fds(msg->fds, msg->nfds);
        *why = "descriptor count does not match the header";
        return -1;
    }
    msg->body = malloc(length ? length : 1);
    msg->length = length;
    if (!msg->body) {
        close_fds(msg->fds, msg->nfds);
        *why = "out of memory for a message body";
        return -1;
    }
    if (flags & BODY_IN_FD) {
        /* The body travels in the last descriptor (a memfd). */
        if (msg->nfds == 0) {
            *why = "BODY_IN_FD without a descriptor";
            wire_release(msg);
            return -1;
        }
        int side = msg->fds[--msg->nfds];
        size_t got = 0;
        while (got < length) {
            ssize_t k = pread(side, msg->body + got, length - got, (off_t)got);
            if (k <= 0)
                break;
            got += (size_t)k;
        }
        close(side);
        if (got != length) {
            *why = "the body descriptor is shorter than the declared length";
            wire_release(msg);
            return -1;
        }
    } else {
        if ((size_t)n - HEADER_SIZE != length) {
            *why = "body length does not match the header";
            wire_release(msg);
            return -1;
        }
        memcpy(msg->body, record + HEADER_SIZE, length);
    }
    return 1;
}

void wire_release(struct message *msg)
{
    close_fds(msg->fds, msg->nfds);
    msg->nfds = 0;
    free(msg->body);
    msg->body = NULL;
}

struct writer *wire_batch;
uint32_t wire_batch_answers;

static void put(struct writer *w, const void *p, size_t n);

static int batch_answer(uint16_t status, const struct writer *body)
{
    if (body->nfds)
        return -1;
    wr_u32(wire_batch, status);
    wr_u32(wire_batch, (uint32_t)body->len);
    put(wire_batch, body->buf, body->len);
    wire_batch_answers++;
    return 0;
}

int wire_send(int sock, uint32_t seq, uint16_t code, uint16_t status, const struct writer *body)
{
    if (wire_batch)
        return batch_answer(status, body);
    uint8_t header[HEADER_SIZE];
    uint32_t length = (uint32_t)body->len;
    uint16_t nfds = (uint16_t)body->nfds, flags = 0;
    memcpy(header, &length, 4);
    memcpy(header + 4, &seq, 4);
    memcpy(header + 8, &code, 2);
    memcpy(header + 10, &status, 2);
    memcpy(header + 12, &nfds, 2);
    memcpy(header + 14, &flags, 2);
    struct iovec iov[2] = {{header, HEADER_SIZE}, {body->buf, body->len}};
    union {
        struct cmsghdr align;
        char space[CMSG_SPACE(4 * sizeof(int))];
    } control;
    struct msghdr mh = {0};
    mh.msg_iov = iov;
    mh.msg_iovlen = body->len ? 2 : 1;
    if (body->nfds) {
        mh.msg_control = control.space;
        mh.msg_controllen = CMSG_SPACE(body->nfds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(body->nfds * sizeof(int));
        memcpy(CMSG_DATA(c), body->fds, body->nfds * sizeof(int));
    }
    ssize_t n;
    do {
        n = sendmsg(sock, &mh, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n == (ssize_t)(HEADER_SIZE + body->len) ? 0 : -1;
}

/* ---- reader ---------------------------------------------------------------------------------- */

static int take(struct reader *r, void *out, size_t n)
{
    if (r->err || r->size - r->pos < n) {
        if (!r->err)
            r->err = "body ends early";
        memset(out, 0, n);
        return 0;
    }
    memcpy(out, r->data + r->pos, n);
    r->pos += n;
    return 1;
}

uint8_t rd_u8(struct reader *r) { uint8_t v; take(r, &v, 1); return v; }
uint32_t rd_u32(struct reader *r) { uint32_t v; take(r, &v, 4); return v; }
int32_t rd_i32(struct reader *r) { int32_t v; take(r, &v, 4); return v; }
uint64_t rd_u64(struct reader *r) { uint64_t v; take(r, &v, 8); return v; }
int64_t rd_i64(struct reader *r) { int64_t v; take(r, &v, 8); return v; }
double rd_f64(struct reader *r) { double v; take(r, &v, 8); return v; }

int rd_bool(struct reader *r)
{
    uint8_t v = rd_u8(r);
    if (v > 1 && !r->err)
        r->err = "boolean field holds neither 0 nor 1";
    return v == 1;
}

uint32_t rd_count(struct reader *r, size_t item_size)
{
    uint32_t n = rd_u32(r);
    if (!r->err && (uint64_t)n * (item_size ? item_size : 1) > r->size - r->pos) {
        r->err = "list length overruns the body";
        return 0;
    }
    return r->err ? 0 : n;
}

const uint8_t *rd_bytes(struct reader *r, uint32_t *length)
{
    uint32_t n = rd_count(r, 1);
    *length = n;
    if (r->err)
        return NULL;
    const uint8_t *p = r->data + r->pos;
    r->pos += n;
    return p;
}

int rd_fd(struct reader *r)
{
    uint32_t index = rd_u32(r);
    if (r->err)
        return -1;
    if (index >= (uint32_t)r->nfds) {
        r->err = "descriptor index out of range";
        return -1;
    }
    return r->fds[index];
}

int rd_end(struct reader *r)
{
    if (!r->err && r->pos != r->size)
        r->err = "unexpected bytes after the last field";
    return r->err == NULL;
}

/* ---- writer ---------------------------------------------------------------------------------- */

void wr_init(struct writer *w) { memset(w, 0, sizeof *w); }
void wr_free(struct writer *w) { free(w->buf); memset(w, 0, sizeof *w); }

static void put(struct writer *w, const void *p, size_t n)
{
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 256;
        while (cap < w->len + n)
            cap *= 2;
        uint8_t *grown = realloc(w->buf, cap);
        if (!grown)
            abort(); /* a reply of a few hundred bytes: failing here means the process is beyond help */
        w->buf = grown;
        w->cap = cap;
    }
    if (n)
        memcpy(w->buf + w->len, p, n);
    w->len += n;
}

void wr_u8(struct writer *w, uint8_t v) { put(w, &v, 1); }
void wr_u32(struct writer *w, uint32_t v) { put(w, &v, 4); }
void wr_i32(struct writer *w, int32_t v) { put(w, &v, 4); }
void wr_u64(struct writer *w, uint64_t v) { put(w, &v, 8); }
void wr_i64(struct writer *w, int64_t v) { put(w, &v, 8); }
void wr_f64(struct writer *w, double v) { put(w, &v, 8); }

void wr_str(struct writer *w, const char *s)
{
    uint32_t n = (uint32_t)strlen(s);
    wr_u32(w, n);
    put(w, s, n);
}

void wr_fd(struct writer *w, int fd)
{
    wr_u32(w, (uint32_t)w->nfds);
    w->fds[w->nfds++] = fd;
}
