/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl heap view: what `inspect --heap` adds. Opens the pool's PMAlloc
 * heap read-only (the logs are replayed into DRAM only, nothing is written)
 * and shows arenas, log use, size classes with their slabs and blocks,
 * used/free bytes and the largest free extent. JSON keys are API
 * (pmactl-inspect(1)).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common.h"
#include "pmalloc.h"
#include "util/json.h"

int cmd_heap_open(const struct cmd_ctx *ctx, const char *path,
		  struct pma_heap **ret_heap)
{
	if (pma_heap_open(path, PMA_HEAP_RDONLY, ret_heap) < 0)
		return cmd_error(ctx, "cannot open the heap of '%s': %s", path,
				 pma_errormsg());
	cmd_header_note(path, pma_heap_damage(*ret_heap));
	return CMD_EXIT_OK;
}

/* open the heap of the pool at path read-only and snapshot its stats,
 * the heap's and (*ret_as, st->narenas entries, to free) each arena's */
static int heap_stats_read(const struct cmd_ctx *ctx, const char *path,
			   struct pma_heap_stats *st,
			   struct pma_arena_stats **ret_as)
{
	struct pma_arena_stats *as = NULL;
	struct pma_heap *heap;
	int rc;

	rc = cmd_heap_open(ctx, path, &heap);
	if (rc != CMD_EXIT_OK)
		return rc;
	rc = pma_heap_stats(heap, st);
	if (rc == 0 && !(as = calloc(st->narenas, sizeof(*as)))) {
		pma_heap_close(heap);
		return cmd_error(ctx,
				 "cannot read heap statistics of '%s': "
				 "out of memory",
				 path);
	}
	if (rc == 0)
		rc = pma_heap_arena_stats(heap, as, st->narenas);
	pma_heap_close(heap);
	if (rc < 0) {
		free(as);
		return cmd_error(ctx, "cannot read heap statistics of '%s': %s",
				 path, pma_errormsg());
	}
	*ret_as = as;
	return CMD_EXIT_OK;
}

static struct json_object *json_arenas(const struct cmd_ctx *ctx,
				       const struct pma_heap_stats *st,
				       const struct pma_arena_stats *as)
{
	struct json_object *arr = json_object_new_array();
	struct json_object *a;
	unsigned i;
	int err;

	for (i = 0; arr && as && i < st->narenas; i++) {
		a = json_object_new_object();
		if (!a)
			goto out_put;
		err = util_json_add_u64(a, "arena", i);
		err |= util_json_add_u64(a, "slabs", as[i].slabs);
		err |= cmd_json_add_size(ctx, a, "used", as[i].used_bytes);
		err |= cmd_json_add_size(ctx, a, "free", as[i].free_bytes);
		err |= util_json_add_u64(a, "log_records", as[i].log_records);
		err |= util_json_add_u64(a, "remote_frees", as[i].remote_frees);
		err |= cmd_json_add_size(ctx, a, "local_free",
					 as[i].local_free_bytes);
		if (err || json_object_array_add(arr, a) < 0) {
			json_object_put(a);
			goto out_put;
		}
	}
	return arr;
out_put:
	json_object_put(arr);
	return NULL;
}

static struct json_object *json_classes(const struct cmd_ctx *ctx,
					const struct pma_heap_stats *st)
{
	struct json_object *arr = json_object_new_array();
	struct json_object *c;
	unsigned i;
	int err;

	for (i = 0; arr && i < st->nclasses; i++) {
		c = json_object_new_object();
		if (!c)
			goto out_put;
		err = util_json_add_u64(c, "class", i);
		err |= cmd_json_add_size(ctx, c, "block_size",
					 st->classes[i].block_size);
		err |= util_json_add_u64(c, "slabs", st->classes[i].slabs);
		err |= util_json_add_u64(c, "blocks", st->classes[i].blocks);
		err |= util_json_add_u64(c, "used", st->classes[i].used);
		if (err || json_object_array_add(arr, c) < 0) {
			json_object_put(c);
			goto out_put;
		}
	}
	return arr;
out_put:
	json_object_put(arr);
	return NULL;
}

