/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl helpers shared by every command: the common options (-h, -j, -H),
 * error reporting in one format, JSON output, aligned tables, the progress
 * bar and opening the pool named on the command line. Commands print through
 * these so that every command looks and fails the same way.
 */
#ifndef PMAD_CMD_COMMON_H
#define PMAD_CMD_COMMON_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

#include "util/size.h" /* UTIL_SIZE_BUF for cmd_size_str() */

#include "builtin.h"

struct pool;

/*
 * Options every command accepts; put CMD_BASE_OPTIONS first in a command's
 * longopts[] and CMD_BASE_OPTSTRING first in its short option string, then
 * hand unknown results of getopt_long() to cmd_base_option().
 */
#define CMD_BASE_OPTSTRING "hjH"
/* a macro holding a list of initializers: clang-format would mangle it */
/* clang-format off */
#define CMD_BASE_OPTIONS \
	{ "help", no_argument, NULL, 'h' }, \
	{ "json", no_argument, NULL, 'j' }, \
	{ "human", no_argument, NULL, 'H' }
#define CMD_BASE_OPTIONS_HELP \
	"  -j, --json          print one JSON document on stdout\n" \
	"  -H, --human         with --json: indent and print sizes with units\n" \
	"  -h, --help          show this help and exit\n"
/* clang-format on */

/*
 * getopt_long() for pmactl: getopt's own messages are turned off (opterr =
 * 0), since they print a bad option raw; instead, on an unknown option, a
 * missing or an unexpected argument this prints "<prog> <cmd>: <what>" on
 * stderr with the option escaped (cmd_escape), and returns '?'. cmd is
 * NULL for the global options ("<prog>: <what>"). optstring may start
 * with '+'.
 */
int cmd_getopt(const struct cmd_ctx *ctx, const char *cmd, int argc,
	       char **argv, const char *optstring,
	       const struct option *longopts);

/* outcome of cmd_base_option(): keep parsing, or return this exit status */
#define CMD_CONTINUE (-1)

/*
 * Handle a base option (or cmd_getopt()'s error '?') for command cmd, whose
 * usage text is usage. Returns CMD_CONTINUE, CMD_EXIT_OK (help printed) or
 * CMD_EXIT_USAGE (bad option; the message is already on stderr).
 */
int cmd_base_option(int c, struct cmd_ctx *ctx, const char *cmd,
		    const char *usage);

/* "pmactl: <msg>" (escaped) and "try 'pmactl <cmd> --help'" on stderr;
 * returns 2 */
int cmd_usage_error(const struct cmd_ctx *ctx, const char *cmd, const char *fmt,
		    ...) __attribute__((format(printf, 3, 4)));
/* "pmactl: <msg>" (escaped) on stderr; returns 1 */
int cmd_error(const struct cmd_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Paths may hold newlines and terminal escape sequences: everything pmactl
 * prints as text goes through these. Control characters and backslashes
 * become C escapes (\n, \t, \r, \\, \xNN); other bytes are kept.
 * cmd_escape returns a malloc'd copy (NULL on ENOMEM).
 */
char *cmd_escape(const char *s);
void cmd_print_escaped(FILE *f, const char *s);

/*
 * "<prog>: warning: pool '<path>': <note>" on stderr, once per process:
 * a header copy failed its check but the other holds the same state.
 */
void cmd_header_note(const char *path, const char *note);

/*
 * Open the pool at path with open_flags (enum pool_open_flags) into
 * ctx->pool; the dispatcher closes it after the command returns. Reports
 * "cannot open pool" itself; returns CMD_EXIT_OK or CMD_EXIT_FAIL.
 */
int cmd_pool_open(struct cmd_ctx *ctx, const char *path, unsigned open_flags);

/*
 * JSON output. Sizes are integers (bytes), or with -H strings with units:
 * keys never change. cmd_json_print() prints obj on stdout (indented with
 * -H), drops the reference and returns CMD_EXIT_OK or CMD_EXIT_FAIL.
 */
int cmd_json_add_size(const struct cmd_ctx *ctx, struct json_object *obj,
		      const char *key, uint64_t size);
int cmd_json_print(const struct cmd_ctx *ctx, struct json_object *obj);

/*
 * An aligned text table: add rows of ncols strings (copied), then print.
 * Columns whose bit is set in right_mask are right-aligned (numbers).
 */
struct cmd_table {
	unsigned ncols;
	unsigned right_mask;
	size_t nrows; /* rows added, header row included */
	size_t cap; /* rows allocated */
	char **cells; /* nrows * ncols strdup()ed strings */
	int failed; /* an allocation failed; print reports it */
};
int cmd_table_init(struct cmd_table *t, unsigned ncols,
		   const char *const *headers, unsigned right_mask);
/* add one row; a NULL cell prints as "-" */
int cmd_table_add(struct cmd_table *t, const char *const *cells);
/* print with indent spaces before each row; 0 or -ENOMEM/-EIO */
int cmd_table_print(const struct cmd_table *t, FILE *f, unsigned indent);
void cmd_table_release(struct cmd_table *t);

/*
 * Progress bar on stderr: "creating  [#####     ]  52%  2.0 GiB/4.0 GiB".
 * cmd_progress_update has the pool_progress_fn signature (arg is the
 * struct cmd_progress); it redraws only when the percentage changes.
 */
struct cmd_progress {
	const char *label;
	int last_pct; /* -1 before the first draw */
	int drawn; /* a line is on screen and needs a newline */
};
void cmd_progress_init(struct cmd_progress *p, const char *label);
void cmd_progress_update(uint64_t done, uint64_t total, void *arg);
/* end the line if one was drawn */
void cmd_progress_done(struct cmd_progress *p);

/* "1.5 GiB" into buf (UTIL_SIZE_BUF bytes) */
const char *cmd_size_str(uint64_t size, char *buf, size_t buf_size);

/*
 * The PMAlloc heap of the pool at path, opened read-only (heap.c): add it
 * as "heap" to a JSON root (lib/view). CMD_EXIT_OK or the exit status
 * after reporting the error.
 */
/* inspect --slabs: "slabs" (view_slabs_json) of the heap at path */
int cmd_slabs_json(const struct cmd_ctx *ctx, const char *path,
		   struct json_object *root);
int cmd_heap_json(const struct cmd_ctx *ctx, const char *path,
		  struct json_object *root);
/* open the heap read-only into *ret_heap, reporting a failure */
struct pma_heap;
int cmd_heap_open(const struct cmd_ctx *ctx, const char *path,
		  struct pma_heap **ret_heap);

#endif
