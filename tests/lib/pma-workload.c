/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pma-workload: a small PMAlloc client for the CLI and VM tests.
 *   pma-workload PATH COUNT SIZE [crash]
 *     opens (formatting if needed) the heap of the pool at PATH, allocates
 *     COUNT blocks of SIZE bytes into slots of the root object, frees every
 *     third one and closes the heap, or with "crash" _exit()s without
 *     closing so the log keeps its records for `pmactl log` and recovery.
 *   pma-workload --stress PATH [OPS | SECONDSs]
 *     two threads malloc_to/free_from blocks of mixed sizes (up to 256 KiB)
 *     into the slots of a stress root, until OPS ops or SECONDS seconds, by
 *     default until killed: the kill -9 target. "running" on stdout says
 *     the heap is open.
 *   pma-workload --verify PATH
 *     recovers the heap and checks the stress root (see wl_verify()).
 *   pma-workload --corrupt PATH
 *     names a live block from a second slot, which --verify must reject.
 *   pma-workload --frag PATH COUNT SIZE KEEP [LAYOUT]
 *     formats the heap if needed (with layout version LAYOUT if given),
 *     allocates COUNT blocks of SIZE bytes filled with a pattern of their
 *     slot (persisted), frees all but every KEEP-th one and closes: empty
 *     slabs and free runs to compact, mostly free slabs to morph.
 *   pma-workload --frag-check PATH
 *     checks that every block --frag kept is live and holds its pattern.
 *   pma-workload --fill PATH COUNT SIZE
 *     allocates COUNT more blocks of SIZE bytes (named by no slot: they
 *     stay allocated), fills each with 0xa5 (persisted) and closes: blocks
 *     of a class that slabs were morphed into, for --frag-check to prove
 *     they overlap no kept block.
 *   pma-workload --numa PATH [--mempolicy]
 *     a heap over several parts (one per NUMA node): for each part, a
 *     thread pinned to a CPU of the part's node allocates 64 blocks and
 *     checks they are in that part (local-first); with --mempolicy also
 *     that the kernel puts their pages on that node (get_mempolicy: real
 *     PM, e.g. fsdax in the VM). One JSON line per node on stdout.
 *     With --xfree-crash instead: then a thread on the last part's node
 *     frees the first part's blocks (logged XFREE in its own part) and
 *     _exit()s without closing, for `pmactl log`, fsck and recovery.
 * Exit status: 0 ok, 1 failed (message on stderr), 2 usage error.
 */
#include <errno.h>
#include <inttypes.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ns/ns.h"
#include "pmalloc.h"
#include "pmalloc/internal.h" /* pma_config_set_format */
#include "pool/layout.h"

#define WL_MAGIC 0x31534552544c5750ULL /* "PWLTRES1" */
#define WL_NSLOTS 512U
#define WL_THREADS 2U
#define WL_VERIFY_ALLOCS 64U /* extra allocations that prove the heap works */

/*
 * The stress root object. size[i] is stored before the malloc_to that
 * publishes slot[i], and only while slot[i] is 0, so whenever slot[i]
 * names a block (also after a kill at any point), size[i] is what was
 * asked for it.
 */
struct wl_root {
	uint64_t magic; /* WL_MAGIC once the stress run set the root up */
	uint64_t nslots; /* WL_NSLOTS */
	uint64_t slot[WL_NSLOTS]; /* dest words: 0 or a live block */
	uint64_t size[WL_NSLOTS]; /* bytes requested for slot[i] */
};

struct wl_stress {
	struct pma_heap *heap;
	struct wl_root *root;
	uint64_t max_ops; /* 0: no limit */
	double deadline; /* CLOCK_MONOTONIC seconds, 0: none */
	uint64_t seed;
	atomic_uint_fast64_t ops;
	atomic_int failed;
	atomic_uchar busy[WL_NSLOTS]; /* a thread is using slot i */
};

struct wl_thread {
	struct wl_stress *st;
	unsigned id;
	uint64_t rng;
	uint64_t allocs, frees, enomem, checkpoints;
};

/* a live block named by the root (slot) or the root itself (slot < 0) */
struct wl_named {
	uint64_t off;
	uint64_t usable;
	int slot;
};

static int fail(const char *what)
{
	fprintf(stderr, "pma-workload: %s: %s\n", what, pma_errormsg());
	return 1;
}

