/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad-send: a raw control-socket client for the daemon tests. Sends each
 * PAYLOAD argument as one packet on one connection (so per-connection
 * state such as pool_open can be tested) and prints each reply on its own
 * line. "-" reads one packet from stdin: any bytes, of any size, so tests
 * can send garbage, truncated and oversized packets without socat.
 *   pmad-send SOCKET PAYLOAD...
 * Exit 0 when every packet got a reply, 1 otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

int main(int argc, char **argv)
{
	char *reply;
	int fd, i, rc = 0;

	if (argc < 3) {
		fputs("usage: pmad-send SOCKET PAYLOAD...\n", stderr);
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