int cmd_heap_json(const struct cmd_ctx *ctx, const char *path,
		  struct json_object *root)
{
	struct json_object *h, *classes, *arenas;
	struct pma_arena_stats *as = NULL;
	struct pma_heap_stats st;
	int rc, err;

	rc = heap_stats_read(ctx, path, &st, &as);
	if (rc != CMD_EXIT_OK)
		return rc;
	h = json_object_new_object();
	classes = json_classes(ctx, &st);
	arenas = json_arenas(ctx, &st, as);
	free(as);
	if (!h || !classes || !arenas) {
		json_object_put(h);
		json_object_put(classes);
		json_object_put(arenas);
		return cmd_error(ctx,
				 "cannot build JSON output: out of memory");
	}
	err = util_json_add_u64(h, "narenas", st.narenas);
	err |= util_json_add_u64(h, "log_capacity", st.log_cap);
	err |= util_json_add_u64(h, "log_records", st.log_records);
	err |= util_json_add_u64(h, "checkpoints", st.checkpoints);
	err |= util_json_add_u64(h, "local_checkpoints", st.local_checkpoints);
	err |= cmd_json_add_size(ctx, h, "size", st.heap_size);
	err |= cmd_json_add_size(ctx, h, "used", st.used_bytes);
	err |= cmd_json_add_size(ctx, h, "free", st.free_bytes);
	err |= cmd_json_add_size(ctx, h, "slab_bytes", st.slab_bytes);
	err |= util_json_add_u64(h, "extents", st.extents);
	err |= cmd_json_add_size(ctx, h, "extent_bytes", st.extent_bytes);
	err |= cmd_json_add_size(ctx, h, "largest_free_extent",
				 st.largest_free);
	err |= util_json_add_u64(h, "layout_version", st.layout_version);
	err |= util_json_add_u64(h, "map_groups", st.map_groups);
	err |= util_json_add_u64(h, "map_groups_marked", st.map_groups_marked);
	err |= cmd_json_add_size(ctx, h, "map_group_size", st.map_group_bytes);
	err |= util_json_add_u64(h, "map_summary_invalid",
				 st.map_summary_invalid);
	err |= util_json_add_obj(h, "arenas", arenas);
	err |= util_json_add_obj(h, "classes", classes);
	err |= util_json_add_obj(root, "heap", h);
	if (err)
		return cmd_error(ctx,
				 "cannot build JSON output: out of memory");
	return CMD_EXIT_OK;
}

static int print_classes(const struct pma_heap_stats *st)
{
	static const char *const head[] = { "CLASS",  "BLOCK", "SLABS",
					    "BLOCKS", "USED",  "FREE" };
	char cls[16], bsize[UTIL_SIZE_BUF], slabs[24], blocks[24], used[24];
	char avail[24];
	const char *row[6] = { cls, bsize, slabs, blocks, used, avail };
	struct cmd_table t;
	unsigned i;
	int rc;

	cmd_table_init(&t, 6, head, 0x3f);
	for (i = 0; i < st->nclasses; i++) {
		if (!st->classes[i].slabs)
			continue; /* only classes in use */
		snprintf(cls, sizeof(cls), "%u", i);
		cmd_size_str(st->classes[i].block_size, bsize, sizeof(bsize));
		snprintf(slabs, sizeof(slabs), "%" PRIu32,
			 st->classes[i].slabs);
		snprintf(blocks, sizeof(blocks), "%" PRIu64,
			 st->classes[i].blocks);
		snprintf(used, sizeof(used), "%" PRIu64, st->classes[i].used);
		snprintf(avail, sizeof(avail), "%" PRIu64,
			 st->classes[i].blocks - st->classes[i].used);
		cmd_table_add(&t, row);
	}
	printf("\nsize classes in use:%s\n", t.nrows > 1 ? "" : " none");
	rc = t.nrows > 1 ? cmd_table_print(&t, stdout, 2) : 0;
	cmd_table_release(&t);
	return rc;
}

