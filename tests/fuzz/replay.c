/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * replay: run a fuzz target's LLVMFuzzerTestOneInput over every file of
 * its corpus and print TAP, one "ok N - file" per input; a crash (or a
 * sanitizer report) fails the run. The corpus is argv[1], or
 * $PMAD_SRCDIR/tests/fuzz/corpus/<name> where <name> is this program's
 * name without "replay-" (replay-pool-hdr -> pool-hdr).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the corpus directory for this program, into buf */
static int corpus_dir(int argc, char **argv, char *buf, size_t len)
{
	const char *base = strrchr(argv[0], '/');
	const char *src = getenv("PMAD_SRCDIR");

	if (argc > 1) {
		snprintf(buf, len, "%s", argv[1]);
		return 0;
	}
	base = base ? base + 1 : argv[0];
	if (!strncmp(base, "lt-", 3)) /* libtool wrapper */
		base += 3;
	if (strncmp(base, "replay-", 7))
		return -EINVAL;
	snprintf(buf, len, "%s/tests/fuzz/corpus/%s", src ? src : ".",
		 base + 7);
	return 0;
}

/* read a whole file into an exactly sized buffer (so overreads trap) */
static int slurp(const char *path, uint8_t **ret_buf, size_t *ret_size)
{
	struct stat st;
	uint8_t *buf;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out_close;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	rc = buf ? util_read_all(fd, buf, (size_t)st.st_size) : -ENOMEM;
	if (rc < 0) {
		free(buf);
		goto out_close;
	}
	*ret_buf = buf;
	*ret_size = (size_t)st.st_size;
out_close:
	close(fd);
	return rc;
}

static int only_files(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

int main(int argc, char **argv)
{
	struct dirent **names;
	char dir[4096], path[8192];
	uint8_t *buf = NULL;
	size_t size = 0;
	int i, n, failed = 0;

	if (corpus_dir(argc, argv, dir, sizeof(dir)) < 0) {
		printf("Bail out! usage: replay-<target> or replay CORPUS_DIR\n");
		return 1;
	}
	n = scandir(dir, &names, only_files, alphasort);
	if (n <= 0) {
		printf("Bail out! no corpus in '%s': %s\n", dir,
		       n < 0 ? strerror(errno) : "empty");
		return 1;
	}
	printf("1..%d\n", n);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (slurp(path, &buf, &size) < 0) {
			printf("not ok %d - %s (unreadable)\n", i + 1,
			       names[i]->d_name);
			failed = 1;
		} else {
			fflush(stdout); /* a crash still shows what ran */
			LLVMFuzzerTestOneInput(buf, size);
			printf("ok %d - %s\n", i + 1, names[i]->d_name);
			free(buf);
		}
		free(names[i]);
	}
	free(names);
	return failed;
}
