/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto sockets: the default path, connect, and one-packet send/receive on
 * SOCK_SEQPACKET. Receiving asks the kernel for the real packet length
 * (MSG_TRUNC, Linux >= 3.4 for AF_UNIX SEQPACKET), so an oversized packet
 * is recognized and dropped whole before a byte of it is parsed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/proto.h"
#include "util/errmsg.h"

int proto_default_socket(char *buf, size_t len)
{
	const char *env = getenv("PMAD_SOCKET");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if (geteuid() != 0 && xdg && *xdg)
		n = snprintf(buf, len, "%s/pmad/pmad.sock", xdg);
	else
		n = snprintf(buf, len, "/run/pmad/pmad.sock");
	if (n < 0 || (size_t)n >= len)
		return util_errmsg_set(ENAMETOOLONG,
				       "default socket path is too long");
	return 0;
}

int proto_connect(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(addr.sun_path))
		return util_errmsg_set(ENAMETOOLONG,
				       "socket path '%s' is too long (max %zu)",
				       path, sizeof(addr.sun_path) - 1);
	memcpy(addr.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return util_errmsg_set(errno, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		err = errno;
		close(fd);
		return util_errmsg_set(err, "cannot connect to '%s': %s", path,
				       strerror(err));
	}
	return fd;
}

int proto_send(int fd, const void *buf, size_t len)
{
	ssize_t n;

	do
		n = send(fd, buf, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return util_errmsg_set(errno, "send: %s", strerror(errno));
	if ((size_t)n != len) /* a packet goes whole or not at all */
		return util_errmsg_set(EIO, "short send (%zd of %zu bytes)", n,
				       len);
	return 0;
}

long proto_recv(int fd, void *buf, size_t cap)
{
	ssize_t n;

	do
		n = recv(fd, buf, cap, MSG_TRUNC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return -EAGAIN;
	if (n < 0)
		return util_errmsg_set(errno, "recv: %s", strerror(errno));
	if ((size_t)n > cap)
		return util_errmsg_set(
			EMSGSIZE, "message of %zd bytes exceeds %zu", n, cap);
	return (long)n;
}

/* wait for and receive the reply (the call itself is blocking) */
static long recv_reply(int fd, char *buf, size_t cap)
{
	ssize_t n;

	do
		n = recv(fd, buf, cap, MSG_TRUNC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return util_errmsg_set(errno, "recv: %s", strerror(errno));
	if (n == 0)
		return util_errmsg_set(ECONNRESET,
				       "pmad closed the connection");
	if ((size_t)n > cap)
		return util_errmsg_set(
			EMSGSIZE, "reply of %zd bytes exceeds %zu", n, cap);
	return (long)n;
}

int proto_call(int fd, const char *op, struct json_object *args,
	       struct proto_reply *rep)
{
	size_t len;
	char *buf;
	long n;
	int rc;

	rc = proto_request_encode(op, args, &buf, &len);
	if (rc < 0)
		return rc;
	rc = proto_send(fd, buf, len);
	free(buf);
	if (rc < 0)
		return rc;
	buf = malloc(PROTO_MSG_MAX);
	if (!buf)
		return util_errmsg_set(ENOMEM, "out of memory");
	n = recv_reply(fd, buf, PROTO_MSG_MAX);
	rc = n < 0 ? (int)n : proto_reply_decode(buf, (size_t)n, rep);
	free(buf);
	return rc;
}