/* the arenas with anything in them (slabs, records, pending frees) */
static int print_arenas(const struct pma_heap_stats *st,
			const struct pma_arena_stats *as)
{
	static const char *const head[] = { "ARENA",	   "SLABS",
					    "USED",	   "FREE",
					    "LOG RECORDS", "REMOTE FREES",
					    "LOCAL FREE" };
	char id[16], slabs[24], used[UTIL_SIZE_BUF], avail[UTIL_SIZE_BUF];
	char recs[24], rfrees[24], local[UTIL_SIZE_BUF];
	const char *row[7] = { id, slabs, used, avail, recs, rfrees, local };
	struct cmd_table t;
	unsigned i, idle = 0;
	int rc;

	cmd_table_init(&t, 7, head, 0x7f);
	for (i = 0; as && i < st->narenas; i++) {
		if (!as[i].slabs && !as[i].log_records && !as[i].remote_frees &&
		    !as[i].local_free_bytes) {
			idle++;
			continue;
		}
		snprintf(id, sizeof(id), "%u", i);
		snprintf(slabs, sizeof(slabs), "%" PRIu64, as[i].slabs);
		cmd_size_str(as[i].used_bytes, used, sizeof(used));
		cmd_size_str(as[i].free_bytes, avail, sizeof(avail));
		snprintf(recs, sizeof(recs), "%" PRIu64, as[i].log_records);
		snprintf(rfrees, sizeof(rfrees), "%" PRIu64,
			 as[i].remote_frees);
		cmd_size_str(as[i].local_free_bytes, local, sizeof(local));
		cmd_table_add(&t, row);
	}
	printf("\narenas in use (slabs with their live and free block bytes, "
	       "log records not checkpointed):%s\n",
	       t.nrows > 1 ? "" : " none");
	rc = t.nrows > 1 ? cmd_table_print(&t, stdout, 2) : 0;
	if (rc == 0 && idle && t.nrows > 1)
		printf("  (%u idle arena%s not shown)\n", idle,
		       idle == 1 ? "" : "s");
	cmd_table_release(&t);
	return rc;
}

int cmd_heap_print(const struct cmd_ctx *ctx, const char *path)
{
	char a[UTIL_SIZE_BUF], b[UTIL_SIZE_BUF], c[UTIL_SIZE_BUF];
	struct pma_arena_stats *as = NULL;
	struct pma_heap_stats st;
	int rc;

	rc = heap_stats_read(ctx, path, &st, &as);
	if (rc != CMD_EXIT_OK)
		return rc;
	printf("\nheap:\n");
	printf("  arenas:       %" PRIu32 " (log of %" PRIu32
	       " records each; %" PRIu64 " not checkpointed)\n",
	       st.narenas, st.log_cap, st.log_records);
	printf("  size:         %s (used %s, free %s)\n",
	       cmd_size_str(st.heap_size, a, sizeof(a)),
	       cmd_size_str(st.used_bytes, b, sizeof(b)),
	       cmd_size_str(st.free_bytes, c, sizeof(c)));
	printf("  slabs:        %s\n",
	       cmd_size_str(st.slab_bytes, a, sizeof(a)));
	printf("  extents:      %" PRIu64 " live (%s)\n", st.extents,
	       cmd_size_str(st.extent_bytes, a, sizeof(a)));
	printf("  largest free: %s\n",
	       cmd_size_str(st.largest_free, a, sizeof(a)));
	if (st.map_groups)
		printf("  page map:     layout %" PRIu32 "; open reads %" PRIu64
		       " of %" PRIu64 " groups of %s\n",
		       st.layout_version, st.map_groups_marked, st.map_groups,
		       cmd_size_str(st.map_group_bytes, a, sizeof(a)));
	else
		printf("  page map:     layout %" PRIu32 ", no summary: open "
		       "reads all of it\n",
		       st.layout_version);
	if (st.map_summary_invalid)
		printf("  warning:      %" PRIu64 " page map summary words "
		       "invalid (corrupt): their groups are read in full\n",
		       st.map_summary_invalid);
	rc = print_arenas(&st, as);
	free(as);
	if (rc < 0 || print_classes(&st) < 0)
		return cmd_error(ctx, "cannot print the heap: out of memory");
	return CMD_EXIT_OK;
}
