/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * heap-image: the crashed PMAlloc heap image the heap fuzz targets patch
 * (fuzz-heap: open / recovery, fuzz-fsck: pmactl fsck's check and repair).
 * setup_file() builds it once per process in an unlinked tmpfs file (see
 * heap-image.c); cmd_apply() applies one heap-script.h command to
 * fx.patched.
 */
#ifndef PMAD_FUZZ_HEAP_IMAGE_H
#define PMAD_FUZZ_HEAP_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "heap-script.h"
#include "pmalloc/internal.h"

/* the pool file's size (setup_file's argument) */
#define POOL_SIZE (fx.size)
#define NSLOTS 48 /* dest words in the root object */
#define MAX_LIST 64 /* slabs / extents remembered from the image */
#define NSIZES 11

/* the allocation sizes the image and the targets use */
extern const size_t sizes[NSIZES];

/* the crashed image and where its parts are (byte offsets in the file) */
struct heap_image {
	uint64_t size; /* of the pool file (of each part's) */
	/* the pool: /proc/self/fd/N of the unlinked pool file, or (2
	 * parts) part 0's file */
	char path[64];
	char file[64]; /* 2 parts: this part's file */
	unsigned part;
	uint8_t *map; /* the pool file, MAP_SHARED */
	uint8_t *pristine; /* the image after the crash */
	uint8_t *patched; /* this input's image */
	uint64_t region; /* heap region */
	struct pma_geom geom;
	uint64_t data; /* data area */
	uint64_t root; /* root object (byte offset in this part's file) */
	uint64_t dest_root; /* pool offset of the root object (part 0's) */
	uint64_t head[PMA_MAX_ARENAS]; /* current heads in the image */
	uint64_t slab[MAX_LIST], ext[MAX_LIST]; /* first pages */
	unsigned nslab, next;
};
extern struct heap_image fx;
/* the 2-part image: fx2[p] is part p's file (setup_file2) */
extern struct heap_image fx2[2];

/* print what failed with pma_errormsg() and abort */
void die(const char *what);
/* a failed call must return a negative errno and leave a message */
void check_rc(int rc, const char *what);
/* build the image of a pool of size bytes (once) and map it: fx.map,
 * fx.pristine, fx.patched */
void setup_file(uint64_t size);
/* the same for a pool of two parts of size bytes each (once): fx2 */
void setup_file2(uint64_t size);
/* apply command c to fx.patched */
void cmd_apply(const struct heap_cmd *c);
/* apply command c to image->patched (a part of the 2-part image too) */
void cmd_apply_in(struct heap_image *image, const struct heap_cmd *c);

#endif
