/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gen-corpus: write the seed corpus of fuzz-pool-hdr (not built by
 * default): valid pool and part headers and one file per way a header
 * can be wrong. Build it against a build tree's libraries, e.g.
 *   cc -std=gnu11 -I lib -I $BUILD -include $BUILD/config.h \
 *      tests/fuzz/gen-corpus.c $BUILD/lib/util/.libs/libutil.a -o gen-corpus
 *   ./gen-corpus tests/fuzz/corpus/pool-hdr
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen-corpus DIR\n");
		return 2;
	}
	outdir = argv[1];
	pool_hdrs();
	part_hdrs();
	return 0;
}
