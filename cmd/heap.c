/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl heap view: what `inspect --heap` adds on the local seam. Opens the
 * pool's PMAlloc heap read-only (the logs are replayed into DRAM only,
 * nothing is written); lib/view turns its statistics into the "heap"
 * object (keys in pmactl-inspect(1)), which show.c prints as text.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "pmalloc.h"
#include "seam.h"
#include "util/errmsg.h"
#include "view/view.h"

int cmd_heap_open(const struct cmd_ctx *ctx, const char *path,
		  struct pma_heap **ret_heap)
{
	if (pma_heap_open(path, PMA_HEAP_RDONLY, ret_heap) < 0)
		return cmd_error(ctx, "cannot open the heap of '%s': %s", path,
				 pma_errormsg());
	cmd_header_note(path, pma_heap_damage(*ret_heap));
	return CMD_EXIT_OK;
}

/* a view of the heap of path, read-only, into root; what names the
 * view in the error message */
static int heap_view_json(const struct cmd_ctx *ctx, const char *path,
			  struct json_object *root,
			  int (*view)(struct pma_heap *, unsigned,
				      struct json_object *),
			  const char *what)
{
	struct pma_heap *heap;
	int rc;

	rc = cmd_heap_open(ctx, path, &heap);
	if (rc != CMD_EXIT_OK)
		return rc;
	rc = view(heap, cmd_view_flags(ctx), root);
	pma_heap_close(heap);
	if (rc < 0)
		return cmd_error(ctx, "cannot read the %s of '%s': %s", what,
				 path, util_errmsg());
	return CMD_EXIT_OK;
}

int cmd_slabs_json(const struct cmd_ctx *ctx, const char *path,
		   struct json_object *root)
{
	return heap_view_json(ctx, path, root, view_slabs_json, "slabs");
}

int cmd_heap_json(const struct cmd_ctx *ctx, const char *path,
		  struct json_object *root)
{
	return heap_view_json(ctx, path, root, view_heap_json, "heap");
}
