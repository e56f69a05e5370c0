/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdpm-fill: put a known HDPM file system into a pool's heap for the
 * pmactl tests, without FUSE: /d (a directory) and /f, two full pages
 * then three small writes (page 0: 100 B at 10, 50 B at 60; page 1: 64 B
 * at 8). In hybrid mode that is 2 page logs, 3 entries, 164 live and
 * 50 dead log bytes; with "cow" no log at all.
 *
 *   hdpm-fill POOL [cow]
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "hdpm.h"
#include "pmalloc.h"

#define PG 4096

static int fill(struct hdpm_fs *fs)
{
	static char buf[2 * PG];
	struct hdpm_file *f = NULL;
	int rc;

	memset(buf, 'x', sizeof(buf));
	rc = hdpm_mkdir(fs, "/d", 0755);
	if (rc == 0)
		rc = hdpm_open(fs, "/f", O_CREAT | O_RDWR, 0644, &f);
	if (rc < 0)
		return rc;
	if (hdpm_pwrite(f, buf, 2 * PG, 0) != 2 * PG ||
	    hdpm_pwrite(f, buf, 100, 10) != 100 ||
	    hdpm_pwrite(f, buf, 50, 60) != 50 ||
	    hdpm_pwrite(f, buf, 64, PG + 8) != 64)
		rc = -1;
	hdpm_close(f);
	return rc;
}

int main(int argc, char **argv)
{
	struct pma_heap *heap;
	struct hdpm_fs *fs;
	int rc;

	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "cow"))) {
		fputs("usage: hdpm-fill POOL [cow]\n", stderr);
		return 2;
	}
	if (pma_heap_open(argv[1], PMA_HEAP_FORMAT, &heap) < 0) {
		fprintf(stderr, "hdpm-fill: %s\n", pma_errormsg());
		return 1;
	}
	rc = hdpm_mount(heap,
			(argc == 3 ? HDPM_COW_ONLY : HDPM_HYBRID) |
				HDPM_NO_GC_THREAD,
			&fs);
	if (rc == 0) {
		rc = fill(fs);
		hdpm_unmount(fs);
	}
	pma_heap_close(heap);
	if (rc < 0)
		fprintf(stderr, "hdpm-fill: %s\n", hdpm_errormsg());
	return rc < 0;
}
