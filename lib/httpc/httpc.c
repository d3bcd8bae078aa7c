/*
 * The HTTP client (sn/httpc.h) on libcurl. A client owns one easy handle;
 * each request resets its options (the connection cache and TLS session
 * survive curl_easy_reset) and sets them again, so no option of one request
 * leaks into the next. The body is collected under SN_HTTPC_BODY_MAX_BYTES
 * and the headers under SN_HTTPC_HEADER_MAX_BYTES; past either, the write
 * callback stops the transfer and the error says which cap. libcurl's
 * global state is initialised once (pthread_once) before the first handle.
 *
 * Several servers (a comma-separated list: snd instances on one PostgreSQL
 * store, one leading): requests go to the current one. A connection that
 * cannot be made (refused, unreachable: nothing was sent) moves to the next
 * and the request is tried there, once around the list. A 307 whose
 * Location is one of the listed servers moves there and the request is
 * repeated; a Location elsewhere is not followed (a token is never sent to
 * a server the caller did not name). A 503 from a standby that knows no
 * leader ("no_leader") tries the next server, and comes back when all say
 * so. Any other failure (the server died mid-request: the request may have
 * been applied) is returned, and the next request starts at the next
 * server. With one server nothing of this applies: no redirect is followed.
 */
#include <sn/httpc.h>

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct sn_httpc {
    CURL *easy;
    char url[SN_HTTPC_URL_MAX]; /* the current server's */
    char urls[SN_HTTPC_SERVERS_MAX][SN_HTTPC_URL_MAX];
    unsigned n_urls, cur;
    char *ca_file, *cert_file, *key_file;
    int connect_timeout_ms;
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init(void)
{
    global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* The value of URL part what, or "" when absent; false on other errors. */
static bool url_part(CURLU *u, CURLUPart what, char *out, size_t len)
{
    char *v = NULL;
    CURLUcode rc = curl_url_get(u, what, &v, 0);
    out[0] = '\0';
    if (rc == CURLUE_OK) {
        bool fits = strlen(v) < len;
        if (fits)
            snprintf(out, len, "%s", v);
        curl_free(v);
        return fits;
    }
    return rc == CURLUE_NO_PORT || rc == CURLUE_NO_QUERY || rc == CURLUE_NO_USER ||
           rc == CURLUE_NO_PASSWORD || rc == CURLUE_NO_FRAGMENT || rc == CURLUE_NO_OPTIONS;
}

enum sn_err sn_httpc_normalize(const char *server, char out[SN_HTTPC_URL_MAX], struct sn_error *err)
{
    static const char want[] = "expected HOST:PORT, [IPv6]:PORT, http://HOST[:PORT] or "
                               "https://HOST[:PORT]";
    bool has_scheme = strstr(server, "://") != NULL;
    if (has_scheme && strncasecmp(server, "http://", 7) != 0 &&
        strncasecmp(server, "https://", 8) != 0)
        return sn_error_set(err, SN_ERR_INVALID, "server '%s': only http:// and https:// (%s)",
                            server, want);
    /* libcurl keeps percent-encoding in a host as it is, so "8%38" would
     * name a host that a second pass reads as "88": refused, so a normalised
     * address is stable (fuzz_httpc_url found it). */
    if (strchr(server, '%'))
        return sn_error_set(err, SN_ERR_INVALID, "server '%.64s': no percent-encoding (%s)",
                            server, want);
    char full[SN_HTTPC_URL_MAX + 8];
    int n = snprintf(full, sizeof(full), "%s%s", has_scheme ? "" : "http://", server);
    if (n < 0 || (size_t)n >= SN_HTTPC_URL_MAX || !server[0])
        return sn_error_set(err, SN_ERR_INVALID, "server '%.64s': %s", server,
                            server[0] ? "too long" : want);
    CURLU *u = curl_url();
    if (!u)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    char scheme[8], host[300], port[8], path[SN_HTTPC_URL_MAX], query[8], user[8];
    enum sn_err rc = SN_OK;
    if (curl_url_set(u, CURLUPART_URL, full, 0) != CURLUE_OK ||
        !url_part(u, CURLUPART_SCHEME, scheme, sizeof(scheme)) ||
        !url_part(u, CURLUPART_HOST, host, sizeof(host)) ||
        !url_part(u, CURLUPART_PORT, port, sizeof(port)) ||
        !url_part(u, CURLUPART_PATH, path, sizeof(path)) ||
        !url_part(u, CURLUPART_QUERY, query, sizeof(query)) ||
        !url_part(u, CURLUPART_USER, user, sizeof(user)) || !host[0])
        rc = sn_error_set(err, SN_ERR_INVALID, "server '%s': %s", server, want);
    else if (!has_scheme && !port[0])
        rc = sn_error_set(err, SN_ERR_INVALID, "server '%s': a port is needed (%s)", server, want);
    else if ((path[0] && strcmp(path, "/") != 0) || query[0] || user[0])
        rc = sn_error_set(err, SN_ERR_INVALID,
                          "server '%s': no path, query or credentials allowed (%s)", server, want);
    else if (port[0] && (strtol(port, NULL, 10) < 1 || strtol(port, NULL, 10) > 65535))
        rc = sn_error_set(err, SN_ERR_INVALID, "server '%s': port must be 1 to 65535", server);
    curl_url_cleanup(u);
    if (rc == SN_OK)
        snprintf(out, SN_HTTPC_URL_MAX, "%s://%s%s%s", scheme, host, port[0] ? ":" : "", port);
    return rc;
}

static enum sn_err copy_file_option(const char *what, const char *path, char **out,
                                    struct sn_error *err)
{
    if (!path)
        return SN_OK;
    FILE *f = fopen(path, "r");
    if (!f)
        return sn_error_set(err, SN_ERR_INVALID, "%s '%s': %s", what, path, strerror(errno));
    fclose(f);
    *out = strdup(path);
    return *out ? SN_OK : sn_error_set(err, SN_ERR_NOMEM, "out of memory");
}

enum sn_err sn_httpc_new(const char *server, const struct sn_httpc_options *o,
                         struct sn_httpc **out, struct sn_error *err)
{
    *out = NULL;
    pthread_once(&global_once, global_init);
    if (global_rc != CURLE_OK)
        return sn_error_set(err, SN_ERR_INTERNAL, "libcurl: %s", curl_easy_strerror(global_rc));
    struct sn_httpc *c = calloc(1, sizeof(*c));
    if (!c)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    enum sn_err rc = SN_OK;
    for (const char *p = server; rc == SN_OK;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char one[SN_HTTPC_URL_MAX];
        if (c->n_urls == SN_HTTPC_SERVERS_MAX)
            rc = sn_error_set(err, SN_ERR_INVALID, "server list '%s': at most %d servers", server,
                              SN_HTTPC_SERVERS_MAX);
        else if (len == 0 || len >= sizeof(one))
            rc = sn_error_set(err, SN_ERR_INVALID, "server list '%s': an empty or too long entry",
                              server);
        else {
            snprintf(one, sizeof(one), "%.*s", (int)len, p);
            rc = sn_httpc_normalize(one, c->urls[c->n_urls++], err);
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    if (rc == SN_OK)
        snprintf(c->url, sizeof(c->url), "%s", c->urls[0]);
    if (rc == SN_OK && o) {
        rc = copy_file_option("CA file", o->ca_file, &c->ca_file, err);
        if (rc == SN_OK)
            rc = copy_file_option("client certificate", o->cert_file, &c->cert_file, err);
        if (rc == SN_OK)
            rc = copy_file_option("client key", o->key_file, &c->key_file, err);
        c->connect_timeout_ms = o->connect_timeout_ms;
    }
    if (rc == SN_OK && !(c->easy = curl_easy_init()))
        rc = sn_error_set(err, SN_ERR_NOMEM, "libcurl: cannot create a handle");
    if (rc != SN_OK) {
        sn_httpc_free(c);
        return rc;
    }
    *out = c;
    return SN_OK;
}

const char *sn_httpc_url(const struct sn_httpc *c)
{
    return c->url;
}

void sn_httpc_free(struct sn_httpc *c)
{
    if (!c)
        return;
    if (c->easy)
        curl_easy_cleanup(c->easy);
    free(c->ca_file);
    free(c->cert_file);
    free(c->key_file);
    free(c);
}

/* What the callbacks collect. */
struct sink {
    char *data;
    size_t len, cap;
    size_t header_bytes;
    bool over_body, over_header;
    struct sn_httpc_response *resp;
    char location[SN_HTTPC_URL_MAX + 2048]; /* a Location header, or "" */
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct sink *s = userdata;
    size_t n = size * nmemb;
    if (s->len + n > SN_HTTPC_BODY_MAX_BYTES) {
        s->over_body = true;
        return 0;
    }
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 8192;
        while (cap < s->len + n + 1)
            cap *= 2;
        char *p = realloc(s->data, cap);
        if (!p)
            return 0;
        s->data = p;
        s->cap = cap;
    }
    memcpy(s->data + s->len, ptr, n);
    s->len += n;
    s->data[s->len] = '\0';
    return n;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct sink *s = userdata;
    size_t n = size * nmemb;
    s->header_bytes += n;
    if (s->header_bytes > SN_HTTPC_HEADER_MAX_BYTES) {
        s->over_header = true;
        return 0;
    }
    if (strncmp(ptr, "HTTP/", 5) == 0) {
        s->resp->retry_after[0] = '\0'; /* a new response (after 100 Continue) */
    } else if (n > 12 && strncasecmp(ptr, "Retry-After:", 12) == 0) {
        const char *v = ptr + 12;
        size_t vl = n - 12;
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        snprintf(s->resp->retry_after, sizeof(s->resp->retry_after), "%.*s", (int)vl, v);
    } else if (n > 9 && strncasecmp(ptr, "Location:", 9) == 0) {
        const char *v = ptr + 9;
        size_t vl = n - 9;
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        if (vl < sizeof(s->location))
            snprintf(s->location, sizeof(s->location), "%.*s", (int)vl, v);
    }
    return n;
}

/* A CURLcode as our error, naming the server. */
static enum sn_err curl_error(const struct sn_httpc *c, CURLcode cc, const char *errbuf,
                              const struct sink *s, int timeout_ms, struct sn_error *err)
{
    const char *why = errbuf[0] ? errbuf : curl_easy_strerror(cc);
    switch (cc) {
    case CURLE_WRITE_ERROR:
        if (s->over_body)
            return sn_error_set(err, SN_ERR_LIMIT, "%s: response body over %u bytes", c->url,
                                SN_HTTPC_BODY_MAX_BYTES);
        if (s->over_header)
            return sn_error_set(err, SN_ERR_LIMIT, "%s: response header over %u bytes", c->url,
                                SN_HTTPC_HEADER_MAX_BYTES);
        return sn_error_set(err, SN_ERR_NOMEM, "%s: out of memory for the response", c->url);
    case CURLE_FILESIZE_EXCEEDED:
        return sn_error_set(err, SN_ERR_LIMIT, "%s: response body over %u bytes", c->url,
                            SN_HTTPC_BODY_MAX_BYTES);
    case CURLE_OPERATION_TIMEDOUT:
        return sn_error_set(err, SN_ERR_IO, "%s: timed out after %d ms (%s)", c->url, timeout_ms,
                            why);
    case CURLE_COULDNT_CONNECT:
        return sn_error_set(err, SN_ERR_IO, "%s: cannot connect (%s)", c->url, why);
    case CURLE_COULDNT_RESOLVE_HOST:
        return sn_error_set(err, SN_ERR_IO, "%s: cannot resolve the host name (%s)", c->url, why);
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return sn_error_set(err, SN_ERR_SYNTAX, "%s: not an HTTP response (%s)", c->url, why);
    case CURLE_PEER_FAILED_VERIFICATION:
        return sn_error_set(err, SN_ERR_IO,
                            "%s: the server's certificate could not be verified (%s); "
                            "check the CA file and the host name",
                            c->url, why);
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
        return sn_error_set(err, SN_ERR_IO, "%s: TLS handshake failed (%s)", c->url, why);
    default:
        return sn_error_set(err, SN_ERR_IO, "%s: %s", c->url, why);
    }
}

static void set_tls(struct sn_httpc *c)
{
    CURL *e = c->easy;
    if (c->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
    if (c->cert_file) {
        curl_easy_setopt(e, CURLOPT_SSLCERT, c->cert_file);
        curl_easy_setopt(e, CURLOPT_SSLKEY, c->key_file ? c->key_file : c->cert_file);
    }
}

/* Sets every option of one request; *headers is to be freed after it. */
static enum sn_err set_request(struct sn_httpc *c, const struct sn_httpc_request *req,
                               struct sink *s, char *errbuf, int timeout_ms,
                               struct curl_slist **headers, struct sn_error *err)
{
    CURL *e = c->easy;
    char url[SN_HTTPC_URL_MAX + 2048];
    int n = snprintf(url, sizeof(url), "%s%s", c->url, req->path);
    if (n < 0 || (size_t)n >= sizeof(url))
        return sn_error_set(err, SN_ERR_LIMIT, "request path too long");
    char line[1200];
    struct curl_slist *h = curl_slist_append(NULL, "Expect:");
    if (h && req->token) {
        n = snprintf(line, sizeof(line), "Authorization: Bearer %s", req->token);
        if (n < 0 || (size_t)n >= sizeof(line)) {
            curl_slist_free_all(h);
            return sn_error_set(err, SN_ERR_LIMIT, "token too long");
        }
        h = curl_slist_append(h, line);
    }
    if (h && req->header)
        h = curl_slist_append(h, req->header);
    if (h && req->body) {
        snprintf(line, sizeof(line), "Content-Type: %.200s",
                 req->content_type ? req->content_type : "application/json");
        h = curl_slist_append(h, line);
    }
    if (!h)
        return sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    *headers = h;
    curl_easy_reset(e);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "sn");
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    int ct = c->connect_timeout_ms > 0 ? c->connect_timeout_ms : 5000;
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(ct < timeout_ms ? ct : timeout_ms));
    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)SN_HTTPC_BODY_MAX_BYTES);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, s);
    set_tls(c);
    bool get = strcmp(req->method, "GET") == 0;
    if (req->body || !get) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)(req->body ? req->body_len : 0));
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body ? req->body : "");
    }
    if (strcmp(req->method, "POST") != 0 && !get)
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
    return SN_OK;
}

