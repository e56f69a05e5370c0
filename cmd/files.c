/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl file views: the HDPM file system in a pool's heap, opened
 * read-only (PMA_HEAP_RDONLY + HDPM_RDONLY: nothing is written, nothing
 * recovered). `inspect --files` lists the files with their pages and log
 * use; `log --files` shows every page log (entries, bytes, live and dead
 * data bytes). JSON keys are API (pmactl-inspect(1), pmactl-log(1)).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "common.h"
#include "files.h"
#include "hdpm.h"
#include "pmalloc.h"
#include "util/json.h"

struct files_view {
	const struct cmd_ctx *ctx;
	struct pma_heap *heap;
	struct hdpm_fs *fs;
	struct hdpm_fs_info info;
};

int cmd_files_open(const struct cmd_ctx *ctx, const char *path,
		   struct files_view **ret_view)
{
	struct files_view *v = calloc(1, sizeof(*v));
	int rc;

	if (!v) {
		cmd_error(ctx, "out of memory");
		return CMD_EXIT_FAIL;
	}
	v->ctx = ctx;
	rc = cmd_heap_open(ctx, path, &v->heap);
	if (rc != CMD_EXIT_OK) {
		free(v);
		return rc == CMD_EXIT_OK ? CMD_EXIT_FAIL : rc;
	}
	if (hdpm_mount(v->heap, HDPM_RDONLY, &v->fs) < 0 ||
	    hdpm_fs_info(v->fs, &v->info) < 0) {
		cmd_error(ctx, "no HDPM file system in '%s': %s", path,
			  hdpm_errormsg());
		cmd_files_close(v);
		return CMD_EXIT_FAIL;
	}
	if (v->info.needs_recovery)
		fprintf(stderr,
			"pmactl: note: an HDPM operation in '%s' was "
			"interrupted; shown as on media, before recovery\n",
			path);
	*ret_view = v;
	return CMD_EXIT_OK;
}

void cmd_files_close(struct files_view *v)
{
	if (!v)
		return;
	hdpm_unmount(v->fs);
	pma_heap_close(v->heap);
	free(v);
}

/* ------------------------------------------------------------ JSON */

static int json_log_keys(const struct cmd_ctx *ctx, struct json_object *o,
			 uint64_t entries, uint64_t bytes, uint64_t live,
			 uint64_t dead)
{
	int err;

	err = util_json_add_u64(o, "log_entries", entries);
	err |= cmd_json_add_size(ctx, o, "log_bytes", bytes);
	err |= cmd_json_add_size(ctx, o, "live_bytes", live);
	err |= cmd_json_add_size(ctx, o, "dead_bytes", dead);
	return err;
}

