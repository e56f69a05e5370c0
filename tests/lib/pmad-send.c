/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad-send: a raw control-socket client for the daemon tests. Sends each
 * PAYLOAD argument as one packet on one connection (so per-connection
 * state such as pool_open can be tested) and prints each reply on its own
 * line. "-" reads one packet from stdin: any bytes, of any size, so tests
 * can send garbage, truncated and oversized packets without socat.
 *   pmad-send SOCKET PAYLOAD...
 * Exit 0 when every packet got a reply, 1 otherwise.
 *   pmad-send --notify PATH
 * stands in for systemd's notification socket: binds a datagram socket at
 * PATH, prints every message received and exits 0 after one containing
 * READY=1 (1 after 20 s without).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/proto.h"
#include "util/io.h"

#define STDIN_MAX ((size_t)1024 * 1024)

static char *read_stdin(size_t *ret_len)
{
	char *buf = malloc(STDIN_MAX);
	size_t len = 0;
	ssize_t n;

	if (!buf)
		return NULL;
	while (len < STDIN_MAX &&
	       (n = read(STDIN_FILENO, buf + len, STDIN_MAX - len)) > 0)
		len += (size_t)n;
	*ret_len = len;
	return buf;
}

static int exchange(int fd, const char *arg, char *reply)
{
	size_t len = strlen(arg);
	char *buf = (char *)arg;
	ssize_t n;

	if (strcmp(arg, "-") == 0 && !(buf = read_stdin(&len)))
		return -ENOMEM;
	n = send(fd, buf, len, MSG_NOSIGNAL);
	if (buf != arg)
		free(buf);
	if (n < 0) {
		fprintf(stderr, "pmad-send: send: %s\n", strerror(errno));
		return -errno;
	}
	n = recv(fd, reply, PROTO_MSG_MAX, 0);
	if (n <= 0) {
		fprintf(stderr, "pmad-send: no reply (%s)\n",
			n ? strerror(errno) : "connection closed");
		return -EIO;
	}
	printf("%.*s\n", (int)n, reply);
	return fflush(stdout) ? -EIO : 0;
}

#define NOTIFY_TIMEOUT_MS 20000

static int notify_recv(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct pollfd pfd = { .events = POLLIN };
	char msg[4096];
	ssize_t n;

	if (strlen(path) >= sizeof(addr.sun_path))
		return 1;
	memcpy(addr.sun_path, path, strlen(path) + 1);
	pfd.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (pfd.fd < 0 ||
	    bind(pfd.fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		perror(path);
		return 1;
	}
	while (poll(&pfd, 1, NOTIFY_TIMEOUT_MS) == 1) {
		n = recv(pfd.fd, msg, sizeof(msg) - 1, 0);
		if (n < 0)
			break;
		msg[n] = '\0';
		printf("%s\n", msg);
		if (strstr(msg, "READY=1")) {
			close(pfd.fd);
			return fflush(stdout) ? 1 : 0;
		}
	}
	close(pfd.fd);
	return 1;
}

int main(int argc, char **argv)
{
	char *reply;
	int fd, i, rc = 0;

	if (argc == 3 && strcmp(argv[1], "--notify") == 0)
		return notify_recv(argv[2]);
	if (argc < 3) {
		fputs("usage: pmad-send SOCKET PAYLOAD... | --notify PATH\n",
		      stderr);
		return 2;
	}
	fd = proto_connect(argv[1]);
	if (fd < 0) {
		fprintf(stderr, "pmad-send: %s\n", proto_errormsg());
		return 1;
	}
	reply = malloc(PROTO_MSG_MAX);
	for (i = 2; reply && i < argc && rc == 0; i++)
		rc = exchange(fd, argv[i], reply);
	free(reply);
	close(fd);
	return reply && rc == 0 ? 0 : 1;
}
