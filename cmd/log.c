/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl log: decode the PMAlloc bookkeeping logs of a pool: every record
 * not yet checkpointed, arena by arena, in log order; or (--files) the
 * HDPM page logs. Offline the heap is opened read-only, so the records
 * shown are exactly what recovery would replay; through pmad (seam.h)
 * they are those of the heap pmad holds, since its last checkpoint.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>

#include "common.h"
#include "seam.h"
#include "show.h"

static const char log_usage[] =
	"usage: pmactl log [--json] [--human] [--arena [P.]N] POOL\n"
	"       pmactl log [--json] [--human] --files POOL\n"
	"       pmactl --socket PATH log [--json] [--human] [--arena [P.]N |\n"
	"                        --files] NAME\n"
	"\n"
	"Decode the bookkeeping logs of the pool's heap: the records since the\n"
	"last checkpoint, which recovery replays. The pool is opened read-only.\n"
	"With --socket (or $PMAD_SOCKET) pmad shows the logs of the pool NAME\n"
	"it serves (its heap as pmad holds it).\n"
	"\n"
	"options:\n"
	"  -a, --arena [P.]N   only the log of arena N (of part P, default 0,\n"
	"                      in a heap over several parts)\n"
	"      --files         the HDPM page logs instead: per file and page,\n"
	"                      entries, log bytes, live and dead bytes\n" CMD_BASE_OPTIONS_HELP;

enum { OPT_FILES = 256 };

static const struct option log_options[] = {
	CMD_BASE_OPTIONS,
	{ "arena", required_argument, NULL, 'a' },
	{ "files", no_argument, NULL, OPT_FILES },
	{ NULL, 0, NULL, 0 },
};

int cmd_log(int argc, char **argv, struct cmd_ctx *ctx)
{
	struct json_object *doc = NULL;
	long arena = -1, part = 0;
	char *end;
	int c, rc, files = 0;

	while ((c = cmd_getopt(ctx, "log", argc, argv,
			       CMD_BASE_OPTSTRING "a:", log_options)) != -1) {
		if (c == 'a') {
			errno = 0;
			part = 0;
			arena = strtol(optarg, &end, 10);
			if (!errno && end != optarg && *end == '.' &&
			    arena >= 0 && arena < 64 && end[1] >= '0' &&
			    end[1] <= '9') { /* P.N */
				part = arena;
				arena = strtol(end + 1, &end, 10);
			}
			if (errno || end == optarg || *end || arena < 0)
				return cmd_usage_error(ctx, "log",
						       "invalid arena '%s' "
						       "(N or PART.N)",
						       optarg);
			continue;
		}
		if (c == OPT_FILES) {
			files = 1;
			continue;
		}
		rc = cmd_base_option(c, ctx, "log", log_usage);
		if (rc != CMD_CONTINUE)
			return rc;
	}
	if (optind >= argc)
		return cmd_usage_error(ctx, "log", "missing POOL argument");
	if (optind + 1 < argc)
		return cmd_usage_error(ctx, "log", "unexpected argument '%s'",
				       argv[optind + 1]);
	if (files && arena >= 0)
		return cmd_usage_error(
			ctx, "log", "--files and --arena do not go together");
	if (files)
		rc = ctx->seam->files(ctx, argv[optind], 1, &doc);
	else
		rc = ctx->seam->log(ctx, argv[optind], part, arena, &doc);
	return cmd_doc_print(ctx, rc, doc,
			     files ? cmd_show_page_logs : cmd_show_log);
}
