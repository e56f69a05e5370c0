/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gen-corpus: write the seed corpora (not built by default). For
 * fuzz-pool-hdr: valid pool and part headers and one file per way a
 * header can be wrong; with --heap, for fuzz-heap: one patch script
 * (heap-script.h) per region and command kind; with --fsck2, for
 * fuzz-fsck: patch scripts of its pool of two parts (the "P2" prefix; bit
 * 6 of a region byte picks part 1); with --fsck-more, for fuzz-fsck:
 * scripts of its pool of 2 regions ("R2") and of its heap with an HDPM
 * file system ("HD"). Build it against a build
 * tree's libraries, e.g.
 *   cc -std=gnu11 -I lib -I $BUILD -include $BUILD/config.h \
 *      tests/fuzz/gen-corpus.c $BUILD/lib/util/.libs/libutil.a -o gen-corpus
 *   ./gen-corpus tests/fuzz/corpus/pool-hdr
 *   ./gen-corpus --heap tests/fuzz/corpus/heap
 *   ./gen-corpus --fsck2 tests/fuzz/corpus/fsck
 *   ./gen-corpus --fsck-more tests/fuzz/corpus/fsck
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap-script.h"
#include "pmalloc/layout.h"
#include "pool/layout.h"
#include "util/crc.h"

#define MIB (1024ULL * 1024)

static const char *outdir;

static void put(const char *name, const void *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void seal(struct pool_hdr *h)
{
	h->checksum = util_crc32c(0, h, offsetof(struct pool_hdr, checksum));
}

static void seal_part(struct pool_part_hdr *p)
{
	p->checksum =
		util_crc32c(0, p, offsetof(struct pool_part_hdr, checksum));
}

static void region(struct pool_hdr *h, uint32_t part, uint64_t off,
		   uint64_t size, const char *name)
{
	struct pool_region *r = &h->regions[h->nregions++];

	r->type = POOL_REGION_PMALLOC;
	r->part = part;
	r->off = off;
	r->size = size;
	memcpy(r->name, name, strlen(name));
}

static void valid_hdr(struct pool_hdr *h, unsigned nparts)
{
	unsigned i;

	memset(h, 0, sizeof(*h));
	memcpy(h->magic, POOL_HDR_MAGIC, POOL_MAGIC_LEN);
	h->major = POOL_FORMAT_MAJOR;
	h->minor = POOL_FORMAT_MINOR;
	h->hdr_size = POOL_HDR_SIZE;
	h->generation = 3;
	memset(h->uuid, 0xab, sizeof(h->uuid));
	h->create_time = 1700000000;
	h->nparts = nparts;
	for (i = 0; i < nparts; i++) {
		memset(h->parts[i].uuid, (int)i + 1, 16);
		h->parts[i].size = 4 * MIB;
		h->parts[i].node = (int32_t)(i % 2);
		snprintf(h->parts[i].path_hint, POOL_PATH_HINT_LEN,
			 "/mnt/pmem%u/pool.part%u", i % 2, i);
	}
	region(h, 0, POOL_DATA_OFF, POOL_ALIGN, "heap");
	region(h, 0, POOL_DATA_OFF + 2 * POOL_ALIGN, 4 * POOL_ALIGN, "files");
	region(h, nparts - 1, POOL_DATA_OFF, MIB, "heap1");
	seal(h);
}

static void valid_part(struct pool_part_hdr *p)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->magic, POOL_PART_MAGIC, POOL_MAGIC_LEN);
	p->major = POOL_FORMAT_MAJOR;
	p->minor = POOL_FORMAT_MINOR;
	p->part_index = 1;
	memset(p->pool_uuid, 0xab, 16);
	memset(p->part_uuid, 2, 16);
	p->size = 4 * MIB;
	p->nparts = 2;
	p->create_time = 1700000000;
	seal_part(p);
}

/* a broken variant of the valid 2-part header, resealed unless told */
#define HDR_VARIANT(name, reseal, stmt)   \
	do {                              \
		valid_hdr(h, 2);          \
		stmt;                     \
		if (reseal)               \
			seal(h);          \
		put(name, h, sizeof(*h)); \
	} while (0)

