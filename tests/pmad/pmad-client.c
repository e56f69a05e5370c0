/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad-client: a libpmad client for tests/cli/libpmad.bats, using only
 * the installed API (pmad.h, pmalloc.h).
 *   pmad-client SOCKET basic POOL
 *       open, pma_root, allocate, close, reopen and find the data; a
 *       second open while the first holds the pool is -EBUSY naming this
 *       pid; unknown pool -ENOENT; no pmad -ENOENT/-ECONNREFUSED
 *   pmad-client SOCKET workload POOL [--count-file F] [--ops N]
 *       the crash workload (below) until killed or N ops; after each op
 *       the count of committed ops is written to F (or fd 3, a pipe)
 *   pmad-client SOCKET verify POOL --count C
 *       the pool holds exactly what C committed ops leave, nothing leaks
 *   pmad-client SOCKET crash-loop POOL --rounds R [--seed S]
 *       R times: a child runs the workload (from the op the previous
 *       child was killed in), is killed with SIGKILL at a random point,
 *       then verify (pmad must have recovered the heap)
 *   pmad-client SOCKET hold POOL
 *       open the pool, print "held", wait for stdin to close
 *   pmad-client SOCKET fork POOL
 *       a client opens the pool, forks a child that keeps the inherited
 *       connection for a second, and is killed: the pool stays attached
 *       (EBUSY) until the child is gone too, then opens
 *   pmad-client SOCKET two POOL
 *       two clients in this process open the pool (of 2+ regions): each
 *       gets a region of its own; each allocates, the second frees the
 *       first's 200 blocks while the first is idle (free rings: more
 *       than a ring holds, applied by libpmad's sync thread) and the
 *       first sees them gone; both close
 *   pmad-client SOCKET open POOL
 *       open and close the pool; print "opened", or the error as
 *       "-ERRNO: message" and exit 1
 *   pmad-client SOCKET setfl POOL
 *       open the pool, set O_APPEND|O_NONBLOCK on every descriptor of
 *       this process that names a file ending in "/POOL.pool" (they share
 *       pmad's open file descriptions), print their count, close
 *   pmad-client SOCKET grow POOL
 *       (a pool of 1 part x 2 regions, no other client) open it, fill
 *       its region with 1 MiB blocks up to -ENOMEM, pmad_pool_grow,
 *       allocate on in the second region; a second grow is -EBUSY; hold
 *       (print "grown", wait for stdin to close), free all, close
 *   pmad-client SOCKET autogrow POOL
 *       (1 part x 2 regions, no other client) fill it with 1 MiB blocks
 *       without pmad_pool_grow: the full region leases the other by
 *       itself; print "blocks N" at -ENOMEM, free all, close
 *   pmad-client SOCKET root POOL
 *       open, print "opened"; for each line of stdin pma_root (a client
 *       without slot 0 gets it leased by libpmad's root hook) and print
 *       "root OFF block OFF" or the error; close at end of input
 * Workload: the root object has NSLOTS slots; op k frees the block in
 * slot k % NSLOTS (if any), allocates a new one of sizes[k % NSIZES]
 * into it (pma_malloc_to) and persists k in its first word.
 * Prints one line per check; exit 0 when all passed.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "pmad.h"
#include "pmalloc.h"

#define NSLOTS 256
#define ROOT_MAGIC 0x746f6f72646d7021ULL /* "!pmdroot" */

static const size_t sizes[] = { 64, 200, 1000, 4000, 16384, 70000, 128 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct root {
	uint64_t magic;
	uint64_t base_live; /* live blocks + extents with only the root */
	uint64_t base_used; /* used_bytes then */
	uint64_t slot[NSLOTS];
};

static int failures;

static void check(int ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	failures += !ok;
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "pmad-client: %s: %s (%s)\n", what, pmad_errormsg(),
		strerror(-rc));
	exit(1);
}

static uint64_t live_count(const struct pma_heap_stats *st)
{
	uint64_t n = st->extents;
	uint32_t i;

	for (i = 0; i < st->nclasses && i < PMA_STATS_MAX_CLASSES; i++)
		n += st->classes[i].used;
	return n;
}

/* the root, made on first use with the figures of an empty heap */
static struct root *root_get(struct pma_heap *heap)
{
	struct pma_heap_stats st;
	struct root *r;
	uint64_t off;
	int rc;

	rc = pma_root(heap, sizeof(*r), &off);
	if (rc < 0)
		die("pma_root", rc);
	r = pma_direct(heap, off);
	if (r->magic == ROOT_MAGIC)
		return r;
	rc = pma_heap_stats(heap, &st);
	if (rc < 0)
		die("pma_heap_stats", rc);
	r->base_live = live_count(&st);
	r->base_used = st.used_bytes;
	pma_persist(heap, r, sizeof(*r));
	r->magic = ROOT_MAGIC;
	pma_persist(heap, &r->magic, sizeof(r->magic));
	return r;
}

static int open_pool(const char *sock, const char *pool,
		     struct pmad_client **ret_c, struct pma_heap **ret_heap)
{
	int rc = pmad_connect(sock, ret_c);

	if (rc < 0)
		return rc;
	rc = pmad_pool_open(*ret_c, pool, ret_heap);
	if (rc < 0) {
		pmad_disconnect(*ret_c);
		*ret_c = NULL;
	}
	return rc;
}

/* ------------------------------------------------------------- basic */

static void basic(const char *sock, const char *pool)
{
	struct pmad_client *c, *c2;
	struct pma_heap *heap, *h2;
	uint64_t off, *words;
	char msg[256];
	int rc, i, ok;

	rc = open_pool(sock, pool, &c, &heap);
	check(rc == 0, "pmad_pool_open '%s': %s", pool,
	      rc ? pmad_errormsg() : "");
	if (rc)
		return;
	rc = pma_root(heap, 64 * sizeof(uint64_t), &off);
	check(rc == 0 && off, "pma_root");
	words = pma_direct(heap, off);
	for (i = 0; i < 64 && rc == 0; i++) {
		rc = pma_malloc_to(heap, 256, &words[i]);
		if (rc == 0) {
			memset(pma_direct(heap, words[i]), i, 256);
			pma_persist(heap, pma_direct(heap, words[i]), 256);
		}
	}
	check(rc == 0, "64 pma_malloc_to into the root");

	/* a second client, while the first holds the pool */
	rc = pmad_connect(sock, &c2);
	check(rc == 0, "second pmad_connect");
	if (rc == 0) {
		rc = pmad_pool_open(c2, pool, &h2);
		snprintf(msg, sizeof(msg), "pid %d", (int)getpid());
		check(rc == -EBUSY && strstr(pmad_errormsg(), msg),
		      "second open: -EBUSY naming %s: %d %s", msg, rc,
		      pmad_errormsg());
		check(strstr(pmad_errormsg(), "heap regions are held") != NULL,
		      "the message says its regions are held");
		rc = pmad_pool_open(c2, "no-such-pool", &h2);
		check(rc == -ENOENT, "unknown pool: -ENOENT: %s",
		      pmad_errormsg());
		pmad_disconnect(c2);
	}
	rc = pmad_pool_open(c, pool, &h2);
	check(rc == -EALREADY, "open again on one client: -EALREADY: %s",
	      pmad_errormsg());
	rc = pmad_pool_close(c, (struct pma_heap *)words);
	check(rc == -EINVAL, "closing a heap not from this client: -EINVAL");
	rc = pmad_pool_close(c, heap);
	check(rc == 0, "pmad_pool_close: %s", rc ? pmad_errormsg() : "");

	/* reopen: the data is there */
	rc = pmad_pool_open(c, pool, &heap);
	check(rc == 0, "reopen: %s", rc ? pmad_errormsg() : "");
	if (rc)
		return;
	rc = pma_root(heap, 64 * sizeof(uint64_t), &off);
	words = pma_direct(heap, off);
	for (ok = rc == 0, i = 0; ok && i < 64; i++) {
		const unsigned char *b = pma_direct(heap, words[i]);

		ok = b && pma_usable_size(heap, words[i]) >= 256 && b[0] == i &&
		     b[255] == i;
	}
	check(ok, "reopen sees the 64 blocks and their data");
	for (i = 0; i < 64 && rc == 0; i++)
		rc = pma_free_from(heap, &words[i]);
	check(rc == 0, "and frees them");
	pmad_disconnect(c); /* closes the heap too */

	rc = pmad_connect("/nonexistent/pmad.sock", &c2);
	check(rc == -ENOENT && strstr(pmad_errormsg(), "pmad is not running"),
	      "no pmad: -ENOENT, 'pmad is not running': %s", pmad_errormsg());
}

/* ---------------------------------------------------------- workload */

static void report(int fd, uint64_t count)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%020" PRIu64 "\n", count);

	if (pwrite(fd, buf, (size_t)n, 0) != n &&
	    write(fd, &count, sizeof(count)) != sizeof(count))
		exit(3);
}

/* op k on the root's slots */
static void op(struct pma_heap *heap, struct root *r, uint64_t k)
{
	uint64_t *slot = &r->slot[k % NSLOTS];
	uint64_t *block;
	int rc;

	rc = pma_free_from(heap, slot);
	if (rc < 0)
		die("pma_free_from", rc);
	rc = pma_malloc_to(heap, sizes[k % NSIZES], slot);
	if (rc < 0)
		die("pma_malloc_to", rc);
	block = pma_direct(heap, *slot);
	*block = k;
	pma_persist(heap, block, sizeof(*block));
}

static void workload(const char *sock, const char *pool, int fd, uint64_t start,
		     uint64_t ops)
{
	struct pmad_client *c;
	struct pma_heap *heap;
	struct root *r;
	uint64_t k;
	int rc;

	rc = open_pool(sock, pool, &c, &heap);
	if (rc < 0)
		die("open", rc);
	r = root_get(heap);
	for (k = start; !ops || k < start + ops; k++) {
		op(heap, r, k);
		report(fd, k + 1);
	}
	rc = pmad_pool_close(c, heap);
	pmad_disconnect(c);
	if (rc < 0)
		die("close", rc);
}

/* ------------------------------------------------------------ verify */

/* the op that last wrote slot s among ops 0..count-1, or -1 */
static int64_t last_op(uint64_t count, unsigned s)
{
	if (count <= s)
		return -1;
	return (int64_t)(((count - 1 - s) / NSLOTS) * NSLOTS + s);
}

static int verify_heap(struct pma_heap *heap, uint64_t count)
{
	unsigned s, flight = (unsigned)(count % NSLOTS), bad = 0, n = 0;
	struct pma_heap_stats st;
	uint64_t used = 0, off;
	struct root *r = root_get(heap);
	int64_t want;
	int rc;

	for (s = 0; s < NSLOTS; s++) {
		off = r->slot[s];
		if (off) {
			n++;
			used += pma_usable_size(heap, off);
			if (!pma_usable_size(heap, off)) {
				bad++;
				continue;
			}
		}
		/* op count (in flight when killed) may have done any part */
		if (s == flight)
			continue;
		want = last_op(count, s);
		if (want < 0 ? off != 0 :
			       !off ||
				       *(uint64_t *)pma_direct(heap, off) !=
					       (uint64_t)want ||
				       pma_usable_size(heap, off) <
					       sizes[(uint64_t)want % NSIZES])
			bad++;
	}
	rc = pma_heap_stats(heap, &st);
	if (rc < 0)
		die("pma_heap_stats", rc);
	check(!bad,
	      "count %" PRIu64 ": every committed block is there (%u "
	      "bad slots)",
	      count, bad);
	check(live_count(&st) == r->base_live + n &&
		      st.used_bytes == r->base_used + used,
	      "no leak: %" PRIu64 " live blocks, %" PRIu64 " used bytes "
	      "(expected %" PRIu64 ", %" PRIu64 ")",
	      live_count(&st), st.used_bytes, r->base_live + n,
	      r->base_used + used);
	return bad ? -1 : 0;
}

static void verify(const char *sock, const char *pool, uint64_t count)
{
	struct pmad_client *c;
	struct pma_heap *heap;
	int rc;

	rc = open_pool(sock, pool, &c, &heap);
	check(rc == 0, "open after the crash: %s", rc ? pmad_errormsg() : "");
	if (rc < 0)
		return;
	(void)verify_heap(heap, count);
	rc = pmad_pool_close(c, heap);
	check(rc == 0, "close: %s", rc ? pmad_errormsg() : "");
	pmad_disconnect(c);
}

/* -------------------------------------------------------- crash-loop */

/* read counts from the pipe until at least target, or EOF */
static uint64_t read_counts(int fd, uint64_t target, int all)
{
	char buf[4096];
	uint64_t last = 0;
	ssize_t n, i;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (i = 0; i + 8 <= n; i += 8) /* whole 8-byte counts */
			memcpy(&last, buf + i, sizeof(last));
		if (!all && last >= target)
			break;
	}
	return last;
}

