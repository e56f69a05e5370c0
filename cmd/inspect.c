/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl inspect: a pool's header, persistence granularity, parts and
 * regions (and with --heap its heap), as aligned tables or one JSON
 * document. The pool is reached through the seam the dispatcher chose
 * (seam.h): a path opened read-only here, or a name pmad serves. The JSON
 * keys are API (pmactl-inspect(1)): add new ones, never rename.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "recovery.h"
#include "seam.h"
#include "show.h"

static const char inspect_usage[] =
	"usage: pmactl inspect [--json] [--human] [--heap] [--numa] [--files]\n"
	"                      [--slabs] [--recovery] POOL\n"
	"       pmactl --socket PATH inspect [--json] [--human] [--heap] [--numa]\n"
	"                      [--files] [--slabs] NAME\n"
	"\n"
	"Show a pool's header, granularity, parts and regions. The pool is\n"
	"opened read-only with a shared lock; POOL is its part 0. With\n"
	"--socket (or $PMAD_SOCKET) pmad shows the pool NAME it serves.\n"
	"\n"
	"options:\n"
	"      --heap          also show the PMAlloc heap: arenas, logs, size\n"
	"                      classes, used/free bytes, largest free extent\n"
	"      --numa          also show the heap's parts (one per NUMA node):\n"
	"                      node, arenas, used/free bytes, remote frees\n"
	"                      pending, fallbacks\n"
	"      --slabs         also show the heap's slabs per part, arena and\n"
	"                      size class (slabs, used and free blocks) and\n"
	"                      the mixed slabs (morphed: old class, class,\n"
	"                      live blocks of the old class)\n"
	"      --files         also show the HDPM file system: every file with\n"
	"                      its pages and page-log use\n"
	"      --recovery      also list what recovery still has to do in the\n"
	"                      heap: operations to replay per arena, torn log\n"
	"                      tails, remote frees pending; and in an HDPM\n"
	"                      file system: interrupted operations the mount\n"
	"                      undoes or finishes, background merges (not\n"
	"                      through pmad)\n" CMD_BASE_OPTIONS_HELP;

enum { OPT_HEAP = 256, OPT_FILES, OPT_NUMA, OPT_RECOVERY, OPT_SLABS };

static const struct option inspect_options[] = {
	CMD_BASE_OPTIONS,
	{ "heap", no_argument, NULL, OPT_HEAP },
	{ "files", no_argument, NULL, OPT_FILES },
	{ "numa", no_argument, NULL, OPT_NUMA },
	{ "recovery", no_argument, NULL, OPT_RECOVERY },
	{ "slabs", no_argument, NULL, OPT_SLABS },
	{ NULL, 0, NULL, 0 },
};

/* --recovery: what recovery still has to do, printed or (root) as
 * "recovery" in JSON */
static int recovery_show(const struct cmd_ctx *ctx, const char *path,
			 struct json_object *root)
{
	struct cmd_recovery p;
	struct json_object *o;
	int rc = cmd_recovery_pending(path, &p);

	if (rc < 0) {
		cmd_recovery_free(&p);
		return cmd_error(ctx, "cannot read the logs of '%s': %s", path,
				 pma_errormsg());
	}
	if (!root)
		rc = cmd_recovery_pending_print(&p);
	else if (!(o = cmd_recovery_pending_json(&p)))
		rc = -ENOMEM;
	else
		rc = util_json_add_obj(root, "recovery", o);
	cmd_recovery_free(&p);
	if (rc < 0)
		return cmd_error(ctx, "cannot print the recovery: %s",
				 strerror(-rc));
	return CMD_EXIT_OK;
}

static int show_pool_heap(struct json_object *doc)
{
	int rc = cmd_show_pool(doc);

	if (rc == 0)
		rc = cmd_show_heap(doc);
	if (rc == 0)
		rc = cmd_show_numa(doc);
	if (rc == 0)
		rc = cmd_show_slabs(doc);
	return rc < 0 ? rc : cmd_show_files(doc);
}

/* --numa: the heap's "numa" object to the top of doc; the rest of the
 * heap stays only if --heap asked for it */
static int numa_view(struct json_object *doc, int keep_heap)
{
	struct json_object *heap, *numa;

	if (!json_object_object_get_ex(doc, "heap", &heap) ||
	    !json_object_object_get_ex(heap, "numa", &numa))
		return -ENOENT;
	json_object_get(numa);
	if (json_object_object_add(doc, "numa", numa) < 0) {
		json_object_put(numa);
		return -ENOMEM;
	}
	if (!keep_heap)
		json_object_object_del(doc, "heap");
	else
		json_object_object_del(heap, "numa");
	return 0;
}

static int parse_args(int argc, char **argv, struct cmd_ctx *ctx,
		      unsigned *views, int *numa, int *recovery)
{
	int c, rc;

	while ((c = cmd_getopt(ctx, "inspect", argc, argv, CMD_BASE_OPTSTRING,
			       inspect_options)) != -1) {
		if (c == OPT_NUMA || c == OPT_RECOVERY) {
			*(c == OPT_NUMA ? numa : recovery) = 1;
			continue;
		}
		if (c == OPT_HEAP || c == OPT_FILES || c == OPT_SLABS) {
			*views |= c == OPT_HEAP	 ? CMD_VIEW_HEAP :
				  c == OPT_FILES ? CMD_VIEW_FILES :
						   CMD_VIEW_SLABS;
			continue;
		}
		rc = cmd_base_option(c, ctx, "inspect", inspect_usage);
		if (rc != CMD_CONTINUE)
			return rc;
	}
	if (optind >= argc)
		return cmd_usage_error(ctx, "inspect", "missing POOL argument");
	if (optind + 1 < argc)
		return cmd_usage_error(ctx, "inspect",
				       "unexpected argument '%s'",
				       argv[optind + 1]);
	return CMD_CONTINUE;
}

int cmd_inspect(int argc, char **argv, struct cmd_ctx *ctx)
{
	struct json_object *doc = NULL;
	unsigned views = 0;
	int rc, numa = 0, recovery = 0;

	rc = parse_args(argc, argv, ctx, &views, &numa, &recovery);
	if (rc != CMD_CONTINUE)
		return rc;
	rc = ctx->seam->inspect(ctx, argv[optind],
				views | (numa ? CMD_VIEW_HEAP : 0), &doc);
	if (rc == CMD_EXIT_OK && numa && doc &&
	    numa_view(doc, !!(views & CMD_VIEW_HEAP)) < 0) {
		json_object_put(doc);
		return cmd_error(ctx, "'%s': no heap to show parts of",
				 argv[optind]);
	}

	if (rc == CMD_EXIT_OK && recovery && doc && ctx->json &&
	    (rc = recovery_show(ctx, argv[optind], doc)) != CMD_EXIT_OK) {
		json_object_put(doc);
		return rc;
	}
	rc = cmd_doc_print(ctx, rc, doc, show_pool_heap);
	if (rc == CMD_EXIT_OK && recovery && !ctx->json) {
		putchar('\n');
		rc = recovery_show(ctx, argv[optind], NULL);
	}
	return rc;
}
