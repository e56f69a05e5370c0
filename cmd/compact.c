/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl compact: compact the PMAlloc heap of a pool (pma_heap_compact):
 * checkpoint and truncate the logs, give empty slabs back to the free
 * pages, coalesce free runs and punch holes in them so the file system
 * gets the space back. Objects never move. --dry-run opens the pool
 * read-only and reports what a compaction would do (pma_heap_compact_plan).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "pmalloc.h"
#include "util/json.h"

static const char compact_usage[] =
	"usage: pmactl compact [--dry-run] [--json] [--human] POOL\n"
	"\n"
	"Compact the heap of POOL: checkpoint and truncate its logs, release\n"
	"empty slabs to the free pages, coalesce free runs and punch holes in\n"
	"them (file-backed parts), so the file system gets the space back.\n"
	"Objects are never moved. The pool is opened for writing (exclusive\n"
	"lock); recovery runs first if an operation was interrupted.\n"
	"\n"
	"options:\n"
	"  -n, --dry-run       open read-only, report what would be done\n" CMD_BASE_OPTIONS_HELP;

enum { OPT_DRY_RUN = 'n' };

static const struct option compact_options[] = {
	CMD_BASE_OPTIONS,
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ NULL, 0, NULL, 0 },
};

static void compact_print_text(const struct cmd_ctx *ctx,
			       const struct pma_compact_report *r, int dry)
{
	char a[UTIL_SIZE_BUF], b[UTIL_SIZE_BUF];

	(void)ctx;
	printf("%s%" PRIu64 " empty slab%s released\n", dry ? "would be: " : "",
	       r->slabs_released, r->slabs_released == 1 ? "" : "s");
	printf("log records     %" PRIu64 " -> %" PRIu64 "\n",
	       r->log_records_before, dry ? 0 : r->log_records_after);
	printf("free runs       %" PRIu64 " -> %" PRIu64 "\n",
	       r->free_runs_before, r->free_runs_after);
	printf("largest free    %s -> %s\n",
	       cmd_size_str(r->largest_free_before, a, sizeof(a)),
	       cmd_size_str(r->largest_free_after, b, sizeof(b)));
	printf("file allocated  %s -> %s\n",
	       cmd_size_str(r->file_bytes_before, a, sizeof(a)),
	       cmd_size_str(r->file_bytes_after, b, sizeof(b)));
	printf("reclaimed       %s\n",
	       cmd_size_str(r->reclaimed_bytes, a, sizeof(a)));
	if (r->note[0])
		printf("note: %s\n", r->note);
}

static int compact_print(const struct cmd_ctx *ctx,
			 const struct pma_compact_report *r, int dry)
{
	struct json_object *o;
	int err;

	if (!ctx->json) {
		compact_print_text(ctx, r, dry);
		return CMD_EXIT_OK;
	}
	o = json_object_new_object();
	if (!o)
		return cmd_error(ctx,
				 "cannot build JSON output: out of memory");
	err = json_object_object_add(o, "dry_run",
				     json_object_new_boolean(dry));
	err |= util_json_add_u64(o, "slabs_released", r->slabs_released);
	err |= util_json_add_u64(o, "log_records_before",
				 r->log_records_before);
	err |= util_json_add_u64(o, "log_records_after",
				 dry ? 0 : r->log_records_after);
	err |= util_json_add_u64(o, "free_runs_before", r->free_runs_before);
	err |= util_json_add_u64(o, "free_runs_after", r->free_runs_after);
	err |= cmd_json_add_size(ctx, o, "largest_free_before",
				 r->largest_free_before);
	err |= cmd_json_add_size(ctx, o, "largest_free_after",
				 r->largest_free_after);
	err |= cmd_json_add_size(ctx, o, "free_bytes_after",
				 r->free_bytes_after);
	err |= cmd_json_add_size(ctx, o, "punched_bytes", r->punched_bytes);
	err |= cmd_json_add_size(ctx, o, "file_bytes_before",
				 r->file_bytes_before);
	err |= cmd_json_add_size(ctx, o, "file_bytes_after",
				 r->file_bytes_after);
	err |= cmd_json_add_size(ctx, o, "bytes_reclaimed", r->reclaimed_bytes);
	err |= json_object_object_add(o, "holes_punched",
				      json_object_new_boolean(r->punched));
	if (r->note[0])
		err |= json_object_object_add(o, "note",
					      json_object_new_string(r->note));
	if (err) {
		json_object_put(o);
		return cmd_error(ctx,
				 "cannot build JSON output: out of memory");
	}
	return cmd_json_print(ctx, o);
}

static int compact_run(struct cmd_ctx *ctx, const char *path, int dry)
{
	struct pma_compact_report r;
	struct pma_heap *heap;
	int rc;

	if (pma_heap_open(path, dry ? PMA_HEAP_RDONLY : 0, &heap) < 0)
		return cmd_error(ctx, "cannot open the heap of '%s': %s", path,
				 pma_errormsg());
	cmd_header_note(path, pma_heap_damage(heap));
	rc = dry ? pma_heap_compact_plan(heap, &r) : pma_heap_compact(heap, &r);
	if (rc < 0) {
		rc = cmd_error(ctx, "compaction of '%s' failed: %s", path,
			       pma_errormsg());
		pma_heap_close(heap);
		return rc;
	}
	pma_heap_close(heap);
	return compact_print(ctx, &r, dry);
}

int cmd_compact(int argc, char **argv, struct cmd_ctx *ctx)
{
	int c, rc, dry = 0;

	while ((c = cmd_getopt(ctx, "compact", argc, argv,
			       CMD_BASE_OPTSTRING "n", compact_options)) !=
	       -1) {
		if (c == OPT_DRY_RUN) {
			dry = 1;
			continue;
		}
		rc = cmd_base_option(c, ctx, "compact", compact_usage);
		if (rc != CMD_CONTINUE)
			return rc;
	}
	if (optind >= argc)
		return cmd_usage_error(ctx, "compact", "missing POOL argument");
	if (optind + 1 < argc)
		return cmd_usage_error(ctx, "compact",
				       "unexpected argument '%s'",
				       argv[optind + 1]);
	return compact_run(ctx, argv[optind], dry);
}