static struct json_object *json_file(const struct cmd_ctx *ctx,
				     const struct hdpm_file_info *fi)
{
	struct json_object *o = json_object_new_object();
	int err;

	if (!o)
		return NULL;
	err = util_json_add_str(o, "path", fi->path);
	err |= util_json_add_u64(o, "ino", fi->ino);
	err |= cmd_json_add_size(ctx, o, "size", fi->size);
	err |= util_json_add_u64(o, "pages", fi->pages);
	err |= util_json_add_u64(o, "log_pages", fi->log_pages);
	err |= json_log_keys(ctx, o, fi->log_entries, fi->log_bytes,
			     fi->log_live_bytes, fi->log_dead_bytes);
	if (err) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static struct json_object *json_page(const struct cmd_ctx *ctx,
				     const struct hdpm_page_info *pi)
{
	struct json_object *o = json_object_new_object();
	int err;

	if (!o)
		return NULL;
	err = util_json_add_u64(o, "page", pi->index);
	err |= util_json_add_hex(o, "offset", pi->page_off);
	err |= util_json_add_hex(o, "log_offset", pi->log_off);
	err |= json_log_keys(ctx, o, pi->log_entries, pi->log_bytes,
			     pi->log_live_bytes, pi->log_dead_bytes);
	if (err) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* the walk's state: the files array, the current file's page array */
struct json_walk {
	const struct cmd_ctx *ctx;
	struct json_object *files, *pages;
	int with_pages; /* log --files: every page with a log */
};

static int json_walk_file(const struct hdpm_file_info *fi, void *arg)
{
	struct json_walk *w = arg;
	struct json_object *o = json_file(w->ctx, fi);

	w->pages = NULL;
	if (!o)
		return -ENOMEM;
	if (w->with_pages &&
	    (!(w->pages = json_object_new_array()) ||
	     util_json_add_obj(o, "page_logs", w->pages) < 0)) {
		json_object_put(o);
		return -ENOMEM;
	}
	if (json_object_array_add(w->files, o) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	return 0;
}

static int json_walk_page(const struct hdpm_file_info *fi,
			  const struct hdpm_page_info *pi, void *arg)
{
	struct json_walk *w = arg;
	struct json_object *o;

	(void)fi;
	if (!pi->log_off)
		return 0;
	o = json_page(w->ctx, pi);
	if (!o || json_object_array_add(w->pages, o) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	return 0;
}

static int json_fs_keys(struct files_view *v, struct json_object *o)
{
	const struct hdpm_fs_info *in = &v->info;
	int err;

	err = util_json_add_u64(o, "inodes", in->ninodes);
	err |= util_json_add_u64(o, "inodes_used", in->inodes_used);
	err |= util_json_add_u64(o, "file_count", in->files);
	err |= util_json_add_u64(o, "dir_count", in->dirs);
	err |= cmd_json_add_size(v->ctx, o, "file_bytes", in->file_bytes);
	err |= util_json_add_u64(o, "pages", in->pages);
	err |= util_json_add_u64(o, "log_chunks", in->log_chunks);
	err |= json_log_keys(v->ctx, o, in->log_entries, in->log_bytes,
			     in->log_live_bytes, in->log_dead_bytes);
	err |= util_json_add_bool(o, "needs_recovery", (int)in->needs_recovery);
	return err;
}

/* {fs keys..., "files": [...]} for the view */
static struct json_object *json_fs(struct files_view *v, int with_pages)
{
	struct json_walk w = { .ctx = v->ctx, .with_pages = with_pages };
	struct json_object *o = json_object_new_object();

	w.files = json_object_new_array();
	if (!o || !w.files || json_fs_keys(v, o) ||
	    util_json_add_obj(o, "files", w.files) < 0) {
		json_object_put(w.files);
		json_object_put(o);
		return NULL;
	}
	if (hdpm_file_walk(v->fs, json_walk_file,
			   with_pages ? json_walk_page : NULL, &w) != 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

int cmd_files_json(const struct cmd_ctx *ctx, const char *path,
		   struct json_object *root)
{
	struct files_view *v = NULL;
	struct json_object *o;
	int rc;

	rc = cmd_files_open(ctx, path, &v);
	if (rc != CMD_EXIT_OK)
		return rc;
	o = json_fs(v, 0);
	cmd_files_close(v);
	if (!o || util_json_add_obj(root, "hdpm", o) < 0)
		return cmd_error(ctx,
				 "cannot build JSON output: out of memory");
	return CMD_EXIT_OK;
}

/* ------------------------------------------------------------ human */

static int table_walk_file(const struct hdpm_file_info *fi, void *arg)
{
	char size[UTIL_SIZE_BUF], ino[24], pages[24], lp[24], lb[UTIL_SIZE_BUF];
	char live[UTIL_SIZE_BUF], dead[UTIL_SIZE_BUF];
	const char *row[8] = { fi->path, ino, size, pages, lp, lb, live, dead };

	snprintf(ino, sizeof(ino), "%" PRIu64, fi->ino);
	cmd_size_str(fi->size, size, sizeof(size));
	snprintf(pages, sizeof(pages), "%" PRIu64, fi->pages);
	snprintf(lp, sizeof(lp), "%" PRIu64, fi->log_pages);
	cmd_size_str(fi->log_bytes, lb, sizeof(lb));
	cmd_size_str(fi->log_live_bytes, live, sizeof(live));
	cmd_size_str(fi->log_dead_bytes, dead, sizeof(dead));
	return cmd_table_add(arg, row);
}

static void print_fs(const struct files_view *v)
{
	const struct hdpm_fs_info *in = &v->info;
	char a[UTIL_SIZE_BUF], b[UTIL_SIZE_BUF], c[UTIL_SIZE_BUF];

	printf("  inodes:       %" PRIu64 " of %" PRIu64 " used (%" PRIu64
	       " files, %" PRIu64 " directories)\n",
	       in->inodes_used, in->ninodes, in->files, in->dirs);
	printf("  data:         %s in files, %" PRIu64 " pages\n",
	       cmd_size_str(in->file_bytes, a, sizeof(a)), in->pages);
	printf("  page logs:    %" PRIu64 " (%" PRIu64 " entries, %s; live %s,"
	       " dead %s)\n",
	       in->log_chunks, in->log_entries,
	       cmd_size_str(in->log_bytes, a, sizeof(a)),
	       cmd_size_str(in->log_live_bytes, b, sizeof(b)),
	       cmd_size_str(in->log_dead_bytes, c, sizeof(c)));
	if (in->needs_recovery)
		printf("  journal:      an operation was interrupted (the next "
		       "read-write mount finishes it)\n");
}

int cmd_files_print(const struct cmd_ctx *ctx, const char *path)
{
	static const char *const head[] = { "PATH",	 "INO", "SIZE", "PAGES",
					    "LOG_PAGES", "LOG", "LIVE", "DEAD" };
	struct files_view *v = NULL;
	struct cmd_table t;
	uint64_t nfiles;
	int rc;

	rc = cmd_files_open(ctx, path, &v);
	if (rc != CMD_EXIT_OK)
		return rc;
	printf("\nfiles (HDPM):\n");
	print_fs(v);
	nfiles = v->info.files;
	cmd_table_init(&t, 8, head, 0xfe);
	rc = hdpm_file_walk(v->fs, table_walk_file, NULL, &t);
	cmd_files_close(v);
	if (rc == 0 && nfiles)
		rc = cmd_table_print(&t, stdout, 2);
	cmd_table_release(&t);
	if (rc != 0)
		return cmd_error(ctx, "cannot print the files: out of memory");
	return CMD_EXIT_OK;
}

static int table_walk_page(const struct hdpm_file_info *fi,
			   const struct hdpm_page_info *pi, void *arg)
{
	char page[24], ents[24], lb[UTIL_SIZE_BUF], live[UTIL_SIZE_BUF];
	char dead[UTIL_SIZE_BUF];
	const char *row[6] = { fi->path, page, ents, lb, live, dead };

	if (!pi->log_off)
		return 0;
	snprintf(page, sizeof(page), "%" PRIu64, pi->index);
	snprintf(ents, sizeof(ents), "%" PRIu64, pi->log_entries);
	cmd_size_str(pi->log_bytes, lb, sizeof(lb));
	cmd_size_str(pi->log_live_bytes, live, sizeof(live));
	cmd_size_str(pi->log_dead_bytes, dead, sizeof(dead));
	return cmd_table_add(arg, row);
}

static int log_print_table(struct files_view *v)
{
	static const char *const head[] = { "FILE", "PAGE", "ENTRIES",
					    "LOG",  "LIVE", "DEAD" };
	struct cmd_table t;
	int rc;

	printf("%" PRIu64 " page log%s in %" PRIu64 " file%s\n",
	       v->info.log_chunks, v->info.log_chunks == 1 ? "" : "s",
	       v->info.files, v->info.files == 1 ? "" : "s");
	print_fs(v);
	cmd_table_init(&t, 6, head, 0x3e);
	rc = hdpm_file_walk(v->fs, NULL, table_walk_page, &t);
	if (rc == 0 && v->info.log_chunks)
		rc = cmd_table_print(&t, stdout, 0);
	cmd_table_release(&t);
	return rc;
}

int cmd_files_log(const struct cmd_ctx *ctx, const char *path)
{
	struct files_view *v = NULL;
	struct json_object *o;
	int rc;

	rc = cmd_files_open(ctx, path, &v);
	if (rc != CMD_EXIT_OK)
		return rc;
	if (ctx->json) {
		o = json_fs(v, 1);
		cmd_files_close(v);
		if (!o)
			return cmd_error(ctx, "cannot build JSON output: "
					      "out of memory");
		return cmd_json_print(ctx, o);
	}
	rc = log_print_table(v);
	cmd_files_close(v);
	if (rc != 0)
		return cmd_error(ctx, "cannot print the logs: out of memory");
	return CMD_EXIT_OK;
}
