/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz-fsck: libFuzzer target for `pmactl fsck`'s library path. Each
 * input is a patch script (heap-script.h) applied to the crashed heap
 * image of heap-image.c (a command whose region byte has bit 7 set
 * patches the pool's headers, [0, 64 KiB) of the file, instead; with
 * RESEAL the pool header copies and the part header get their checksums
 * again). The patched pool is checked (pool_fsck, then pma_fsck) as
 * `pmactl fsck` does; the check must run, report well-formed findings
 * and leave the file untouched. When every error it found is one fsck
 * repairs (--advanced too), the pool is repaired as `pmactl fsck --repair
 * --yes --advanced` does (in the file, a copy of the image) and checked
 * again: no error may be left.
 * A pool that checks clean must then open writable and serve a few
 * allocations and frees, and check clean after its close. Anything else
 * aborts (libFuzzer reports it as a crash).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap-image.h"
#include "pmalloc.h"
#include "pmalloc/fsck.h"
#include "pool/fsck.h"
#include "pool/internal.h"
#include "pool/layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define POOL_RGN_BIT 0x80 /* region byte: patch the pool headers */

struct fsck_count {
	unsigned long unrepairable; /* errors fsck does not repair */
	char first[64]; /* the first of them, or the first error */
};

static int finding(const struct pool_fsck_finding *f, void *arg)
{
	struct fsck_count *c = arg;

	if (!f->code || !f->code[0] || strlen(f->code) >= 48 || !f->message ||
	    strlen(f->message) >= 4096 || f->severity > POOL_FSCK_ERROR) {
		fprintf(stderr, "fuzz-fsck: malformed finding '%s'\n",
			f->code ? f->code : "(null)");
		abort();
	}
	if (getenv("FUZZ_HEAP_VERBOSE"))
		fprintf(stderr, "fuzz-fsck: %s: %s: %s\n",
			pool_fsck_severity_name(f->severity), f->code,
			f->message);
	if (pma_fsck_blocks_repair(f, 1) && !c->unrepairable++)
		snprintf(c->first, sizeof(c->first), "%s", f->code);
	else if (f->severity == POOL_FSCK_ERROR && !c->first[0])
		snprintf(c->first, sizeof(c->first), "%s", f->code);
	return 0;
}

/* what pmactl fsck checks; the number of errors */
static unsigned long check(const char *what, struct fsck_count *c)
{
	struct pool_fsck_sink sink = { .fn = finding, .arg = c };
	int rc;

	memset(c, 0, sizeof(*c));
	rc = pool_fsck(fx.path, &sink);
	if (rc == 0)
		rc = pma_fsck(fx.path, &sink);
	if (rc) {
		fprintf(stderr, "fuzz-fsck: %s could not run: %d %s\n", what,
			rc, pool_errormsg());
		abort();
	}
	return sink.counts[POOL_FSCK_ERROR];
}

/* ------------------------------------------------------------ patching */

static void pool_reseal(void)
{
	struct pool_part_hdr *ph =
		(struct pool_part_hdr *)(void *)(fx.patched +
						 POOL_PART_HDR_OFF);
	struct pool_hdr *a =
		(struct pool_hdr *)(void *)(fx.patched + POOL_HDR_A_OFF);
	struct pool_hdr *b =
		(struct pool_hdr *)(void *)(fx.patched + POOL_HDR_B_OFF);

	ph->checksum = pool_part_hdr_checksum(ph);
	a->checksum = pool_hdr_checksum(a);
	b->checksum = pool_hdr_checksum(b);
}

/* a command on the pool's headers: [0, POOL_DATA_OFF) of the file */
static void pool_apply(const struct heap_cmd *c)
{
	uint8_t *p = fx.patched + c->idx % (POOL_DATA_OFF - 7);
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	switch (c->op) {
	case HEAP_OP_SET8:
		*p = (uint8_t)c->value;
		break;
	case HEAP_OP_XOR64:
		v ^= c->value;
		memcpy(p, &v, sizeof(v));
		break;
	case HEAP_OP_ADD64:
		v += c->value;
		memcpy(p, &v, sizeof(v));
		break;
	case HEAP_OP_COPY: /* one header copy over the other */
		memcpy(fx.patched +
			       (c->value & 1 ? POOL_HDR_A_OFF : POOL_HDR_B_OFF),
		       fx.patched +
			       (c->value & 1 ? POOL_HDR_B_OFF : POOL_HDR_A_OFF),
		       POOL_HDR_SIZE);
		break;
	default: /* SET64, REC */
		memcpy(p, &c->value, sizeof(c->value));
		break;
	}
	if (c->reseal)
		pool_reseal();
}

