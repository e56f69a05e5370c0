/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl builtins: every command has the same signature and lives in its own
 * file. The dispatcher (pmactl.c) has parsed the global options into ctx.
 * A command returns the process exit status: 0 ok, 1 failed, 2 usage error.
 */
#ifndef PMAD_CMD_BUILTIN_H
#define PMAD_CMD_BUILTIN_H

#include <stdio.h>

enum cmd_exit {
	CMD_EXIT_OK = 0,
	CMD_EXIT_FAIL = 1,
	CMD_EXIT_USAGE = 2,
};

struct pool;
struct cmd_seam;

struct cmd_ctx {
	int json; /* -j/--json: one JSON document on stdout */
	int human; /* -H/--human: sizes with units in JSON too */
	int is_tty; /* stderr is a terminal: progress bars allowed */
	const char *prog; /* "pmactl" */
	struct pool *pool; /* opened by cmd_pool_open(), closed by pmactl.c */
	const char *socket; /* -S/--socket or $PMAD_SOCKET, or NULL */
	/* how the command reaches pools (seam.h), chosen by the dispatcher */
	const struct cmd_seam *seam;
	const char *cmd_name; /* "stat", "pool stat": for pmad's errors */
	/* the exit status when stdout cannot be written at the end (0:
	 * CMD_EXIT_FAIL if the command succeeded); fsck's is 4 whatever it
	 * found, since its report was lost */
	int stdout_fail_rc;
};

int cmd_create(int argc, char **argv, struct cmd_ctx *ctx);
int cmd_inspect(int argc, char **argv, struct cmd_ctx *ctx);
int cmd_ns(int argc, char **argv, struct cmd_ctx *ctx);
int cmd_log(int argc, char **argv, struct cmd_ctx *ctx);
int cmd_fsck(int argc, char **argv, struct cmd_ctx *ctx);
int cmd_pool(int argc, char **argv, struct cmd_ctx *ctx);
int cmd_gc(int argc, char **argv, struct cmd_ctx *ctx);
int cmd_list(int argc, char **argv, struct cmd_ctx *ctx);
int cmd_stat(int argc, char **argv, struct cmd_ctx *ctx);
int cmd_compact(int argc, char **argv, struct cmd_ctx *ctx);
int cmd_morph(int argc, char **argv, struct cmd_ctx *ctx);

#endif
