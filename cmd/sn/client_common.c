/*
 * What the sn client commands share (see client.h): option parsing, the
 * server and token from flags, environment or config file, requests with
 * exit statuses mapped from HTTP statuses, and small output helpers.
 */
#include "client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sn/httpc.h>

#include "cli.h"
#include "commands.h"

#define CONFIG_MAX_BYTES 65536
#define PATH_MAX_BYTES 1024

/* The common settings, from flags, environment and the config file. */
struct common {
    char server[256];
    char token[1024];
    char tls[3][PATH_MAX_BYTES]; /* ca_file, cert_file, key_file */
};
static const char *const tls_keys[3] = {"ca_file", "cert_file", "key_file"};
static const char *const tls_env[3] = {"SN_CACERT", "SN_CERT", "SN_KEY"};

/* The process's one server connection; freed at exit. */
static struct sn_httpc *shared_http;

static void free_shared_http(void)
{
    sn_httpc_free(shared_http);
    shared_http = NULL;
}

static void usage(FILE *out, const char *usage_text, const struct client_opt *opts, size_t n)
{
    fprintf(out, "%s\n\noptions:\n", usage_text);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "  --%-18s %s\n", opts[i].name, opts[i].help);
    fprintf(out, "  --%-18s %s\n", "server URL", "snd's address (default http://127.0.0.1:7070)");
    fprintf(out, "  --%-18s %s\n", "token TEXT", "bearer token");
    fprintf(out, "  --%-18s %s\n", "token-file PATH", "read the token from a file");
    fprintf(out, "  --%-18s %s\n", "cacert FILE",
            "CA certificates (PEM) to verify an https server");
    fprintf(out, "  --%-18s %s\n", "cert FILE", "client certificate (PEM) for mutual TLS");
    fprintf(out, "  --%-18s %s\n", "key FILE", "key (PEM) of --cert");
    fprintf(out, "  -o %-18s %s\n", "json|table|wide",
            "output format (default table; wide: more columns where the command has them)");
}

