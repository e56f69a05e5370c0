/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The seam: how a pmactl command reaches pools. The dispatcher picks one
 * per run and puts it in ctx->seam; commands never choose:
 *   cmd_seam_local  the pool is a path, opened here (lib/pool, lib/pmalloc)
 *                   with its lock: exclusive to write, shared to read;
 *   cmd_seam_pmad   the pool is a name pmad serves, reached by requests on
 *                   its control socket (--socket or $PMAD_SOCKET, else the
 *                   default path for commands that only pmad can answer).
 * Both return the same JSON documents (lib/view builds them on either
 * side; keys in pmactl-inspect(1), pmactl-stat(1)), which the commands
 * print with one set of printers (show.c), so a pool looks the same
 * whichever way it was reached. Each op reports its own errors and returns
 * the exit status; *ret_doc may be set even on failure (a damaged pool is
 * still shown) and is the caller's to put.
 */
#ifndef PMAD_CMD_SEAM_H
#define PMAD_CMD_SEAM_H

#include <stdint.h>
#include <sys/types.h>
#include <json-c/json.h>

#include "builtin.h"

/* what create was given (paths and nodes are for the local seam) */
struct cmd_create_args {
	const char *const *paths; /* nparts: part 0 (or the pool's name) */
	unsigned nparts;
	const int *nodes; /* nnodes of them, or NULL */
	unsigned nnodes;
	uint64_t size; /* bytes per part; 0: not given (devdax) */
	mode_t mode;
	int mode_given; /* --mode was given (else each side's default) */
	unsigned flags; /* enum pool_create_flags */
	unsigned regions; /* PMAlloc regions per part (1: no heap made) */
};

enum cmd_views {
	CMD_VIEW_HEAP = 1 << 0, /* inspect --heap */
	CMD_VIEW_FILES = 1 << 1, /* inspect --files: "hdpm" */
	CMD_VIEW_SLABS = 1 << 2, /* inspect --slabs: "slabs" */
};

/* what morph was given (pma_morph_req) */
struct cmd_morph_args {
	uint64_t class_size; /* 0: not given */
	unsigned used_pct; /* 0: not given */
	int dry_run;
};

struct cmd_seam {
	const char *name; /* "local" or "pmad" */
	int (*create)(struct cmd_ctx *ctx, const struct cmd_create_args *args,
		      struct json_object **ret_doc);
	int (*inspect)(struct cmd_ctx *ctx, const char *pool, unsigned views,
		       struct json_object **ret_doc);
	/* pool NULL: every pool (pmad only) */
	int (*stat)(struct cmd_ctx *ctx, const char *pool,
		    struct json_object **ret_doc);
	int (*list)(struct cmd_ctx *ctx, struct json_object **ret_doc);
	/* compact the heap (dry_run: report what it would do) */
	int (*compact)(struct cmd_ctx *ctx, const char *pool, int dry_run,
		       struct json_object **ret_doc);
	/* the HDPM file system in the heap (with_pages: every page log),
	 * read-only: lib/view's view_hdpm_json */
	int (*files)(struct cmd_ctx *ctx, const char *pool, int with_pages,
		     struct json_object **ret_doc);
	/* the bookkeeping-log records (arena -1: all): view_log_json */
	int (*log)(struct cmd_ctx *ctx, const char *pool, long part, long arena,
		   struct json_object **ret_doc);
	/* a morph pass over the heap: view_morph_json */
	int (*morph)(struct cmd_ctx *ctx, const char *pool,
		     const struct cmd_morph_args *args,
		     struct json_object **ret_doc);
	/* merge every HDPM page log now: view_gc_json */
	int (*gc)(struct cmd_ctx *ctx, const char *pool,
		  struct json_object **ret_doc);
};

extern const struct cmd_seam cmd_seam_local;
extern const struct cmd_seam cmd_seam_pmad;

/* lib/view flags for documents this run prints: VIEW_HUMAN only for
 * --json --human (text output formats sizes itself) */
unsigned cmd_view_flags(const struct cmd_ctx *ctx);

/*
 * One request to pmad (ctx->socket, $PMAD_SOCKET or the default); takes
 * args. On a reply, *rep holds it (release it) and CMD_EXIT_OK is
 * returned even for pmad's error replies (rep->err); transport failures
 * are reported here ("cannot reach pmad ...") and return CMD_EXIT_FAIL.
 */
struct proto_reply;
int cmd_pmad_call(const struct cmd_ctx *ctx, const char *op,
		  struct json_object *args, struct proto_reply *rep);

#endif
