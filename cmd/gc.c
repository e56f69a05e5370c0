/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl gc: run an HDPM garbage-collection pass on a pool now. Every
 * page log is merged into a new page (copy-on-write) and freed; reports
 * the pages merged, the log bytes before and after, and the heap bytes
 * reclaimed (used before minus used after). The pool is opened for
 * writing (exclusive lock: not while hdpmfs has it mounted). Through
 * pmad (seam.h) pmad runs the pass on the heap it holds.
 */
#include <getopt.h>
#include <stdlib.h>

#include "common.h"
#include "seam.h"
#include "show.h"

static const char gc_usage[] =
	"usage: pmactl gc [--json] [--human] POOL\n"
	"       pmactl --socket PATH gc [--json] [--human] NAME\n"
	"\n"
	"Merge every page log of the HDPM file system in POOL's heap into its\n"
	"page now and report the bytes reclaimed. The pool is opened for\n"
	"writing; recovery runs first if an operation was interrupted. With\n"
	"--socket (or $PMAD_SOCKET) pmad runs the pass on the pool NAME it\n"
	"serves.\n"
	"\n"
	"options:\n" CMD_BASE_OPTIONS_HELP;

static const struct option gc_options[] = {
	CMD_BASE_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

int cmd_gc(int argc, char **argv, struct cmd_ctx *ctx)
{
	struct json_object *doc = NULL;
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
	rc = ctx->seam->gc(ctx, argv[optind], &doc);
	return cmd_doc_print(ctx, rc, doc, cmd_show_gc);
}