static void pool_hdrs(void)
{
	struct pool_hdr *h = malloc(sizeof(*h));

	if (!h)
		exit(1);
	valid_hdr(h, 2);
	put("hdr-valid", h, sizeof(*h));
	put("hdr-truncated", h, 4000);
	valid_hdr(h, POOL_MAX_PARTS);
	put("hdr-valid-16-parts", h, sizeof(*h));
	HDR_VARIANT("hdr-bad-magic", 1, h->magic[0] = 'X');
	HDR_VARIANT("hdr-bad-checksum", 0, h->reserved[3] = 1);
	HDR_VARIANT("hdr-wrong-version", 1, h->major = 2);
	HDR_VARIANT("hdr-wrong-size", 1, h->hdr_size = 4096);
	HDR_VARIANT("hdr-incompat", 1, h->feat_incompat = 1);
	HDR_VARIANT("hdr-nparts-zero", 1, h->nparts = 0);
	HDR_VARIANT("hdr-nparts-overflow", 1, h->nparts = 0xffffffff);
	HDR_VARIANT("hdr-nregions-overflow", 1, h->nregions = 65);
	HDR_VARIANT("hdr-region-out-of-range", 1, h->regions[1].off = 4 * MIB);
	HDR_VARIANT("hdr-region-wrap", 1,
		    h->regions[1].off = UINT64_MAX - POOL_ALIGN + 1);
	HDR_VARIANT("hdr-region-in-header", 1, h->regions[0].off = 0);
	HDR_VARIANT("hdr-region-overlap", 1, h->regions[1].off = POOL_DATA_OFF);
	HDR_VARIANT("hdr-region-bad-part", 1, h->regions[2].part = 7);
	HDR_VARIANT("hdr-region-free", 1, h->regions[1].type = 0);
	HDR_VARIANT("hdr-path-unterminated", 1,
		    memset(h->parts[1].path_hint, 'p', POOL_PATH_HINT_LEN));
	HDR_VARIANT("hdr-part-size-unaligned", 1, h->parts[0].size += 1);
	HDR_VARIANT("hdr-part-size-huge", 1, h->parts[0].size = UINT64_MAX);
	free(h);
}

#define PART_VARIANT(name, reseal, stmt)  \
	do {                              \
		valid_part(&p);           \
		stmt;                     \
		if (reseal)               \
			seal_part(&p);    \
		put(name, &p, sizeof(p)); \
	} while (0)

static void part_hdrs(void)
{
	struct pool_part_hdr p;

	valid_part(&p);
	put("part-valid", &p, sizeof(p));
	put("part-truncated", &p, 100);
	put("empty", &p, 0);
	PART_VARIANT("part-bad-magic", 1, p.magic[7] = 'X');
	PART_VARIANT("part-bad-checksum", 0, p.size = 8 * MIB);
	PART_VARIANT("part-wrong-version", 1, p.major = 0xffff);
	PART_VARIANT("part-index-overflow", 1, p.part_index = 2);
	PART_VARIANT("part-nparts-overflow", 1, p.nparts = 17);
	PART_VARIANT("part-size-small", 1, p.size = POOL_ALIGN);
}

/* ------------------------------------------------------------ heap */

/* a heap script of up to 4 commands */
struct script {
	uint8_t buf[4 * HEAP_CMD_SIZE];
	size_t len;
};

static struct script *cmd(struct script *s, unsigned op, int reseal,
			  unsigned rgn, uint32_t idx, uint64_t value)
{
	heap_script_put(s->buf + s->len, op, reseal, rgn, idx, value);
	s->len += HEAP_CMD_SIZE;
	return s;
}

#define SEED(name, ...)                            \
	do {                                       \
		struct script s_ = { .len = 0 };   \
		struct script *s = &s_;            \
		__VA_ARGS__;                       \
		put("heap-" name, s->buf, s->len); \
	} while (0)

/* log selectors: byte b of record j (from the head) of arena a */
#define LOG(a, j, b) ((uint32_t)((j) << 8 | (a) << 4 | (b)))
/* 64-byte units per chunk (REC payloads are relative to the data area) */
#define CHUNK_UNITS (PMA_CHUNK / 64)
#define HDR_OFF(f) ((uint32_t)offsetof(struct pma_heap_hdr, f))

