/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/view hdpm: the HDPM file system in a heap as the documents of
 * `pmactl inspect --files` ("hdpm"), `pmactl log --files` and `pmactl
 * gc`, built by pmactl for a heap it opened itself and by pmad for a pool
 * it holds (pmactl-inspect(1), pmactl-log(1), pmactl-gc(1)). The gc pass
 * itself is here too, so both ends run the same one.
 */
#include <errno.h>

#include "hdpm.h"
#include "pmalloc.h"
#include "util/errmsg.h"
#include "util/json.h"
#include "view/view.h"

static int add_log_keys(struct json_object *o, uint64_t entries, uint64_t bytes,
			uint64_t live, uint64_t dead, unsigned flags)
{
	int err;

	err = util_json_add_u64(o, "log_entries", entries);
	err |= view_add_size(o, "log_bytes", bytes, flags);
	err |= view_add_size(o, "live_bytes", live, flags);
	err |= view_add_size(o, "dead_bytes", dead, flags);
	return err;
}

static struct json_object *file_json(const struct hdpm_file_info *fi,
				     unsigned flags)
{
	struct json_object *o = json_object_new_object();
	int err;

	if (!o)
		return NULL;
	err = util_json_add_str(o, "path", fi->path);
	err |= util_json_add_u64(o, "ino", fi->ino);
	err |= view_add_size(o, "size", fi->size, flags);
	err |= util_json_add_u64(o, "pages", fi->pages);
	err |= util_json_add_u64(o, "log_pages", fi->log_pages);
	err |= add_log_keys(o, fi->log_entries, fi->log_bytes,
			    fi->log_live_bytes, fi->log_dead_bytes, flags);
	if (err) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static struct json_object *page_json(const struct hdpm_page_info *pi,
				     unsigned flags)
{
	struct json_object *o = json_object_new_object();
	int err;

	if (!o)
		return NULL;
	err = util_json_add_u64(o, "page", pi->index);
	err |= util_json_add_hex(o, "offset", pi->page_off);
	err |= util_json_add_hex(o, "log_offset", pi->log_off);
	err |= add_log_keys(o, pi->log_entries, pi->log_bytes,
			    pi->log_live_bytes, pi->log_dead_bytes, flags);
	if (err) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* the walk's state: the files array, the current file's page logs */
struct walk {
	struct json_object *files, *pages;
	int with_pages;
	unsigned flags;
};

static int walk_file(const struct hdpm_file_info *fi, void *arg)
{
	struct walk *w = arg;
	struct json_object *o = file_json(fi, w->flags);

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

static int walk_page(const struct hdpm_file_info *fi,
		     const struct hdpm_page_info *pi, void *arg)
{
	struct walk *w = arg;
	struct json_object *o;

	(void)fi;
	if (!pi->log_off)
		return 0;
	o = page_json(pi, w->flags);
	if (!o || json_object_array_add(w->pages, o) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	return 0;
}

static int fs_keys(const struct hdpm_fs_info *in, unsigned flags,
		   struct json_object *o)
{
	int err;

	err = util_json_add_u64(o, "inodes", in->ninodes);
	err |= util_json_add_u64(o, "inodes_used", in->inodes_used);
	err |= util_json_add_u64(o, "file_count", in->files);
	err |= util_json_add_u64(o, "dir_count", in->dirs);
	err |= view_add_size(o, "file_bytes", in->file_bytes, flags);
	err |= util_json_add_u64(o, "pages", in->pages);
	err |= util_json_add_u64(o, "log_chunks", in->log_chunks);
	err |= add_log_keys(o, in->log_entries, in->log_bytes,
			    in->log_live_bytes, in->log_dead_bytes, flags);
	err |= util_json_add_bool(o, "needs_recovery", (int)in->needs_recovery);
	return err;
}

int view_hdpm_json(struct hdpm_fs *fs, int with_pages, unsigned flags,
		   struct json_object *obj)
{
	struct walk w = { .with_pages = with_pages, .flags = flags };
	struct hdpm_fs_info in = { 0 };
	int rc;

	rc = hdpm_fs_info(fs, &in);
	if (rc < 0)
		return rc;
	if (fs_keys(&in, flags, obj))
		return util_errmsg_set(ENOMEM, "out of memory");
	w.files = json_object_new_array();
	if (!w.files || util_json_add_obj(obj, "files", w.files) < 0)
		return util_errmsg_set(ENOMEM, "out of memory");
	rc = hdpm_file_walk(fs, walk_file, with_pages ? walk_page : NULL, &w);
	if (rc == -ENOMEM)
		return util_errmsg_set(ENOMEM, "out of memory");
	return rc;
}

int view_hdpm_gc(struct pma_heap *heap, struct view_gc *r)
{
	struct pma_heap_stats hs = { 0 };
	struct hdpm_fs *fs = NULL;
	int rc;

	/* no thread of its own: the counts are this pass's */
	rc = hdpm_mount(heap, HDPM_HYBRID | HDPM_NO_GC_THREAD, &fs);
	if (rc == 0)
		rc = hdpm_fs_info(fs, &r->before);
	if (rc == 0)
		rc = pma_heap_stats(heap, &hs);
	if (rc == 0) {
		r->used_before = hs.used_bytes;
		rc = hdpm_gc(fs, 0);
	}
	if (rc >= 0) {
		r->merged = (unsigned)rc;
		rc = hdpm_fs_info(fs, &r->after);
	}
	if (rc == 0)
		rc = pma_heap_stats(heap, &hs);
	if (rc == 0)
		r->used_after = hs.used_bytes;
	hdpm_unmount(fs);
	return rc;
}

uint64_t view_gc_reclaimed(const struct view_gc *r)
{
	return r->used_before > r->used_after ? r->used_before - r->used_after :
						0;
}

int view_gc_json(const struct view_gc *r, unsigned flags,
		 struct json_object *obj)
{
	int err;

	err = util_json_add_u64(obj, "pages_merged", r->merged);
	err |= view_add_size(obj, "log_bytes_before", r->before.log_bytes,
			     flags);
	err |= view_add_size(obj, "log_bytes_after", r->after.log_bytes, flags);
	err |= view_add_size(obj, "dead_bytes_before", r->before.log_dead_bytes,
			     flags);
	err |= view_add_size(obj, "heap_used_before", r->used_before, flags);
	err |= view_add_size(obj, "heap_used_after", r->used_after, flags);
	err |= view_add_size(obj, "bytes_reclaimed", view_gc_reclaimed(r),
			     flags);
	return err ? util_errmsg_set(ENOMEM, "out of memory") : 0;
}
