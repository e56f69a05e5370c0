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
#include <sys/types.h>

#include "heap-script.h"
#include "pmalloc/internal.h"

/* the pool file's size (setup_file's argument) */
#define POOL_SIZE (fx.size)
#define NSLOTS 48 /* dest words in the root object */
#define MAX_LIST 64 /* slabs / extents remembered from the image */
#define NSIZES 11
#define MAX_BLOCKS 128 /* live blocks remembered from the HDPM image */

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
	/* the HDPM image: its live blocks (file byte offsets, sizes) */
	uint64_t blk[MAX_BLOCKS], blk_size[MAX_BLOCKS];
	unsigned nblk;
};
extern struct heap_image fx;
/* the 2-part image: fx2[p] is part p's file (setup_file2) */
extern struct heap_image fx2[2];
/* the image of one part of 2 regions: fxr[r] is region r's heap, both
 * in one file (one map, pristine and patched buffer) (setup_regions) */
extern struct heap_image fxr[2];
/* the image whose heap holds an HDPM file system (setup_hdpm) */
extern struct heap_image fxh;

/* print what failed with pma_errormsg() and abort */
void die(const char *what);
/* wait for an image child: return if it exited 0, else print ERROR:
 * with what and how it ended (exit code or signal) and abort */
void child_wait(pid_t pid, const char *what);
/* a child building an image: print pma_errormsg() and _exit(code) */
__attribute__((noreturn)) void child_fail(int code, const char *what);
/* a failed call must return a negative errno and leave a message */
void check_rc(int rc, const char *what);
/* build the image of a pool of size bytes (once) and map it: fx.map,
 * fx.pristine, fx.patched */
void setup_file(uint64_t size);
/* the same for a pool of two parts of size bytes each (once): fx2 */
void setup_file2(uint64_t size);
/* one part of 2 regions (once): fxr. Region 1's holder crashed after
 * allocations and a free; region 0's frees of region 1's blocks wait in
 * its free ring for region 1 */
void setup_regions(uint64_t size);
/* a heap of size bytes holding an HDPM file system (once): fxh.
 * Directories, files with full (CoW) pages and page logs; then a child
 * appends to a log and crashes inside a journaled operation */
void setup_hdpm(uint64_t size);
/* helpers of the image builders: a new file's name; hold the file at
 * name open, unlinked, and map it into image (path, map, pristine,
 * patched); where the structures of the images of n parts or regions
 * are */
void image_name(char *buf, size_t len);
void image_hold(const char *name, struct heap_image *image, uint64_t size);
void image_survey(struct heap_image *images, unsigned n);
/* apply command c to fx.patched */
void cmd_apply(const struct heap_cmd *c);
/* apply command c to image->patched (a part of the 2-part image too) */
void cmd_apply_in(struct heap_image *image, const struct heap_cmd *c);

#endif