static int usage(FILE *out, int status)
{
	fprintf(out,
		"usage: pma-workload PATH COUNT SIZE [crash]\n"
		"       pma-workload --stress PATH [OPS | SECONDSs]\n"
		"       pma-workload --verify PATH\n"
		"       pma-workload --corrupt PATH\n"
		"       pma-workload --frag PATH COUNT SIZE KEEP [LAYOUT]\n"
		"       pma-workload --frag-check PATH\n"
		"       pma-workload --fill PATH COUNT SIZE\n"
		"       pma-workload --numa PATH [--mempolicy | "
		"--xfree-crash]\n");
	return status;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* xorshift64* */
static uint64_t wl_rand(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545f4914f6cdd1dULL;
}

/* 70% small classes, 20% up to the largest class (14 KiB), 8% small
 * extents, 2% large extents of 128..256 KiB */
static size_t wl_random_size(uint64_t *rng)
{
	uint64_t r = wl_rand(rng);
	unsigned pick = (unsigned)(r % 100);

	r >>= 8;
	if (pick < 70)
		return 1 + r % 512;
	if (pick < 90)
		return 512 + r % (14 * 1024 - 512);
	if (pick < 98)
		return 14 * 1024 + 1 + r % (50 * 1024);
	return 128 * 1024 + r % (128 * 1024 + 1);
}

/* strict unsigned decimal (or 0x hex); -1 if s is not one */
static int parse_u64(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	*ret = v;
	return 0;
}

/* ------------------------------------------------- PATH COUNT SIZE [crash] */

static int wl_fill(int argc, char **argv)
{
	struct pma_heap *heap;
	uint64_t root, *slots, i, count, size;

	if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "crash")) ||
	    parse_u64(argv[2], &count) < 0 || parse_u64(argv[3], &size) < 0)
		return usage(stderr, 2);
	if (pma_heap_open(argv[1], PMA_HEAP_FORMAT, &heap) < 0)
		return fail("open");
	if (pma_root(heap, (count + 1) * sizeof(uint64_t), &root) < 0)
		return fail("root");
	slots = pma_direct(heap, root);
	for (i = 0; i < count; i++)
		if (pma_malloc_to(heap, size, &slots[i]) < 0)
			return fail("malloc_to");
	for (i = 0; i < count; i += 3)
		if (pma_free_from(heap, &slots[i]) < 0)
			return fail("free_from");
	if (argc == 5)
		_exit(0); /* a crash: no checkpoint, no close */
	pma_heap_close(heap);
	return 0;
}

/* ------------------------------------------------------------------ frag */

/* the pattern byte j of the block of slot i */
static unsigned char frag_byte(uint64_t i, uint64_t j)
{
	return (unsigned char)(i * 131 + j * 7 + 1);
}

/* root: word 0 the block size, word 1 COUNT, then COUNT slots */
static int wl_frag(int argc, char **argv)
{
	uint64_t root, *r, i, j, count, size, keep, layout = 0;
	struct pma_config *cfg;
	struct pma_heap *heap;
	unsigned char *p;
	int rc;

	if ((argc != 6 && argc != 7) || parse_u64(argv[3], &count) < 0 ||
	    parse_u64(argv[4], &size) < 0 || parse_u64(argv[5], &keep) < 0 ||
	    (argc == 7 && parse_u64(argv[6], &layout) < 0) || !count || !size ||
	    !keep)
		return usage(stderr, 2);
	if (pma_config_new(&cfg) < 0 ||
	    pma_config_set_flags(cfg, PMA_HEAP_FORMAT) < 0 ||
	    (layout && pma_config_set_format(cfg, (uint32_t)layout, 0) < 0))
		return fail("config");
	rc = pma_heap_open_cfg(argv[2], cfg, &heap);
	pma_config_delete(&cfg);
	if (rc < 0)
		return fail("open");
	if (pma_root(heap, (count + 2) * sizeof(uint64_t), &root) < 0)
		return fail("root");
	r = pma_direct(heap, root);
	r[0] = size;
	r[1] = count;
	pma_persist(heap, r, 2 * sizeof(uint64_t));
	for (i = 0; i < count; i++) {
		if (pma_malloc_to(heap, size, &r[2 + i]) < 0)
			return fail("malloc_to");
		p = pma_direct(heap, r[2 + i]);
		for (j = 0; j < size; j++)
			p[j] = frag_byte(i, j);
		pma_persist(heap, p, size);
	}
	for (i = 0; i < count; i++)
		if (i % keep && pma_free_from(heap, &r[2 + i]) < 0)
			return fail("free_from");
	pma_heap_close(heap);
	return 0;
}

