/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl: the dispatcher. Parses the global options (stopping at the command
 * name), then runs one entry of commands[] with the rest of argv. Logging,
 * the fake NUMA topology, the pool a command opened and stdout are set up
 * and torn down here, so commands never repeat that code.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtin.h"
#include "common.h"
#include "seam.h"
#include "ns/ns.h"
#include "pool/pool.h"
#include "util/io.h"
#include "util/log.h"

enum cmd_flags {
	CMD_TOPOLOGY = 1 << 0, /* needs the (possibly fake) NUMA topology */
	/* reaches pools through ctx->seam: pmad's with --socket or
	 * $PMAD_SOCKET, else the pool files named on the command line */
	CMD_SEAM = 1 << 1,
	CMD_PMAD = 1 << 2, /* only pmad can answer: always the pmad seam */
};

struct cmd_struct {
	const char *name;
	int (*fn)(int argc, char **argv, struct cmd_ctx *ctx);
	unsigned flags;
	const char *summary;
};

static const struct cmd_struct commands[] = {
	{ "create", cmd_create, CMD_TOPOLOGY | CMD_SEAM, "create a pool" },
	{ "inspect", cmd_inspect, CMD_SEAM,
	  "show a pool's header, parts and regions" },
	{ "list", cmd_list, CMD_PMAD, "list the pools pmad serves" },
	{ "stat", cmd_stat, CMD_SEAM, "show pool usage and pmad's services" },
	{ "ns", cmd_ns, CMD_TOPOLOGY, "list persistent memory namespaces" },
	{ "log", cmd_log, CMD_SEAM, "decode the heap's bookkeeping logs" },
	{ "fsck", cmd_fsck, CMD_SEAM, "check a pool and its heap for damage" },
	{ "pool", cmd_pool, CMD_PMAD,
	  "list, create and show the pools pmad serves" },
	{ "gc", cmd_gc, CMD_SEAM, "merge the HDPM page logs of a pool now" },
	{ "compact", cmd_compact, CMD_SEAM,
	  "compact a pool's heap, give space back" },
	{ "morph", cmd_morph, CMD_SEAM,
	  "morph mostly free slabs into other size classes" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	size_t i;

	fputs("usage: pmactl [--version] [--help] [--json] [--human] "
	      "[--socket PATH]\n              <command> [<args>]\n\n"
	      "commands:\n",
	      f);
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name,
			commands[i].summary);
	fputs("\nglobal options:\n"
	      "  -j, --json     print one JSON document on stdout\n"
	      "  -H, --human    with --json: indent and print sizes with units\n"
	      "  -S, --socket PATH  reach pools through pmad's control socket:\n"
	      "                 create, inspect, stat, compact, fsck, log and\n"
	      "                 gc then name pools pmad serves (default:\n"
	      "                 $PMAD_SOCKET; list and pool use\n"
	      "                 /run/pmad/pmad.sock without either)\n"
	      "  -V, --version  show the version and exit\n"
	      "  -h, --help     show this help and exit\n"
	      "\n'pmactl help <command>' or 'pmactl <command> --help' shows "
	      "a command's options;\nsee also pmactl(1).\n",
	      f);
}

