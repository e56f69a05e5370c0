/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl list: the pools pmad serves, with size, owner, group, mode, state
 * and clients. Only pmad knows them: the dispatcher always gives this
 * command the pmad seam (--socket, $PMAD_SOCKET or the default socket).
 */
#include <getopt.h>

#include "common.h"
#include "seam.h"
#include "show.h"

static const char list_usage[] =
	"usage: pmactl [--socket PATH] list [--json] [--human]\n"
	"\n"
	"List the pools pmad serves. The socket is --socket (a global\n"
	"option), $PMAD_SOCKET, or the default (/run/pmad/pmad.sock;\n"
	"$XDG_RUNTIME_DIR/pmad/pmad.sock for users). The table prints\n"
	"sizes with units; --json --human has pmad send them so too.\n"
	"\n"
	"options:\n" CMD_BASE_OPTIONS_HELP;

static const struct option list_options[] = {
	CMD_BASE_OPTIONS,
	{ NULL, 0, NULL, 0 },
};

int cmd_list(int argc, char **argv, struct cmd_ctx *ctx)
{
	struct json_object *doc = NULL;
	int c, rc;

	while ((c = cmd_getopt(ctx, "list", argc, argv, CMD_BASE_OPTSTRING,
			       list_options)) != -1) {
		rc = cmd_base_option(c, ctx, "list", list_usage);
		if (rc != CMD_CONTINUE)
			return rc;
	}
	if (optind < argc)
		return cmd_usage_error(ctx, "list", "unexpected argument '%s'",
				       argv[optind]);
	rc = ctx->seam->list(ctx, &doc);
	return cmd_doc_print(ctx, rc, doc, cmd_show_list);
}
