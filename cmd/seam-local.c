/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The local seam (seam.h): the pool is a path, opened in this process with
 * lib/pool and lib/pmalloc under the pool's lock (exclusive to create,
 * shared to read). A pool pmad holds fails here with "pool is held by pmad
 * (pid N); use --socket" (lib/pool names the lock's holder).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "common.h"
#include "files.h"
#include "ns/ns.h"
#include "pmalloc.h"
#include "pool/pool.h"
#include "seam.h"
#include "show.h"
#include "util/json.h"
#include "view/view.h"

unsigned cmd_view_flags(const struct cmd_ctx *ctx)
{
	return ctx->json && ctx->human ? VIEW_HUMAN : 0;
}

static int doc_new(const struct cmd_ctx *ctx, struct json_object **ret_doc)
{
	*ret_doc = json_object_new_object();
	if (!*ret_doc)
		return cmd_error(ctx, "out of memory");
	return CMD_EXIT_OK;
}

/* the pool ctx->pool as a document */
static int pool_doc(const struct cmd_ctx *ctx, const char *path,
		    struct json_object **ret_doc)
{
	int rc = doc_new(ctx, ret_doc);

	if (rc == CMD_EXIT_OK &&
	    view_pool_json(ctx->pool, cmd_view_flags(ctx), *ret_doc) < 0)
		rc = cmd_error(ctx, "cannot show pool '%s': out of memory",
			       path);
	return rc;
}

/* the pool's heap, formatted in a->regions regions per part (the pool
 * is closed; on failure the parts that are files are removed) */
static int heap_format(struct cmd_ctx *ctx, const struct cmd_create_args *a)
{
	struct pma_config *cfg = NULL;
	struct pma_heap *heap = NULL;
	unsigned i;
	int rc;

	rc = pma_config_new(&cfg);
	if (rc == 0)
		rc = pma_config_set_flags(cfg, PMA_HEAP_FORMAT);
	if (rc == 0)
		rc = pma_config_set_regions(cfg, a->regions);
	if (rc == 0)
		rc = pma_heap_open_cfg(a->paths[0], cfg, &heap);
	pma_config_delete(&cfg);
	if (rc == 0) {
		pma_heap_close(heap);
		return CMD_EXIT_OK;
	}
	rc = cmd_error(ctx,
		       "cannot make a heap of %u regions per part in "
		       "pool '%s': %s",
		       a->regions, a->paths[0], pma_errormsg());
	for (i = 0; i < a->nparts; i++)
		if (ns_path_is_devdax(a->paths[i]) != 1)
			(void)unlink(a->paths[i]);
	return rc;
}

static int local_create(struct cmd_ctx *ctx, const struct cmd_create_args *a,
			struct json_object **ret_doc)
{
	struct pool_create_params params = {
		.nparts = a->nparts,
		.paths = a->paths,
		.nodes = a->nnodes ? a->nodes : NULL,
		.part_size = a->size,
		.mode = a->mode_given ? a->mode : 0660,
		.flags = a->flags,
	};
	struct cmd_progress progress;
	int rc;

	cmd_progress_init(&progress, "creating");
	if (ctx->is_tty) {
		params.progress = cmd_progress_update;
		params.progress_arg = &progress;
	}
	rc = pool_create(&params, &ctx->pool);
	cmd_progress_done(&progress);
	if (rc < 0)
		return cmd_error(ctx, "cannot create pool '%s': %s",
				 a->paths[0], pool_errormsg());
	if (a->regions > 1) { /* the heap now, then the pool as made */
		pool_close(&ctx->pool);
		rc = heap_format(ctx, a);
		if (rc == CMD_EXIT_OK)
			rc = cmd_pool_open(ctx, a->paths[0], POOL_OPEN_RDONLY);
		if (rc != CMD_EXIT_OK)
			return rc;
	}
	return pool_doc(ctx, a->paths[0], ret_doc);
}

static int local_inspect(struct cmd_ctx *ctx, const char *path, unsigned views,
			 struct json_object **ret_doc)
{
	struct json_object *fs = NULL;
	int rc;

	rc = cmd_pool_open(ctx, path, POOL_OPEN_RDONLY | POOL_OPEN_SHOW_OLDER);
	if (rc == CMD_EXIT_OK)
		rc = pool_doc(ctx, path, ret_doc);
	if (rc != CMD_EXIT_OK)
		return rc;
	if (pool_header_damage(ctx->pool)) {
		/* shown, but a failure: the pool cannot be opened for writing
		 * and what is shown may predate its last changes */
		return cmd_error(ctx, "pool '%s' is damaged: %s", path,
				 pool_header_damage(ctx->pool));
	}
	if (views & CMD_VIEW_HEAP)
		rc = cmd_heap_json(ctx, path, *ret_doc);
	if (rc == CMD_EXIT_OK && (views & CMD_VIEW_SLABS))
		rc = cmd_slabs_json(ctx, path, *ret_doc);
	if (rc == CMD_EXIT_OK && (views & CMD_VIEW_FILES)) {
		rc = cmd_local_files(ctx, path, 0, &fs);
		if (rc == CMD_EXIT_OK &&
		    util_json_add_obj(*ret_doc, "hdpm", fs) < 0)
			rc = cmd_error(ctx, "out of memory");
	}
	return rc;
}

/* the stat entry of the pool at path: name, path, state "closed", size,
 * nparts and clients from its header (v), usage from its heap */
static struct json_object *stat_entry(const struct cmd_ctx *ctx,
				      const char *path, struct json_object *v,
				      struct pma_heap *heap)
{
	struct json_object *p = json_object_new_object(), *size = NULL;
	int err = !p;

