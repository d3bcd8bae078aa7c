/*
 * Small, durable files: the key ring, the revocation list, token files and
 * state files that a crash must leave whole (the old content or the new,
 * never a torn one) and that hold secrets (mode 0600, and refused when
 * group or others may read them).
 */
#ifndef SN_FILES_H
#define SN_FILES_H

#include <stddef.h>

#include <sn/error.h>

/* Replaces path with data atomically and durably: a temporary file beside
 * it (mode 0600) is written and fsynced, renamed over path, and the
 * directory is fsynced. A full disk (ENOSPC, EDQUOT) is SN_ERR_LIMIT with a
 * message starting "disk full"; other failures SN_ERR_IO naming the file
 * and the step. The temporary file never stays behind. */
SN_MUST_CHECK enum sn_err sn_file_replace(const char *path, const void *data, size_t len,
                                          struct sn_error *err);

/* Creates path (mode 0600, failing when it exists) with data, fsynced;
 * SN_ERR_IO naming the file otherwise, SN_ERR_LIMIT for a full disk. */
SN_MUST_CHECK enum sn_err sn_file_create_private(const char *path, const void *data, size_t len,
                                                 struct sn_error *err);

/* SN_ERR_INVALID, with the chmod that fixes it, when the open file fd
 * (named path) may be read or written by group or others. */
SN_MUST_CHECK enum sn_err sn_file_check_private(const char *path, int fd, struct sn_error *err);

/* Reads a private file (mode 0600 or stricter) of at most cap bytes into a
 * NUL-terminated buffer the caller frees. SN_ERR_NOTFOUND (err untouched)
 * when it does not exist; SN_ERR_LIMIT when it is larger than cap. */
SN_MUST_CHECK enum sn_err sn_file_read_private(const char *path, size_t cap, char **out,
                                               size_t *len, struct sn_error *err);

#endif