static void crash_loop(const char *sock, const char *pool, unsigned rounds,
		       unsigned seed)
{
	uint64_t count = 0, target, got;
	unsigned r;
	int p[2], status;
	pid_t pid;

	srand(seed);
	for (r = 0; r < rounds; r++) {
		if (pipe(p) < 0)
			die("pipe", -errno);
		pid = fork();
		if (pid == 0) {
			close(p[0]);
			/* op count was in flight: do it (again) */
			workload(sock, pool, p[1], count, 0);
			_exit(0);
		}
		close(p[1]);
		target = count + 1 + (uint64_t)(rand() % 3000);
		got = read_counts(p[0], target, 0);
		count = got ? got : count;
		/* and a little further, so the kill lands inside an op */
		usleep((useconds_t)(rand() % 2000));
		kill(pid, SIGKILL);
		got = read_counts(p[0], 0, 1);
		count = got ? got : count;
		close(p[0]);
		waitpid(pid, &status, 0);
		check(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		      "round %u: the client was killed after %" PRIu64
		      " committed ops",
		      r, count);
		verify(sock, pool, count);
	}
}

/* ------------------------------------------------------------- main */

static uint64_t arg_u64(int argc, char **argv, const char *name, uint64_t dflt)
{
	int i;

	for (i = 0; i + 1 < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return strtoull(argv[i + 1], NULL, 0);
	return dflt;
}

static const char *arg_str(int argc, char **argv, const char *name)
{
	int i;

	for (i = 0; i + 1 < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return argv[i + 1];
	return NULL;
}

static void hold(const char *sock, const char *pool)
{
	struct pmad_client *c;
	struct pma_heap *heap;
	char buf[64];
	int rc = open_pool(sock, pool, &c, &heap);

	if (rc < 0)
		die("open", rc);
	printf("held\n");
	fflush(stdout);
	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
	rc = pmad_pool_close(c, heap);
	pmad_disconnect(c);
	if (rc < 0)
		die("close", rc);
}

/* the process that opens, forks a child keeping the connection, dies */
static void fork_holder(const char *sock, const char *pool, int fd)
{
	struct pmad_client *c;
	struct pma_heap *heap;
	pid_t child;
	int rc;

	rc = open_pool(sock, pool, &c, &heap);
	if (rc < 0)
		die("open", rc);
	child = fork();
	if (child == 0) { /* touches nothing: holds the connection, sleeps */
		sleep(1);
		_exit(0);
	}
	if (write(fd, &child, sizeof(child)) != sizeof(child))
		_exit(2);
	raise(SIGKILL);
}

static void fork_test(const char *sock, const char *pool)
{
	struct pmad_client *c = NULL;
	struct pma_heap *heap;
	pid_t holder, child = 0;
	char msg[64];
	int p[2], rc, i, status;

	if (pipe(p) < 0)
		die("pipe", -errno);
	holder = fork();
	if (holder == 0) {
		close(p[0]);
		fork_holder(sock, pool, p[1]);
	}
	close(p[1]);
	if (read(p[0], &child, sizeof(child)) != sizeof(child))
		die("holder", -EIO);
	close(p[0]);
	waitpid(holder, &status, 0);
	check(WIFSIGNALED(status), "the holder (pid %d) was killed",
	      (int)holder);
	rc = pmad_connect(sock, &c);
	if (rc < 0)
		die("connect", rc);
	rc = pmad_pool_open(c, pool, &heap);
	snprintf(msg, sizeof(msg), "pid %d", (int)holder);
	check(rc == -EBUSY && strstr(pmad_errormsg(), msg),
	      "its forked child keeps the connection: -EBUSY naming %s: %s",
	      msg, pmad_errormsg());
	if (rc == 0)
		(void)pmad_pool_close(c, heap);
	for (i = 0; i < 100 && kill(child, 0) == 0; i++)
		usleep(50000);
	for (i = 0, rc = -EBUSY; i < 50 && rc == -EBUSY; i++) {
		rc = pmad_pool_open(c, pool, &heap);
		if (rc == -EBUSY)
			usleep(20000);
	}
	check(rc == 0, "after the child is gone the pool opens: %s",
	      rc ? pmad_errormsg() : "");
	if (rc == 0)
		rc = pmad_pool_close(c, heap);
	pmad_disconnect(c);
}

/* ------------------------------------------------------------- two */

/* words of the two clients' root: each allocates half, more than a free
 * ring's 64 entries */
#define TWO_WORDS 400

static void two_clients(const char *sock, const char *pool)
{
	struct pmad_client *a, *b;
	struct pma_heap *ha, *hb;
	struct pma_heap_stats st0, st1;
	uint64_t root, *w;
	int rc, i, ok;

	rc = open_pool(sock, pool, &a, &ha);
	check(rc == 0, "first client opens '%s': %s", pool,
	      rc ? pmad_errormsg() : "");
	if (rc)
		return;
	rc = open_pool(sock, pool, &b, &hb);
	check(rc == 0, "a second client in the same process opens it too: %s",
	      rc ? pmad_errormsg() : "");
	if (rc) {
		(void)pmad_pool_close(a, ha);
		pmad_disconnect(a);
		return;
	}
	rc = pma_root(ha, TWO_WORDS * sizeof(uint64_t), &root);
	check(rc == 0, "the first (region 0) makes the root: %s",
	      rc ? pma_errormsg() : "");
	if (rc == 0) {
		rc = pma_root(hb, TWO_WORDS * sizeof(uint64_t), &root);
		check(rc == 0, "the second finds the same root");
	}
	w = rc == 0 ? pma_direct(hb, root) : NULL;
	for (i = 0; w && i < TWO_WORDS / 2 && rc == 0; i++)
		rc = pma_malloc_to(ha, 100, &w[i]);
	for (; w && i < TWO_WORDS && rc == 0; i++)
		rc = pma_malloc_to(hb, 100, &w[i]);
	check(rc == 0, "each allocates %d blocks into the root: %s",
	      TWO_WORDS / 2, rc ? pma_errormsg() : "");
	if (rc == 0)
		rc = pma_heap_stats(ha, &st0);
	/* a's blocks, more than a ring holds while a stays idle: libpmad's
	 * thread applies them for a */
	for (i = 0, ok = 1; w && i < TWO_WORDS / 2 && rc == 0; i++)
		rc = pma_free_from(hb, &w[i]);
	for (i = 0; w && i < TWO_WORDS / 2; i++)
		ok &= w[i] == 0;
	check(rc == 0 && ok,
	      "the second frees the first's %d blocks, the first idle: %s",
	      TWO_WORDS / 2, rc ? pma_errormsg() : "");
	if (rc == 0 && pma_heap_sync(ha) >= 0 && pma_heap_stats(ha, &st1) == 0)
		check(st0.used_bytes - st1.used_bytes >= TWO_WORDS / 2 * 100,
		      "after pma_heap_sync the first's region has them "
		      "free: used %llu -> %llu",
		      (unsigned long long)st0.used_bytes,
		      (unsigned long long)st1.used_bytes);
	else
		check(0, "pma_heap_sync and stats: %s", pma_errormsg());
	for (i = TWO_WORDS / 2, rc = 0; w && i < TWO_WORDS && rc == 0; i++)
		rc = pma_free_from(hb, &w[i]);
	check(rc == 0, "the second frees its own: %s",
	      rc ? pma_errormsg() : "");
	rc = pmad_pool_close(b, hb);
	check(rc == 0, "the second closes: %s", rc ? pmad_errormsg() : "");
	pmad_disconnect(b);
	rc = pmad_pool_close(a, ha);
	check(rc == 0, "the first closes: %s", rc ? pmad_errormsg() : "");
	pmad_disconnect(a);
}

/* ------------------------------------------------------------- sync */

#define SYNC_BLOCKS 40 /* fewer than a ring holds: no freer adopts */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * pmad's sync service: b allocates SYNC_BLOCKS blocks in its region and
 * gives the region back (closes); a frees them (free-ring entries for a
 * region nobody holds now). With the service on (expect 1) they are
 * applied within a few of its rounds; off (expect 0) they still wait
 * after 2.5 s.
 */
static void grow_test(const char *sock, const char *pool)
{
	struct pmad_client *c;
	struct pma_heap *h;
	struct root *r;
	unsigned i, n0, n1;
	char buf[16];
	int rc;

	rc = open_pool(sock, pool, &c, &h);
	check(rc == 0, "opens '%s': %s", pool, rc ? pmad_errormsg() : "");
	if (rc)
		return;
	check(pmad_client_set_grow(c, 2) == -EINVAL, "set_grow(2): -EINVAL");
	check(pmad_client_set_grow(c, 0) == 0, "set_grow(0): no growth");
	r = root_get(h);
	for (i = 0, rc = 0; i < NSLOTS && rc == 0; i++)
		rc = pma_malloc_to(h, 1 << 20, &r->slot[i]);
	n0 = i - 1;
	check(strstr(pma_errormsg(), "pmad_client_set_grow") != NULL,
	      "the -ENOMEM says growth is off: %s", pma_errormsg());
	check(rc == -ENOMEM && n0 > 2,
	      "its region holds %u blocks of 1 MiB, then -ENOMEM (%d)", n0, rc);
	rc = pmad_pool_grow(c, h);
	check(rc == 0, "pmad_pool_grow: %s", rc ? pmad_errormsg() : "");
	for (i = n0, rc = 0; i < NSLOTS && rc == 0; i++)
		rc = pma_malloc_to(h, 1 << 20, &r->slot[i]);
	n1 = i - 1 - n0;
	check(rc == -ENOMEM && n1 + 1 >= n0,
	      "then %u more blocks, then -ENOMEM (%d)", n1, rc);
	rc = pmad_pool_grow(c, h);
	check(rc == -EBUSY, "a second grow: -EBUSY (%d): %s", rc,
	      pmad_errormsg());
	printf("grown\n");
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	for (i = 0, rc = 0; i < NSLOTS && rc == 0; i++)
		if (r->slot[i])
			rc = pma_free_from(h, &r->slot[i]);
	check(rc == 0, "frees them all: %s", rc ? pma_errormsg() : "");
	rc = pmad_pool_close(c, h);
	check(rc == 0, "closes: %s", rc ? pmad_errormsg() : "");
	pmad_disconnect(c);
}

static void sync_test(const char *sock, const char *pool, int expect)
{
	struct pmad_client *a, *b;
	struct pma_heap *ha, *hb;
	uint64_t root, *w, pending = 0, t0;
	int rc, i;

	rc = open_pool(sock, pool, &a, &ha);
	check(rc == 0, "a opens '%s': %s", pool, rc ? pmad_errormsg() : "");
	if (rc)
		return;
	rc = open_pool(sock, pool, &b, &hb);
	check(rc == 0, "b opens it too: %s", rc ? pmad_errormsg() : "");
	if (rc) {
		(void)pmad_pool_close(a, ha);
		pmad_disconnect(a);
		return;
	}
	rc = pma_root(ha, SYNC_BLOCKS * sizeof(uint64_t), &root);
	w = rc == 0 ? pma_direct(ha, root) : NULL;
	for (i = 0; w && i < SYNC_BLOCKS && rc == 0; i++)
		rc = pma_malloc_to(hb, 100, &w[i]);
	check(rc == 0 && w, "b allocates %d blocks into a's root: %s",
	      SYNC_BLOCKS, rc ? pma_errormsg() : "");
	rc = pmad_pool_close(b, hb);
	check(rc == 0, "b closes, its region goes back to pmad: %s",
	      rc ? pmad_errormsg() : "");
	pmad_disconnect(b);
	for (i = 0, rc = 0; w && i < SYNC_BLOCKS && rc == 0; i++)
		rc = pma_free_from(ha, &w[i]);
	check(rc == 0, "a frees b's blocks: %s", rc ? pma_errormsg() : "");
	rc = pma_heap_ring_pending(ha, &pending);
	check(rc == 0 && pending == SYNC_BLOCKS,
	      "the %d frees wait in a's ring: %llu pending", SYNC_BLOCKS,
	      (unsigned long long)pending);
	t0 = now_ms();
	while (pending && now_ms() - t0 < (expect ? 10000 : 2500)) {
		usleep(10000);
		if (pma_heap_ring_pending(ha, &pending) < 0)
			break;
	}
	if (expect)
		check(pending == 0,
		      "pmad's sync service applied them: %llu pending after "
		      "%llu ms",
		      (unsigned long long)pending,
		      (unsigned long long)(now_ms() - t0));
	else
		check(pending == SYNC_BLOCKS,
		      "with the service off they still wait: %llu pending "
		      "after %llu ms",
		      (unsigned long long)pending,
		      (unsigned long long)(now_ms() - t0));
	rc = pmad_pool_close(a, ha);
	check(rc == 0, "a closes: %s", rc ? pmad_errormsg() : "");
	pmad_disconnect(a);
}

static void open_once(const char *sock, const char *pool)
{
	struct pmad_client *c;
	struct pma_heap *heap;
	int rc = open_pool(sock, pool, &c, &heap);

	if (rc < 0) {
		printf("%d: %s\n", rc, pmad_errormsg());
		exit(1);
	}
	printf("opened\n");
	rc = pmad_pool_close(c, heap);
	pmad_disconnect(c);
	if (rc < 0)
		die("close", rc);
}

/*
 * (a pool of 1 part x 2 regions, no other client) fill the heap with
 * 1 MiB blocks without calling pmad_pool_grow: the allocation leases
 * the second region by itself; -ENOMEM once both are full, saying so
 */
static void autogrow_test(const char *sock, const char *pool)
{
	struct pmad_client *c;
	struct pma_heap *h;
	struct root *r;
	unsigned i;
	int rc;

	rc = open_pool(sock, pool, &c, &h);
	check(rc == 0, "opens '%s': %s", pool, rc ? pmad_errormsg() : "");
	if (rc)
		return;
	r = root_get(h);
	for (i = 0, rc = 0; i < NSLOTS && rc == 0; i++)
		rc = pma_malloc_to(h, 1 << 20, &r->slot[i]);
	check(rc == -ENOMEM, "-ENOMEM in the end (%d)", rc);
	check(strstr(pma_errormsg(), "all 2 of its heap regions are held") !=
		      NULL,
	      "the -ENOMEM says why: %s", pma_errormsg());
	printf("blocks %u\n", i - 1);
	fflush(stdout);
	for (i = 0, rc = 0; i < NSLOTS && rc == 0; i++)
		if (r->slot[i])
			rc = pma_free_from(h, &r->slot[i]);
	check(rc == 0, "frees them all: %s", rc ? pma_errormsg() : "");
	rc = pmad_pool_close(c, h);
	check(rc == 0, "closes: %s", rc ? pmad_errormsg() : "");
	pmad_disconnect(c);
}

/*
 * pma_root on a pool opened through pmad, once per line read: "root OFF
 * block OFF" (a block allocated into the root's word 1 the first time),
 * or the errno and message; the pool is closed at end of input. A
 * client without slot 0 gets it leased for the root (libpmad's hook).
 */
static void root_loop(const char *sock, const char *pool)
{
	struct pmad_client *c;
	struct pma_heap *heap;
	char line[64];
	uint64_t off, *w = NULL;
	int rc = open_pool(sock, pool, &c, &heap);

	if (rc < 0)
		die("open", rc);
	printf("opened\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		rc = pma_root(heap, 64 * sizeof(uint64_t), &off);
		if (rc == 0) {
			w = pma_direct(heap, off);
			if (!w[1])
				rc = pma_malloc_to(heap, 100, &w[1]);
		}
		if (rc < 0)
			printf("%d: %s\n", rc, pma_errormsg());
		else
			printf("root 0x%" PRIx64 " block 0x%" PRIx64 "\n", off,
			       w[1]);
		fflush(stdout);
	}
	rc = pmad_pool_close(c, heap);
	pmad_disconnect(c);
	if (rc < 0)
		die("close", rc);
}

/* pmad_pool_create: "created", or the errno and message, exit 1 */
static void create_once(const char *sock, const char *pool, uint64_t size)
{
	struct pmad_client *c;
	int rc = pmad_connect(sock, &c);

	if (rc == 0)
		rc = pmad_pool_create(c, pool, size);
	if (rc < 0) {
		printf("%d: %s\n", rc, pmad_errormsg());
		pmad_disconnect(c);
		exit(1);
	}
	printf("created\n");
	pmad_disconnect(c);
}

/* pmad_pool_stats: "attaches=A recoveries=R last_recovery_us=U" */
static void stats_once(const char *sock, const char *pool)
{
	struct pmad_pool_stats st;
	struct pmad_client *c;
	int rc = pmad_connect(sock, &c);

	if (rc == 0)
		rc = pmad_pool_stats(c, pool, &st);
	if (rc < 0) {
		printf("%d: %s\n", rc, pmad_errormsg());
		pmad_disconnect(c);
		exit(1);
	}
	printf("attaches=%llu recoveries=%llu last_recovery_us=%llu\n",
	       (unsigned long long)st.attaches,
	       (unsigned long long)st.client_recoveries,
	       (unsigned long long)st.last_recovery_us);
	pmad_disconnect(c);
}

/* a client misusing the descriptors it shares with pmad */
static void setfl(const char *sock, const char *pool)
{
	char link[64], target[4096], suffix[256];
	struct pmad_client *c;
	struct pma_heap *heap;
	int rc, fd, n = 0;
	ssize_t len;

	rc = open_pool(sock, pool, &c, &heap);
	if (rc < 0)
		die("open", rc);
	snprintf(suffix, sizeof(suffix), "/%s.pool", pool);
	for (fd = 0; fd < 1024; fd++) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if ((size_t)len >= strlen(suffix) &&
		    strcmp(target + len - strlen(suffix), suffix) == 0 &&
		    fcntl(fd, F_SETFL, O_APPEND | O_NONBLOCK) == 0)
			n++;
	}
	printf("%d\n", n);
	rc = pmad_pool_close(c, heap);
	pmad_disconnect(c);
	if (rc < 0)
		die("close", rc);
}

int main(int argc, char **argv)
{
	const char *sock, *cmd, *pool, *file;
	int fd = 3;

	if (argc < 4) {
		fprintf(stderr,
			"usage: pmad-client SOCKET "
			"basic|workload|verify|crash-loop|hold|setfl|fork|"
			"open|two|sync|create|stats|grow|autogrow|root "
			"POOL "
			"[options]\n");
		return 2;
	}
	sock = argv[1];
	cmd = argv[2];
	pool = argv[3];
	if (strcmp(cmd, "basic") == 0)
		basic(sock, pool);
	else if (strcmp(cmd, "workload") == 0) {
		file = arg_str(argc, argv, "--count-file");
		if (file)
			fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die("count file", -errno);
		workload(sock, pool, fd, 0, arg_u64(argc, argv, "--ops", 0));
	} else if (strcmp(cmd, "verify") == 0)
		verify(sock, pool, arg_u64(argc, argv, "--count", 0));
	else if (strcmp(cmd, "crash-loop") == 0)
		crash_loop(sock, pool,
			   (unsigned)arg_u64(argc, argv, "--rounds", 20),
			   (unsigned)arg_u64(argc, argv, "--seed",
					     (uint64_t)time(NULL)));
	else if (strcmp(cmd, "hold") == 0)
		hold(sock, pool);
	else if (strcmp(cmd, "setfl") == 0)
		setfl(sock, pool);
	else if (strcmp(cmd, "fork") == 0)
		fork_test(sock, pool);
	else if (strcmp(cmd, "open") == 0)
		open_once(sock, pool);
	else if (strcmp(cmd, "two") == 0)
		two_clients(sock, pool);
	else if (strcmp(cmd, "create") == 0)
		create_once(sock, pool, arg_u64(argc, argv, "--size", 0));
	else if (strcmp(cmd, "stats") == 0)
		stats_once(sock, pool);
	else if (strcmp(cmd, "grow") == 0)
		grow_test(sock, pool);
	else if (strcmp(cmd, "root") == 0)
		root_loop(sock, pool);
	else if (strcmp(cmd, "autogrow") == 0)
		autogrow_test(sock, pool);
	else if (strcmp(cmd, "sync") == 0)
		sync_test(sock, pool, (int)arg_u64(argc, argv, "--expect", 1));
	else {
		fprintf(stderr, "pmad-client: unknown command '%s'\n", cmd);
		return 2;
	}
	return failures ? 1 : 0;
}