static void heap_hdr_seeds(void)
{
	SEED("none", (void)s);
	SEED("hdr-bad-magic", cmd(s, HEAP_OP_SET8, 0, HEAP_RGN_HDR, 0, 'X'));
	SEED("hdr-bad-checksum",
	     cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_HDR, HDR_OFF(region_size), 1));
	SEED("hdr-version",
	     cmd(s, HEAP_OP_SET8, 1, HEAP_RGN_HDR, HDR_OFF(version), 3));
	SEED("hdr-version-1",
	     cmd(s, HEAP_OP_SET8, 1, HEAP_RGN_HDR, HDR_OFF(version), 1));
	SEED("hdr-narenas",
	     cmd(s, HEAP_OP_ADD64, 1, HEAP_RGN_HDR, HDR_OFF(narenas), 1));
	SEED("hdr-npages",
	     cmd(s, HEAP_OP_ADD64, 1, HEAP_RGN_HDR, HDR_OFF(npages), 16));
	SEED("hdr-region-size", cmd(s, HEAP_OP_SET64, 1, HEAP_RGN_HDR,
				    HDR_OFF(region_size), UINT64_MAX - 4095));
	SEED("hdr-root-garbage", cmd(s, HEAP_OP_SET64, 0, HEAP_RGN_HDR,
				     PMA_ROOT_WORD_OFF, 0x123456));
	SEED("hdr-root-zero",
	     cmd(s, HEAP_OP_SET64, 0, HEAP_RGN_HDR, PMA_ROOT_WORD_OFF, 0));
	SEED("hdr-head-gen",
	     cmd(s, HEAP_OP_ADD64, 0, HEAP_RGN_HDR, PMA_HEAD_GEN_OFF, 1));
	SEED("desc-head-bump",
	     cmd(cmd(s, HEAP_OP_ADD64, 0, HEAP_RGN_DESC, 0, 2), HEAP_OP_ADD64,
		 0, HEAP_RGN_DESC, 8, 2));
	SEED("desc-head-back",
	     cmd(cmd(s, HEAP_OP_ADD64, 0, HEAP_RGN_DESC, 64, (uint64_t)-3),
		 HEAP_OP_ADD64, 0, HEAP_RGN_DESC, 72, (uint64_t)-3));
	SEED("desc-head-huge",
	     cmd(cmd(s, HEAP_OP_SET64, 0, HEAP_RGN_DESC, 0, 1ULL << 40),
		 HEAP_OP_SET64, 0, HEAP_RGN_DESC, 8, 1ULL << 40));
}