static int wl_frag_check(const char *path)
{
	uint64_t root, *r, i, j, kept = 0;
	struct pma_heap *heap;
	unsigned char *p;
	int rc = 1;

	if (pma_heap_open(path, 0, &heap) < 0)
		return fail("open");
	if (pma_root(heap, 2 * sizeof(uint64_t), &root) < 0) {
		fail("root");
		goto out_close;
	}
	r = pma_direct(heap, root);
	for (i = 0; i < r[1]; i++) {
		if (!r[2 + i])
			continue;
		kept++;
		p = pma_direct(heap, r[2 + i]);
		if (!p || pma_usable_size(heap, r[2 + i]) < r[0]) {
			fprintf(stderr,
				"pma-workload: slot %" PRIu64
				" names no live block\n",
				i);
			goto out_close;
		}
		for (j = 0; j < r[0]; j++)
			if (p[j] != frag_byte(i, j)) {
				fprintf(stderr,
					"pma-workload: slot %" PRIu64
					": byte %" PRIu64 " changed\n",
					i, j);
				goto out_close;
			}
	}
	printf("%" PRIu64 " blocks intact\n", kept);
	rc = 0;
out_close:
	pma_heap_close(heap);
	return rc;
}

static int wl_add(int argc, char **argv)
{
	uint64_t i, count, size, off;
	struct pma_heap *heap;
	void *p;

	if (argc != 5 || parse_u64(argv[3], &count) < 0 ||
	    parse_u64(argv[4], &size) < 0 || !count || !size)
		return usage(stderr, 2);
	if (pma_heap_open(argv[2], 0, &heap) < 0)
		return fail("open");
	for (i = 0; i < count; i++) {
		off = 0;
		if (pma_malloc_to(heap, size, &off) < 0)
			return fail("malloc_to");
		p = pma_direct(heap, off);
		memset(p, 0xa5, size);
		pma_persist(heap, p, size);
	}
	pma_heap_close(heap);
	printf("%" PRIu64 " blocks allocated\n", count);
	return 0;
}

/* ------------------------------------------------------------- stress root */

/* the stress root of heap; -1 (message printed) if it is something else */
static int wl_root_get(struct pma_heap *heap, struct wl_root **ret_root)
{
	struct wl_root *root;
	uint64_t off;

	if (pma_root(heap, sizeof(*root), &off) < 0) {
		fail("root");
		return -1;
	}
	root = pma_direct(heap, off);
	if (root->magic &&
	    (root->magic != WL_MAGIC || root->nslots != WL_NSLOTS)) {
		fprintf(stderr,
			"pma-workload: the root is not a stress root "
			"(magic 0x%" PRIx64 ", %" PRIu64 " slots)\n",
			root->magic, root->nslots);
		return -1;
	}
	*ret_root = root;
	return 0;
}

/* ------------------------------------------------------------------ stress */

/* one op on a random slot not in use by the other thread: free it if it
 * names a block, else allocate into it; 0 or -1 (message printed) */
static int wl_stress_op(struct wl_thread *t)
{
	struct wl_stress *st = t->st;
	unsigned i = (unsigned)(wl_rand(&t->rng) % WL_NSLOTS);
	uint64_t *slot = &st->root->slot[i];
	const char *op;
	int rc;

	if (atomic_exchange(&st->busy[i], 1))
		return 0;
	op = *slot ? "free_from" : "malloc_to";
	if (*slot) {
		rc = pma_free_from(st->heap, slot);
		t->frees += rc == 0;
	} else {
		st->root->size[i] = wl_random_size(&t->rng);
		rc = pma_malloc_to(st->heap, st->root->size[i], slot);
		t->allocs += rc == 0;
		if (rc == -ENOMEM) {
			t->enomem++;
			rc = 0;
		}
	}
	atomic_store(&st->busy[i], 0);
	if (rc < 0) {
		fail(op);
		return -1;
	}
	return 0;
}

