/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-pmalloc-add-crash: crash-simulation sweep of pma_heap_add_regions
 * racing frees into the new slot's rings (--enable-crash-sim). A pool of
 * 1 part x 4 regions; a process holding slot 1 allocated blocks into the
 * root (in slot 0) and died (its logs left for the add to replay) or
 * closed. Then, in one thread, open A (slot 0) frees them through its
 * ring for slot 1 while open B (slot 2) adds slot 1 (recovery, drain),
 * applies the rings (pma_heap_sync), frees some as its own blocks and
 * allocates into slot 1 again; in some runs the ring's end is crossed.
 * The threads sweeps run A's frees and B's ops in two threads (B starts
 * after A's third free), so that frees are made while the add recovers
 * and drains. Both opens map the same file (the simulator's shadow is
 * the file's): an image at EVERY fence of either. The parent recovers a
 * copy as a whole-pool open does, or first as pmad recovers dead clients
 * (masked opens of A's and B's slots, in either order), and checks
 * against the ops that had returned: a freed word is 0, an unfreed one
 * names its block, an op in flight either; the live blocks are exactly
 * the root and the words' (no leak, no block freed and named); no ring
 * entry waits; the heap works; fsck finds no error in the image and
 * nothing after recovery. `test-pmalloc-add-crash replay FILE` checks a
 * saved image again (the op progress is lost then: every word may be
 * either).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "pmalloc.h"
#include "pmalloc/fsck.h"
#include "pmalloc/internal.h"
#include "pool/pool.h"

#include "../lib/test-cfg.h"
#include "crash-fsck.h"
#include "crash-sweep.h"
#include "pma-check.h"

#define POOL_SIZE (8ULL << 20)
#define NREG 4 /* slots 0..3: A holds 0, B 2 and then 1; 3 stays free */
#define H_WORDS 24 /* words naming the blocks slot 1's first holder made */
#define B_WORDS 8 /* words B allocates into in slot 1 after the add */
#define ROOT_WORDS (H_WORDS + B_WORDS)
#define PRE_ADD 10 /* ring frees of slot 1's blocks before the add */
#define MAX_OPS 64
/* entries through the ring before the sweep in some runs: the frees
 * before the add cross the ring's end (PMA_XRING_CAP 64) */
#define WARM (PMA_XRING_CAP - PRE_ADD / 2)
#define MAX_LIVE 128

enum op_kind { OP_RING_FREE, OP_ADD, OP_SYNC, OP_ALLOC, OP_LOCAL_FREE };

struct op {
	unsigned char kind; /* enum op_kind */
	unsigned char word; /* the root word it frees or allocates into */
};

enum op_state { OP_NOT_BEGUN, OP_IN_FLIGHT, OP_RETURNED };

/*
 * The child's ops and how far it got, in a page shared with the parent,
 * which reads it while the child waits in its fence hook (holding the
 * simulator's lock: another thread of the child stops at its next flush
 * or fence, so an op returned meanwhile had fenced before the image).
 */
struct progress {
	unsigned nops; /* 0: unknown (a replay) */
	struct op ops[MAX_OPS];
	unsigned char state[MAX_OPS]; /* enum op_state */
	uint64_t orig[H_WORDS]; /* the blocks the words named at the start */
};

static struct progress *prog;

/* images per kind of the op in flight (none: between two ops) */
static unsigned cut_in[OP_LOCAL_FREE + 2];
static unsigned checks; /* images checked: picks the recovery */
/* images recovered by a whole-pool open alone, after masked opens of A's
 * slot then B's, of B's then A's */
static unsigned recovered_by[3];

static size_t word_size(unsigned i)
{
	if (i == 5)
		return 20000; /* extents */
	if (i == 13)
		return 100000;
	return 24 + (i * 2654435761u >> 8) % 2000;
}

/* ------------------------------------------------------------ child */

static void op_push(struct progress *p, enum op_kind kind, unsigned word)
{
	if (p->nops < MAX_OPS)
		p->ops[p->nops++] = (struct op){ kind, (unsigned char)word };
}

/*
 * PRE_ADD ring frees, the add, then the other words freed (by A through
 * its ring, every fifth by B as its own block), a sync of B after every
 * third free and an allocation of B after every fourth. Even runs free
 * the holder's last blocks first (the ops its recovery redoes: the add's
 * replay meets blocks freed through the ring), odd runs its first.
 */
static void ops_build(struct progress *p, uint64_t rnd)
{
	unsigned i, w, k = 0, b = H_WORDS;

	p->nops = 0;
	for (i = 0; i < H_WORDS; i++) {
		w = rnd & 1 ? i : H_WORDS - 1 - i;
		if (i == PRE_ADD)
			op_push(p, OP_ADD, 0);
		op_push(p,
			i >= PRE_ADD && (i + rnd) % 5 == 1 ? OP_LOCAL_FREE :
							     OP_RING_FREE,
			w);
		if (i < PRE_ADD)
			continue;
		if (++k % 3 == 0)
			op_push(p, OP_SYNC, 0);
		if (k % 4 == 0 && b < ROOT_WORDS)
			op_push(p, OP_ALLOC, b++);
	}
	while (b < ROOT_WORDS)
		op_push(p, OP_ALLOC, b++);
	op_push(p, OP_SYNC, 0);
}

static int op_run(struct pma_heap *a, struct pma_heap *b, uint64_t root,
		  const struct op *op)
{
	uint64_t *wa = pma_direct(a, root), *wb = pma_direct(b, root);
	struct pma_heap *s1;

	switch (op->kind) {
	case OP_RING_FREE:
		return pma_free_from(a, &wa[op->word]);
	case OP_ADD:
		return pma_heap_add_regions(b, 1ULL << 1);
	case OP_SYNC:
		return pma_heap_sync(b) < 0 ? -1 : 0;
	case OP_ALLOC:
		s1 = pma_sib(b, 1);
		return s1 ? pma_alloc_to(s1, word_size(op->word), &wb[op->word],
					 PMA_ALLOC_HERE) :
			    -1;
	case OP_LOCAL_FREE:
		return pma_free_from(b, &wb[op->word]);
	}
	return -1;
}

/* slot 1's first holder: blocks into words [0, H_WORDS) of the root;
 * it dies holding the slot (its logs not checkpointed: the add's
 * recovery replays them) or closes */
static void holder_run(const char *path, uint64_t root, int dies)
{
	struct pma_heap *h = NULL;
	uint64_t *w;
	unsigned i;

	if (pma_check_open_mask(&test_cfg, path, 0x2, &h) < 0)
		_exit(2);
	w = pma_direct(h, root);
	for (i = 0; i < H_WORDS; i++)
		if (pma_malloc_to(h, word_size(i), &w[i]) < 0)
			_exit(3);
	if (dies)
		_exit(0); /* a process death: no store lost, no close */
	pma_heap_close(h);
	_exit(0);
}

/* WARM frees through slot 0's ring for slot 1, applied: the sweep's
 * entries cross the ring's end (a new lap, its tags) */
static void ring_warm(const char *path)
{
	struct pma_heap *a = NULL, *h = NULL;
	uint64_t word;
	unsigned i;

	if (pma_check_open_mask(&test_cfg, path, 0x1, &a) < 0 ||
	    pma_check_open_mask(&test_cfg, path, 0x2, &h) < 0)
		_exit(11);
	for (i = 0; i < WARM; i++) {
		/* a dest outside the pool: the entry names none */
		if (pma_malloc_to(h, 64, &word) < 0 ||
		    pma_free_from(a, &word) < 0)
			_exit(12);
		if (i % 16 == 15 && pma_heap_sync(h) < 0)
			_exit(13);
	}
	if (pma_heap_sync(h) < 0)
		_exit(13);
	pma_heap_close(h);
	pma_heap_close(a);
}

/* the pool, its root (made by A, which keeps slot 0), slot 1's blocks
 * made by a process of its own */
static void child_setup(const char *path, uint64_t rnd, struct pma_heap **ret_a,
			uint64_t *ret_root)
{
	struct pma_heap *heap = NULL;
	uint64_t root, *w;
	unsigned i;
	int st;
	pid_t pid;

	test_cfg.regions = NREG;
	test_cfg.sum_shift = PMA_SUM_SHIFT_MIN;
	(void)unlink(path);
	if (test_heap_create(path, POOL_SIZE, 0, &heap) < 0)
		_exit(7);
	pma_heap_close(heap);
	if (pma_check_open_mask(&test_cfg, path, 0x1, &heap) < 0 ||
	    pma_root(heap, ROOT_WORDS * sizeof(uint64_t), &root) < 0)
		_exit(8);
	pma_heap_close(heap);
	if (rnd & 2)
		ring_warm(path);
	pid = fork();
	if (pid == 0)
		holder_run(path, root, !(rnd & 1));
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		_exit(9);
	/* A opens after the holder: its shadow starts from the file */
	if (pma_check_open_mask(&test_cfg, path, 0x1, ret_a) < 0 ||
	    !pma_sib(*ret_a, 0) ||
	    pma_sib(*ret_a, 0)->hdr->xprod[1] != (rnd & 2 ? WARM : 0))
		_exit(8);
	w = pma_direct(*ret_a, root);
	for (i = 0; i < H_WORDS; i++)
		prog->orig[i] = w[i];
	*ret_root = root;
}

struct runner {
	struct pma_heap *a, *b;
	uint64_t root;
	int thread; /* -1: every op, else the ops of this open (0 A, 1 B) */
};

static int op_of_thread(const struct op *op, int thread)
{
	return thread < 0 || (op->kind == OP_RING_FREE) == (thread == 0);
}

/* the ops of r's thread in order; B's wait for A's first three frees */
static void *ops_run(void *arg)
{
	const struct runner *r = arg;
	unsigned i;

	while (r->thread == 1 &&
	       __atomic_load_n(&prog->state[2], __ATOMIC_ACQUIRE) !=
		       OP_RETURNED)
		sched_yield();
	for (i = 0; i < prog->nops; i++) {
		if (!op_of_thread(&prog->ops[i], r->thread))
			continue;
		__atomic_store_n(&prog->state[i], OP_IN_FLIGHT,
				 __ATOMIC_RELEASE);
		if (op_run(r->a, r->b, r->root, &prog->ops[i]) < 0)
			_exit(20 + prog->ops[i].kind);
		__atomic_store_n(&prog->state[i], OP_RETURNED,
				 __ATOMIC_RELEASE);
	}
	return NULL;
}

/* the ops in one thread in order, or (PMA_ADD_THREADS set) A's frees
 * in one thread and B's add, syncs, allocations and frees in another */
static void child_run(const char *path, uint64_t rnd)
{
	struct runner r[2] = { { .thread = -1 }, { .thread = 1 } };
	pthread_t tid;

	child_setup(path, rnd, &r[0].a, &r[0].root);
	if (pma_check_open_mask(&test_cfg, path, 0x4, &r[0].b) < 0)
		_exit(10);
	ops_build(prog, rnd);
	memset(prog->state, OP_NOT_BEGUN, sizeof(prog->state));
	r[1].a = r[0].a;
	r[1].b = r[0].b;
	r[1].root = r[0].root;
	/* one file, one shadow: a's mapping images b's stores too */
	crash_sweep_arm(r[0].a->map);
	if (!getenv("PMA_ADD_THREADS")) {
		(void)ops_run(&r[0]);
		crash_sweep_finish(prog->nops);
	}
	r[0].thread = 0;
	if (pthread_create(&tid, NULL, ops_run, &r[1]))
		_exit(11);
	(void)ops_run(&r[0]);
	pthread_join(tid, NULL);
	crash_sweep_finish(prog->nops);
}

/* ----------------------------------------------------------- parent */

/* as pmad recovers dead clients: masked opens of A's slot and of B's
 * (its grant and the slot it added), closed, in the order given */
static int recover_masked(const char *file, int b_first)
{
	static const uint64_t masks[2] = { 0x1, 0x6 };
	struct pma_heap *heap = NULL;
	unsigned i;

	for (i = 0; i < 2; i++) {
		if (pma_check_open_mask(&test_cfg, file,
					masks[i ^ (unsigned)b_first],
					&heap) < 0)
			return -1;
		pma_heap_close(heap);
	}
	return 0;
}

/* the state of op j at the crash: 1 returned, 0 not begun, -1 in flight
 * or unknown */
static int op_state(unsigned j)
{
	if (!prog->nops || j >= prog->nops)
		return -1;
	switch (__atomic_load_n(&prog->state[j], __ATOMIC_ACQUIRE)) {
	case OP_RETURNED:
		return 1;
	case OP_NOT_BEGUN:
		return 0;
	default:
		return -1;
	}
}

/* the op that touches word w (its free or its allocation) */
static unsigned op_of(unsigned w)
{
	unsigned j;

	for (j = 0; j < prog->nops; j++)
		if (prog->ops[j].kind != OP_ADD &&
		    prog->ops[j].kind != OP_SYNC && prog->ops[j].word == w)
			return j;
	return MAX_OPS; /* (a replay) */
}

/* word w after recovery against its op: 0 or -1 with why */
static int check_word(struct pma_heap *heap, const uint64_t *words, unsigned w,
		      char *why, size_t why_len)
{
	int st = op_state(op_of(w));
	uint64_t v = words[w];

	if (v && pma_usable_size(heap, v) < word_size(w)) {
		snprintf(why, why_len, "word %u: 0x%llx usable %zu", w,
			 (unsigned long long)v, pma_usable_size(heap, v));
		return -1;
	}
	if (w < H_WORDS) {
		/* a free: returned 0, not begun the block, in flight either */
		if ((st == 1 && v) || (st == 0 && v != prog->orig[w]) ||
		    (v && prog->orig[w] && v != prog->orig[w])) {
			snprintf(why, why_len,
				 "word %u (free %s) is 0x%llx, was 0x%llx", w,
				 st == 1 ? "returned" :
				 st == 0 ? "not begun" :
					   "in flight",
				 (unsigned long long)v,
				 (unsigned long long)prog->orig[w]);
			return -1;
		}
		return 0;
	}
	/* an allocation: returned a block, not begun 0 */
	if ((st == 1 && !v) || (st == 0 && v)) {
		snprintf(why, why_len, "word %u (allocation %s) is 0x%llx", w,
			 st == 1 ? "returned" : "not begun",
			 (unsigned long long)v);
		return -1;
	}
	return 0;
}

struct live {
	uint64_t off[MAX_LIVE];
	unsigned n;
};

static int live_note(uint64_t off, uint64_t size, void *arg)
{
	struct live *l = arg;

	(void)size;
	if (l->n == MAX_LIVE)
		return 1;
	l->off[l->n++] = off;
	return 0;
}

/* the live blocks are the root and the words' blocks, each once */
static int check_live(struct pma_heap *heap, uint64_t root,
		      const uint64_t *words, char *why, size_t why_len)
{
	struct live l = { .n = 0 };
	unsigned i, k, named = 1, hits;

	if (pma_block_foreach(heap, live_note, &l) != 0) {
		snprintf(why, why_len, "block walk: over %u blocks or %s",
			 MAX_LIVE, pma_errormsg());
		return -1;
	}
	for (i = 0; i <= ROOT_WORDS; i++) {
		uint64_t v = i < ROOT_WORDS ? words[i] : root;

		if (!v)
			continue;
		named += i < ROOT_WORDS;
		for (k = 0, hits = 0; k < l.n; k++)
			hits += l.off[k] == v;
		if (hits != 1) {
			snprintf(why, why_len, "0x%llx (word %u) live %u times",
				 (unsigned long long)v, i, hits);
			return -1;
		}
	}
	for (i = 0; i < ROOT_WORDS; i++)
		for (k = i + 1; k < ROOT_WORDS; k++)
			if (words[i] && words[i] == words[k]) {
				snprintf(why, why_len,
					 "words %u and %u name 0x%llx", i, k,
					 (unsigned long long)words[i]);
				return -1;
			}
	if (l.n != named) {
		snprintf(why, why_len, "%u blocks live, %u named (a leak)", l.n,
			 named);
		return -1;
	}
	return 0;
}

/* the heap works on: every word freed, allocated and freed again */
static int check_works(struct pma_heap *heap, uint64_t *words, char *why,
		       size_t why_len)
{
	unsigned i;

	for (i = 0; i < ROOT_WORDS; i++)
		if (pma_free_from(heap, &words[i]) < 0 ||
		    pma_malloc_to(heap, word_size(i), &words[i]) < 0) {
			snprintf(why, why_len, "word %u: %s", i,
				 pma_errormsg());
			return -1;
		}
	for (i = 0; i < ROOT_WORDS; i += 2)
		if (pma_free_from(heap, &words[i]) < 0) {
			snprintf(why, why_len, "word %u: %s", i,
				 pma_errormsg());
			return -1;
		}
	return 0;
}

/* ring frees for slot 1 committed and not applied in the image */
static unsigned image_pending(const char *file)
{
	struct pool *pool = NULL;
	uint64_t n = 0;

	if (pool_open(file, POOL_OPEN_RDONLY | POOL_OPEN_NOLOCK, &pool) < 0)
		return 0;
	if (pma_pool_ring_pending(pool, 1ULL << 1, &n) < 0)
		n = 0;
	pool_close(&pool);
	return (unsigned)n;
}

static void note_cut(void)
{
	unsigned j, n = 0;

	for (j = 0; j < prog->nops; j++)
		if (op_state(j) < 0) {
			cut_in[prog->ops[j].kind]++;
			n++;
		}
	if (!n)
		cut_in[OP_LOCAL_FREE + 1]++;
}

/* every third image straight into a whole-pool open, the others after
 * the masked opens of A's and B's slots (in turn, A's first or B's) */
static int recover_for_check(const char *file, char *why, size_t why_len)
{
	unsigned turn = checks++ % 3;

	recovered_by[turn]++;
	if (turn && recover_masked(file, turn == 2) < 0) {
		snprintf(why, why_len, "masked opens (%s first): %s",
			 turn == 2 ? "B's" : "A's", pma_errormsg());
		return -1;
	}
	return 0;
}

static int check_heap(const char *file, unsigned *ret_pending, char *why,
		      size_t why_len)
{
	struct pma_heap *heap = NULL;
	uint64_t root, *w, pending = 0;
	unsigned i;

	note_cut();
	*ret_pending = image_pending(file);
	if (crash_fsck(file, POOL_FSCK_ERROR, "before recovery", why, why_len) <
		    0 ||
	    recover_for_check(file, why, why_len) < 0)
		return -1;
	if (test_heap_open(file, 0, &heap) < 0) {
		snprintf(why, why_len, "open: %s", pma_errormsg());
		return -1;
	}
	root = heap->hdr->root_off;
	CHECK(root && pma_usable_size(heap, root) >=
			      ROOT_WORDS * sizeof(uint64_t),
	      "root 0x%llx", (unsigned long long)root);
	CHECK(pma_heap_ring_pending(heap, &pending) == 0 && pending == 0,
	      "%llu ring frees wait after the open",
	      (unsigned long long)pending);
	w = pma_direct(heap, root);
	for (i = 0; i < ROOT_WORDS; i++)
		if (check_word(heap, w, i, why, why_len) < 0)
			goto out_close;
	if (check_live(heap, root, w, why, why_len) < 0 ||
	    check_works(heap, w, why, why_len) < 0)
		goto out_close;
	pma_heap_close(heap);
	return crash_fsck(file, POOL_FSCK_INFO, "after recovery", why, why_len);

out_close:
	pma_heap_close(heap);
	return -1;
}

static int recover_only(const char *file)
{
	return recover_masked(file, 0) < 0 ? 1 : 0;
}

static const struct crash_sweep_ops add_ops = {
	.name = "pmalloc-add",
	.workload = child_run,
	.check = check_heap,
	.recover = recover_only,
	.dump = NULL,
	.stat_name = "ring frees for slot 1 pending in an image",
	.extra_name = "ops",
};

struct add_sweep {
	struct crash_sweep sw;
	int threads; /* A's frees and B's ops in two threads */
};

/* run r's rnd is r * 0x1000193: bit 0 (runs 1, 3): the holder closed,
 * else it died; its first blocks freed first, else its last; bit 1
 * (runs 1, 2): the ring's end crossed */
static struct add_sweep sweeps[] = {
	{ { .name = "add durable", .runs = 2 }, 0 },
	{ { .name = "add torn", .seed_base = 0xadd00000, .runs = 4 }, 0 },
	{ { .name = "add recrash",
	    .seed_base = 0xadd0abcd0000,
	    .recrash_every = 2,
	    .recrash_fences = 3,
	    .runs = 2 },
	  0 },
	{ { .name = "add byte torn",
	    .seed_base = 0xadd0b1700000,
	    .runs = 2,
	    .byte = 1 },
	  0 },
	{ { .name = "add threads durable", .runs = 4 }, 1 },
	{ { .name = "add threads torn", .seed_base = 0xadd07700000, .runs = 4 },
	  1 },
};

static void test_sweep(void **state)
{
	const struct add_sweep *as = *state;
	struct crash_sweep sw = as->sw;

	memset(cut_in, 0, sizeof(cut_in));
	memset(recovered_by, 0, sizeof(recovered_by));
	if (as->threads)
		setenv("PMA_ADD_THREADS", "1", 1);
	if (crash_sweep_run(&add_ops, &sw) < 0)
		fail_msg("%s failed", sw.name);
	unsetenv("PMA_ADD_THREADS");
	printf("# %s: images cut in the add %u, A's ring frees %u, B's "
	       "syncs %u, B's allocations %u, B's frees %u, between ops %u; "
	       "recovered by a whole open %u, after masked opens A, B %u, "
	       "B, A %u\n",
	       sw.name, cut_in[OP_ADD], cut_in[OP_RING_FREE], cut_in[OP_SYNC],
	       cut_in[OP_ALLOC], cut_in[OP_LOCAL_FREE],
	       cut_in[OP_LOCAL_FREE + 1], recovered_by[0], recovered_by[1],
	       recovered_by[2]);
	assert_int_equal(sw.images, sw.fences);
	assert_true(sw.extra >= (uint64_t)(H_WORDS + B_WORDS) * sw.runs);
	/* the add and the frees it raced were imaged */
	assert_true(cut_in[OP_ADD] > 0);
	assert_true(cut_in[OP_RING_FREE] > 0);
	assert_true(cut_in[OP_SYNC] > 0);
	assert_true(sw.stat_max > 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		{ "test_sweep_durable", test_sweep, NULL, NULL, &sweeps[0] },
		{ "test_sweep_torn", test_sweep, NULL, NULL, &sweeps[1] },
		{ "test_sweep_recrash", test_sweep, NULL, NULL, &sweeps[2] },
		{ "test_sweep_byte_torn", test_sweep, NULL, NULL, &sweeps[3] },
		{ "test_sweep_threads_durable", test_sweep, NULL, NULL,
		  &sweeps[4] },
		{ "test_sweep_threads_torn", test_sweep, NULL, NULL,
		  &sweeps[5] },
	};

	prog = mmap(NULL, sizeof(*prog), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (prog == MAP_FAILED)
		return 1;
	return pma_check_main(&add_ops, argc, argv, tests,
			      sizeof(tests) / sizeof(tests[0]), NULL);
}
