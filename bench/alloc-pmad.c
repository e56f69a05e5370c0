/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmabench backend "pmad": PMAlloc on a heap opened through pmad
 * (libpmad: pool_open, the part descriptors over the socket, the heap
 * mapped here), the same calls as the "pmalloc" backend on the same
 * library, so the two rows differ only in how the heap was opened. pmad
 * runs elsewhere: $PMAD_SOCKET names it. Each row gets a new pool,
 * "pmabench-<pid>-<n>", created through pmad (pmad_pool_create) with
 * --pool-size; it stays in pmad's state dir (pmad has no delete request
 * yet: run pmad on a scratch state dir).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "pmad.h"
#include "pmalloc.h"

struct bench_pmad {
	struct pmad_client *client;
	struct pma_heap *heap;
	uint64_t *slots; /* the root object */
};

static unsigned pool_seq; /* a new pool per open (row) */
/* why the last open failed ("": it did not, pma_errormsg then) */
static char bpmad_msg[256];

/* connect, create the pool (or reuse one of the name) and open it */
static int bpmad_attach(struct bench_pmad *b, const char *sock,
			const char *name, uint64_t pool_size)
{
	int rc;

	rc = pmad_connect(sock, &b->client);
	if (rc == 0) {
		rc = pmad_pool_create(b->client, name, pool_size);
		if (rc == -EEXIST)
			rc = 0;
	}
	if (rc == 0)
		rc = pmad_pool_open(b->client, name, &b->heap);
	if (rc < 0)
		snprintf(bpmad_msg, sizeof(bpmad_msg), "%s", pmad_errormsg());
	return rc;
}

static int bpmad_open(const char *dir, uint64_t pool_size, size_t nslots,
		      void **ret_ctx)
{
	const char *sock = getenv("PMAD_SOCKET");
	struct bench_pmad *b;
	char name[64];
	uint64_t root = 0;
	int rc;

	(void)dir; /* the pool is in pmad's state dir */
	bpmad_msg[0] = '\0';
	if (!sock || !*sock) {
		snprintf(bpmad_msg, sizeof(bpmad_msg),
			 "the pmad backend needs $PMAD_SOCKET (a running "
			 "pmad)");
		return -ENOTCONN;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	snprintf(name, sizeof(name), "pmabench-%d-%u", (int)getpid(),
		 pool_seq++);
	rc = bpmad_attach(b, sock, name, pool_size);
	if (rc == 0)
		rc = pma_root(b->heap, nslots * sizeof(uint64_t), &root);
	if (rc == 0 && !root)
		rc = -EIO;
	if (rc < 0) {
		pmad_disconnect(b->client);
		free(b);
		return rc;
	}
	b->slots = pma_direct(b->heap, root);
	*ret_ctx = b;
	return 0;
}

static void bpmad_close(void *ctx)
{
	struct bench_pmad *b = ctx;

	if (!b)
		return;
	(void)pmad_pool_close(b->client, b->heap);
	pmad_disconnect(b->client);
	free(b);
}

static int bpmad_alloc(void *ctx, size_t slot, size_t size)
{
	struct bench_pmad *b = ctx;

	return pma_malloc_to(b->heap, size, &b->slots[slot]);
}

static int bpmad_free(void *ctx, size_t slot)
{
	struct bench_pmad *b = ctx;

	return pma_free_from(b->heap, &b->slots[slot]);
}

static int bpmad_is_live(void *ctx, size_t slot)
{
	struct bench_pmad *b = ctx;

	return __atomic_load_n(&b->slots[slot], __ATOMIC_RELAXED) != 0;
}

static int64_t bpmad_checkpoints(void *ctx)
{
	struct bench_pmad *b = ctx;
	struct pma_heap_stats st;

	if (pma_heap_stats(b->heap, &st) < 0)
		return -1;
	return (int64_t)(st.checkpoints + st.local_checkpoints);
}

static const char *bpmad_errormsg(void)
{
	return bpmad_msg[0] ? bpmad_msg : pma_errormsg();
}

const struct bench_alloc bench_alloc_pmad = {
	.name = "pmad",
	.has_counters = 1,
	.open = bpmad_open,
	.close = bpmad_close,
	.alloc = bpmad_alloc,
	.free = bpmad_free,
	.is_live = bpmad_is_live,
	.errormsg = bpmad_errormsg,
	.checkpoints = bpmad_checkpoints,
};
