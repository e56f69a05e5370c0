/* SPDX-License-Identifier: BSD-3-Clause */
/* hdpm-env: the HDPM unit tests' fixture (see hdpm-env.h) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "hdpm-env.h"

int hdpm_env_init(struct hdpm_env *e, const char *name, uint64_t size,
		  unsigned flags, int mount)
{
	int fd;

	e->heap = NULL;
	e->fs = NULL;
	e->flags = flags;
	snprintf(e->path, sizeof(e->path), "/dev/shm/%s.XXXXXX", name);
	fd = mkstemp(e->path);
	if (fd < 0)
		return -1;
	close(fd);
	if (pma_heap_create(e->path, size, PMA_HEAP_FORCE, &e->heap))
		return -1;
	if (mount && hdpm_mount(e->heap, flags, &e->fs))
		return -1;
	return 0;
}

void hdpm_env_mount(struct hdpm_env *e)
{
	assert_int_equal(pma_heap_open(e->path, 0, &e->heap), 0);
	assert_int_equal(hdpm_mount(e->heap, e->flags, &e->fs), 0);
}

void hdpm_env_unmount(struct hdpm_env *e)
{
	hdpm_unmount(e->fs);
	pma_heap_close(e->heap);
	e->fs = NULL;
	e->heap = NULL;
}

void hdpm_env_remount(struct hdpm_env *e)
{
	hdpm_env_unmount(e);
	hdpm_env_mount(e);
}

void hdpm_env_fini(struct hdpm_env *e)
{
	if (e->fs)
		hdpm_unmount(e->fs);
	if (e->heap)
		pma_heap_close(e->heap);
	unlink(e->path);
}