static const struct cmd_struct *cmd_find(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static int cmd_unknown(const char *name)
{
	fputs("pmactl: '", stderr);
	cmd_print_escaped(stderr, name);
	fputs("' is not a pmactl command\ntry 'pmactl --help'\n", stderr);
	return CMD_EXIT_USAGE;
}

static int cmd_run(const struct cmd_struct *cmd, int argc, char **argv,
		   struct cmd_ctx *ctx)
{
	char name[32];
	int rc;

	if ((cmd->flags & CMD_TOPOLOGY) && ns_topology_init() < 0)
		return cmd_error(ctx, "invalid PMAD_FAKE_NUMA: %s",
				 ns_errormsg());
	ctx->cmd_name = cmd->name;
	/* the one place that decides how pools are reached */
	ctx->seam = (cmd->flags & CMD_PMAD) ||
				    ((cmd->flags & CMD_SEAM) && ctx->socket) ?
			    &cmd_seam_pmad :
			    &cmd_seam_local;
	/* getopt_long names argv[0] in its messages: "pmactl create: ..." */
	snprintf(name, sizeof(name), "pmactl %s", cmd->name);
	argv[0] = name;
	/* glibc needs 0, not 1, to start over after the '+' scan */
	optind = 0;
	rc = cmd->fn(argc, argv, ctx);
	pool_close(&ctx->pool);
	return rc;
}

/* `pmactl help [CMD]`: the usage of CMD (or pmactl's) on stdout */
static int cmd_help(int argc, char **argv, struct cmd_ctx *ctx)
{
	char *help_argv[] = { argv[1], "--help", NULL };
	const struct cmd_struct *cmd;

	/* `pmactl help help` is help about help: pmactl's usage */
	if (argc < 2 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return CMD_EXIT_OK;
	}
	cmd = cmd_find(argv[1]);
	if (!cmd)
		return cmd_unknown(argv[1]);
	return cmd_run(cmd, 2, help_argv, ctx);
}

static const struct option global_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ "json", no_argument, NULL, 'j' },
	{ "human", no_argument, NULL, 'H' },
	{ "socket", required_argument, NULL, 'S' },
	{ NULL, 0, NULL, 0 },
};

/* returns CMD_CONTINUE when a command is to run at argv[optind] */
static int parse_global(int argc, char **argv, struct cmd_ctx *ctx)
{
	const char *env;
	int c;

	while ((c = cmd_getopt(ctx, NULL, argc, argv,
			       "+hVjHS:", global_options)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return CMD_EXIT_OK;
		case 'V':
			printf("pmactl (%s) %s\n", PACKAGE_NAME,
			       PACKAGE_VERSION);
			return CMD_EXIT_OK;
		case 'j':
			ctx->json = 1;
			break;
		case 'H':
			ctx->human = 1;
			break;
		case 'S':
			ctx->socket = optarg;
			break;
		default:
			fputs("try 'pmactl --help'\n", stderr);
			return CMD_EXIT_USAGE;
		}
	}
	env = getenv("PMAD_SOCKET");
	if (!ctx->socket && env && *env)
		ctx->socket = env;
	if (optind >= argc) {
		fputs("pmactl: no command given\n", stderr);
		usage(stderr);
		return CMD_EXIT_USAGE;
	}
	return CMD_CONTINUE;
}

static int dispatch(int argc, char **argv, struct cmd_ctx *ctx)
{
	const struct cmd_struct *cmd;
	int rc;

	rc = parse_global(argc, argv, ctx);
	if (rc != CMD_CONTINUE)
		return rc;
	argc -= optind;
	argv += optind;
	if (strcmp(argv[0], "help") == 0)
		return cmd_help(argc, argv, ctx);
	cmd = cmd_find(argv[0]);
	if (!cmd)
		return cmd_unknown(argv[0]);
	return cmd_run(cmd, argc, argv, ctx);
}

int main(int argc, char **argv)
{
	struct cmd_ctx ctx = { .prog = "pmactl" };
	int rc, close_rc;

	util_log_init();
	util_log_set_sink(util_log_stderr);
	ctx.is_tty = isatty(STDERR_FILENO);

	argv[0] = "pmactl"; /* getopt_long's messages name argv[0] */
	rc = dispatch(argc, argv, &ctx);
	close_rc = util_close_stdout();
	if (close_rc < 0) {
		fprintf(stderr, "pmactl: cannot write to stdout: %s\n",
			strerror(-close_rc));
		if (ctx.stdout_fail_rc)
			rc = ctx.stdout_fail_rc;
		else if (rc == CMD_EXIT_OK)
			rc = CMD_EXIT_FAIL;
	}
	return rc;
}