static int wl_stress_done(struct wl_stress *st, uint64_t n)
{
	if (atomic_load(&st->failed))
		return 1;
	if (st->max_ops && n >= st->max_ops)
		return 1;
	return st->deadline > 0 && (n % 64 == 0) && now() >= st->deadline;
}

static void *wl_stress_thread(void *arg)
{
	struct wl_thread *t = arg;
	struct wl_stress *st = t->st;
	uint64_t n;

	t->rng = st->seed * 2 + t->id + 1;
	for (;;) {
		n = atomic_fetch_add(&st->ops, 1);
		if (wl_stress_done(st, n))
			break;
		if (wl_stress_op(t) < 0) {
			atomic_store(&st->failed, 1);
			break;
		}
		/* a checkpoint now and then, so a kill can hit one */
		if (t->id == 0 && wl_rand(&t->rng) % 2048 == 0) {
			if (pma_heap_checkpoint(st->heap) < 0) {
				fail("checkpoint");
				atomic_store(&st->failed, 1);
				break;
			}
			t->checkpoints++;
		}
	}
	return NULL;
}

/* OPS, SECONDSs or nothing (forever) */
static int wl_parse_limit(const char *s, struct wl_stress *st)
{
	char *end;
	double sec;
	size_t len = strlen(s);

	if (len > 1 && s[len - 1] == 's') {
		errno = 0;
		sec = strtod(s, &end);
		if (errno || end != s + len - 1 || !(sec > 0))
			return -1;
		st->deadline = now() + sec;
		return 0;
	}
	return parse_u64(s, &st->max_ops);
}

