/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The local seam's HDPM and log ops (seam.h): the HDPM file system in a
 * pool's heap, opened read-only (PMA_HEAP_RDONLY + HDPM_RDONLY: nothing
 * is written, nothing recovered) for inspect --files and log --files; the
 * bookkeeping logs for log; a gc pass on the heap opened for writing.
 * lib/view builds the documents, as pmad does for the pools it holds.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common.h"
#include "files.h"
#include "hdpm.h"
#include "pmalloc.h"
#include "seam.h"
#include "util/json.h"
#include "view/view.h"

struct files_view {
	const struct cmd_ctx *ctx;
	struct pma_heap *heap;
	struct hdpm_fs *fs;
	struct hdpm_fs_info info;
};

int cmd_files_open(const struct cmd_ctx *ctx, const char *path,
		   struct files_view **ret_view)
{
	struct files_view *v = calloc(1, sizeof(*v));
	int rc;

	if (!v) {
		cmd_error(ctx, "out of memory");
		return CMD_EXIT_FAIL;
	}
	v->ctx = ctx;
	rc = cmd_heap_open(ctx, path, &v->heap);
	if (rc != CMD_EXIT_OK) {
		free(v);
		return rc == CMD_EXIT_OK ? CMD_EXIT_FAIL : rc;
	}
	if (hdpm_mount(v->heap, HDPM_RDONLY, &v->fs) < 0 ||
	    hdpm_fs_info(v->fs, &v->info) < 0) {
		cmd_error(ctx, "no HDPM file system in '%s': %s", path,
			  hdpm_errormsg());
		cmd_files_close(v);
		return CMD_EXIT_FAIL;
	}
	if (v->info.needs_recovery)
		fprintf(stderr,
			"pmactl: note: an HDPM operation in '%s' was "
			"interrupted; shown as on media, before recovery\n",
			path);
	*ret_view = v;
	return CMD_EXIT_OK;
}

void cmd_files_close(struct files_view *v)
{
	if (!v)
		return;
	hdpm_unmount(v->fs);
	pma_heap_close(v->heap);
	free(v);
}

/* ------------------------------------------------ the local seam's ops */

static int doc_new(const struct cmd_ctx *ctx, struct json_object **ret_doc)
{
	*ret_doc = json_object_new_object();
	return *ret_doc ? CMD_EXIT_OK : cmd_error(ctx, "out of memory");
}

int cmd_local_files(struct cmd_ctx *ctx, const char *path, int with_pages,
		    struct json_object **ret_doc)
{
	struct files_view *v = NULL;
	int rc;

	rc = cmd_files_open(ctx, path, &v);
	if (rc == CMD_EXIT_OK)
		rc = doc_new(ctx, ret_doc);
	if (rc == CMD_EXIT_OK &&
	    view_hdpm_json(v->fs, with_pages, cmd_view_flags(ctx), *ret_doc) <
		    0)
		rc = cmd_error(ctx, "cannot show the files of '%s': %s", path,
			       hdpm_errormsg());
	cmd_files_close(v);
	return rc;
}

int cmd_local_log(struct cmd_ctx *ctx, const char *path, long part, long arena,
		  struct json_object **ret_doc)
{
	struct pma_heap *heap = NULL;
	int rc;

	rc = cmd_heap_open(ctx, path, &heap);
	if (rc == CMD_EXIT_OK)
		rc = doc_new(ctx, ret_doc);
	if (rc == CMD_EXIT_OK &&
	    view_log_json(heap, part, arena, cmd_view_flags(ctx), *ret_doc) < 0)
		rc = cmd_error(ctx, "%s", pma_errormsg());
	pma_heap_close(heap);
	return rc;
}

int cmd_local_gc(struct cmd_ctx *ctx, const char *path,
		 struct json_object **ret_doc)
{
	struct files_view *v = NULL;
	struct view_gc r = { 0 };
	struct pma_heap *heap = NULL;
	int rc;

	/* read-only first: never make a file system where there is none */
	rc = cmd_files_open(ctx, path, &v);
	cmd_files_close(v);
	if (rc != CMD_EXIT_OK)
		return rc;
	if (pma_heap_open(path, 0, &heap) < 0)
		return cmd_error(ctx, "cannot open the heap of '%s': %s", path,
				 pma_errormsg());
	rc = view_hdpm_gc(heap, &r);
	pma_heap_close(heap);
	if (rc < 0)
		return cmd_error(ctx, "gc of '%s' failed: %s", path,
				 hdpm_errormsg());
	rc = doc_new(ctx, ret_doc);
	if (rc == CMD_EXIT_OK &&
	    view_gc_json(&r, cmd_view_flags(ctx), *ret_doc) < 0)
		rc = cmd_error(ctx, "cannot build JSON output: out of memory");
	return rc;
}
