/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl text printers of the HDPM and log documents (show.h), built by
 * lib/view on either side of the seam: inspect --files, log --files, log
 * and gc look the same offline and through pmad.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "show.h"

static const char *jsize(struct json_object *o, const char *key, char *buf)
{
	return cmd_size_str(cmd_ju64(o, key), buf, UTIL_SIZE_BUF);
}

static void jnum(struct json_object *o, const char *key, char *buf, size_t len)
{
	snprintf(buf, len, "%" PRIu64, cmd_ju64(o, key));
}

/* the file system's totals (both views) */
static void print_fs(struct json_object *fs)
{
	char a[UTIL_SIZE_BUF], b[UTIL_SIZE_BUF], c[UTIL_SIZE_BUF];
	struct json_object *v = cmd_jobj(fs, "needs_recovery");

	printf("  inodes:       %" PRIu64 " of %" PRIu64 " used (%" PRIu64
	       " files, %" PRIu64 " directories)\n",
	       cmd_ju64(fs, "inodes_used"), cmd_ju64(fs, "inodes"),
	       cmd_ju64(fs, "file_count"), cmd_ju64(fs, "dir_count"));
	printf("  data:         %s in files, %" PRIu64 " pages\n",
	       jsize(fs, "file_bytes", a), cmd_ju64(fs, "pages"));
	printf("  page logs:    %" PRIu64 " (%" PRIu64 " entries, %s; live %s,"
	       " dead %s)\n",
	       cmd_ju64(fs, "log_chunks"), cmd_ju64(fs, "log_entries"),
	       jsize(fs, "log_bytes", a), jsize(fs, "live_bytes", b),
	       jsize(fs, "dead_bytes", c));
	if (v && json_object_get_boolean(v))
		printf("  journal:      an operation was interrupted (the next "
		       "read-write mount finishes it)\n");
}

static int file_row(struct cmd_table *t, struct json_object *f)
{
	char size[UTIL_SIZE_BUF], ino[24], pages[24], lp[24], lb[UTIL_SIZE_BUF];
	char live[UTIL_SIZE_BUF], dead[UTIL_SIZE_BUF];
	const char *row[8] = {
		cmd_jstr(f, "path"), ino, size, pages, lp, lb, live, dead
	};

	jnum(f, "ino", ino, sizeof(ino));
	jsize(f, "size", size);
	jnum(f, "pages", pages, sizeof(pages));
	jnum(f, "log_pages", lp, sizeof(lp));
	jsize(f, "log_bytes", lb);
	jsize(f, "live_bytes", live);
	jsize(f, "dead_bytes", dead);
	return cmd_table_add(t, row);
}

int cmd_show_files(struct json_object *doc)
{
	static const char *const head[] = { "PATH",	 "INO", "SIZE", "PAGES",
					    "LOG_PAGES", "LOG", "LIVE", "DEAD" };
	struct json_object *fs = cmd_jobj(doc, "hdpm");
	struct json_object *files = cmd_jobj(fs, "files");
	struct cmd_table t;
	size_t i;
	int rc = 0;

	if (!fs)
		return 0;
	if (!files)
		return -EPROTO;
	printf("\nfiles (HDPM):\n");
	print_fs(fs);
	cmd_table_init(&t, 8, head, 0xfe);
	for (i = 0; rc == 0 && i < cmd_jlen(files); i++)
		rc = file_row(&t, json_object_array_get_idx(files, i));
	if (rc == 0 && cmd_jlen(files))
		rc = cmd_table_print(&t, stdout, 2);
	cmd_table_release(&t);
	return rc;
}

static int page_row(struct cmd_table *t, const char *path,
		    struct json_object *p)
{
	char page[24], ents[24], lb[UTIL_SIZE_BUF], live[UTIL_SIZE_BUF];
	char dead[UTIL_SIZE_BUF];
	const char *row[6] = { path, page, ents, lb, live, dead };

	jnum(p, "page", page, sizeof(page));
	jnum(p, "log_entries", ents, sizeof(ents));
	jsize(p, "log_bytes", lb);
	jsize(p, "live_bytes", live);
	jsize(p, "dead_bytes", dead);
	return cmd_table_add(t, row);
}