static void heap_log_seeds(void)
{
	SEED("log-flip-bit",
	     cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_LOG, LOG(0, 0, 0), 1ULL << 40));
	SEED("log-payload-resealed",
	     cmd(s, HEAP_OP_ADD64, 1, HEAP_RGN_LOG, LOG(0, 1, 0), 1ULL << 24));
	SEED("log-type-resealed",
	     cmd(s, HEAP_OP_XOR64, 1, HEAP_RGN_LOG, LOG(1, 0, 0), 3));
	SEED("log-dest-resealed", cmd(s, HEAP_OP_SET64, 1, HEAP_RGN_LOG,
				      LOG(1, 2, 8), POOL_DATA_OFF + 4096));
	SEED("rec-alloc-no-slab",
	     cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(0, 2, 0),
		 heap_script_rec(PMA_REC_ALLOC, 40 * CHUNK_UNITS + 8,
				 HEAP_REC_NO_DEST)));
	SEED("rec-free-bad-dest",
	     cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(0, 2, 0),
		 heap_script_rec(PMA_REC_FREE, 8, 250)));
	SEED("rec-rfree", cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(1, 1, 0),
			      heap_script_rec(PMA_REC_RFREE, 10, 3)));
	SEED("rec-slab-new-misaligned",
	     cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(0, 2, 0),
		 heap_script_rec(PMA_REC_SLAB_NEW, 40 * CHUNK_UNITS + 1,
				 HEAP_REC_SLAB(3, 0))));
	SEED("rec-slab-new-then-alloc",
	     cmd(cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(0, 2, 0),
		     heap_script_rec(PMA_REC_SLAB_NEW, 40 * CHUNK_UNITS,
				     HEAP_REC_SLAB(5, 0))),
		 HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(0, 3, 0),
		 heap_script_rec(PMA_REC_ALLOC, 40 * CHUNK_UNITS + 8, 5)));
	SEED("rec-slab-new-bad-class",
	     cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(0, 2, 0),
		 heap_script_rec(PMA_REC_SLAB_NEW, 40 * CHUNK_UNITS,
				 HEAP_REC_SLAB(60, 0))));
	SEED("rec-slab-new-bad-owner",
	     cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(1, 0, 0),
		 heap_script_rec(PMA_REC_SLAB_NEW, 40 * CHUNK_UNITS,
				 HEAP_REC_SLAB(3, 9))));
	SEED("rec-slab-new-over-slab",
	     cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(1, 0, 0),
		 heap_script_rec(PMA_REC_SLAB_NEW, 0, HEAP_REC_SLAB(7, 1))));
	SEED("rec-slab-free-misaligned",
	     cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(0, 2, 0),
		 heap_script_rec(PMA_REC_SLAB_FREE, 40 * CHUNK_UNITS + 1,
				 HEAP_REC_SLAB(3, 0))));
	SEED("rec-slab-new-then-free",
	     cmd(cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(0, 2, 0),
		     heap_script_rec(PMA_REC_SLAB_NEW, 40 * CHUNK_UNITS,
				     HEAP_REC_SLAB(5, 0))),
		 HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(0, 3, 0),
		 heap_script_rec(PMA_REC_SLAB_FREE, 40 * CHUNK_UNITS,
				 HEAP_REC_SLAB(5, 0))));
	SEED("rec-slab-free-live-slab",
	     cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(1, 0, 0),
		 heap_script_rec(PMA_REC_SLAB_FREE, 0, HEAP_REC_SLAB(7, 1))));
	SEED("rec-ext-alloc",
	     cmd(cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(0, 0, 0),
		     heap_script_rec(PMA_REC_EXT_ALLOC, 50 * CHUNK_UNITS, 6)),
		 HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(0, 1, 0),
		 heap_script_rec(0, 3, 0)));
	SEED("rec-ext-len-huge",
	     cmd(cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(1, 0, 0),
		     heap_script_rec(PMA_REC_EXT_FREE, 50 * CHUNK_UNITS, 7)),
		 HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(1, 1, 0),
		 heap_script_rec(0, 0xffffffff, 0)));
	SEED("rec-ext-alloc1",
	     cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(0, 0, 0),
		 heap_script_rec(PMA_REC_EXT_ALLOC1,
				 HEAP_REC_EXT1(50 * PMA_CHUNK_PAGES, 3), 6)));
	SEED("rec-ext-free1-past-end",
	     cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(1, 0, 0),
		 heap_script_rec(PMA_REC_EXT_FREE1,
				 HEAP_REC_EXT1(0x1ffff0, 2048), 7)));
	SEED("rec-type-12", cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG, LOG(0, 0, 0),
				heap_script_rec(12, 1, 0)));
	SEED("rec-lone-ext-len", cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG,
				     LOG(0, 0, 0), heap_script_rec(0, 1, 0)));
	SEED("copy-record",
	     cmd(s, HEAP_OP_COPY, 1, HEAP_RGN_LOG, LOG(1, 2, 0),
		 heap_script_copy_src(HEAP_RGN_LOG, LOG(0, 5, 0), 16)));
}

