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
#include "seam.h"
#include "show.h"

static const char compact_usage[] =
	"usage: pmactl compact [--dry-run] [--json] [--human] POOL\n"
	"       pmactl --socket PATH compact [--dry-run] [--json] [--human] "
	"NAME\n"
	"\n"
	"Compact the heap of POOL: checkpoint and truncate its logs, release\n"
	"empty slabs to the free pages, coalesce free runs and punch holes in\n"
	"them (file-backed parts), so the file system gets the space back.\n"
	"Objects are never moved. The pool is opened for writing (exclusive\n"
	"lock); recovery runs first if an operation was interrupted.\n"
	"With --socket (or $PMAD_SOCKET), NAME is a pool pmad serves, and\n"
	"pmad compacts the heap it holds (EBUSY while a client has it open).\n"
	"\n"
	"options:\n"
	"  -n, --dry-run       open read-only, report what would be done\n" CMD_BASE_OPTIONS_HELP;

enum { OPT_DRY_RUN = 'n' };

static const struct option compact_options[] = {
	CMD_BASE_OPTIONS,
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ NULL, 0, NULL, 0 },
};

/* the report document (view_compact_json's keys) as text */
static void compact_print_text(struct json_object *doc)
{
	char a[UTIL_SIZE_BUF], b[UTIL_SIZE_BUF];
	uint64_t released = cmd_ju64(doc, "slabs_released");
	struct json_object *v;
	int dry = json_object_object_get_ex(doc, "dry_run", &v) &&
		  json_object_get_boolean(v);

	printf("%s%" PRIu64 " empty slab%s released\n", dry ? "would be: " : "",
	       released, released == 1 ? "" : "s");
	printf("log records     %" PRIu64 " -> %" PRIu64 "\n",
	       cmd_ju64(doc, "log_records_before"),
	       cmd_ju64(doc, "log_records_after"));
	printf("free runs       %" PRIu64 " -> %" PRIu64 "\n",
	       cmd_ju64(doc, "free_runs_before"),
	       cmd_ju64(doc, "free_runs_after"));
	printf("largest free    %s -> %s\n",
	       cmd_size_str(cmd_ju64(doc, "largest_free_before"), a, sizeof(a)),
	       cmd_size_str(cmd_ju64(doc, "largest_free_after"), b, sizeof(b)));
	printf("file allocated  %s -> %s\n",
	       cmd_size_str(cmd_ju64(doc, "file_bytes_before"), a, sizeof(a)),
	       cmd_size_str(cmd_ju64(doc, "file_bytes_after"), b, sizeof(b)));
	printf("reclaimed       %s\n",
	       cmd_size_str(cmd_ju64(doc, "bytes_reclaimed"), a, sizeof(a)));
	if (cmd_jstr(doc, "note"))
		printf("note: %s\n", cmd_jstr(doc, "note"));
}

/* the pool is reached through the seam: a path here, a name through pmad */
static int compact_run(struct cmd_ctx *ctx, const char *pool, int dry)
{
	struct json_object *doc = NULL;
	int rc;

	rc = ctx->seam->compact(ctx, pool, dry, &doc);
	if (rc == CMD_EXIT_OK && ctx->json)
		return cmd_json_print(ctx, doc);
	if (rc == CMD_EXIT_OK)
		compact_print_text(doc);
	json_object_put(doc);
	return rc;
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