	json_object_object_get_ex(v, "size", &size);
	err |= util_json_add_str(p, "name", path);
	err |= util_json_add_str(p, "path", path);
	err |= util_json_add_str(p, "state", "closed");
	err |= util_json_add_obj(p, "size", json_object_get(size));
	err |= util_json_add_u64(p, "nparts", cmd_ju64(v, "nparts"));
	err |= util_json_add_u64(p, "clients", 0);
	err |= view_heap_stat_json(heap, cmd_view_flags(ctx), p);
	if (err) {
		json_object_put(p);
		return NULL;
	}
	return p;
}

/* one pool read here: {"pools": [the stat entry]} */
static int local_stat(struct cmd_ctx *ctx, const char *path,
		      struct json_object **ret_doc)
{
	struct json_object *v = NULL, *arr, *p;
	struct pma_heap *heap = NULL;
	int rc;

	if (!path)
		return cmd_error(ctx, "stat: which pool? (name a pool file, or "
				      "give --socket to ask pmad about all)");
	rc = local_inspect(ctx, path, 0, &v);
	if (rc == CMD_EXIT_OK)
		rc = cmd_heap_open(ctx, path, &heap);
	if (rc != CMD_EXIT_OK) {
		json_object_put(v);
		return rc;
	}
	p = stat_entry(ctx, path, v, heap);
	pma_heap_close(heap);
	json_object_put(v);
	*ret_doc = json_object_new_object();
	arr = json_object_new_array();
	if (p && arr && json_object_array_add(arr, p) == 0)
		p = NULL;
	json_object_put(p);
	if (util_json_add_obj(*ret_doc, "pools", arr) < 0)
		return cmd_error(ctx, "cannot show pool '%s': out of memory",
				 path);
	return CMD_EXIT_OK;
}

static int local_list(struct cmd_ctx *ctx, struct json_object **ret_doc)
{
	(void)ret_doc;
	return cmd_error(ctx, "list shows the pools pmad serves: give "
			      "--socket or set $PMAD_SOCKET");
}

/* pma_heap_compact (or its plan, read-only) on the heap at path */
static int local_compact(struct cmd_ctx *ctx, const char *path, int dry,
			 struct json_object **ret_doc)
{
	struct pma_compact_report r;
	struct pma_heap *heap;
	int rc;

	if (pma_heap_open(path, dry ? PMA_HEAP_RDONLY : 0, &heap) < 0)
		return cmd_error(ctx, "cannot open the heap of '%s': %s", path,
				 pma_errormsg());
	cmd_header_note(path, pma_heap_damage(heap));
	rc = dry ? pma_heap_compact_plan(heap, &r) : pma_heap_compact(heap, &r);
	if (rc < 0) {
		rc = cmd_error(ctx, "compaction of '%s' failed: %s", path,
			       pma_errormsg());
		pma_heap_close(heap);
		return rc;
	}
	pma_heap_close(heap);
	rc = doc_new(ctx, ret_doc);
	if (rc == CMD_EXIT_OK &&
	    view_compact_json(&r, dry, cmd_view_flags(ctx), *ret_doc) < 0)
		rc = cmd_error(ctx, "cannot build JSON output: out of memory");
	return rc;
}

/* pma_heap_morph on the heap at path, opened with flags */
static int morph_open(struct cmd_ctx *ctx, const char *path, unsigned flags,
		      const struct pma_morph_req *req,
		      struct pma_morph_report *ret)
{
	struct pma_heap *heap;
	int rc;

	if (pma_heap_open(path, flags, &heap) < 0)
		return cmd_error(ctx, "cannot open the heap of '%s': %s", path,
				 pma_errormsg());
	cmd_header_note(path, pma_heap_damage(heap));
	rc = CMD_EXIT_OK;
	if (pma_heap_morph(heap, req, ret) < 0)
		rc = cmd_error(ctx, "morph pass over '%s' failed: %s", path,
			       pma_errormsg());
	pma_heap_close(heap);
	return rc;
}

/* pma_heap_morph at path: a dry run on the heap opened read-only first,
 * so that bad input (a layout that cannot morph, no such class) fails
 * before a writable open changes anything; then the pass itself */
static int local_morph(struct cmd_ctx *ctx, const char *path,
		       const struct cmd_morph_args *a,
		       struct json_object **ret_doc)
{
	struct pma_morph_req req = { .class_size = a->class_size,
				     .used_pct = a->used_pct,
				     .dry_run = 1 };
	struct pma_morph_report r;
	int rc;

	rc = morph_open(ctx, path, PMA_HEAP_RDONLY, &req, &r);
	if (rc == CMD_EXIT_OK && !a->dry_run) {
		req.dry_run = 0;
		rc = morph_open(ctx, path, 0, &req, &r);
	}
	if (rc != CMD_EXIT_OK)
		return rc;
	rc = doc_new(ctx, ret_doc);
	if (rc == CMD_EXIT_OK &&
	    view_morph_json(&r, a->dry_run, cmd_view_flags(ctx), *ret_doc) < 0)
		rc = cmd_error(ctx, "cannot build JSON output: out of memory");
	return rc;
}

const struct cmd_seam cmd_seam_local = {
	.name = "local",
	.create = local_create,
	.inspect = local_inspect,
	.stat = local_stat,
	.list = local_list,
	.compact = local_compact,
	.morph = local_morph,
	.files = cmd_local_files,
	.log = cmd_local_log,
	.gc = cmd_local_gc,
};
