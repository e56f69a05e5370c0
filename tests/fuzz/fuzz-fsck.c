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
 * An input that starts with "P2" patches a pool of two parts instead
 * (heap-image.c's 2-part image: both parts' heaps hold blocks, dest words
 * and frees cross parts, both parts' logs hold a crashed child's ops):
 * bit 6 of a command's region byte picks the part it patches (its heap,
 * or with bit 7 its file's headers: part 1 has only a part header).
 * An input that starts with "R2" patches a pool of one part carved into
 * two PMAlloc regions (heap-image.c's setup_regions: both regions' holders
 * crashed, region 0's free ring for region 1 holds frees nobody applied):
 * bit 6 of a region byte picks region 1.
 * An input that starts with "HD" patches a heap holding an HDPM file
 * system (hdpm-image.c: files with CoW pages and page logs, a crash inside
 * a journaled operation); bit 6 of a command's region byte (without bit
 * 7) patches one of the heap's live blocks instead: index bits 14..23
 * pick the block, 0..13 the byte (COPY: 8 bytes from the block and byte
 * value bits 0..23 select). Its check adds the HDPM check
 * (hdpm_fsck_heap on a read-only open) and the check of recovery on a
 * private view (`pmactl fsck --recovery`); its repair adds
 * hdpm_fsck_repair (--advanced); its workload is an HDPM mount and
 * writes instead of allocations.
 * A pool that checks clean must then open writable and serve a few
 * allocations and frees (HDPM: a mount, writes and a truncate), and check
 * clean after its close. Anything else aborts (libFuzzer reports it as a
 * crash).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hdpm.h"
#include "hdpm/fsck.h"
#include "heap-image.h"
#include "pmalloc.h"
#include "pmalloc/fsck.h"
#include "pool/fsck.h"
#include "pool/internal.h"
#include "pool/layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define POOL_RGN_BIT 0x80 /* region byte: patch the pool headers */
#define PART_RGN_BIT 0x40 /* 2 parts: region byte: patch part 1 */
#define TWO_PARTS "P2" /* the prefix of an input on 2 parts */
#define TWO_REGIONS "R2" /* ... on 1 part of 2 regions */
#define HDPM_FS "HD" /* ... on a heap with an HDPM file system */
#define PART_SIZE (POOL_DATA_OFF + 4 * 1024 * 1024)

/* this input's pool: fx, the 2 parts of fx2, the 2 regions of fxr (one
 * file) or fxh */
static struct heap_image *img = &fx;
static unsigned nimg = 1;
static int hdpm; /* img is fxh */
static int hdpm_checked; /* the last check looked at its file system */

/* img[k] is a file of its own (fxr[1] is fxr[0]'s file) */
static int own_file(unsigned k)
{
	return k == 0 || img[k].map != img[0].map;
}

struct fsck_count {
	unsigned long unrepairable; /* errors fsck does not repair */
	char first[64]; /* the first of them, or the first error */
	/* the error codes found (the first 16), and whether one not in
	 * known[] was (check_recovery) */
	char codes[16][48];
	unsigned ncodes;
	const struct fsck_count *known;
	int unknown;
};

static int code_in(const struct fsck_count *c, const char *code)
{
	unsigned i;

	for (i = 0; i < c->ncodes; i++)
		if (!strcmp(c->codes[i], code))
			return 1;
	return 0;
}

static int finding(const struct pool_fsck_finding *f, void *arg)
{
	struct fsck_count *c = arg;

	if (!f->code || !f->code[0] || strlen(f->code) >= 48 || !f->message ||
	    strlen(f->message) >= 4096 || f->severity > POOL_FSCK_ERROR) {
		fprintf(stderr, "fuzz-fsck: ERROR: malformed finding '%s'\n",
			f->code ? f->code : "(null)");
		abort();
	}
	if (getenv("FUZZ_HEAP_VERBOSE"))
		fprintf(stderr, "fuzz-fsck: %s: %s: %s\n",
			pool_fsck_severity_name(f->severity), f->code,
			f->message);
	if (f->severity == POOL_FSCK_ERROR && !code_in(c, f->code) &&
	    c->ncodes < 16)
		snprintf(c->codes[c->ncodes++], sizeof(c->codes[0]), "%s",
			 f->code);
	if (f->severity == POOL_FSCK_ERROR && c->known &&
	    !code_in(c->known, f->code))
		c->unknown = 1;
	if (pma_fsck_blocks_repair(f, 1) && !c->unrepairable++)
		snprintf(c->first, sizeof(c->first), "%s", f->code);
	else if (f->severity == POOL_FSCK_ERROR && !c->first[0])
		snprintf(c->first, sizeof(c->first), "%s", f->code);
	return 0;
}