/* Reads the first line of path into out (without the newline). */
static int read_line(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    if (!fgets(out, (int)len, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* Applies "server", "token", "token_file", "ca_file", "cert_file" and
 * "key_file" from the config file where flags and environment left them
 * unset. A missing default file is fine; a missing $SN_CONFIG file is an
 * error. */
static int read_config(const char *cmd, struct common *cm)
{
    char *server = cm->server, *token = cm->token;
    size_t slen = sizeof(cm->server), tlen = sizeof(cm->token);
    char path[1024];
    const char *env = getenv("SN_CONFIG"), *home = getenv("HOME");
    if (env)
        snprintf(path, sizeof(path), "%s", env);
    else if (home)
        snprintf(path, sizeof(path), "%s/.config/supernode/client.conf", home);
    else
        return 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        if (!env)
            return 0;
        fprintf(stderr, "%s: config '%s': %s\n", cmd, path, strerror(errno));
        return SN_EXIT_USAGE;
    }
    char line[2048];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        char *l = trim(line);
        if (!*l || *l == '#')
            continue;
        char *eq = strchr(l, '=');
        if (!eq) {
            fprintf(stderr, "%s: %s:%d: expected 'key = value'\n", cmd, path, lineno);
            rc = SN_EXIT_USAGE;
            break;
        }
        *eq = '\0';
        char *key = trim(l), *val = trim(eq + 1);
        int tls = -1;
        for (int k = 0; k < 3; k++)
            if (strcmp(key, tls_keys[k]) == 0)
                tls = k;
        if (tls >= 0) {
            if (!cm->tls[tls][0])
                snprintf(cm->tls[tls], sizeof(cm->tls[tls]), "%s", val);
        } else if (strcmp(key, "server") == 0 && !server[0])
            snprintf(server, slen, "%s", val);
        else if (strcmp(key, "token") == 0 && !token[0])
            snprintf(token, tlen, "%s", val);
        else if (strcmp(key, "token_file") == 0 && !token[0] && read_line(val, token, tlen) != 0) {
            fprintf(stderr, "%s: %s:%d: token_file '%s': %s\n", cmd, path, lineno, val,
                    strerror(errno));
            rc = SN_EXIT_USAGE;
        } else if (strcmp(key, "server") && strcmp(key, "token") && strcmp(key, "token_file")) {
            fprintf(stderr,
                    "%s: %s:%d: unknown key '%s' (expected server, token, token_file, ca_file, "
                    "cert_file, key_file)\n",
                    cmd, path, lineno, key);
            rc = SN_EXIT_USAGE;
        }
    }
    fclose(f);
    return rc;
}

static int set_common(struct client *c, const char *server, const char *token,
                      const char *token_file, const char *const tls_flag[3])
{
    static struct common cm;
    memset(&cm, 0, sizeof(cm));
    char *srv = cm.server, *tok = cm.token;
    for (int k = 0; k < 3; k++) {
        const char *v = tls_flag[k] ? tls_flag[k] : getenv(tls_env[k]);
        if (v)
            snprintf(cm.tls[k], sizeof(cm.tls[k]), "%s", v);
    }
    if (server)
        snprintf(srv, sizeof(cm.server), "%s", server);
    else if (getenv("SN_SERVER"))
        snprintf(srv, sizeof(cm.server), "%s", getenv("SN_SERVER"));
    if (token)
        snprintf(tok, sizeof(cm.token), "%s", token);
    else if (token_file && read_line(token_file, tok, sizeof(cm.token)) != 0) {
        fprintf(stderr, "%s: --token-file '%s': %s\n", c->cmd, token_file, strerror(errno));
        return SN_EXIT_USAGE;
    } else if (!token_file && getenv("SN_TOKEN"))
        snprintf(tok, sizeof(cm.token), "%s", getenv("SN_TOKEN"));
    int rc = read_config(c->cmd, &cm);
    if (rc)
        return rc;
    if (!srv[0])
        snprintf(srv, sizeof(cm.server), "http://127.0.0.1:7070");
    if (!cm.tls[1][0] != !cm.tls[2][0]) {
        fprintf(stderr, "%s: a client certificate and its key go together (--cert, --key)\n",
                c->cmd);
        return SN_EXIT_USAGE;
    }
    struct sn_httpc_options o = {.ca_file = cm.tls[0][0] ? cm.tls[0] : NULL,
                                 .cert_file = cm.tls[1][0] ? cm.tls[1] : NULL,
                                 .key_file = cm.tls[2][0] ? cm.tls[2] : NULL};
    struct sn_error err = {0};
    free_shared_http();
    if (sn_httpc_new(srv, &o, &shared_http, &err) != SN_OK) {
        fprintf(stderr, "%s: %s\n", c->cmd, err.message);
        return SN_EXIT_USAGE;
    }
    static bool registered;
    if (!registered)
        registered = atexit(free_shared_http) == 0;
    c->http = shared_http;
    snprintf(c->token, sizeof(c->token), "%s", tok);
    return -1;
}

int client_init(struct client *c, const char *cmd, const char *usage_text, int argc, char **argv,
                struct client_opt *opts, size_t n_opts, int min_args, int max_args)
{
    memset(c, 0, sizeof(*c));
    c->cmd = cmd;
    const char *server = NULL, *token = NULL, *token_file = NULL, *tls[3] = {NULL, NULL, NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout, usage_text, opts, n_opts);
            return SN_EXIT_OK;
        }
        if (a[0] != '-' || strcmp(a, "-") == 0) {
            if (c->n_args >= max_args || c->n_args >= CLIENT_MAX_ARGS) {
                fprintf(stderr, "%s: unexpected argument '%s'\n", cmd, a);
                return SN_EXIT_USAGE;
            }
            c->args[c->n_args++] = a;
            continue;
        }
        const char *name = a[1] == '-' ? a + 2 : a + 1;
        struct client_opt *o = NULL;
        for (size_t k = 0; k < n_opts && !o; k++)
            if (strcmp(opts[k].name, name) == 0)
                o = &opts[k];
        if (o && o->is_flag) {
            o->value = "1";
            continue;
        }
        bool common = strcmp(name, "server") == 0 || strcmp(name, "token") == 0 ||
                      strcmp(name, "token-file") == 0 || strcmp(a, "-o") == 0 ||
                      strcmp(name, "output") == 0 || strcmp(name, "cacert") == 0 ||
                      strcmp(name, "cert") == 0 || strcmp(name, "key") == 0;
        if (!o && !common) {
            const char *names[64] = {"server", "token", "token-file", "output",
                                                      "cacert", "cert", "key"};
            size_t n = 7;
            for (size_t k = 0; k < n_opts && n < sizeof(names) / sizeof(names[0]); k++)
                names[n++] = opts[k].name;
            const char *near = client_nearest(name, names, n);
            if (near)
                fprintf(stderr, "%s: unknown option '%s' (did you mean '--%s'?)\n", cmd, a, near);
            else
                fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", cmd, a, cmd);
            return SN_EXIT_USAGE;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "%s: option '%s' needs a value\n", cmd, a);
            return SN_EXIT_USAGE;
        }
        const char *v = argv[++i];
        if (o)
            o->value = v;
        else if (strcmp(name, "server") == 0)
            server = v;
        else if (strcmp(name, "token") == 0)
            token = v;
        else if (strcmp(name, "token-file") == 0)
            token_file = v;
        else if (strcmp(name, "cacert") == 0)
            tls[0] = v;
        else if (strcmp(name, "cert") == 0)
            tls[1] = v;
        else if (strcmp(name, "key") == 0)
            tls[2] = v;
        else if (strcmp(v, "json") == 0 || strcmp(v, "table") == 0 || strcmp(v, "wide") == 0) {
            c->json = strcmp(v, "json") == 0;
            c->wide = strcmp(v, "wide") == 0;
        } else {
            fprintf(stderr, "%s: -o '%s': expected json, table or wide\n", cmd, v);
            return SN_EXIT_USAGE;
        }
    }
    if (c->n_args < min_args) {
        fprintf(stderr, "%s: missing argument\n", cmd);
        usage(stderr, usage_text, opts, n_opts);
        return SN_EXIT_USAGE;
    }
    return set_common(c, server, token, token_file, tls);
}

