/*
 * lib/core/net.c: listening addresses and PEM files (sn/net.h).
 */
#include <sn/net.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum sn_err sn_net_read_pem(const char *key, const char *path, size_t cap, char **out,
                            struct sn_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return sn_error_set(err, SN_ERR_INVALID, "%s '%s': %s", key, path, strerror(errno));
    char *buf = malloc(cap + 1);
    size_t n = buf ? fread(buf, 1, cap + 1, f) : 0;
    fclose(f);
    if (!buf || n == 0 || n > cap || !strstr(buf, "-----BEGIN ")) {
        free(buf);
        return sn_error_set(err, SN_ERR_INVALID, "%s '%s': expected a PEM file under %zu bytes",
                            key, path, cap);
    }
    buf[n] = '\0';
    *out = buf;
    return SN_OK;
}

bool sn_net_is_loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET) {
        struct sockaddr_in a;
        memcpy(&a, ss, sizeof(a));
        return (ntohl(a.sin_addr.s_addr) >> 24) == 127;
    }
    if (ss->ss_family != AF_INET6)
        return false;
    struct sockaddr_in6 a;
    memcpy(&a, ss, sizeof(a));
    return IN6_IS_ADDR_LOOPBACK(&a.sin6_addr) ||
           (IN6_IS_ADDR_V4MAPPED(&a.sin6_addr) && a.sin6_addr.s6_addr[12] == 127);
}

enum sn_err sn_net_resolve_listen(const char *key, const char *addr, struct sockaddr_storage *ss,
                                  struct sn_error *err)
{
    const char *h = addr, *colon = NULL;
    size_t hl = 0;
    if (addr[0] == '[') {
        const char *close = strchr(addr, ']');
        h = addr + 1;
        hl = close ? (size_t)(close - h) : 0;
        colon = close && close[1] == ':' ? close + 1 : NULL;
    } else {
        colon = strrchr(addr, ':');
        hl = colon ? (size_t)(colon - addr) : 0;
        if (colon && memchr(addr, ':', hl))
            return sn_error_set(err, SN_ERR_INVALID,
                                "%s '%s': write an IPv6 address as [ADDRESS]:PORT", key, addr);
    }
    char host[256], *end = NULL;
    long p = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || hl == 0 || hl >= sizeof(host))
        return sn_error_set(err, SN_ERR_INVALID, "%s '%s': expected HOST:PORT or [IPv6]:PORT", key,
                            addr);
    if (end == colon + 1 || *end || p < 0 || p > 65535)
        return sn_error_set(err, SN_ERR_INVALID, "%s '%s': port must be 0 to 65535", key, addr);
    snprintf(host, sizeof(host), "%.*s", (int)hl, h);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char port[8];
    snprintf(port, sizeof(port), "%ld", p);
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0 || !res)
        return sn_error_set(err, SN_ERR_INVALID, "%s '%s': cannot resolve '%s': %s", key, addr,
                            host, gai_strerror(g));
    memset(ss, 0, sizeof(*ss));
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return SN_OK;
}
