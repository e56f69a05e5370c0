/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * corrupt-heap -- flip random bits and bytes in every on-media structure
 * of a pool with a PMAlloc heap and check that nothing passes silently.
 *
 *   corrupt-heap [--trials N] [--seed S] [--dir DIR] [--only T] [-v]
 *   (--only T: run trial T of the seed alone, -v: say what each did)
 *
 * The base image: a pool whose heap has live blocks of several classes and
 * extents in both arenas, checkpointed, then more allocations, local and
 * remote frees, a new slab and extent ops that a child logs and "crashes"
 * on (exit without close), so the logs hold records recovery must replay.
 * The truth is what a writable open of the undamaged image recovers: the
 * value and usable size of every root slot.
 *
 * Each trial copies the image, damages one structure (a random single bit
 * or a random byte: both header copies, the region table, the part
 * header, the heap header, head_gen, the root word, arena descriptors,
 * live log records, slab headers and bitmaps, page map entries and the
 * summary), and in a child (alarm: a hang is a failure) opens it
 * read-only, then writable. A refused open must name the problem and leave
 * the file unchanged. An open that succeeds must pass the invariant check:
 * every root slot holds its true value and usable size; allocating until
 * -ENOMEM hands out no block that overlaps a live block or another new
 * one; every live block frees once; closed and opened again, the slots
 * are still intact. Leaks (less room than the undamaged heap has) are
 * counted, not failed: no check can see them at open (fsck's job).
 *
 * Exit 0 if no trial had a silent overlap, silent damage, crash or hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pmalloc.h"
#include "pmalloc/internal.h"

#define POOL_SIZE (POOL_DATA_OFF + 6 * 1024 * 1024)
#define NSLOTS 96
#define MAXNEW 200000
#define TRIAL_TIMEOUT 20

/* what a trial ended in; the child's exit status */
enum outcome {
	OK_CLEAN, /* opened, every check passed, as much room as before */
	OK_REFUSED, /* both opens refused with a message, file unchanged */
	OK_RDONLY_ONLY, /* writable refused, read-only opened: still no harm */
	OK_LEAK, /* opened, checks passed, less room than before */
	OK_LATE, /* opened; a damaged slab refused at its first use */
	BAD_OVERLAP, /* a new block overlaps a live one */
	BAD_DAMAGE, /* a slot or usable size changed */
	BAD_CHANGED, /* a refused open changed the file */
	BAD_NOMSG, /* refused without a message */
	BAD_FREE, /* a live block could not be freed */
	BAD_CRASH,
	BAD_HANG,
	N_OUTCOMES,
};
static const char *const outcome_name[N_OUTCOMES] = {
	"clean",	  "refused",	 "rdonly-only", "leak",
	"refused-at-use", "OVERLAP",	 "DAMAGE",	"CHANGED-ON-REFUSE",
	"NO-MESSAGE",	  "FREE-FAILED", "CRASH",	"HANG",
};

/* a byte range of the image that holds one kind of structure */
struct range {
	uint64_t off, len;
};
enum {
	S_PART_HDR,
	S_HDR_A,
	S_HDR_B,
	S_REGIONS,
	S_HEAP_HDR,
	S_HEAD_GEN,
	S_ROOT_WORD,
	S_ARENA_DESC,
	S_LOG,
	S_SLAB_HDR,
	S_SLAB_BITMAP,
	S_PMAP,
	S_SUMMARY,
	N_STRUCTS,
};
static const char *const struct_name[N_STRUCTS] = {
	"part-header", "header-A",  "header-B",	  "region-table", "heap-header",
	"head-gen",    "root-word", "arena-desc", "log-record",	  "slab-header",
	"slab-bitmap", "page-map",  "summary",
};
#define MAX_RANGES 512
struct target {
	struct range r[MAX_RANGES];
	unsigned n;
};

struct ctx {
	char dir[256];
	char path[300];
	uint8_t *image; /* the undamaged, crashed image */
	struct target t[N_STRUCTS];
	uint64_t truth[NSLOTS]; /* slot values after recovery */
	size_t truth_size[NSLOTS];
	uint64_t room; /* bytes the fill gets from the undamaged heap */
	uint64_t region, data_base;
	int verbose;
};

static uint64_t rng_state;
static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void die(const char *what)
{
	fprintf(stderr, "corrupt-heap: %s: %s\n", what, pma_errormsg());
	exit(99);
}

static uint64_t *slots_of(struct pma_heap *heap)
{
	uint64_t root;

	if (pma_root(heap, NSLOTS * sizeof(uint64_t), &root) < 0)
		return NULL;
	return pma_direct(heap, root);
}

static const size_t sizes[] = { 64, 100, 256, 700, 3000, 9000, 20000, 70000 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* slabs of several classes and extents in both arenas, checkpointed */
static void make_clean(const char *path)
{
	struct pma_heap *heap;
	uint64_t *slots;
	unsigned i;

	if (pma_heap_create(path, POOL_SIZE, 0, &heap) < 0)
		die("create");
	slots = slots_of(heap);
	if (!slots)
		die("root");
	for (i = 0; i < NSLOTS / 2; i++) {
		pma_arena_bind(heap, i % 2);
		if (pma_malloc_to(heap, sizes[i % NSIZES], &slots[i]) < 0)
			die("malloc_to");
	}
	/* some freed: partly used slabs, free extents */
	for (i = 0; i < NSLOTS / 2; i += 5) {
		pma_arena_bind(heap, i % 2);
		if (pma_free_from(heap, &slots[i]) < 0)
			die("free_from");
	}
	pma_heap_close(heap);
}

/* the child: records of every kind in both logs, then a crash */
static void make_crash(const char *path)
{
	struct pma_heap *heap;
	uint64_t *slots;
	unsigned i;

	if (pma_heap_open(path, 0, &heap) < 0 || !(slots = slots_of(heap))) {
		fprintf(stderr, "corrupt-heap: child: %s\n", pma_errormsg());
		_exit(2);
	}
	for (i = NSLOTS / 2; i < NSLOTS; i++) {
		pma_arena_bind(heap, i % 2);
		if (pma_malloc_to(heap, sizes[(i * 3) % NSIZES], &slots[i]) < 0)
			_exit(3);
	}
	for (i = 1; i < NSLOTS; i += 7) {
		if (!slots[i])
			continue;
		pma_arena_bind(heap, (i / 7) % 2); /* owner and remote frees */
		if (pma_free_from(heap, &slots[i]) < 0)
			_exit(4);
	}
	_exit(0);
}

static void add_range(struct ctx *c, unsigned s, uint64_t off, uint64_t len)
{
	struct target *t = &c->t[s];

	if (t->n < MAX_RANGES && len)
		t->r[t->n++] = (struct range){ off, len };
}

/* where every structure lies, from a read-only open of the image */
static void survey(struct ctx *c)
{
	struct pma_heap *heap;
	const struct pma_geom *g;
	uint64_t p, e, k, base, reg_base;
	unsigned a;

	if (pma_heap_open(c->path, PMA_HEAP_RDONLY, &heap) < 0)
		die("open read-only");
	g = &heap->geom;
	c->region = base = heap->region_off;
	c->data_base = heap->data_base;
	add_range(c, S_PART_HDR, POOL_PART_HDR_OFF,
		  sizeof(struct pool_part_hdr));
	/* the header copies without their region tables (which S_REGIONS
	 * covers in the current copy) */
	add_range(c, S_HDR_A, POOL_HDR_A_OFF,
		  offsetof(struct pool_hdr, regions));
	add_range(c, S_HDR_A, POOL_HDR_A_OFF + POOL_HDR_SIZE - 8, 8);
	add_range(c, S_HDR_B, POOL_HDR_B_OFF,
		  offsetof(struct pool_hdr, regions));
	add_range(c, S_HDR_B, POOL_HDR_B_OFF + POOL_HDR_SIZE - 8, 8);
	reg_base = pool_header_copy(heap->pool) ? POOL_HDR_B_OFF :
						  POOL_HDR_A_OFF;
	add_range(c, S_REGIONS, reg_base + offsetof(struct pool_hdr, regions),
		  2 * sizeof(struct pool_region));
	add_range(c, S_HEAP_HDR, base, PMA_HDR_CSUM_LEN + 4);
	add_range(c, S_HEAD_GEN, base + PMA_HEAD_GEN_OFF, 8);
	add_range(c, S_ROOT_WORD, base + PMA_ROOT_WORD_OFF, 8);
	add_range(c, S_ARENA_DESC, base + g->arena_off,
		  (uint64_t)g->narenas * sizeof(struct pma_arena_desc));
	for (a = 0; a < g->narenas; a++) {
		struct pma_arena *ar = &heap->arenas[a];

		for (k = ar->head; k < ar->tail + 2; k++) {
			uint8_t *slot = (uint8_t *)pma_booklog_slot(
				ar->log, g->log_cap, k);

			add_range(
				c, S_LOG,
				base + (uint64_t)(slot - (uint8_t *)heap->hdr),
				sizeof(struct pma_rec));
		}
	}
	if (g->sum_words)
		add_range(c, S_SUMMARY, base + g->sum_off, g->sum_words * 8);
	for (p = 0; p < g->npages; p++) {
		e = ((const uint64_t *)((const uint8_t *)heap->hdr +
					g->pmap_off))[p];
		if (!e && rnd() % 64)
			continue; /* some free entries too */
		add_range(c, S_PMAP, base + g->pmap_off + p * 8, 8);
		if (pma_pmap_kind(e) == PMA_PMAP_SLAB) {
			uint64_t slab = c->data_base + p * PMA_PAGE;

			add_range(c, S_SLAB_HDR, slab,
				  sizeof(struct pma_slab_hdr));
			add_range(c, S_SLAB_BITMAP, slab + PMA_SLAB_BITMAP_OFF,
				  PMA_SLAB_BITMAP_SIZE);
		}
	}
	pma_heap_close(heap);
	for (a = 0; a < N_STRUCTS; a++)
		if (!c->t[a].n) {
			fprintf(stderr, "corrupt-heap: no %s in the image\n",
				struct_name[a]);
			exit(99);
		}
}

static int write_image(const struct ctx *c, const uint8_t *img)
{
	int fd = open(c->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pwrite(fd, img, POOL_SIZE, 0);
	close(fd);
	return n == (ssize_t)POOL_SIZE ? 0 : -1;
}

static int file_equals(const struct ctx *c, const uint8_t *img)
{
	int fd = open(c->path, O_RDONLY), same;
	uint8_t *m;

	if (fd < 0)
		return 0;
	m = mmap(NULL, POOL_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return 0;
	same = !memcmp(m, img, POOL_SIZE);
	munmap(m, POOL_SIZE);
	return same;
}

struct blk {
	uint64_t off, len;
};
static int blk_cmp(const void *a, const void *b)
{
	const struct blk *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* allocate until -ENOMEM (largest sizes first); 0, or BAD_OVERLAP */
static int fill(struct pma_heap *heap, const uint64_t *slots,
		uint64_t *ret_room, int verbose)
{
	struct blk *b = malloc((MAXNEW + NSLOTS) * sizeof(*b));
	uint64_t *dest = calloc(MAXNEW, sizeof(*dest)), room = 0;
	size_t n = 0, nnew = 0, i;
	int s, rc = 0;

	if (!b || !dest)
		exit(98);
	for (i = 0; i < NSLOTS; i++)
		if (slots[i])
			b[n++] =
				(struct blk){ slots[i],
					      pma_usable_size(heap, slots[i]) };
	for (s = NSIZES - 1; s >= 0; s--)
		while (nnew < MAXNEW &&
		       pma_malloc_to(heap, sizes[s], &dest[nnew]) == 0) {
			b[n] = (struct blk){
				dest[nnew], pma_usable_size(heap, dest[nnew])
			};
			room += b[n].len;
			n++;
			nnew++;
		}
	qsort(b, n, sizeof(*b), blk_cmp);
	for (i = 1; i < n; i++)
		if (b[i].off < b[i - 1].off + b[i - 1].len ||
		    pool_off_part(b[i].off) != pool_off_part(b[i - 1].off)) {
			if (verbose)
				fprintf(stderr,
					"  overlap: 0x%llx+%llu and 0x%llx\n",
					(unsigned long long)b[i - 1].off,
					(unsigned long long)b[i - 1].len,
					(unsigned long long)b[i].off);
			rc = BAD_OVERLAP;
			break;
		}
	for (i = 0; rc == 0 && i < nnew; i++)
		if (pma_free_from(heap, &dest[i]) < 0)
			rc = BAD_FREE;
	free(b);
	free(dest);
	*ret_room = room;
	return rc;
}

/* a lazily checked slab (its header and bitmap are read at its first
 * use, lib/pmalloc/lazy.c) refused: the message names the slab of off */
static int late_refusal(const struct ctx *c, uint64_t off)
{
	char want[64];
	uint64_t b = pool_off_byte(off);

	snprintf(want, sizeof(want), "corrupt slab at 0x%llx",
		 (unsigned long long)(b - (b - c->data_base) % PMA_CHUNK));
	return strstr(pma_errormsg(), want) != NULL;
}

/* OK_CLEAN if every slot holds its value and usable size, OK_LATE if a
 * slot's slab is refused at its first use, BAD_DAMAGE otherwise */
static int slots_match(const struct ctx *c, struct pma_heap *heap,
		       const uint64_t *slots)
{
	unsigned i;

	for (i = 0; i < NSLOTS; i++) {
		size_t usable = slots[i] ? pma_usable_size(heap, slots[i]) : 0;

		if (slots[i] == c->truth[i] && usable == c->truth_size[i])
			continue;
		if (slots[i] == c->truth[i] && !usable &&
		    late_refusal(c, slots[i]))
			return OK_LATE;
		if (c->verbose)
			fprintf(stderr,
				"  slot %u: 0x%llx (%zu B), expected 0x%llx "
				"(%zu B)\n",
				i, (unsigned long long)slots[i], usable,
				(unsigned long long)c->truth[i],
				c->truth_size[i]);
		return BAD_DAMAGE;
	}
	return OK_CLEAN;
}

/* the invariant check of an opened heap */
static int check_heap(const struct ctx *c, struct pma_heap *heap,
		      uint64_t *ret_room)
{
	uint64_t *slots = slots_of(heap);
	unsigned i;
	int rc;

	if (!slots)
		return BAD_DAMAGE;
	rc = slots_match(c, heap, slots);
	if (rc != OK_CLEAN)
		return rc;
	rc = fill(heap, slots, ret_room, c->verbose);
	if (rc)
		return rc;
	for (i = 0; i < NSLOTS; i++)
		if (slots[i] && pma_free_from(heap, &slots[i]) < 0)
			return BAD_FREE;
	return OK_CLEAN;
}

/* the child of one trial: the image is in the file */
static int trial_child(const struct ctx *c, const uint8_t *img)
{
	struct pma_heap *heap = NULL;
	int ro_ok, rc;
	uint64_t room = 0, *slots;

	ro_ok = pma_heap_open(c->path, PMA_HEAP_RDONLY, &heap) == 0;
	if (ro_ok) {
		pma_heap_close(heap);
	} else if (!*pma_errormsg()) {
		return BAD_NOMSG;
	}
	if (!file_equals(c, img))
		return BAD_CHANGED;
	rc = pma_heap_open(c->path, 0, &heap);
	if (rc < 0) {
		if (!*pma_errormsg())
			return BAD_NOMSG;
		if (c->verbose)
			fprintf(stderr, "  refused: %s\n", pma_errormsg());
		if (!file_equals(c, img))
			return BAD_CHANGED;
		return ro_ok ? OK_RDONLY_ONLY : OK_REFUSED;
	}
	/* a first look at the slots, then the check on a second open (the
	 * fill frees what it took, so the slots must survive a close) */
	rc = check_heap(c, heap, &room);
	pma_heap_close(heap);
	if (rc != OK_CLEAN)
		return rc;
	if (write_image(c, img) < 0)
		exit(98);
	if (pma_heap_open(c->path, 0, &heap) < 0)
		return BAD_DAMAGE; /* opened once, refused now */
	slots = slots_of(heap);
	rc = slots ? slots_match(c, heap, slots) : BAD_DAMAGE;
	pma_heap_close(heap);
	if (rc == OK_CLEAN && c->room && room < c->room)
		rc = OK_LEAK;
	return rc;
}

static int run_trial(const struct ctx *c, const uint8_t *img)
{
	int status;
	pid_t pid;

	if (write_image(c, img) < 0) {
		perror("corrupt-heap: write image");
		exit(99);
	}
	pid = fork();
	if (pid < 0) {
		perror("corrupt-heap: fork");
		exit(99);
	}
	if (pid == 0) {
		alarm(TRIAL_TIMEOUT);
		_exit(trial_child(c, img));
	}
	if (waitpid(pid, &status, 0) != pid)
		exit(99);
	if (WIFSIGNALED(status))
		return WTERMSIG(status) == SIGALRM ? BAD_HANG : BAD_CRASH;
	if (WEXITSTATUS(status) >= N_OUTCOMES)
		return BAD_CRASH;
	return WEXITSTATUS(status);
}

static void setup(struct ctx *c)
{
	struct pma_heap *heap;
	uint64_t *slots;
	int status, fd;
	unsigned i;
	pid_t pid;

	snprintf(c->path, sizeof(c->path), "%s/heap", c->dir);
	make_clean(c->path);
	pid = fork();
	if (pid == 0)
		make_crash(c->path);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0) {
		fprintf(stderr, "corrupt-heap: the crashing child failed\n");
		exit(99);
	}
	c->image = malloc(POOL_SIZE);
	fd = open(c->path, O_RDONLY);
	if (!c->image || fd < 0 ||
	    pread(fd, c->image, POOL_SIZE, 0) != (ssize_t)POOL_SIZE)
		exit(99);
	close(fd);
	survey(c);
	/* the truth: what recovery of the undamaged image gives */
	if (pma_heap_open(c->path, 0, &heap) < 0 || !(slots = slots_of(heap)))
		die("open the undamaged image");
	for (i = 0; i < NSLOTS; i++) {
		c->truth[i] = slots[i];
		c->truth_size[i] = slots[i] ? pma_usable_size(heap, slots[i]) :
					      0;
	}
	pma_heap_close(heap);
	/* its room, and that the check passes on it */
	if (write_image(c, c->image) < 0 ||
	    pma_heap_open(c->path, 0, &heap) < 0)
		die("open the undamaged image again");
	status = check_heap(c, heap, &c->room);
	pma_heap_close(heap);
	if (status != OK_CLEAN) {
		fprintf(stderr,
			"corrupt-heap: the undamaged image fails the "
			"check (%s)\n",
			outcome_name[status]);
		exit(99);
	}
}

static void usage(FILE *f)
{
	fprintf(f, "usage: corrupt-heap [--trials N] [--seed S] [--dir DIR] "
		   "[--only T] [-v]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "trials", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },
		{ "only", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct ctx c;
	unsigned long trials = 300, t, count[N_STRUCTS][N_OUTCOMES] = { { 0 } };
	unsigned long total[N_OUTCOMES] = { 0 }, bad = 0;
	const char *base = "/dev/shm";
	long only = -1;
	uint8_t *img;
	int opt, o;
	unsigned s;

	rng_state = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt_long(argc, argv, "t:s:d:o:vh", opts, NULL)) !=
	       -1) {
		switch (opt) {
		case 't':
			trials = strtoul(optarg, NULL, 0);
			break;
		case 's':
			rng_state = strtoull(optarg, NULL, 0) | 1;
			break;
		case 'd':
			base = optarg;
			break;
		case 'o':
			only = strtol(optarg, NULL, 0);
			break;
		case 'v':
			c.verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	/* the checks need no flushes: keep the trials fast */
	setenv("PMEM2_FORCE_GRANULARITY", "BYTE", 0);
	snprintf(c.dir, sizeof(c.dir), "%s/corrupt-heap.XXXXXX", base);
	if (!mkdtemp(c.dir)) {
		perror("corrupt-heap: mkdtemp");
		return 99;
	}
	setup(&c);
	img = malloc(POOL_SIZE);
	if (!img)
		return 99;
	for (t = 0; t < trials; t++) {
		const struct range *r;
		uint64_t pos;
		uint8_t x;

		s = (unsigned)(rnd() % N_STRUCTS);
		r = &c.t[s].r[rnd() % c.t[s].n];
		pos = r->off + rnd() % r->len;
		x = rnd() % 2 ? (uint8_t)(1u << (rnd() % 8)) :
				(uint8_t)(rnd() % 255 + 1);
		if (only >= 0 && (long)t != only)
			continue;
		memcpy(img, c.image, POOL_SIZE);
		img[pos] ^= x;
		if (c.verbose)
			fprintf(stderr, "trial %lu: %s byte 0x%llx ^= 0x%02x\n",
				t, struct_name[s], (unsigned long long)pos, x);
		o = run_trial(&c, img);
		if (c.verbose)
			fprintf(stderr, "  -> %s\n", outcome_name[o]);
		count[s][o]++;
		total[o]++;
		if (o >= BAD_OVERLAP) {
			bad++;
			printf("FAIL trial %lu: %s byte 0x%llx ^= 0x%02x: %s\n",
			       t, struct_name[s], (unsigned long long)pos, x,
			       outcome_name[o]);
		}
	}
	printf("%-13s", "structure");
	for (o = 0; o < N_OUTCOMES; o++)
		printf(" %*s",
		       (int)strlen(outcome_name[o]) > 7 ?
			       (int)strlen(outcome_name[o]) :
			       7,
		       outcome_name[o]);
	printf("\n");
	for (s = 0; s <= N_STRUCTS; s++) {
		const unsigned long *row = s < N_STRUCTS ? count[s] : total;

		printf("%-13s", s < N_STRUCTS ? struct_name[s] : "total");
		for (o = 0; o < N_OUTCOMES; o++)
			printf(" %*lu",
			       (int)strlen(outcome_name[o]) > 7 ?
				       (int)strlen(outcome_name[o]) :
				       7,
			       row[o]);
		printf("\n");
	}
	printf("%lu trials, %lu failed\n", trials, bad);
	unlink(c.path);
	rmdir(c.dir);
	free(img);
	free(c.image);
	return bad ? 1 : 0;
}
