/*
 * Small, durable, private files (sn/files.h).
 */
#include <sn/files.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* An error of a file write: ENOSPC/EDQUOT say "disk full" (SN_ERR_LIMIT). */
static enum sn_err file_error(struct sn_error *err, const char *what, const char *path, int e)
{
    if (e == ENOSPC || e == EDQUOT)
        return sn_error_set(err, SN_ERR_LIMIT,
                            "disk full: cannot %s '%s' (%s); free space on "
                            "the state directory's disk and retry",
                            what, path, strerror(e));
    return sn_error_set(err, SN_ERR_IO, "cannot %s '%s': %s", what, path, strerror(e));
}

/* Writes all of data to fd; 0, or the errno of the failure. */
static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? errno : ENOSPC;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

enum sn_err sn_file_replace(const char *path, const void *data, size_t len, struct sn_error *err)
{
    char tmp[4200], dir[4096];
    if (strlen(path) >= sizeof(dir))
        return sn_error_set(err, SN_ERR_INVALID, "path too long: '%.80s...'", path);
    const char *slash = strrchr(path, '/');
    if (slash)
        snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
    else
        snprintf(dir, sizeof(dir), ".");
    int n = snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, slash ? slash + 1 : path);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return sn_error_set(err, SN_ERR_INVALID, "path too long: '%.80s...'", path);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return file_error(err, "create", tmp, errno);
    int e = write_all(fd, data, len);
    const char *step = "write";
    if (!e && fsync(fd) != 0) {
        e = errno;
        step = "sync";
    }
    close(fd);
    if (!e && rename(tmp, path) != 0) {
        e = errno;
        step = "replace";
    }
    if (e) {
        unlink(tmp);
        return file_error(err, step, strcmp(step, "replace") == 0 ? path : tmp, e);
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || fsync(dfd) != 0) {
        e = errno;
        if (dfd >= 0)
            close(dfd);
        return file_error(err, "sync the directory of", path, e);
    }
    close(dfd);
    return SN_OK;
}

enum sn_err sn_file_create_private(const char *path, const void *data, size_t len,
                                   struct sn_error *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return file_error(err, "create", path, errno);
    int e = write_all(fd, data, len);
    if (!e && fsync(fd) != 0)
        e = errno;
    close(fd);
    if (e) {
        unlink(path);
        return file_error(err, "write", path, e);
    }
    return SN_OK;
}

enum sn_err sn_file_check_private(const char *path, int fd, struct sn_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return sn_error_set(err, SN_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    if (st.st_mode & 077)
        return sn_error_set(err, SN_ERR_INVALID,
                            "'%s' has mode %04o: it must not be accessible to group or others "
                            "(chmod 600 '%s')",
                            path, (unsigned)(st.st_mode & 07777), path);
    return SN_OK;
}

enum sn_err sn_file_read_private(const char *path, size_t cap, char **out, size_t *len,
                                 struct sn_error *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return SN_ERR_NOTFOUND;
    if (fd < 0)
        return sn_error_set(err, SN_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    struct stat st;
    enum sn_err rc = sn_file_check_private(path, fd, err);
    if (rc == SN_OK && fstat(fd, &st) != 0)
        rc = sn_error_set(err, SN_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
    else if (rc == SN_OK && (size_t)st.st_size > cap)
        rc = sn_error_set(err, SN_ERR_LIMIT, "'%s' is %lld bytes, the most is %zu", path,
                          (long long)st.st_size, cap);
    char *buf = rc == SN_OK ? malloc((size_t)st.st_size + 1) : NULL;
    if (rc == SN_OK && !buf)
        rc = sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    size_t n = 0;
    while (rc == SN_OK && n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            rc = sn_error_set(err, SN_ERR_IO, "cannot read '%s': %s", path,
                              r < 0 ? strerror(errno) : "it shrank");
        else
            n += (size_t)r;
    }
    close(fd);
    if (rc != SN_OK) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return SN_OK;
}
