/*
 * The error type: code plus first-wins message. See sn/error.h.
 */
#include <sn/error.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const err_names[] = {
#define SN_ERR_NAME(name, lower, text) lower,
    SN_ERR_LIST(SN_ERR_NAME)
#undef SN_ERR_NAME
};

static const char *const err_texts[] = {
#define SN_ERR_TEXT(name, lower, text) text,
    SN_ERR_LIST(SN_ERR_TEXT)
#undef SN_ERR_TEXT
};

SN_PRINTF(5, 0)
static enum sn_err error_vset(struct sn_error *err, enum sn_err code, unsigned line,
                              unsigned column, const char *fmt, va_list ap)
{
    if (!err || err->message[0] != '\0')
        return code;
    err->code = code;
    err->line = line;
    err->column = column;
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    if (err->message[0] == '\0')
        snprintf(err->message, sizeof(err->message), "%s", sn_err_text(code));
    return code;
}

enum sn_err sn_error_set(struct sn_error *err, enum sn_err code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, code, 0, 0, fmt, ap);
    va_end(ap);
    return code;
}

enum sn_err sn_error_set_at(struct sn_error *err, enum sn_err code, unsigned line,
                            unsigned column, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_vset(err, code, line, column, fmt, ap);
    va_end(ap);
    return code;
}

void sn_error_clear(struct sn_error *err)
{
    if (err)
        memset(err, 0, sizeof(*err));
}

const char *sn_err_name(enum sn_err code)
{
    if ((unsigned)code >= SN_ERR_COUNT)
        return "unknown";
    return err_names[code];
}

const char *sn_err_text(enum sn_err code)
{
    if ((unsigned)code >= SN_ERR_COUNT)
        return "unknown error";
    return err_texts[code];
}
