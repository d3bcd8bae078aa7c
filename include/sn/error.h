/*
 * sn/error.h: the one error type of libsn.
 *
 * Every fallible function returns an enum sn_err (SN_OK is 0) and takes a
 * struct sn_error * as its last argument, which may be NULL. The error holds
 * the code and a human message, lowercase, with the subject quoted and a
 * location where there is one ("spec.yaml:12:7: unknown key 'gpu_modle' (did
 * you mean 'gpu_model'?)"). The first message set wins, as with curl's
 * failf(): a caller that adds context never overwrites the root cause.
 *
 * Codes are append-only; sn_err_name() gives the stable lowercase name.
 */
#ifndef SN_ERROR_H
#define SN_ERROR_H

#include <stddef.h>

#if defined(__GNUC__)
#define SN_MUST_CHECK __attribute__((warn_unused_result))
#define SN_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define SN_MUST_CHECK
#define SN_PRINTF(fmt, args)
#endif

#define SN_ERR_LIST(X)                                                        \
    X(OK, "ok", "ok")                                                               \
    X(NOMEM, "nomem", "out of memory")                                                 \
    X(IO, "io", "input/output error")                                               \
    X(SYNTAX, "syntax", "syntax error")                                                 \
    X(INVALID, "invalid", "invalid input")                                               \
    X(RANGE, "range", "value out of range")                                            \
    X(NOTFOUND, "notfound", "not found")                                                  \
    X(LIMIT, "limit", "limit exceeded")                                                \
    X(USAGE, "usage", "bad usage")                                                     \
    X(INTERNAL, "internal", "internal error")                                             \
    X(CONFLICT, "conflict", "conflict")                                                   \
    X(DENIED, "denied", "permission denied")

enum sn_err {
#define SN_ERR_ENUM(name, lower, text) SN_ERR_##name,
    SN_ERR_LIST(SN_ERR_ENUM)
#undef SN_ERR_ENUM
    SN_ERR_COUNT
};
#define SN_OK SN_ERR_OK

#define SN_ERROR_MESSAGE_MAX 512

struct sn_error {
    enum sn_err code;
    char message[SN_ERROR_MESSAGE_MAX];
    /* Where the error was found in an input file; 0 when there is none.
     * Lines and columns count from 1. */
    unsigned line;
    unsigned column;
};

/* Sets code and message unless a message is already set (first one wins).
 * Returns code so callers can write `return sn_error_set(err, ...)`.
 * err may be NULL, in which case only the code is returned. */
enum sn_err sn_error_set(struct sn_error *err, enum sn_err code, const char *fmt, ...)
    SN_PRINTF(3, 4);

/* As sn_error_set(), and records line and column too. */
enum sn_err sn_error_set_at(struct sn_error *err, enum sn_err code, unsigned line,
                            unsigned column, const char *fmt, ...) SN_PRINTF(5, 6);

/* Empties err so it can be reused. NULL is allowed. */
void sn_error_clear(struct sn_error *err);

/* The stable lowercase name of a code ("nomem", "syntax"), "unknown" when
 * the code is out of range. */
const char *sn_err_name(enum sn_err code);

/* A short human description of a code ("out of memory"). */
const char *sn_err_text(enum sn_err code);

#endif /* SN_ERROR_H */
