/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pmad seam (seam.h): the pool is a name pmad serves; each op is one
 * request on pmad's control socket (lib/proto), whose result is the
 * document. pmad builds it with lib/view as the local seam does. pmad's
 * errors are shown with their errno name: "pmactl: stat db: no pool 'db'
 * (ENOENT)".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "proto/proto.h"
#include "seam.h"
#include "util/errmsg.h"
#include "util/json.h"

int cmd_pmad_call(const struct cmd_ctx *ctx, const char *op,
		  struct json_object *args, struct proto_reply *rep)
{
	char path[4096];
	int fd, rc;

	if (ctx->socket)
		snprintf(path, sizeof(path), "%s", ctx->socket);
	else if (proto_default_socket(path, sizeof(path)) < 0) {
		json_object_put(args);
		return cmd_error(ctx, "%s", proto_errormsg());
	}
	fd = proto_connect(path);
	if (fd < 0) {
		json_object_put(args);
		return cmd_error(ctx, "cannot reach pmad: %s",
				 proto_errormsg());
	}
	rc = proto_call(fd, op, args, rep);
	close(fd);
	if (rc < 0)
		return cmd_error(ctx, "pmad at %s: %s", path, proto_errormsg());
	return CMD_EXIT_OK;
}

/* args for a request about pool name (NULL: none), with the human flag */
static struct json_object *args_new(const struct cmd_ctx *ctx, const char *name)
{
	struct json_object *args = json_object_new_object();
	int err = !args;

	if (args && name)
		err |= util_json_add_str(args, "name", name);
	if (args && cmd_view_flags(ctx))
		err |= util_json_add_bool(args, "human", 1);
	if (err) {
		json_object_put(args);
		return NULL;
	}
	return args;
}

/* args_new plus KEY: true when ON (NULL when out of memory) */
static struct json_object *args_flag(const struct cmd_ctx *ctx,
				     const char *name, const char *key, int on)
{
	struct json_object *args = args_new(ctx, name);

	if (args && on && util_json_add_bool(args, key, 1) < 0) {
		json_object_put(args);
		return NULL;
	}
	return args;
}

/* one request; its result becomes *ret_doc */
static int request(struct cmd_ctx *ctx, const char *op, const char *name,
		   struct json_object *args, struct json_object **ret_doc)
{
	struct proto_reply rep = { .message = "" };
	const char *what = ctx->cmd_name ? ctx->cmd_name : op;
	int rc;

	if (!args)
		return cmd_error(ctx, "out of memory");
	rc = cmd_pmad_call(ctx, op, args, &rep);
	if (rc != CMD_EXIT_OK)
		return rc;
	if (rep.err)
		rc = cmd_error(ctx, "%s%s%s: %s (%s)", what, name ? " " : "",
			       name ? name : "", rep.message,
			       proto_errno_name(rep.err));
	else
		*ret_doc = json_object_get(rep.result);
	proto_reply_release(&rep);
	return rc;
}

/* pools are named through pmad: a path means the user meant offline */
static int check_name(const struct cmd_ctx *ctx, const char *name)
{
	if (!strchr(name, '/'))
		return CMD_CONTINUE;
	return cmd_usage_error(ctx, ctx->cmd_name ? ctx->cmd_name : "pool",
			       "'%s' is a path, but through pmad (--socket or "
			       "$PMAD_SOCKET) pools are named as pmad lists "
			       "them",
			       name);
}

static int pmad_create(struct cmd_ctx *ctx, const struct cmd_create_args *a,
		       struct json_object **ret_doc)
{
	struct json_object *args;
	char mode[16];
	int rc;

	if (a->nparts > 1 || a->nnodes || a->flags)
		return cmd_usage_error(ctx,
				       ctx->cmd_name ? ctx->cmd_name : "create",
				       "--parts, --node and --force are not "
				       "available through pmad (its "
				       "configuration places pools)");
	if (!a->size)
		return cmd_usage_error(ctx,
				       ctx->cmd_name ? ctx->cmd_name : "create",
				       "missing --size");
	rc = check_name(ctx, a->paths[0]);
	if (rc != CMD_CONTINUE)
		return rc;
	args = args_new(ctx, a->paths[0]);
	snprintf(mode, sizeof(mode), "%04o", (unsigned)a->mode);
	if (args &&
	    (util_json_add_u64(args, "size", a->size) < 0 ||
	     (a->regions > 1 &&
	      util_json_add_u64(args, "regions", a->regions) < 0) ||
	     (a->mode_given && util_json_add_str(args, "mode", mode) < 0))) {
		json_object_put(args);
		args = NULL;
	}
	return request(ctx, "pool_create", a->paths[0], args, ret_doc);
}