static int exit_for(int status)
{
    if (status == 404)
        return SN_EXIT_NOT_FOUND;
    if (status == 401 || status == 403)
        return SN_EXIT_AUTH;
    if (status >= 500)
        return SN_EXIT_UNAVAILABLE;
    return SN_EXIT_REFUSED;
}

static int call(struct client *c, const char *method, const char *body, const char *header,
                json_t **out, bool quiet, const char *path)
{
    struct sn_httpc_request req = {.method = method,
                                   .path = path,
                                   .token = c->token[0] ? c->token : NULL,
                                   .header = header,
                                   .body = body,
                                   .body_len = body ? strlen(body) : 0};
    struct sn_httpc_response resp;
    struct sn_error err = {0};
    if (sn_httpc_send(c->http, &req, &resp, &err) != SN_OK) {
        c->last_status = 0;
        snprintf(c->last_message, sizeof(c->last_message), "%s", err.message);
        if (!quiet)
            fprintf(stderr, "%s: %s\n", c->cmd, err.message);
        return SN_EXIT_UNAVAILABLE;
    }
    json_t *j = json_loads(resp.body, 0, NULL);
    int status = resp.status;
    c->last_status = status;
    c->last_message[0] = '\0';
    c->last_field[0] = '\0';
    sn_httpc_response_release(&resp);
    if (status >= 200 && status < 300 && j) {
        if (out)
            *out = j;
        else
            json_decref(j);
        return SN_EXIT_OK;
    }
    json_t *e = json_object_get(j, "error");
    const char *msg = json_string_value(json_object_get(e, "message"));
    const char *field = json_string_value(json_object_get(e, "field"));
    snprintf(c->last_message, sizeof(c->last_message), "%s", msg ? msg : "unexpected answer");
    snprintf(c->last_field, sizeof(c->last_field), "%s", field ? field : "");
    if (c->json && j && !quiet)
        client_print_json(j);
    if (!quiet)
        fprintf(stderr, "%s: %d %s%s%s%s\n", c->cmd, status, msg ? msg : "unexpected answer",
                field ? " (field '" : "", field ? field : "", field ? "')" : "");
    json_decref(j);
    return exit_for(status);
}