static uint64_t wl_seed(void)
{
	const char *s = getenv("PMA_WORKLOAD_SEED");
	uint64_t seed;

	if (s && parse_u64(s, &seed) == 0)
		return seed;
	return (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
}

static int wl_stress_run(struct wl_stress *st)
{
	struct wl_thread t[WL_THREADS];
	pthread_t tid[WL_THREADS];
	unsigned i;

	memset(t, 0, sizeof(t));
	for (i = 0; i < WL_THREADS; i++) {
		t[i].st = st;
		t[i].id = i;
	}
	/* thread 0 is this one: it already owns an arena (pma_root) */
	for (i = 1; i < WL_THREADS; i++)
		if (pthread_create(&tid[i], NULL, wl_stress_thread, &t[i])) {
			fprintf(stderr,
				"pma-workload: cannot start a thread\n");
			return 1;
		}
	wl_stress_thread(&t[0]);
	for (i = 1; i < WL_THREADS; i++)
		pthread_join(tid[i], NULL);
	for (i = 1; i < WL_THREADS; i++) {
		t[0].allocs += t[i].allocs;
		t[0].frees += t[i].frees;
		t[0].enomem += t[i].enomem;
	}
	printf("stress: %" PRIu64 " allocs, %" PRIu64 " frees, %" PRIu64
	       " ENOMEM, %" PRIu64 " checkpoints\n",
	       t[0].allocs, t[0].frees, t[0].enomem, t[0].checkpoints);
	return atomic_load(&st->failed) ? 1 : 0;
}

static int wl_stress(int argc, char **argv)
{
	static struct wl_stress st;
	int rc;

	if (argc < 3 || argc > 4 || (argc == 4 && wl_parse_limit(argv[3], &st)))
		return usage(stderr, 2);
	st.seed = wl_seed();
	/* arenas checkpoint alone: kill -9 may hit one doing so */
	if (pma_heap_open(argv[2], PMA_HEAP_FORMAT | PMA_HEAP_LOCAL_CHECKPOINTS,
			  &st.heap) < 0)
		return fail("open");
	rc = 1;
	if (wl_root_get(st.heap, &st.root) < 0)
		goto out_close;
	st.root->nslots = WL_NSLOTS;
	st.root->magic = WL_MAGIC;
	printf("stress: running, seed %" PRIu64 "\n", st.seed);
	if (fflush(stdout))
		goto out_close;
	rc = wl_stress_run(&st);
out_close:
	pma_heap_close(st.heap);
	return rc;
}

/* ------------------------------------------------------------------ verify */

static int wl_named_cmp(const void *a, const void *b)
{
	const struct wl_named *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static void wl_say_named(const struct wl_named *n)
{
	if (n->slot < 0)
		fprintf(stderr, "the root");
	else
		fprintf(stderr, "slot %d", n->slot);
}

/* sorted by offset, no block may reach into the next one (this also
 * catches two slots naming one block); the number of errors */
static unsigned wl_check_overlap(struct wl_named *named, unsigned n)
{
	unsigned i, errors = 0;

	qsort(named, n, sizeof(*named), wl_named_cmp);
	for (i = 1; i < n; i++) {
		if (named[i - 1].off + named[i - 1].usable <= named[i].off)
			continue;
		fprintf(stderr, "pma-workload: verify: ");
		wl_say_named(&named[i - 1]);
		fprintf(stderr, " (0x%" PRIx64 ", %" PRIu64 " bytes) and ",
			named[i - 1].off, named[i - 1].usable);
		wl_say_named(&named[i]);
		fprintf(stderr, " (0x%" PRIx64 ") %s\n", named[i].off,
			named[i - 1].off == named[i].off ?
				"name the same block" :
				"overlap");
		errors++;
	}
	return errors;
}

/* every slot is 0 or a live block of at least its size; *ret_n named
 * blocks (+ the root) are listed in named; the number of errors */
static unsigned wl_check_slots(struct pma_heap *heap, struct wl_root *root,
			       struct wl_named *named, unsigned *ret_n)
{
	unsigned i, n = 0, errors = 0;
	size_t usable;

	named[n].off = pma_offset(heap, root);
	named[n].usable = pma_usable_size(heap, named[n].off);
	named[n++].slot = -1;
	for (i = 0; i < WL_NSLOTS; i++) {
		if (!root->slot[i])
			continue;
		usable = pma_usable_size(heap, root->slot[i]);
		if (usable == 0 || usable < root->size[i]) {
			fprintf(stderr,
				"pma-workload: verify: slot %u names 0x%" PRIx64
				", %zu usable bytes, %" PRIu64 " requested\n",
				i, root->slot[i], usable, root->size[i]);
			errors++;
			continue;
		}
		named[n].off = root->slot[i];
		named[n].usable = usable;
		named[n++].slot = (int)i;
	}
	*ret_n = n;
	return errors + wl_check_overlap(named, n);
}

/* the heap's live blocks must be exactly the n named ones (no leak) */
static int wl_check_live(struct pma_heap *heap, unsigned n, uint64_t *ret_live)
{
	struct pma_heap_stats hs;
	uint64_t live;
	unsigned c;

	if (pma_heap_stats(heap, &hs) < 0)
		return fail("stats");
	live = hs.extents;
	for (c = 0; c < hs.nclasses && c < PMA_STATS_MAX_CLASSES; c++)
		live += hs.classes[c].used;
	*ret_live = live;
	if (live == n)
		return 0;
	fprintf(stderr,
		"pma-workload: verify: %" PRIu64 " live blocks, %u named "
		"(with the root): %s\n",
		live, n, live > n ? "leaked blocks" : "blocks lost");
	return 1;
}

/* allocate into up to WL_VERIFY_ALLOCS empty slots (one large), check
 * them, free them again: the slots are as before; the count or -1 */
static int wl_exercise(struct pma_heap *heap, struct wl_root *root)
{
	uint64_t rng = 42;
	unsigned i, n = 0, used[WL_VERIFY_ALLOCS];

	for (i = 0; i < WL_NSLOTS && n < WL_VERIFY_ALLOCS; i++) {
		if (root->slot[i])
			continue;
		root->size[i] = n == 0 ? 256 * 1024 : wl_random_size(&rng);
		if (pma_malloc_to(heap, root->size[i], &root->slot[i]) < 0) {
			fail("verify: malloc_to");
			return -1;
		}
		if (pma_usable_size(heap, root->slot[i]) < root->size[i]) {
			fprintf(stderr,
				"pma-workload: verify: new block "
				"0x%" PRIx64 " is too small\n",
				root->slot[i]);
			return -1;
		}
		memset(pma_direct(heap, root->slot[i]), 0xa5, root->size[i]);
		used[n++] = i;
	}
	for (i = 0; i < n; i++)
		if (pma_free_from(heap, &root->slot[used[i]]) < 0) {
			fail("verify: free_from");
			return -1;
		}
	return (int)n;
}

/*
 * Recover (open) the heap at path and check the stress root: every slot is
 * 0 or names a live block with at least the bytes asked for it, no two
 * named blocks (nor the root) overlap, the heap has no other live block;
 * then allocations into free slots and their frees work and leave the
 * same state. Prints the counts; 0 if all holds, else 1.
 */
static int wl_verify(const char *path)
{
	static struct wl_named named[WL_NSLOTS + 1];
	struct pma_heap *heap;
	struct wl_root *root;
	unsigned n, errors;
	uint64_t live;
	int extra;

	if (pma_heap_open(path, 0, &heap) < 0)
		return fail("open");
	errors = 1;
	if (wl_root_get(heap, &root) < 0)
		goto out_close;
	/* the live count means something only when the names are right */
	errors = wl_check_slots(heap, root, named, &n);
	if (!errors)
		errors = wl_check_live(heap, n, &live);
	if (errors)
		goto out_close;
	extra = wl_exercise(heap, root);
	if (extra < 0) {
		errors++;
		goto out_close;
	}
	errors = wl_check_slots(heap, root, named, &n);
	if (!errors)
		errors = wl_check_live(heap, n, &live);
	if (!errors)
		printf("verify: ok, %u slots named, %" PRIu64 " live blocks "
		       "(with the root), %d more allocated and freed\n",
		       n - 1, live, extra);
out_close:
	pma_heap_close(heap);
	if (errors)
		fprintf(stderr, "pma-workload: verify: %u errors\n", errors);
	return errors ? 1 : 0;
}

/* ----------------------------------------------------------------- corrupt */

/* copy the first named slot into the first empty one */
static int wl_corrupt(const char *path)
{
	struct pma_heap *heap;
	struct wl_root *root;
	unsigned i, from = WL_NSLOTS, to = WL_NSLOTS;
	int rc = 1;

	if (pma_heap_open(path, 0, &heap) < 0)
		return fail("open");
	if (wl_root_get(heap, &root) < 0)
		goto out_close;
	for (i = 0; i < WL_NSLOTS; i++) {
		if (root->slot[i] && from == WL_NSLOTS)
			from = i;
		if (!root->slot[i] && to == WL_NSLOTS)
			to = i;
	}
	if (from == WL_NSLOTS || to == WL_NSLOTS) {
		fprintf(stderr, "pma-workload: corrupt: need a named and an "
				"empty slot\n");
		goto out_close;
	}
	root->size[to] = root->size[from];
	root->slot[to] = root->slot[from];
	printf("corrupt: slot %u names the block of slot %u (0x%" PRIx64 ")\n",
	       to, from, root->slot[from]);
	rc = 0;
out_close:
	pma_heap_close(heap);
	return rc;
}

/* ------------------------------------------------------------ --numa */

#define NUMA_BLOCKS 64

struct numa_worker {
	struct pma_heap *heap;
	uint64_t *slots; /* NUMA_BLOCKS dest words in the root */
	int cpu, node, mempolicy;
	int xfree; /* free slots (another part's blocks) instead */
	unsigned in_part, page_on_node;
	int rc;
};

static void *numa_worker(void *arg)
{
	struct numa_worker *w = arg;
	struct pma_heap_stats ps;
	cpu_set_t one;
	unsigned i;
	int pnode;

	CPU_ZERO(&one);
	CPU_SET(w->cpu, &one);
	if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one)) {
		w->rc = -EINVAL;
		return NULL;
	}
	for (i = 0; w->xfree && i < NUMA_BLOCKS; i++) {
		w->rc = pma_free_from(w->heap, &w->slots[i]);
		if (w->rc < 0)
			return NULL;
	}
	for (i = 0; !w->xfree && i < NUMA_BLOCKS; i++) {
		w->rc = pma_malloc_to(w->heap, 256, &w->slots[i]);
		if (w->rc < 0)
			return NULL;
		/* the part's node, from the heap */
		if (pma_heap_part_stats(w->heap, (unsigned)(w->slots[i] >> 56),
					&ps) == 0 &&
		    ps.node == w->node)
			w->in_part++;
		if (!w->mempolicy)
			continue;
		/* touch it, then ask the kernel where its page is */
		memset(pma_direct(w->heap, w->slots[i]), 0x5a, 256);
		if (get_mempolicy(&pnode, NULL, 0,
				  pma_direct(w->heap, w->slots[i]),
				  MPOL_F_NODE | MPOL_F_ADDR) == 0 &&
		    pnode == w->node)
			w->page_on_node++;
	}
	return NULL;
}