static int pmad_inspect(struct cmd_ctx *ctx, const char *name, unsigned views,
			struct json_object **ret_doc)
{
	struct json_object *fs = NULL;
	int rc;

	rc = check_name(ctx, name);
	if (rc != CMD_CONTINUE)
		return rc;
	rc = request(ctx, "pool_inspect", name,
		     views & CMD_VIEW_SLABS ? args_flag(ctx, name, "slabs", 1) :
					      args_new(ctx, name),
		     ret_doc);
	if (rc == CMD_EXIT_OK && !(views & CMD_VIEW_HEAP))
		json_object_object_del(*ret_doc, "heap");
	if (rc == CMD_EXIT_OK && (views & CMD_VIEW_FILES)) {
		rc = request(ctx, "pool_files", name, args_new(ctx, name), &fs);
		if (rc == CMD_EXIT_OK &&
		    util_json_add_obj(*ret_doc, "hdpm", fs) < 0)
			rc = cmd_error(ctx, "out of memory");
	}
	return rc;
}

static int pmad_stat(struct cmd_ctx *ctx, const char *name,
		     struct json_object **ret_doc)
{
	int rc = name ? check_name(ctx, name) : CMD_CONTINUE;

	if (rc != CMD_CONTINUE)
		return rc;
	return request(ctx, "stat", name, args_new(ctx, name), ret_doc);
}

static int pmad_list(struct cmd_ctx *ctx, struct json_object **ret_doc)
{
	return request(ctx, "pool_list", NULL, args_new(ctx, NULL), ret_doc);
}

/* pmad compacts the heap it holds (the "compact" request) */
static int pmad_compact(struct cmd_ctx *ctx, const char *name, int dry,
			struct json_object **ret_doc)
{
	int rc = check_name(ctx, name);

	if (rc != CMD_CONTINUE)
		return rc;
	return request(ctx, "compact", name,
		       args_flag(ctx, name, "dry_run", dry), ret_doc);
}

/* pmad runs the morph pass on the heap it holds (the "morph" request) */
static int pmad_morph(struct cmd_ctx *ctx, const char *name,
		      const struct cmd_morph_args *a,
		      struct json_object **ret_doc)
{
	struct proto_morph_args m = { .class_size = a->class_size,
				      .used_pct = a->used_pct,
				      .dry_run = a->dry_run };
	struct json_object *args;
	int rc = check_name(ctx, name);

	if (rc != CMD_CONTINUE)
		return rc;
	args = args_new(ctx, name);
	if (args && proto_morph_args_add(args, &m) < 0) {
		json_object_put(args);
		return cmd_error(ctx, "morph: %s", util_errmsg());
	}
	return request(ctx, "morph", name, args, ret_doc);
}

/* pmad reads the file system in the heap it holds ("pool_files") */
static int pmad_files(struct cmd_ctx *ctx, const char *name, int with_pages,
		      struct json_object **ret_doc)
{
	int rc = check_name(ctx, name);

	if (rc != CMD_CONTINUE)
		return rc;
	return request(ctx, "pool_files", name,
		       args_flag(ctx, name, "pages", with_pages), ret_doc);
}

/* the records of the heap pmad holds ("pool_log") */
static int pmad_log(struct cmd_ctx *ctx, const char *name, long part,
		    long arena, struct json_object **ret_doc)
{
	struct proto_log_args a = { .part = part, .arena = arena };
	struct json_object *args;
	int rc = check_name(ctx, name);

	if (rc != CMD_CONTINUE)
		return rc;
	args = args_new(ctx, name);
	if (args && proto_log_args_add(args, &a) < 0) {
		json_object_put(args);
		return cmd_error(ctx, "log %s: %s", name, proto_errormsg());
	}
	return request(ctx, "pool_log", name, args, ret_doc);
}

/* pmad merges the page logs of the heap it holds ("gc") */
static int pmad_gc(struct cmd_ctx *ctx, const char *name,
		   struct json_object **ret_doc)
{
	int rc = check_name(ctx, name);

	if (rc != CMD_CONTINUE)
		return rc;
	return request(ctx, "gc", name, args_new(ctx, name), ret_doc);
}

const struct cmd_seam cmd_seam_pmad = {
	.name = "pmad",
	.create = pmad_create,
	.inspect = pmad_inspect,
	.stat = pmad_stat,
	.list = pmad_list,
	.compact = pmad_compact,
	.morph = pmad_morph,
	.files = pmad_files,
	.log = pmad_log,
	.gc = pmad_gc,
};