/* the HDPM file system, as pmactl fsck checks it (a heap the read-only
 * open refuses is not checked: the heap's findings say why) */
static int check_hdpm(struct pool_fsck_sink *sink)
{
	struct pma_heap *heap;
	int rc;

	hdpm_checked = 0;
	if (pma_heap_open(img->path, PMA_HEAP_RDONLY, &heap) < 0)
		return 0;
	hdpm_checked = 1;
	rc = hdpm_fsck_heap(heap, sink);
	pma_heap_close(heap);
	return rc;
}

/* what pmactl fsck checks; the number of errors */
static unsigned long check(const char *what, struct fsck_count *c)
{
	struct pool_fsck_sink sink = { .fn = finding, .arg = c };
	int rc;

	memset(c, 0, sizeof(*c));
	rc = pool_fsck(img->path, &sink);
	if (rc == 0)
		rc = pma_fsck(img->path, &sink);
	if (rc == 0 && hdpm)
		rc = check_hdpm(&sink);
	if (rc) {
		fprintf(stderr, "fuzz-fsck: ERROR: %s could not run: %d %s\n",
			what, rc, pool_errormsg());
		abort();
	}
	return sink.counts[POOL_FSCK_ERROR];
}

/* ------------------------------------------------------------ patching */

static void pool_reseal(struct heap_image *im)
{
	struct pool_part_hdr *ph =
		(struct pool_part_hdr *)(void *)(im->patched +
						 POOL_PART_HDR_OFF);
	struct pool_hdr *a =
		(struct pool_hdr *)(void *)(im->patched + POOL_HDR_A_OFF);
	struct pool_hdr *b =
		(struct pool_hdr *)(void *)(im->patched + POOL_HDR_B_OFF);

	ph->checksum = pool_part_hdr_checksum(ph);
	a->checksum = pool_hdr_checksum(a);
	b->checksum = pool_hdr_checksum(b);
}

/* a command on the pool's headers: [0, POOL_DATA_OFF) of the file */
static void pool_apply(struct heap_image *im, const struct heap_cmd *c)
{
	uint8_t *p = im->patched + c->idx % (POOL_DATA_OFF - 7);
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
		memcpy(im->patched +
			       (c->value & 1 ? POOL_HDR_A_OFF : POOL_HDR_B_OFF),
		       im->patched +
			       (c->value & 1 ? POOL_HDR_B_OFF : POOL_HDR_A_OFF),
		       POOL_HDR_SIZE);
		break;
	default: /* SET64, REC */
		memcpy(p, &c->value, sizeof(c->value));
		break;
	}
	if (c->reseal)
		pool_reseal(im);
}

/* a command on one of the HDPM image's live blocks (no RESEAL: the
 * blocks' own checksums are HDPM's) */
static void block_apply(struct heap_image *im, const struct heap_cmd *c)
{
	unsigned b = (c->idx >> 14) % im->nblk;
	uint64_t len = im->blk_size[b], v;
	uint8_t *p, *base = im->patched + im->blk[b];

	if (len < 8)
		return;
	p = base + (c->idx & 0x3fff) % (len - 7);
	memcpy(&v, p, sizeof(v));
	switch (c->op) {
	case HEAP_OP_SET8:
		*p = (uint8_t)c->value;
		return;
	case HEAP_OP_XOR64:
		v ^= c->value;
		break;
	case HEAP_OP_ADD64:
		v += c->value;
		break;
	case HEAP_OP_COPY: /* 8 bytes of another block (a word it holds) */
		b = (unsigned)(c->value >> 14) % im->nblk;
		if (im->blk_size[b] < 8)
			return;
		memcpy(&v,
		       im->patched + im->blk[b] +
			       (c->value & 0x3fff) % (im->blk_size[b] - 7),
		       sizeof(v));
		break;
	default: /* SET64, REC */
		v = c->value;
		break;
	}
	memcpy(p, &v, sizeof(v));
}

/* FUZZ_FSCK_DUMP=FILE: write the patched pool there (to debug an input
 * with pmactl); FUZZ_FSCK_DUMP_AFTER=FILE: the pool after the workload.
 * Of a pool of 2 parts, part 1 goes to FILE.part1 (its part table still
 * names the fuzzer's files: copy the two over them to look at them) */
static void dump_image(const char *path)
{
	char name[4096];
	unsigned k;
	FILE *f;

	for (k = 0; path && k < nimg; k++) {
		if (!own_file(k))
			continue;
		snprintf(name, sizeof(name), k ? "%s.part%u" : "%s", path, k);
		f = fopen(name, "wb");
		if (!f ||
		    fwrite(img[k].map, 1, img[k].size, f) != img[k].size ||
		    fclose(f))
			die("FUZZ_FSCK_DUMP");
	}
}