static int wl_numa(int argc, char **argv)
{
	struct numa_worker w;
	struct pma_heap_stats st, ps;
	struct pma_heap *heap;
	uint64_t root, *slots;
	unsigned p, k = 0;
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	pthread_t tid;
	int rc = 1, mempolicy, xfree, c;

	mempolicy = argc == 4 && !strcmp(argv[3], "--mempolicy");
	xfree = argc == 4 && !strcmp(argv[3], "--xfree-crash");
	if (argc != 3 && !mempolicy && !xfree)
		return usage(stderr, 2);
	if (ns_topology_init() < 0 ||
	    pma_heap_open(argv[2], PMA_HEAP_FORMAT, &heap) < 0) {
		fprintf(stderr, "pma-workload: %s\n", pma_errormsg());
		return 1;
	}
	if (pma_heap_stats(heap, &st) < 0 || st.parts < 2) {
		fprintf(stderr, "pma-workload: '%s': a heap of %u part(s)\n",
			argv[2], st.parts);
		goto out_close;
	}
	if (pma_root(heap, POOL_MAX_PARTS * NUMA_BLOCKS * 8, &root) < 0)
		goto out_msg;
	slots = pma_direct(heap, root);
	for (p = 0; p < POOL_MAX_PARTS; p++) {
		if (pma_heap_part_stats(heap, p, &ps) < 0)
			continue;
		memset(&w, 0, sizeof(w));
		w.heap = heap;
		w.slots = slots + NUMA_BLOCKS * k++;
		w.node = ps.node;
		w.mempolicy = mempolicy;
		w.cpu = -1;
		for (c = 0; c < ncpus && w.cpu < 0; c++)
			if (ns_cpu_node((unsigned)c) == ps.node)
				w.cpu = c;
		if (w.cpu < 0) {
			fprintf(stderr, "pma-workload: no CPU on node %d\n",
				ps.node);
			goto out_close;
		}
		if (pthread_create(&tid, NULL, numa_worker, &w) ||
		    pthread_join(tid, NULL))
			goto out_close;
		if (w.rc < 0)
			goto out_msg;
		printf("{\"part\":%u,\"node\":%d,\"cpu\":%d,\"blocks\":%u,"
		       "\"in_part\":%u,\"page_on_node\":%d}\n",
		       p, w.node, w.cpu, NUMA_BLOCKS, w.in_part,
		       mempolicy ? (int)w.page_on_node : -1);
	}
	if (xfree && k > 1) {
		/* the last worker's thread frees the first part's blocks */
		w.slots = slots;
		w.xfree = 1;
		if (pthread_create(&tid, NULL, numa_worker, &w) ||
		    pthread_join(tid, NULL))
			goto out_close;
		if (w.rc < 0)
			goto out_msg;
		_exit(0); /* a crash: no checkpoint, no close */
	}
	rc = 0;
	goto out_close;
out_msg:
	fprintf(stderr, "pma-workload: %s\n", pma_errormsg());
out_close:
	pma_heap_close(heap);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(stderr, 2);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return usage(stdout, 0);
	if (!strcmp(argv[1], "--stress"))
		return wl_stress(argc, argv);
	if (!strcmp(argv[1], "--frag"))
		return wl_frag(argc, argv);
	if (!strcmp(argv[1], "--numa"))
		return wl_numa(argc, argv);
	if (!strcmp(argv[1], "--fill"))
		return wl_add(argc, argv);
	if (!strcmp(argv[1], "--frag-check"))
		return argc == 3 ? wl_frag_check(argv[2]) : usage(stderr, 2);
	if (!strcmp(argv[1], "--verify") || !strcmp(argv[1], "--corrupt")) {
		if (argc != 3)
			return usage(stderr, 2);
		return argv[1][2] == 'v' ? wl_verify(argv[2]) :
					   wl_corrupt(argv[2]);
	}
	if (argv[1][0] == '-')
		return usage(stderr, 2);
	return wl_fill(argc, argv);
}