int client_call(struct client *c, const char *method, const char *body, const char *header,
                json_t **out, const char *path_fmt, ...)
{
    char path[1024];
    va_list ap;
    va_start(ap, path_fmt);
    vsnprintf(path, sizeof(path), path_fmt, ap);
    va_end(ap);
    return call(c, method, body, header, out, false, path);
}

int client_call_quiet(struct client *c, json_t **out, const char *path_fmt, ...)
{
    char path[1024];
    va_list ap;
    va_start(ap, path_fmt);
    vsnprintf(path, sizeof(path), path_fmt, ap);
    va_end(ap);
    return call(c, "GET", NULL, NULL, out, true, path);
}

int client_call_status(struct client *c, const char *method, const char *body, json_t **out,
                       int *status, const char *path_fmt, ...)
{
    char path[1024];
    va_list ap;
    va_start(ap, path_fmt);
    vsnprintf(path, sizeof(path), path_fmt, ap);
    va_end(ap);
    c->last_status = 0;
    int rc = call(c, method, body, NULL, out, true, path);
    *status = c->last_status;
    return rc;
}

int client_get_pages(struct client *c, const char *route, const char *filter, long long max,
                     json_t **out)
{
    json_t *all = json_array();
    long long after = 0;
    while ((long long)json_array_size(all) < max) {
        json_t *page = NULL;
        long long want = max - (long long)json_array_size(all);
        int rc = client_call(c, "GET", NULL, NULL, &page, "%s?limit=%lld&after=%lld%s", route,
                             want > 1000 ? 1000 : want, after, filter);
        if (rc != SN_EXIT_OK) {
            json_decref(all);
            return rc;
        }
        json_array_extend(all, json_object_get(page, "items"));
        json_t *next = json_object_get(page, "next");
        bool more = json_is_integer(next);
        after = json_integer_value(next);
        json_decref(page);
        if (!more || after == 0)
            break;
    }
    *out = all;
    return SN_EXIT_OK;
}

void client_print_json(json_t *j)
{
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (text)
        printf("%s\n", text);
    free(text);
}

char *client_age(long long s, char *buf, size_t len)
{
    if (s < 0)
        s = 0;
    if (s < 60)
        snprintf(buf, len, "%llds", s);
    else if (s < 3600)
        snprintf(buf, len, "%lldm%02llds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, len, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
    else
        snprintf(buf, len, "%lldd%02lldh", s / 86400, (s % 86400) / 3600);
    return buf;
}

const char *client_str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s && *s ? s : "-";
}

const char *client_nearest(const char *word, const char *const *names, size_t n)
{
    const char *best = NULL;
    size_t best_d = (size_t)-1, len = strlen(word);
    size_t limit = len / 3 < 1 ? 1 : len / 3 > 3 ? 3 : len / 3;
    for (size_t i = 0; i < n; i++) {
        size_t d = sn_cli_distance(word, names[i]);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    return best && best_d <= limit ? best : NULL;
}

void client_print_last_error(struct client *c)
{
    if (c->last_status == 0)
        fprintf(stderr, "%s: %s\n", c->cmd, c->last_message);
    else
        fprintf(stderr, "%s: %d %s%s%s%s\n", c->cmd, c->last_status, c->last_message,
                c->last_field[0] ? " (field '" : "", c->last_field, c->last_field[0] ? "')" : "");
}
