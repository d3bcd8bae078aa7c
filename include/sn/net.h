/*
 * Listening addresses and their files: the "HOST:PORT" / "[V6]:PORT" form
 * of snd's listen and agent_listen settings, whether an address stays on
 * this machine, and the PEM files of a TLS listener. Errors name the
 * setting (key) and the value, and say what was expected.
 */
#ifndef SN_NET_H
#define SN_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include <sn/error.h>

/* Resolves "HOST:PORT" or "[V6]:PORT" (HOST a name or a literal, PORT 0 to
 * 65535) to the first address getaddrinfo gives for a passive stream
 * socket. SN_ERR_INVALID naming key and addr: no port, a bad port, an
 * unbracketed IPv6 address, a host that does not resolve. */
SN_MUST_CHECK enum sn_err sn_net_resolve_listen(const char *key, const char *addr,
                                                struct sockaddr_storage *ss, struct sn_error *err);

/* Whether ss is a loopback address: 127.0.0.0/8, ::1, or ::ffff:127.x. */
bool sn_net_is_loopback(const struct sockaddr_storage *ss);

/* Reads a PEM file of at most cap bytes (it must hold "-----BEGIN ") into
 * a NUL-terminated buffer the caller frees; SN_ERR_INVALID naming key and
 * path otherwise. */
SN_MUST_CHECK enum sn_err sn_net_read_pem(const char *key, const char *path, size_t cap, char **out,
                                          struct sn_error *err);

#endif