int cmd_show_page_logs(struct json_object *doc)
{
	static const char *const head[] = { "FILE", "PAGE", "ENTRIES",
					    "LOG",  "LIVE", "DEAD" };
	struct json_object *files = cmd_jobj(doc, "files"), *f, *pages;
	uint64_t chunks = cmd_ju64(doc, "log_chunks");
	uint64_t nfiles = cmd_ju64(doc, "file_count");
	struct cmd_table t;
	size_t i, j;
	int rc = 0;

	if (!files)
		return -EPROTO;
	printf("%" PRIu64 " page log%s in %" PRIu64 " file%s\n", chunks,
	       chunks == 1 ? "" : "s", nfiles, nfiles == 1 ? "" : "s");
	print_fs(doc);
	cmd_table_init(&t, 6, head, 0x3e);
	for (i = 0; rc == 0 && i < cmd_jlen(files); i++) {
		f = json_object_array_get_idx(files, i);
		pages = cmd_jobj(f, "page_logs");
		for (j = 0; rc == 0 && j < cmd_jlen(pages); j++)
			rc = page_row(&t, cmd_jstr(f, "path"),
				      json_object_array_get_idx(pages, j));
	}
	if (rc == 0 && chunks)
		rc = cmd_table_print(&t, stdout, 0);
	cmd_table_release(&t);
	return rc;
}

static int record_row(struct cmd_table *t, int parts, struct json_object *r)
{
	char arena[48], idx[24], size[UTIL_SIZE_BUF], cls[24];
	const char *dest = cmd_jstr(r, "dest");
	const char *row[7] = { arena,
			       idx,
			       cmd_jstr(r, "type"),
			       cmd_jstr(r, "offset"),
			       dest ? dest : "-",
			       size,
			       cls };

	if (parts)
		snprintf(arena, sizeof(arena), "%" PRIu64 ".%" PRIu64,
			 cmd_ju64(r, "part"), cmd_ju64(r, "arena"));
	else
		jnum(r, "arena", arena, sizeof(arena));
	jnum(r, "index", idx, sizeof(idx));
	if (cmd_jobj(r, "size"))
		jsize(r, "size", size);
	else
		snprintf(size, sizeof(size), "-");
	if (cmd_jobj(r, "class"))
		jnum(r, "class", cls, sizeof(cls));
	else
		snprintf(cls, sizeof(cls), "-");
	return cmd_table_add(t, row);
}

int cmd_show_log(struct json_object *doc)
{
	static const char *const head[] = { "ARENA", "INDEX", "TYPE", "OFFSET",
					    "DEST",  "SIZE",  "CLASS" };
	struct json_object *recs = cmd_jobj(doc, "records");
	uint64_t count = cmd_ju64(doc, "count");
	int parts = cmd_ju64(doc, "heap_parts") > 1;
	struct cmd_table t;
	size_t i;
	int rc = 0;

	if (!recs)
		return -EPROTO;
	printf("%" PRIu64 " record%s not checkpointed\n", count,
	       count == 1 ? "" : "s");
	cmd_table_init(&t, 7, head, 1u << 0 | 1u << 1 | 1u << 5);
	for (i = 0; rc == 0 && i < cmd_jlen(recs); i++)
		rc = record_row(&t, parts, json_object_array_get_idx(recs, i));
	if (rc == 0 && count)
		rc = cmd_table_print(&t, stdout, 0);
	cmd_table_release(&t);
	return rc;
}

int cmd_show_gc(struct json_object *doc)
{
	char a[UTIL_SIZE_BUF], b[UTIL_SIZE_BUF];
	uint64_t merged = cmd_ju64(doc, "pages_merged");

	if (!cmd_jobj(doc, "bytes_reclaimed"))
		return -EPROTO;
	printf("merged %" PRIu64 " page log%s; log bytes %s -> %s\n", merged,
	       merged == 1 ? "" : "s", jsize(doc, "log_bytes_before", a),
	       jsize(doc, "log_bytes_after", b));
	printf("reclaimed %s\n", jsize(doc, "bytes_reclaimed", a));
	return 0;
}