/* the input's patches straight into the pool file (one copy of the
 * image, not two: it halves the time of a run), then its metadata kept
 * in each image's patched buffer to see that the check writes nothing */
static void patch(const uint8_t *data, size_t size)
{
	uint8_t *buf[2];
	struct heap_image *im;
	struct heap_cmd c;
	unsigned i, k, rgn;

	for (k = 0; k < nimg; k++) {
		buf[k] = img[k].patched;
		if (own_file(k))
			memcpy(img[k].map, img[k].pristine, img[k].size);
		img[k].patched = img[k].map;
	}
	for (i = 0; heap_script_cmd(data, size, i, &c) == 0; i++) {
		rgn = data[(size_t)i * HEAP_CMD_SIZE + 1];
		im = &img[nimg > 1 && (rgn & PART_RGN_BIT) ? 1 : 0];
		if (nimg > 1) /* bit 6 picked the part / region */
			c.rgn = (rgn & (PART_RGN_BIT - 1)) % HEAP_RGN_COUNT;
		if (rgn & POOL_RGN_BIT)
			pool_apply(im, &c);
		else if (hdpm && (rgn & PART_RGN_BIT))
			block_apply(im, &c);
		else
			cmd_apply_in(im, &c);
	}
	for (k = 0; k < nimg; k++) {
		img[k].patched = buf[k];
		memcpy(img[k].patched, img[k].map, img[k].data);
	}
	dump_image(getenv("FUZZ_FSCK_DUMP"));
}

/* did the check write the pool's metadata (every part's)? */
static int metadata_written(void)
{
	unsigned k;

	for (k = 0; k < nimg; k++)
		if (memcmp(img[k].map, img[k].patched, img[k].data))
			return 1;
	return 0;
}

/* ------------------------------------------------------------ checks */

/* a call on a consistent file system may fail (a full inode table ...),
 * but only with a negative errno and a message */
static void hdpm_rc(long rc, const char *what)
{
	if (rc >= 0)
		return;
	if (rc < -4095 || !hdpm_errormsg()[0]) {
		fprintf(stderr,
			"fuzz-fsck: ERROR: %s returned %ld, message '%s'\n",
			what, rc, hdpm_errormsg());
		abort();
	}
}

/* the HDPM file system of a pool fsck found consistent mounts and takes
 * writes: a log append, a CoW write, a truncate, a new file */
static void hdpm_work(struct pma_heap *heap, unsigned salt)
{
	static char buf[6000];
	struct hdpm_file *f = NULL;
	struct hdpm_fs *fs;
	int rc;

	rc = hdpm_mount(heap, HDPM_NO_GC_THREAD, &fs);
	/* no file system (its magic lost): nothing to use; a root block
	 * that is no format's leftover is not formatted over (-EIO) */
	if ((rc == -EINVAL || rc == -EIO) && !hdpm_fsck_present(heap))
		return;
	if (rc < 0) {
		fprintf(stderr,
			"fuzz-fsck: ERROR: a file system fsck found consistent does "
			"not mount: %s\n",
			hdpm_errormsg());
		abort();
	}
	memset(buf, (int)salt, sizeof(buf));
	rc = hdpm_open(fs, "/f", O_RDWR, 0, &f);
	hdpm_rc(rc, "hdpm_open /f");
	if (rc == 0) {
		hdpm_rc(hdpm_pwrite(f, buf, 100, salt % 8000), "pwrite (log)");
		hdpm_rc(hdpm_pwrite(f, buf, 5000, 2000), "pwrite (CoW)");
		hdpm_rc(hdpm_ftruncate(f, 4096 + salt % 4096), "ftruncate");
		hdpm_close(f);
	}
	rc = hdpm_open(fs, "/d/new", O_CREAT | O_RDWR, 0644, &f);
	hdpm_rc(rc, "hdpm_open /d/new");
	if (rc == 0) {
		hdpm_rc(hdpm_pwrite(f, buf, 300, 0), "pwrite (new file)");
		hdpm_close(f);
	}
	hdpm_unmount(fs);
}

/* a pool fsck found consistent: it opens writable and works */
static void must_work(unsigned salt)
{
	uint64_t local[4] = { 0 };
	struct pma_heap *heap;
	struct fsck_count c;
	unsigned i;
	int rc;

	rc = pma_heap_open(img->path, 0, &heap);
	if (rc == -ENOENT)
		return; /* no heap (the region table lost it): nothing to use */
	if (rc < 0)
		die("a pool fsck found consistent does not open");
	if (hdpm) { /* (blocks of local words would leak in its view) */
		hdpm_work(heap, salt);
	} else {
		for (i = 0; i < 4; i++)
			check_rc(pma_malloc_to(heap,
					       sizes[(i * 5 + salt) % NSIZES],
					       &local[i]),
				 "pma_malloc_to");
		for (i = 0; i < 4; i += 2)
			check_rc(pma_free_from(heap, &local[i]),
				 "pma_free_from");
	}
	pma_heap_close(heap);
	dump_image(getenv("FUZZ_FSCK_DUMP_AFTER"));
	if (check("the check after a workload", &c)) {
		fprintf(stderr,
			"fuzz-fsck: ERROR: a workload on a consistent pool "
			"left errors (the first: %s)\n",
			c.first);
		abort();
	}
}

