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
#include <sys/uio.h>
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

int proto_send_fds(int fd, const void *buf, size_t len, const int *fds,
		   unsigned nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * PROTO_FDS_MAX)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t n;

	if (nfds > PROTO_FDS_MAX)
		return util_errmsg_set(EINVAL, "%u descriptors (max %d)", nfds,
				       PROTO_FDS_MAX);
	if (nfds) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return util_errmsg_set(errno, "send: %s", strerror(errno));
	if ((size_t)n != len)
		return util_errmsg_set(EIO, "short send (%zd of %zu bytes)", n,
				       len);
	return 0;
}

/* the SCM_RIGHTS descriptors of msg into fds (at most max; the others are
 * closed): their count, or -1 when there were more than max */
static int take_fds(struct msghdr *msg, int *fds, unsigned max, unsigned *ret_n)
{
	struct cmsghdr *c;
	unsigned i, k, n = 0;
	int over = !!(msg->msg_flags & MSG_CTRUNC), fd;

	for (c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (i = 0; i < k; i++) {
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (n < max)
				fds[n++] = fd;
			else {
				close(fd);
				over = 1;
			}
		}
	}
	*ret_n = n;
	return over ? -1 : 0;
}

/* wait for and receive the reply (the call itself is blocking), with up
 * to max descriptors (fds NULL: none expected) */
static long recv_reply(int fd, char *buf, size_t cap, int *fds, unsigned max,
		       unsigned *ret_nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * PROTO_FDS_MAX)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	unsigned nfds = 0, i;
	int none[1] = { -1 }; /* fds NULL: every descriptor is closed */
	ssize_t n;

	msg.msg_control = ctl.buf;
	msg.msg_controllen = sizeof(ctl.buf);
	do
		n = recvmsg(fd, &msg, MSG_TRUNC | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return util_errmsg_set(errno, "recv: %s", strerror(errno));
	if (!fds) { /* none expected: any that came are closed */
		fds = none;
		max = 0;
	}
	if (take_fds(&msg, fds, max, &nfds) < 0) {
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		return util_errmsg_set(EPROTO,
				       "reply carried more than %u "
				       "descriptors, or some were dropped "
				       "(MSG_CTRUNC: at the limit of open "
				       "files?)",
				       max);
	}
	if (ret_nfds)
		*ret_nfds = nfds;
	if (n == 0)
		return util_errmsg_set(ECONNRESET,
				       "pmad closed the connection");
	if ((size_t)n > cap)
		return util_errmsg_set(
			EMSGSIZE, "reply of %zd bytes exceeds %zu", n, cap);
	return (long)n;
}

int proto_call_fds(int fd, const char *op, struct json_object *args,
		   struct proto_reply *rep, int *ret_fds, unsigned max,
		   unsigned *ret_nfds)
{
	unsigned nfds = 0, i;
	size_t len;
	char *buf;
	long n;
	int rc;

	if (max > PROTO_FDS_MAX) {
		json_object_put(args);
		return util_errmsg_set(EINVAL, "%u descriptors (max %d)", max,
				       PROTO_FDS_MAX);
	}
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
	n = recv_reply(fd, buf, PROTO_MSG_MAX, ret_fds, max, &nfds);
	rc = n < 0 ? (int)n : proto_reply_decode(buf, (size_t)n, rep);
	free(buf);
	if (rc < 0 && ret_fds) {
		for (i = 0; i < nfds; i++)
			close(ret_fds[i]);
	}
	if (rc < 0)
		nfds = 0;
	if (ret_nfds)
		*ret_nfds = nfds;
	return rc;
}

int proto_call(int fd, const char *op, struct json_object *args,
	       struct proto_reply *rep)
{
	return proto_call_fds(fd, op, args, rep, NULL, 0, NULL);
}