static void heap_state_seeds(void)
{
	SEED("pmap-freeing",
	     cmd(s, HEAP_OP_SET8, 0, HEAP_RGN_PMAP, 900 * 8, PMA_PMAP_FREEING));
	SEED("pmap-extent-huge",
	     cmd(s, HEAP_OP_SET64, 0, HEAP_RGN_PMAP, 800 * 8,
		 pma_pmap_make(PMA_PMAP_EXTENT, 1ULL << 40)));
	SEED("slabent-class", cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_SLABENT, 0,
				  1ULL << PMA_PMAP_CLS_SHIFT));
	SEED("slabent-owner", cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_SLABENT, 8,
				  1ULL << PMA_PMAP_OWNER_SHIFT));
	SEED("slabent-zero", cmd(s, HEAP_OP_SET64, 0, HEAP_RGN_SLABENT, 16, 0));
	SEED("extent-npages", cmd(s, HEAP_OP_ADD64, 0, HEAP_RGN_EXTENT, 0,
				  1ULL << PMA_PMAP_NPAGES_SHIFT));
	SEED("extent-to-slab", cmd(s, HEAP_OP_SET64, 0, HEAP_RGN_EXTENT, 8,
				   pma_pmap_make_slab(0, 0)));
	SEED("slab-magic", cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_SLAB, 0, 1));
	SEED("slab-block-size",
	     cmd(s, HEAP_OP_SET8, 0, HEAP_RGN_SLAB, 1 << 9 | 8, 1));
	SEED("slab-nblocks", cmd(s, HEAP_OP_SET64, 0, HEAP_RGN_SLAB, 2 << 9 | 8,
				 1ULL << 32 | 64));
	SEED("slab-bitmap-full", cmd(s, HEAP_OP_SET64, 0, HEAP_RGN_SLAB,
				     PMA_SLAB_BITMAP_OFF, UINT64_MAX));
	SEED("copy-slab-header",
	     cmd(s, HEAP_OP_COPY, 0, HEAP_RGN_SLAB, 3 << 9,
		 heap_script_copy_src(HEAP_RGN_SLAB, 0, PMA_SLAB_HDR_SIZE)));
	SEED("root-slot-garbage",
	     cmd(s, HEAP_OP_SET64, 0, HEAP_RGN_ROOT, 8, 0x123457));
	SEED("root-slot-metadata",
	     cmd(s, HEAP_OP_SET64, 0, HEAP_RGN_ROOT, 16, POOL_DATA_OFF + 64));
	SEED("data-zero", cmd(s, HEAP_OP_SET64, 0, HEAP_RGN_DATA, 0, 0));
	SEED("sum-zero", cmd(s, HEAP_OP_SET64, 0, HEAP_RGN_SUM, 0, 0));
	SEED("sum-flip", cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_SUM, 8, 1 << 20));
	SEED("sum-clear-resealed",
	     cmd(s, HEAP_OP_SET64, 1, HEAP_RGN_SUM, 0, 0));
	SEED("sum-all-resealed",
	     cmd(s, HEAP_OP_SET64, 1, HEAP_RGN_SUM, 8, UINT64_MAX));
	SEED("pmap-unmarked-garbage",
	     cmd(s, HEAP_OP_SET64, 0, HEAP_RGN_PMAP, 980 * 8,
		 pma_pmap_make(PMA_PMAP_EXTENT, 3)));
	SEED("raw-pmap-copy", cmd(s, HEAP_OP_COPY, 0, HEAP_RGN_PMAP, 0,
				  heap_script_copy_src(HEAP_RGN_PMAP, 8, 512)));
}

/* ------------------------------------------------------------ 2 parts */

#define P1 0x40 /* region byte: part 1 */
#define POOL_RGN 0x80 /* region byte: the file's pool headers */

/* a fuzz-fsck input on its pool of two parts: "P2", then the commands */
#define SEED2(name, ...)                               \
	do {                                           \
		struct script s_ = { .len = 0 };       \
		struct script *s = &s_;                \
		uint8_t b_[2 + sizeof(s_.buf)] = "P2"; \
		__VA_ARGS__;                           \
		memcpy(b_ + 2, s->buf, s->len);        \
		put("fsck2-" name, b_, 2 + s->len);    \
	} while (0)

