/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl gc: run an HDPM garbage-collection pass on a pool now. Every
 * page log is merged into a new page (copy-on-write) and freed; reports
 * the pages merged, the log bytes before and after, and the heap bytes
 * reclaimed (used before minus used after). The pool is opened for
 * writing (exclusive lock: not while hdpmfs has it mounted).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "files.h"
#include "hdpm.h"
#include "pmalloc.h"
#include "util/json.h"

static const char gc_usage[] =
	"usage: pmactl gc [--json] [--human] POOL\n"
	"\n"
	"Merge every page log of the HDPM file system in POOL's heap into its\n"
	"page now and report the bytes reclaimed. The pool is opened for\n"
	"writing; recovery runs first if an operation was interrupted.\n"
	"\n"
	"options:\n" CMD_BASE_OPTIONS_HELP;

static const struct option gc_options[] = {
	CMD_BASE_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

struct gc_result {
	int merged;
	struct hdpm_fs_info before, after;
	uint64_t used_before, used_after;
};

static uint64_t gc_reclaimed(const struct gc_result *r)
{
	return r->used_before > r->used_after ? r->used_before - r->used_after :
						0;
}

/* gc on an open heap that holds a file system */
static int gc_heap(const struct cmd_ctx *ctx, struct pma_heap *heap,
		   const char *path, struct gc_result *r)
{
	struct pma_heap_stats hs;
	struct hdpm_fs *fs = NULL;
	int rc;

	/* no thread of its own: the counts are this pass's */
	rc = hdpm_mount(heap, HDPM_HYBRID | HDPM_NO_GC_THREAD, &fs);
	if (rc == 0)
		rc = hdpm_fs_info(fs, &r->before);
	if (rc == 0)
		rc = pma_heap_stats(heap, &hs);
	if (rc == 0) {
		r->used_before = hs.used_bytes;
		rc = hdpm_gc(fs, 0);
	}
	if (rc >= 0) {
		r->merged = rc;
		rc = hdpm_fs_info(fs, &r->after);
	}
	if (rc == 0)
		rc = pma_heap_stats(heap, &hs);
	if (rc == 0)
		r->used_after = hs.used_bytes;
	hdpm_unmount(fs);
	if (rc < 0)
		return cmd_error(ctx, "gc of '%s' failed: %s", path,
				 hdpm_errormsg());
	return CMD_EXIT_OK;
}

static int gc_print(const struct cmd_ctx *ctx, const struct gc_result *r)
{
	char a[UTIL_SIZE_BUF], b[UTIL_SIZE_BUF];
	struct json_object *o;
	int err;

	if (!ctx->json) {
		printf("merged %d page log%s; log bytes %s -> %s\n", r->merged,
		       r->merged == 1 ? "" : "s",
		       cmd_size_str(r->before.log_bytes, a, sizeof(a)),
		       cmd_size_str(r->after.log_bytes, b, sizeof(b)));
		printf("reclaimed %s\n",
		       cmd_size_str(gc_reclaimed(r), a, sizeof(a)));
		return CMD_EXIT_OK;
	}
	o = json_object_new_object();
	if (!o)
		return cmd_error(ctx,
				 "cannot build JSON output: out of memory");
	err = util_json_add_u64(o, "pages_merged", (uint64_t)r->merged);
	err |= cmd_json_add_size(ctx, o, "log_bytes_before",
				 r->before.log_bytes);
	err |= cmd_json_add_size(ctx, o, "log_bytes_after", r->after.log_bytes);
	err |= cmd_json_add_size(ctx, o, "dead_bytes_before",
				 r->before.log_dead_bytes);
	err |= cmd_json_add_size(ctx, o, "heap_used_before", r->used_before);
	err |= cmd_json_add_size(ctx, o, "heap_used_after", r->used_after);
	err |= cmd_json_add_size(ctx, o, "bytes_reclaimed", gc_reclaimed(r));
	if (err) {
		json_object_put(o);
		return cmd_error(ctx,
				 "cannot build JSON output: out of memory");
	}
	return cmd_json_print(ctx, o);
}

static int gc_run(struct cmd_ctx *ctx, const char *path)
{
	struct files_view *v = NULL;
	struct gc_result r = { 0 };
	struct pma_heap *heap;
	int rc;

	/* read-only first: never make a file system where there is none */
	rc = cmd_files_open(ctx, path, &v);
	cmd_files_close(v);
	if (rc != CMD_EXIT_OK)
		return rc;
	if (pma_heap_open(path, 0, &heap) < 0)
		return cmd_error(ctx, "cannot open the heap of '%s': %s", path,
				 pma_errormsg());
	rc = gc_heap(ctx, heap, path, &r);
	pma_heap_close(heap);
	return rc == CMD_EXIT_OK ? gc_print(ctx, &r) : rc;
}

int cmd_gc(int argc, char **argv, struct cmd_ctx *ctx)
{
	int c, rc;

	while ((c = cmd_getopt(ctx, "gc", argc, argv, CMD_BASE_OPTSTRING,
			       gc_options)) != -1) {
		rc = cmd_base_option(c, ctx, "gc", gc_usage);
		if (rc != CMD_CONTINUE)
			return rc;
	}
	if (optind >= argc)
		return cmd_usage_error(ctx, "gc", "missing POOL argument");
	if (optind + 1 < argc)
		return cmd_usage_error(ctx, "gc", "unexpected argument '%s'",
				       argv[optind + 1]);
	return gc_run(ctx, argv[optind]);
}