/* pmactl fsck --recovery (HDPM image): recovery on a private view and
 * the check of what it leaves; its findings must be well-formed, and it
 * must leave the file as it was. 1 if it found an error of a code the
 * check (plain) did not */
static int check_recovery(const struct fsck_count *plain)
{
	struct fsck_count c = { .known = plain };
	struct pool_fsck_sink sink = { .fn = finding, .arg = &c };
	struct pma_fsck_pending p;

	memset(&p, 0, sizeof(p));
	if (pma_fsck_pending(img->path, &p) == 0)
		(void)pma_fsck_recover_private(img->path, &sink,
					       hdpm_fsck_recover);
	pma_fsck_pending_free(&p);
	if (metadata_written()) {
		fprintf(stderr,
			"fuzz-fsck: ERROR: --recovery wrote the pool\n");
		abort();
	}
	return c.unknown;
}

/*
 * The repair: the heap's, then (HDPM) the file system's, as pmactl fsck
 * --repair --yes --advanced makes it. 0, or 1 when the check could not
 * look at the file system (the heap did not open read-only) and, once
 * the heap is repaired, finds errors there it does not repair: pmactl
 * fsck --repair goes on to the file system's repair and fails (exit 4)
 * there; a second pmactl fsck says why.
 */
static int repair(struct fsck_count *c)
{
	struct pma_heap *heap;
	int rc;

	rc = pma_fsck_repair_flags(img->path, PMA_FSCK_ADVANCED, NULL);
	if (rc == 0 && hdpm && !hdpm_checked) {
		check("the check after the heap's repair", c);
		if (c->unrepairable)
			return 1;
	}
	if (rc == 0 && hdpm) {
		rc = pma_heap_open(img->path, 0, &heap);
		if (rc == 0) {
			rc = hdpm_fsck_repair(heap, HDPM_FSCK_ADVANCED, NULL);
			pma_heap_close(heap);
		}
	}
	if (rc < 0) {
		fprintf(stderr,
			"fuzz-fsck: ERROR: repair of repairable errors (the first: "
			"%s) fails: %s\n",
			c->first, hdpm ? hdpm_errormsg() : pool_errormsg());
		abort();
	}
	return 0;
}

/* the image an input names with its prefix; the prefix skipped */
static void pick_image(const uint8_t **data, size_t *size)
{
	const char *pre = *size >= 2 ? (const char *)*data : "";

	nimg = 1;
	img = &fx;
	hdpm = 0;
	if (!strncmp(pre, TWO_PARTS, 2)) {
		nimg = 2;
		img = fx2;
		if (!fx2[0].map)
			setup_file2(PART_SIZE);
	} else if (!strncmp(pre, TWO_REGIONS, 2)) {
		nimg = 2;
		img = fxr;
		if (!fxr[0].map)
			setup_regions(PART_SIZE);
	} else if (!strncmp(pre, HDPM_FS, 2)) {
		img = &fxh;
		hdpm = 1;
		if (!fxh.map)
			setup_hdpm(PART_SIZE);
	} else {
		if (!fx.map)
			setup_file(PART_SIZE);
		return;
	}
	*data += 2;
	*size -= 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fsck_count c;
	unsigned long errors;

	pick_image(&data, &size);
	patch(data, size);
	errors = check("the check", &c);
	/* the pool and heap metadata (the data area is only ever mapped
	 * read-only by the check, and comparing it too halves the speed) */
	if (metadata_written()) {
		fprintf(stderr, "fuzz-fsck: ERROR: the check wrote the pool\n");
		abort();
	}
	/* an error only the recovered state shows (a log record whose
	 * redo stores into the file system's metadata: the plain check
	 * reads it as on media) is reported by pmactl fsck --recovery, and
	 * the mount refuses it, after a repair too: no repair, no workload */
	if (hdpm && check_recovery(&c))
		return 0;
	if (c.unrepairable)
		return 0; /* pmactl fsck --repair: exit 3, writes nothing;
			   * or a pool only a read-only open accepts */
	if (errors) {
		if (repair(&c))
			return 0;
		if (check("the check after repair", &c)) {
			fprintf(stderr,
				"fuzz-fsck: ERROR: errors left after repair (the "
				"first: %s)\n",
				c.first);
			abort();
		}
	}
	must_work((unsigned)size);
	return 0;
}