static void fsck2_seeds(void)
{
	SEED2("clean", (void)s);
	SEED2("p1-log-flip-bit", cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_LOG | P1,
				     LOG(0, 1, 0), 1ULL << 40));
	SEED2("p1-log-type-0",
	      cmd(s, HEAP_OP_REC, 0, HEAP_RGN_LOG | P1, LOG(1, 1, 0),
		  heap_script_rec(PMA_REC_NONE, 1, HEAP_REC_NO_DEST)));
	/* a dest word in the other part's heap header (resealed) */
	SEED2("p1-dest-in-p0-meta",
	      cmd(s, HEAP_OP_SET64, 1, HEAP_RGN_LOG | P1, LOG(0, 2, 8),
		  pool_off_make(0, POOL_DATA_OFF + 64)));
	SEED2("p0-dest-in-p1-meta",
	      cmd(s, HEAP_OP_SET64, 1, HEAP_RGN_LOG, LOG(1, 2, 8),
		  pool_off_make(1, POOL_DATA_OFF + 128)));
	/* the last allocation of part 0's arena 0 (one recovery redoes)
	 * gets as its dest word a word of a slab's header (resealed): in
	 * part 1's slab at 0x20000, and in part 0's at 0x1d0000 (made in
	 * the window); fsck reports log-op-dest, a writable open refuses
	 * (crash-log-dest-slab-header on one part) */
	SEED2("p0-dest-in-p1-slab-header",
	      cmd(s, HEAP_OP_SET64, 1, HEAP_RGN_LOG, LOG(0, 25, 8),
		  pool_off_make(1, 0x20008)));
	SEED2("p0-dest-in-p0-slab-header",
	      cmd(s, HEAP_OP_SET64, 1, HEAP_RGN_LOG, LOG(0, 25, 8),
		  pool_off_make(0, 0x1d0008)));
	/* an empty slot ahead of the end gets a word no append writes */
	SEED2("p1-slot-ahead", cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_LOG | P1,
				   LOG(0, 300, 0), 0x5a5a5a5a5a5a5a50ULL));
	SEED2("p1-slab-magic",
	      cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_SLAB | P1, 1 << 9, 1));
	SEED2("p1-slabent-owner",
	      cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_SLABENT | P1, 8,
		  1ULL << PMA_PMAP_OWNER_SHIFT));
	SEED2("p1-hdr-checksum", cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_HDR | P1,
				     HDR_OFF(region_size), 1));
	SEED2("p1-sum-flip",
	      cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_SUM | P1, 0, 1 << 3));
	SEED2("p1-part-hdr-flip", cmd(s, HEAP_OP_XOR64, 0, POOL_RGN | P1,
				      POOL_PART_HDR_OFF + 40, 1));
	SEED2("p0-pool-hdr-a-flip",
	      cmd(s, HEAP_OP_XOR64, 0, POOL_RGN, POOL_HDR_A_OFF + 100, 1));
	SEED2("both-logs-cut", cmd(cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_LOG,
				       LOG(0, 3, 0), 1ULL << 41),
				   HEAP_OP_XOR64, 0, HEAP_RGN_LOG | P1,
				   LOG(1, 2, 0), 1ULL << 41));
}

/* ------------------------------------------------------------ R2, HD */

/* a fuzz-fsck input on another image: the 2-byte prefix, the commands */
#define SEEDP(pre, name, ...)                         \
	do {                                          \
		struct script s_ = { .len = 0 };      \
		struct script *s = &s_;               \
		uint8_t b_[2 + sizeof(s_.buf)] = pre; \
		__VA_ARGS__;                          \
		memcpy(b_ + 2, s->buf, s->len);       \
		put("fsck-" name, b_, 2 + s->len);    \
	} while (0)

#define R1 0x40 /* R2 region byte: region 1 */
/* R2: region 0's ring for slot 1 (region 1) in the heap region (its
 * header's xring_off, 0x2000 for this geometry), entry j, word w */
#define RING01(j, w) ((uint32_t)(0x2000 + (64 + (j)) * 16 + (w)*8))
#define XPROD(d) ((uint32_t)(PMA_XPROD_OFF + 8 * (d)))
#define XCONS(s) ((uint32_t)(PMA_XPROD_OFF + 8 * PMA_XRING_SLOTS + 8 * (s)))