/* One request to the current server; *cc gets libcurl's outcome. */
static enum sn_err send_once(struct sn_httpc *c, const struct sn_httpc_request *req,
                             struct sn_httpc_response *resp, struct sink *s, CURLcode *cc,
                             struct sn_error *err)
{
    memset(resp, 0, sizeof(*resp));
    *cc = CURLE_OK;
    int timeout_ms = req->timeout_ms > 0 ? req->timeout_ms : 10000;
    if (req->body && req->body_len > SN_HTTPC_BODY_MAX_BYTES)
        return sn_error_set(err, SN_ERR_LIMIT, "request body over %u bytes",
                            SN_HTTPC_BODY_MAX_BYTES);
    *s = (struct sink){.resp = resp};
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = NULL;
    enum sn_err rc = set_request(c, req, s, errbuf, timeout_ms, &headers, err);
    if (rc != SN_OK)
        return rc;
    *cc = curl_easy_perform(c->easy);
    curl_slist_free_all(headers);
    long status = 0;
    if (*cc == CURLE_OK)
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
    if (*cc == CURLE_OK && (status < 100 || status > 599))
        rc = sn_error_set(err, SN_ERR_SYNTAX, "%s: not an HTTP response", c->url);
    else if (*cc != CURLE_OK)
        rc = curl_error(c, *cc, errbuf, s, timeout_ms, err);
    if (rc == SN_OK && !s->data && !(s->data = calloc(1, 1)))
        rc = sn_error_set(err, SN_ERR_NOMEM, "out of memory");
    if (rc != SN_OK) {
        free(s->data);
        memset(resp, 0, sizeof(*resp));
        return rc;
    }
    resp->status = (int)status;
    resp->body = s->data;
    resp->body_len = s->len;
    return SN_OK;
}

