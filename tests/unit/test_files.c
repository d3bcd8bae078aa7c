/*
 * Unit tests of lib/core/files.c (sn/files.h): an atomic replace leaves
 * the new content, mode 0600 and no temporary file; a private read refuses
 * a file group or others may read (naming the chmod), one over its cap,
 * and tells a missing file apart; a private create never overwrites.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sn/files.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sn_test.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/sn-files-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    DIR *dp = opendir(dir);
    struct dirent *e;
    char p[400];
    while (dp && (e = readdir(dp)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
            unlink(p);
        }
    if (dp)
        closedir(dp);
    return rmdir(dir);
}

static unsigned entries(void)
{
    DIR *dp = opendir(dir);
    unsigned n = 0;
    struct dirent *e;
    while (dp && (e = readdir(dp)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(dp);
    return n;
}

static void test_replace_then_read(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/ring", dir);
    struct sn_error err = {0};
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(sn_file_read_private(path, 100, &text, &len, &err), SN_ERR_NOTFOUND);
    assert_int_equal(sn_file_replace(path, "one\n", 4, &err), SN_OK);
    assert_int_equal(sn_file_replace(path, "second\n", 7, &err), SN_OK);
    assert_int_equal(entries(), 1); /* no temporary file left */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(sn_file_read_private(path, 100, &text, &len, &err), SN_OK);
    assert_int_equal(len, 7);
    assert_string_equal(text, "second\n");
    free(text);
    assert_int_equal(sn_file_read_private(path, 6, &text, &len, &err), SN_ERR_LIMIT);
    assert_null(text);
    /* A relative name replaces in the current directory. */
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir(dir), 0);
    assert_int_equal(sn_file_replace("here", "x", 1, &err), SN_OK);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(entries(), 2);
}

static void test_refuses_open_modes(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "%s/key", dir);
    struct sn_error err = {0};
    assert_int_equal(sn_file_create_private(path, "k", 1, &err), SN_OK);
    assert_int_not_equal(sn_file_create_private(path, "k2", 2, &err), SN_OK);
    assert_non_null(strstr(err.message, path));
    assert_int_equal(chmod(path, 0644), 0);
    char *text = NULL;
    size_t len = 0;
    err = (struct sn_error){0};
    assert_int_equal(sn_file_read_private(path, 100, &text, &len, &err), SN_ERR_INVALID);
    assert_non_null(strstr(err.message, "mode 0644"));
    assert_non_null(strstr(err.message, "chmod 600"));
}

static void test_replace_in_missing_dir(void **state)
{
    (void)state;
    char path[160];
    snprintf(path, sizeof(path), "%s/no/such/file", dir);
    struct sn_error err = {0};
    assert_int_equal(sn_file_replace(path, "x", 1, &err), SN_ERR_IO);
    assert_non_null(strstr(err.message, "cannot create"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replace_then_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_open_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replace_in_missing_dir, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
