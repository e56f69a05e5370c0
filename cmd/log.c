/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl log: decode the PMAlloc bookkeeping logs of a pool: every record
 * not yet checkpointed, arena by arena, in log order. The heap is opened
 * read-only, so the records shown are exactly what recovery would replay.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "files.h"
#include "pmalloc.h"
#include "util/json.h"

static const char log_usage[] =
	"usage: pmactl log [--json] [--human] [--arena [P.]N] POOL\n"
	"       pmactl log [--json] [--human] --files POOL\n"
	"\n"
	"Decode the bookkeeping logs of the pool's heap: the records since the\n"
	"last checkpoint, which recovery replays. The pool is opened read-only.\n"
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

struct log_walk {
	const struct cmd_ctx *ctx;
	long arena; /* -1: all */
	long part; /* with arena: its part */
	int parts; /* the heap has several: arenas are shown as P.N */
	struct json_object *arr; /* JSON output */
	struct cmd_table table; /* human output */
	uint64_t count;
};

/* a record that names a slab (its class is shown) */
static int is_slab_op(const struct pma_log_entry *e)
{
	return !strcmp(e->type, "slab_new") || !strcmp(e->type, "slab_free");
}

static int log_json_entry(struct log_walk *w, const struct pma_log_entry *e)
{
	struct json_object *o = json_object_new_object();
	int err;

	if (!o)
		return -ENOMEM;
	err = util_json_add_u64(o, "arena", e->arena);
	err |= util_json_add_u64(o, "part", e->part);
	err |= util_json_add_u64(o, "index", e->index);
	err |= util_json_add_str(o, "type", e->type);
	err |= util_json_add_hex(o, "offset", e->off);
	if (e->dest)
		err |= util_json_add_hex(o, "dest", e->dest);
	if (e->size)
		err |= cmd_json_add_size(w->ctx, o, "size", e->size);
	if (is_slab_op(e))
		err |= util_json_add_u64(o, "class", e->cls);
	if (err || json_object_array_add(w->arr, o) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	return 0;
}

static int log_table_entry(struct log_walk *w, const struct pma_log_entry *e)
{
	char arena[16], idx[24], off[24], dest[24], size[UTIL_SIZE_BUF];
	char cls[16];
	const char *row[7] = { arena, idx, e->type, off, dest, size, cls };

	if (w->parts)
		snprintf(arena, sizeof(arena), "%u.%u", e->part, e->arena);
	else
		snprintf(arena, sizeof(arena), "%u", e->arena);
	snprintf(idx, sizeof(idx), "%" PRIu64, e->index);
	snprintf(off, sizeof(off), "0x%" PRIx64, e->off);
	snprintf(dest, sizeof(dest), e->dest ? "0x%" PRIx64 : "-", e->dest);
	if (e->size)
		cmd_size_str(e->size, size, sizeof(size));
	else
		snprintf(size, sizeof(size), "-");
	snprintf(cls, sizeof(cls), is_slab_op(e) ? "%u" : "-", e->cls);
	return cmd_table_add(&w->table, row);
}

static int log_entry(const struct pma_log_entry *e, void *arg)
{
	struct log_walk *w = arg;

	if (w->arena >= 0 &&
	    ((long)e->arena != w->arena || (long)e->part != w->part))
		return 0;
	w->count++;
	return w->arr ? log_json_entry(w, e) : log_table_entry(w, e);
}

static int log_print(struct log_walk *w, int rc)
{
	struct json_object *root;

	if (rc < 0 && rc != -ENOMEM)
		return cmd_error(w->ctx, "cannot decode the log: %s",
				 pma_errormsg());
	if (w->arr) {
		root = json_object_new_object();
		if (!root || rc < 0 ||
		    util_json_add_u64(root, "count", w->count) < 0 ||
		    util_json_add_obj(root, "records", w->arr) < 0) {
			json_object_put(root);
			return cmd_error(w->ctx, "cannot build JSON output: "
						 "out of memory");
		}
		return cmd_json_print(w->ctx, root);
	}
	if (rc < 0)
		return cmd_error(w->ctx,
				 "cannot decode the log: out of memory");
	printf("%" PRIu64 " record%s not checkpointed\n", w->count,
	       w->count == 1 ? "" : "s");
	if (w->count && cmd_table_print(&w->table, stdout, 0) < 0)
		return cmd_error(w->ctx, "cannot print the log: out of memory");
	return CMD_EXIT_OK;
}

/* --arena must name an arena of this heap (of part w->part) */
static int log_arena_check(const struct cmd_ctx *ctx, struct pma_heap *heap,
			   struct log_walk *w)
{
	struct pma_heap_stats st, ps;

	if (pma_heap_stats(heap, &st) < 0)
		return cmd_error(ctx, "cannot read the heap: %s",
				 pma_errormsg());
	w->parts = st.parts > 1;
	if (w->arena < 0)
		return CMD_EXIT_OK;
	if (pma_heap_part_stats(heap, (unsigned)w->part, &ps) < 0)
		return cmd_error(ctx,
				 "part %ld holds no heap (the heap has "
				 "%u part%s)",
				 w->part, st.parts, st.parts == 1 ? "" : "s");
	if (w->arena >= (long)ps.narenas)
		return cmd_error(
			ctx, "arena %ld does not exist (%s%u arenas)", w->arena,
			st.parts > 1 ? "its part has " : "the heap has ",
			ps.narenas);
	return CMD_EXIT_OK;
}

static int log_run(struct cmd_ctx *ctx, const char *path, long part, long arena)
{
	static const char *const head[] = { "ARENA", "INDEX", "TYPE", "OFFSET",
					    "DEST",  "SIZE",  "CLASS" };
	struct log_walk w = { .ctx = ctx, .arena = arena, .part = part };
	struct pma_heap *heap;
	int rc;

	rc = cmd_heap_open(ctx, path, &heap);
	if (rc != CMD_EXIT_OK)
		return rc;
	rc = log_arena_check(ctx, heap, &w);
	if (rc != CMD_EXIT_OK) {
		pma_heap_close(heap);
		return rc;
	}
	if (ctx->json)
		w.arr = json_object_new_array();
	cmd_table_init(&w.table, 7, head, 1u << 0 | 1u << 1 | 1u << 5);
	rc = (ctx->json && !w.arr) ? -ENOMEM :
				     pma_log_foreach(heap, log_entry, &w);
	pma_heap_close(heap);
	rc = log_print(&w, rc);
	cmd_table_release(&w.table);
	return rc;
}

int cmd_log(int argc, char **argv, struct cmd_ctx *ctx)
{
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
		return cmd_files_log(ctx, argv[optind]);
	return log_run(ctx, argv[optind], part, arena);
}