static void use_server(struct sn_httpc *c, unsigned i)
{
    c->cur = i % c->n_urls;
    snprintf(c->url, sizeof(c->url), "%s", c->urls[c->cur]);
}

/* The listed server a Location names (its origin), or n_urls. */
static unsigned listed(const struct sn_httpc *c, const char *location)
{
    for (unsigned i = 0; i < c->n_urls; i++) {
        size_t n = strlen(c->urls[i]);
        if (strncasecmp(location, c->urls[i], n) == 0 &&
            (location[n] == '/' || location[n] == '\0'))
            return i;
    }
    return c->n_urls;
}

enum sn_err sn_httpc_send(struct sn_httpc *c, const struct sn_httpc_request *req,
                          struct sn_httpc_response *resp, struct sn_error *err)
{
    struct sink s;
    CURLcode cc;
    if (c->n_urls <= 1)
        return send_once(c, req, resp, &s, &cc, err);
    /* At most twice around the list: a redirect may point back. */
    for (unsigned attempt = 0;; attempt++) {
        bool last = attempt + 1 >= 2 * c->n_urls;
        struct sn_error e = {0};
        enum sn_err rc = send_once(c, req, resp, &s, &cc, &e);
        if (rc != SN_OK) {
            bool unsent = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST;
            use_server(c, c->cur + 1);
            if (unsent && !last && attempt + 1 < c->n_urls)
                continue;
            if (err && !err->code)
                *err = e;
            return rc;
        }
        if (last)
            return SN_OK;
        if (resp->status == 307 && listed(c, s.location) < c->n_urls) {
            use_server(c, listed(c, s.location));
            sn_httpc_response_release(resp);
            continue;
        }
        if (resp->status == 503 && strstr(resp->body, "\"no_leader\"") &&
            attempt + 1 < c->n_urls) {
            use_server(c, c->cur + 1);
            sn_httpc_response_release(resp);
            continue;
        }
        return SN_OK;
    }
}

enum sn_err sn_httpc_do(const char *host, uint16_t port, const struct sn_httpc_request *req,
                        struct sn_httpc_response *resp, struct sn_error *err)
{
    memset(resp, 0, sizeof(*resp));
    char server[320];
    bool v6 = strchr(host, ':') != NULL;
    int n = snprintf(server, sizeof(server), "%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "", port);
    if (n < 0 || (size_t)n >= sizeof(server))
        return sn_error_set(err, SN_ERR_INVALID, "host '%.64s' too long", host);
    struct sn_httpc *c = NULL;
    enum sn_err rc = sn_httpc_new(server, NULL, &c, err);
    if (rc == SN_OK)
        rc = sn_httpc_send(c, req, resp, err);
    sn_httpc_free(c);
    return rc;
}

void sn_httpc_response_release(struct sn_httpc_response *resp)
{
    if (!resp)
        return;
    free(resp->body);
    resp->body = NULL;
    resp->body_len = 0;
}
