/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl morph: a morph pass over the PMAlloc heap of a pool
 * (pma_heap_morph, layout version 9 and later): mostly free slabs of one
 * class become slabs of another, their live blocks stay where they are.
 * Prints what moved between classes. --dry-run opens the pool read-only
 * and reports what a pass would move. Through pmad (--socket) the morph
 * request runs the pass on the heap pmad holds.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "seam.h"
#include "show.h"

static const char morph_usage[] =
	"usage: pmactl morph [--class SIZE] [--used PCT] [--dry-run] [--json]\n"
	"                    [--human] POOL\n"
	"       pmactl --socket PATH morph [--class SIZE] [--used PCT]\n"
	"                    [--dry-run] [--json] [--human] NAME\n"
	"\n"
	"Run a morph pass over the heap of POOL (layout version 9 and later):\n"
	"in every arena, slabs with live blocks but at most PCT percent of\n"
	"them live become slabs of another size class. Their live blocks stay\n"
	"where they are; the new class's blocks are handed out around them.\n"
	"Prints the slabs and bytes that moved from one class to another. The\n"
	"pool is opened for writing (exclusive lock); recovery and a\n"
	"checkpoint run first. With --socket, pmad runs the pass on the heap\n"
	"of the pool NAME it holds.\n"
	"\n"
	"options:\n"
	"  -c, --class SIZE    morph into the size class of SIZE-byte blocks\n"
	"                      (SIZE must be a class's block size, e.g. 192);\n"
	"                      default: per arena, into the class with the\n"
	"                      fewest free blocks, while it has fewer free\n"
	"                      bytes than the slab's own class keeps\n"
	"  -u, --used PCT      morph only slabs with at most PCT percent of\n"
	"                      their blocks live, 1-100 (default 20)\n"
	"  -n, --dry-run       open read-only, report what would move\n" CMD_BASE_OPTIONS_HELP;

enum { OPT_DRY_RUN = 'n', OPT_CLASS = 'c', OPT_USED = 'u' };

static const struct option morph_options[] = {
	CMD_BASE_OPTIONS,
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "class", required_argument, NULL, OPT_CLASS },
	{ "used", required_argument, NULL, OPT_USED },
	{ NULL, 0, NULL, 0 },
};

/* the report document (view_morph_json's keys) as text */
static void morph_print_text(struct json_object *doc)
{
	char a[UTIL_SIZE_BUF], b[UTIL_SIZE_BUF];
	struct json_object *moves = cmd_jobj(doc, "moves"), *m, *v;
	uint64_t n = cmd_ju64(doc, "slabs_morphed");
	int dry = json_object_object_get_ex(doc, "dry_run", &v) &&
		  json_object_get_boolean(v);
	size_t i;

	printf("%s%" PRIu64 " slab%s morphed (%" PRIu64
	       " candidate%s with <= %" PRIu64 "%% used)\n",
	       dry ? "would be: " : "", n, n == 1 ? "" : "s",
	       cmd_ju64(doc, "candidates"),
	       cmd_ju64(doc, "candidates") == 1 ? "" : "s",
	       cmd_ju64(doc, "used_pct"));
	for (i = 0; i < cmd_jlen(moves); i++) {
		m = json_object_array_get_idx(moves, i);
		printf("  %" PRIu64 " B -> %" PRIu64 " B  %" PRIu64
		       " slab%s, %s live kept in place, %s free\n",
		       cmd_ju64(m, "from_block_size"),
		       cmd_ju64(m, "to_block_size"), cmd_ju64(m, "slabs"),
		       cmd_ju64(m, "slabs") == 1 ? "" : "s",
		       cmd_size_str(cmd_ju64(m, "live_bytes"), a, sizeof(a)),
		       cmd_size_str(cmd_ju64(m, "free_bytes"), b, sizeof(b)));
	}
	printf("bytes morphed   %s\n",
	       cmd_size_str(cmd_ju64(doc, "bytes_morphed"), a, sizeof(a)));
	if (cmd_ju64(doc, "moves_dropped"))
		printf("note: %" PRIu64 " more class pairs not listed\n",
		       cmd_ju64(doc, "moves_dropped"));
}

static int parse_pct(struct cmd_ctx *ctx, const char *s, unsigned *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < 1 || v > 100)
		return cmd_usage_error(ctx, "morph",
				       "--used '%s' is not a percentage from "
				       "1 to 100",
				       s);
	*ret = (unsigned)v;
	return CMD_CONTINUE;
}

static int parse_args(int argc, char **argv, struct cmd_ctx *ctx,
		      struct cmd_morph_args *a)
{
	int c, rc;

	while ((c = cmd_getopt(ctx, "morph", argc, argv,
			       CMD_BASE_OPTSTRING "nc:u:", morph_options)) !=
	       -1) {
		if (c == OPT_DRY_RUN) {
			a->dry_run = 1;
			continue;
		}
		if (c == OPT_CLASS) {
			if (util_size_parse(optarg, &a->class_size) < 0 ||
			    !a->class_size)
				return cmd_usage_error(ctx, "morph",
						       "--class '%s' is not a "
						       "block size",
						       optarg);
			continue;
		}
		if (c == OPT_USED) {
			rc = parse_pct(ctx, optarg, &a->used_pct);
			if (rc != CMD_CONTINUE)
				return rc;
			continue;
		}
		rc = cmd_base_option(c, ctx, "morph", morph_usage);
		if (rc != CMD_CONTINUE)
			return rc;
	}
	if (optind >= argc)
		return cmd_usage_error(ctx, "morph", "missing POOL argument");
	if (optind + 1 < argc)
		return cmd_usage_error(ctx, "morph", "unexpected argument '%s'",
				       argv[optind + 1]);
	return CMD_CONTINUE;
}

int cmd_morph(int argc, char **argv, struct cmd_ctx *ctx)
{
	struct cmd_morph_args a;
	struct json_object *doc = NULL;
	int rc;

	memset(&a, 0, sizeof(a));
	rc = parse_args(argc, argv, ctx, &a);
	if (rc != CMD_CONTINUE)
		return rc;
	rc = ctx->seam->morph(ctx, argv[optind], &a, &doc);
	if (rc == CMD_EXIT_OK && ctx->json)
		return cmd_json_print(ctx, doc);
	if (rc == CMD_EXIT_OK)
		morph_print_text(doc);
	json_object_put(doc);
	return rc;
}