/* FUZZ_FSCK_DUMP=FILE: write the patched pool there (to debug an input
 * with pmactl); FUZZ_FSCK_DUMP_AFTER=FILE: the pool after the workload */
static void dump_image(const char *path)
{
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "wb");
	if (!f || fwrite(fx.map, 1, POOL_SIZE, f) != POOL_SIZE || fclose(f))
		die("FUZZ_FSCK_DUMP");
}

/* the input's patches straight into the pool file (one copy of the
 * image, not two: it halves the time of a run), then its metadata kept
 * in fx.patched to see that the check writes nothing */
static void patch(const uint8_t *data, size_t size)
{
	uint8_t *buf = fx.patched;
	struct heap_cmd c;
	unsigned i;

	memcpy(fx.map, fx.pristine, POOL_SIZE);
	fx.patched = fx.map;
	for (i = 0; heap_script_cmd(data, size, i, &c) == 0; i++) {
		if (data[(size_t)i * HEAP_CMD_SIZE + 1] & POOL_RGN_BIT)
			pool_apply(&c);
		else
			cmd_apply(&c);
	}
	fx.patched = buf;
	memcpy(fx.patched, fx.map, fx.data);
	dump_image(getenv("FUZZ_FSCK_DUMP"));
}

/* ------------------------------------------------------------ checks */

/* a pool fsck found consistent: it opens writable and works */
static void must_work(unsigned salt)
{
	uint64_t local[4] = { 0 };
	struct pma_heap *heap;
	struct fsck_count c;
	unsigned i;
	int rc;

	rc = pma_heap_open(fx.path, 0, &heap);
	if (rc == -ENOENT)
		return; /* no heap (the region table lost it): nothing to use */
	if (rc < 0)
		die("a pool fsck found consistent does not open");
	for (i = 0; i < 4; i++)
		check_rc(pma_malloc_to(heap, sizes[(i * 5 + salt) % NSIZES],
				       &local[i]),
			 "pma_malloc_to");
	for (i = 0; i < 4; i += 2)
		check_rc(pma_free_from(heap, &local[i]), "pma_free_from");
	pma_heap_close(heap);
	dump_image(getenv("FUZZ_FSCK_DUMP_AFTER"));
	if (check("the check after a workload", &c)) {
		fprintf(stderr,
			"fuzz-fsck: a workload on a consistent pool "
			"left errors (the first: %s)\n",
			c.first);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fsck_count c;
	unsigned long errors;

	if (!fx.map)
		setup_file(POOL_DATA_OFF + 4 * 1024 * 1024);
	patch(data, size);
	errors = check("the check", &c);
	/* the pool and heap metadata (the data area is only ever mapped
	 * read-only by the check, and comparing it too halves the speed) */
	if (memcmp(fx.map, fx.patched, fx.data)) {
		fprintf(stderr, "fuzz-fsck: the check wrote the pool\n");
		abort();
	}
	if (c.unrepairable)
		return 0; /* pmactl fsck --repair: exit 3, writes nothing;
			   * or a pool only a read-only open accepts */
	if (errors) {
		if (pma_fsck_repair_flags(fx.path, PMA_FSCK_ADVANCED, NULL) <
		    0) {
			fprintf(stderr,
				"fuzz-fsck: repair of repairable errors (the "
				"first: %s) fails: %s\n",
				c.first, pool_errormsg());
			abort();
		}
		if (check("the check after repair", &c)) {
			fprintf(stderr,
				"fuzz-fsck: errors left after repair (the "
				"first: %s)\n",
				c.first);
			abort();
		}
	}
	must_work((unsigned)size);
	return 0;
}
