/* SPDX-License-Identifier: BSD-3-Clause */
/* hdpm-env: the HDPM unit tests' fixture (see hdpm-env.h) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int hdpm_env_setup(void **state, const char *name, uint64_t size,
		   unsigned flags, int mount)
{
	struct hdpm_env *e = calloc(1, sizeof(*e));

	if (!e || hdpm_env_init(e, name, size, flags, mount))
		return -1;
	*state = e;
	return 0;
}

int hdpm_env_teardown(void **state)
{
	struct hdpm_env *e = *state;

	hdpm_env_fini(e);
	free(e);
	return 0;
}

uint64_t hdpm_env_rand(uint64_t *r)
{
	*r ^= *r << 13, *r ^= *r >> 7, *r ^= *r << 17;
	return *r;
}

void hdpm_env_fill_rand(char *buf, size_t len, uint64_t *r)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (char)(hdpm_env_rand(r) >> 24);
}

uint64_t hdpm_env_used_bytes(struct pma_heap *heap)
{
	struct pma_heap_stats st;

	assert_int_equal(pma_heap_stats(heap, &st), 0);
	return st.used_bytes;
}

#define PG 4096
#define PRIV_MAX HDPM_ENV_PRIV_MAX

int hdpm_env_priv_op(struct hdpm_env_priv *p, struct hdpm_file *f,
		     unsigned small, unsigned extend_max, uint64_t *r)
{
	char buf[PG];
	unsigned pick = (unsigned)(hdpm_env_rand(r) % 20), len;
	uint64_t off;

	if (pick < small) {
		len = 1 + (unsigned)(hdpm_env_rand(r) % 300);
		off = hdpm_env_rand(r) % (PRIV_MAX - len);
	} else if (pick < 17) {
		len = PG;
		off = (hdpm_env_rand(r) % (PRIV_MAX / PG)) * PG;
	} else if (pick < 19) {
		len = 1 + (unsigned)(hdpm_env_rand(r) % extend_max);
		off = p->size + len <= PRIV_MAX ? p->size : 0;
	} else {
		off = hdpm_env_rand(r) % PRIV_MAX;
		if (hdpm_ftruncate(f, off))
			return -1;
		if (off < p->size)
			memset(p->data + off, 0, p->size - off);
		p->size = off;
		return 0;
	}
	hdpm_env_fill_rand(buf, len, r);
	if (hdpm_pwrite(f, buf, len, off) != (ssize_t)len)
		return -1;
	if (off > p->size)
		memset(p->data + p->size, 0, off - p->size);
	memcpy(p->data + off, buf, len);
	if (off + len > p->size)
		p->size = off + len;
	return 0;
}

int hdpm_env_priv_check(const struct hdpm_env_priv *p, struct hdpm_file *f)
{
	static __thread char buf[PRIV_MAX + 1];

	return hdpm_pread(f, buf, sizeof(buf), 0) == (ssize_t)p->size &&
			       !memcmp(buf, p->data, p->size) ?
		       0 :
		       -1;
}