static void fsck_r2_seeds(void)
{
	SEEDP("R2", "r2-clean", (void)s);
	/* a pending entry names another block (64 B further) */
	SEEDP("R2", "r2-ring-entry-block",
	      cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_RAW, RING01(0, 0), 0x40));
	/* a pending entry's tag (a torn entry) */
	SEEDP("R2", "r2-ring-entry-tag",
	      cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_RAW, RING01(1, 0), 1));
	/* a pending entry's dest word */
	SEEDP("R2", "r2-ring-entry-dest",
	      cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_RAW, RING01(2, 1), 0x80));
	/* the producer word ahead of the entries */
	SEEDP("R2", "r2-xprod-ahead",
	      cmd(s, HEAP_OP_ADD64, 0, HEAP_RGN_HDR, XPROD(1), 5));
	/* region 1's consumer word of region 0's ring (its check) */
	SEEDP("R2", "r2-xcons-check",
	      cmd(s, HEAP_OP_SET64, 0, HEAP_RGN_HDR | R1, XCONS(0), 3));
	SEEDP("R2", "r2-r1-log-flip",
	      cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_LOG | R1, LOG(0, 1, 0),
		  1ULL << 40));
	SEEDP("R2", "r2-r1-slabent-owner",
	      cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_SLABENT | R1, 8,
		  1ULL << PMA_PMAP_OWNER_SHIFT));
}

#define BLK 0x40 /* HD region byte: a live block of the heap */
/* HD: byte off of live block b (in pma_block_foreach's order: 0 the
 * superblock, 1 the inode table, 2 the journal slots, 3.. indexes and
 * names, 11.. the page objects) */
#define BLOCK(b, off) ((uint32_t)((b) << 14 | (off)))

static void fsck_hd_seeds(void)
{
	SEEDP("HD", "hd-clean", (void)s);
	SEEDP("HD", "hd-sb-version",
	      cmd(s, HEAP_OP_SET8, 0, BLK, BLOCK(0, 8), 99));
	SEEDP("HD", "hd-sb-itable",
	      cmd(s, HEAP_OP_XOR64, 0, BLK, BLOCK(0, 16), 0x40));
	SEEDP("HD", "hd-sb-jslots",
	      cmd(s, HEAP_OP_XOR64, 0, BLK, BLOCK(0, 88), 0x40));
	SEEDP("HD", "hd-inode-flip",
	      cmd(s, HEAP_OP_XOR64, 0, BLK, BLOCK(1, 64 + 16), 1));
	SEEDP("HD", "hd-jslot-flip",
	      cmd(s, HEAP_OP_XOR64, 0, BLK, BLOCK(2, 8), 1));
	SEEDP("HD", "hd-index-word",
	      cmd(s, HEAP_OP_XOR64, 0, BLK, BLOCK(3, 0), 0x40));
	/* a page log's stored tail past its entries; an entry's bytes; a
	 * page's nonce (every entry's crc) */
	SEEDP("HD", "hd-page-tail",
	      cmd(s, HEAP_OP_ADD64, 0, BLK, BLOCK(11, 8), 16));
	SEEDP("HD", "hd-page-log-entry",
	      cmd(s, HEAP_OP_XOR64, 0, BLK, BLOCK(11, 4160 + 8), 0xff));
	SEEDP("HD", "hd-page-nonce",
	      cmd(s, HEAP_OP_XOR64, 0, BLK, BLOCK(12, 16), 1));
	SEEDP("HD", "hd-heap-log-flip",
	      cmd(s, HEAP_OP_XOR64, 0, HEAP_RGN_LOG, LOG(0, 0, 0), 1ULL << 40));
}

int main(int argc, char **argv)
{
	int heap = argc == 3 && !strcmp(argv[1], "--heap");
	int fsck2 = argc == 3 && !strcmp(argv[1], "--fsck2");
	int more = argc == 3 && !strcmp(argv[1], "--fsck-more");

	if (argc != 2 && !heap && !fsck2 && !more) {
		fprintf(stderr, "usage: gen-corpus [--heap | --fsck2 | "
				"--fsck-more] DIR\n");
		return 2;
	}
	outdir = argv[argc - 1];
	if (fsck2) {
		fsck2_seeds();
		return 0;
	}
	if (more) {
		fsck_r2_seeds();
		fsck_hd_seeds();
		return 0;
	}
	if (heap) {
		heap_hdr_seeds();
		heap_log_seeds();
		heap_state_seeds();
		return 0;
	}
	pool_hdrs();
	part_hdrs();
	return 0;
}
