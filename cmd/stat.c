/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl stat: usage of the pools pmad serves (or of one), with the
 * clients holding them and what pmad's services did: as a table, as JSON,
 * or with --prometheus in node_exporter's textfile collector format. On
 * the local seam (no --socket) POOL is a pool file, read here.
 */
#include <getopt.h>
#include <stdlib.h>

#include "common.h"
#include "seam.h"
#include "show.h"

static const char stat_usage[] =
	"usage: pmactl --socket PATH stat [--json|--prometheus] [NAME]\n"
	"       pmactl stat [--json|--prometheus] POOL\n"
	"\n"
	"Show pool usage: state, size, used and free bytes, bookkeeping log\n"
	"records, clients holding the pool, checkpoints and the time of the\n"
	"last one pmad made. Through pmad (--socket or $PMAD_SOCKET) every\n"
	"pool you may read, or NAME, and pmad's own counters; without it the\n"
	"pool file POOL.\n"
	"\n"
	"options:\n"
	"  -p, --prometheus    print node_exporter textfile collector metrics\n"
	"                      (pmad_* with pool=\"NAME\" labels)\n" CMD_BASE_OPTIONS_HELP;

static const struct option stat_options[] = {
	CMD_BASE_OPTIONS,
	{ "prometheus", no_argument, NULL, 'p' },
	{ NULL, 0, NULL, 0 },
};

int cmd_stat(int argc, char **argv, struct cmd_ctx *ctx)
{
	struct json_object *doc = NULL;
	const char *name = NULL;
	int c, rc, prometheus = 0;

	while ((c = cmd_getopt(ctx, "stat", argc, argv, CMD_BASE_OPTSTRING "p",
			       stat_options)) != -1) {
		if (c == 'p') {
			prometheus = 1;
			continue;
		}
		rc = cmd_base_option(c, ctx, "stat", stat_usage);
		if (rc != CMD_CONTINUE)
			return rc;
	}
	if (optind < argc)
		name = argv[optind++];
	if (optind < argc)
		return cmd_usage_error(ctx, "stat", "unexpected argument '%s'",
				       argv[optind]);
	if (prometheus && ctx->json)
		return cmd_usage_error(ctx, "stat",
				       "--json and --prometheus exclude each "
				       "other");
	if (prometheus)
		ctx->human = 0; /* metrics are numbers */
	rc = ctx->seam->stat(ctx, name, &doc);
	return cmd_doc_print(ctx, rc, doc,
			     prometheus ? cmd_show_prometheus : cmd_show_stat);
}
