/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl text printers of the seam's documents (show.h): inspect's
 * header, parts, regions and heap, list and stat. They read only the
 * documents' keys, never a struct pool, so offline and pmad output agree.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "show.h"

const char *cmd_jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return json_object_get_string(v);
}

uint64_t cmd_ju64(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return 0;
	return (uint64_t)json_object_get_int64(v);
}

struct json_object *cmd_jobj(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

size_t cmd_jlen(struct json_object *arr)
{
	return arr && json_object_is_type(arr, json_type_array) ?
		       json_object_array_length(arr) :
		       0;
}

/* a string for printf: "?" when missing */
static const char *jtxt(struct json_object *o, const char *key)
{
	const char *s = cmd_jstr(o, key);

	return s ? s : "?";
}

static const char *jsize(struct json_object *o, const char *key, char *buf,
			 size_t len)
{
	return cmd_size_str(cmd_ju64(o, key), buf, len);
}

int cmd_doc_print(const struct cmd_ctx *ctx, int rc, struct json_object *doc,
		  int (*show)(struct json_object *doc))
{
	int prc;

	if (!doc)
		return rc;
	if (ctx->json) {
		prc = cmd_json_print(ctx, doc);
		return prc != CMD_EXIT_OK ? prc : rc;
	}
	prc = show(doc);
	json_object_put(doc);
	if (prc == -EPROTO)
		return cmd_error(ctx, "unexpected reply from pmad");
	if (prc < 0)
		return cmd_error(ctx, "cannot print: %s", strerror(-prc));
	return rc;
}

/* ------------------------------------------------------------ inspect */

static void show_granularity(const char *gran)
{
	printf("granularity:  %s\n", gran ? gran : "?");
	if (!gran || strcmp(gran, "PAGE") != 0)
		return;
	printf("              note: this pool is on plain files, which persist"
	       " by msync (slow);\n"
	       "              use a fsdax/devdax namespace, or for testing on"
	       " tmpfs set\n"
	       "              PMEM2_FORCE_GRANULARITY=CACHE_LINE\n");
}

static void show_header(struct json_object *doc)
{
	struct json_object *feat = cmd_jobj(doc, "features");
	struct json_object *part0 =
		json_object_array_get_idx(cmd_jobj(doc, "parts"), 0);
	time_t t = (time_t)cmd_ju64(doc, "create_time");
	char when[64], size[UTIL_SIZE_BUF];
	uint64_t nparts = cmd_ju64(doc, "nparts");
	struct tm tm;

	if (!gmtime_r(&t, &tm) ||
	    !strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(when, sizeof(when), "?");
	fputs("pool:         ", stdout);
	cmd_print_escaped(stdout, part0 ? cmd_jstr(part0, "path") : "?");
	fputc('\n', stdout);
	printf("uuid:         %s\n", jtxt(doc, "uuid"));
	printf("version:      %s\n", jtxt(doc, "version"));
	printf("generation:   %" PRIu64 " (header copy %s%s)\n",
	       cmd_ju64(doc, "generation"), jtxt(doc, "header_copy"),
	       json_object_get_boolean(cmd_jobj(doc, "header_other_valid")) ?
		       "" :
		       ", other copy invalid");
	if (cmd_jstr(doc, "header_damage"))
		printf("header:       DAMAGED: %s\n",
		       jtxt(doc, "header_damage"));
	printf("features:     compat 0x%" PRIx64 ", incompat 0x%" PRIx64
	       ", ro_compat 0x%" PRIx64 "\n",
	       cmd_ju64(feat, "compat"), cmd_ju64(feat, "incompat"),
	       cmd_ju64(feat, "ro_compat"));
	printf("created:      %s (%" PRIu64 ")\n", when,
	       cmd_ju64(doc, "create_time"));
	show_granularity(cmd_jstr(doc, "granularity"));
	printf("size:         %s in %" PRIu64 " part%s\n",
	       jsize(doc, "size", size, sizeof(size)), nparts,
	       nparts == 1 ? "" : "s");
}

static int show_parts(struct json_object *doc)
{
	static const char *const head[] = { "INDEX", "PATH", "UUID",
					    "SIZE",  "NODE", "DEVDAX" };
	struct json_object *parts = cmd_jobj(doc, "parts"), *p;
	char idx[24], size[UTIL_SIZE_BUF], node[24];
	const char *row[6] = { idx, NULL, NULL, size, node, NULL };
	struct cmd_table t;
	size_t i;
	int rc;

	cmd_table_init(&t, 6, head, 1u << 0 | 1u << 3 | 1u << 4);
	for (i = 0; i < cmd_jlen(parts); i++) {
		p = json_object_array_get_idx(parts, i);
		snprintf(idx, sizeof(idx), "%" PRIu64, cmd_ju64(p, "index"));
		row[1] = cmd_jstr(p, "path");
		row[2] = cmd_jstr(p, "uuid");
		jsize(p, "size", size, sizeof(size));
		snprintf(node, sizeof(node), "%s",
			 cmd_jobj(p, "numa_node") ? jtxt(p, "numa_node") : "-");
		row[5] = json_object_get_boolean(cmd_jobj(p, "devdax")) ?
				 "yes" :
				 "no";
		cmd_table_add(&t, row);
	}
	printf("\nparts:\n");
	rc = cmd_table_print(&t, stdout, 2);
	cmd_table_release(&t);
	return rc;
}

static int show_regions(struct json_object *doc)
{
	static const char *const head[] = { "INDEX",  "TYPE", "PART",
					    "OFFSET", "SIZE", "NAME" };
	struct json_object *regions = cmd_jobj(doc, "regions"), *r;
	char idx[24], part[24], size[UTIL_SIZE_BUF];
	const char *row[6] = { idx, NULL, part, NULL, size, NULL };
	struct cmd_table t;
	size_t i;
	int rc;

	printf("\nregions:%s\n", cmd_jlen(regions) ? "" : " none");
	if (!cmd_jlen(regions))
		return 0;
	cmd_table_init(&t, 6, head, 1u << 0 | 1u << 2 | 1u << 4);
	for (i = 0; i < cmd_jlen(regions); i++) {
		r = json_object_array_get_idx(regions, i);
		snprintf(idx, sizeof(idx), "%" PRIu64, cmd_ju64(r, "index"));
		row[1] = cmd_jstr(r, "type");
		snprintf(part, sizeof(part), "%" PRIu64, cmd_ju64(r, "part"));
		row[3] = cmd_jstr(r, "offset");
		jsize(r, "size", size, sizeof(size));
		row[5] = cmd_jstr(r, "name") ? cmd_jstr(r, "name") : "";
		cmd_table_add(&t, row);
	}
	rc = cmd_table_print(&t, stdout, 2);
	cmd_table_release(&t);
	return rc;
}

int cmd_show_pool(struct json_object *doc)
{
	if (!cmd_jobj(doc, "uuid") || !cmd_jlen(cmd_jobj(doc, "parts")))
		return -EPROTO;
	show_header(doc);
	if (show_parts(doc) < 0 || show_regions(doc) < 0)
		return -ENOMEM;
	return 0;
}

/* ------------------------------------------------------------ heap */

static int show_classes(struct json_object *h)
{
	static const char *const head[] = { "CLASS",  "BLOCK", "SLABS",
					    "BLOCKS", "USED",  "FREE" };
	struct json_object *classes = cmd_jobj(h, "classes"), *c;
	char cls[24], bsize[UTIL_SIZE_BUF], slabs[24], blocks[24], used[24];
	char avail[24];
	const char *row[6] = { cls, bsize, slabs, blocks, used, avail };
	struct cmd_table t;
	size_t i;
	int rc;

	cmd_table_init(&t, 6, head, 0x3f);
	for (i = 0; i < cmd_jlen(classes); i++) {
		c = json_object_array_get_idx(classes, i);
		if (!cmd_ju64(c, "slabs"))
			continue; /* only classes in use */
		snprintf(cls, sizeof(cls), "%" PRIu64, cmd_ju64(c, "class"));
		jsize(c, "block_size", bsize, sizeof(bsize));
		snprintf(slabs, sizeof(slabs), "%" PRIu64,
			 cmd_ju64(c, "slabs"));
		snprintf(blocks, sizeof(blocks), "%" PRIu64,
			 cmd_ju64(c, "blocks"));
		snprintf(used, sizeof(used), "%" PRIu64, cmd_ju64(c, "used"));
		snprintf(avail, sizeof(avail), "%" PRIu64,
			 cmd_ju64(c, "blocks") - cmd_ju64(c, "used"));
		cmd_table_add(&t, row);
	}
	printf("\nsize classes in use:%s\n", t.nrows > 1 ? "" : " none");
	rc = t.nrows > 1 ? cmd_table_print(&t, stdout, 2) : 0;
	cmd_table_release(&t);
	return rc;
}

/* the arenas with anything in them (slabs, records, pending frees) */
static int show_arenas(struct json_object *h)
{
	static const char *const head[] = { "ARENA",	   "SLABS",
					    "USED",	   "FREE",
					    "LOG RECORDS", "REMOTE FREES",
					    "LOCAL FREE" };
	struct json_object *arenas = cmd_jobj(h, "arenas"), *a;
	char id[24], slabs[24], used[UTIL_SIZE_BUF], avail[UTIL_SIZE_BUF];
	char recs[24], rfrees[24], local[UTIL_SIZE_BUF];
	const char *row[7] = { id, slabs, used, avail, recs, rfrees, local };
	struct cmd_table t;
	unsigned idle = 0;
	size_t i;
	int rc;

	cmd_table_init(&t, 7, head, 0x7f);
	for (i = 0; i < cmd_jlen(arenas); i++) {
		a = json_object_array_get_idx(arenas, i);
		if (!cmd_ju64(a, "slabs") && !cmd_ju64(a, "log_records") &&
		    !cmd_ju64(a, "remote_frees") &&
		    !cmd_ju64(a, "local_free")) {
			idle++;
			continue;
		}
		if (cmd_ju64(h, "parts") > 1) /* part.arena */
			snprintf(id, sizeof(id), "%" PRIu64 ".%" PRIu64,
				 cmd_ju64(a, "part"), cmd_ju64(a, "arena"));
		else
			snprintf(id, sizeof(id), "%" PRIu64,
				 cmd_ju64(a, "arena"));
		snprintf(slabs, sizeof(slabs), "%" PRIu64,
			 cmd_ju64(a, "slabs"));
		jsize(a, "used", used, sizeof(used));
		jsize(a, "free", avail, sizeof(avail));
		snprintf(recs, sizeof(recs), "%" PRIu64,
			 cmd_ju64(a, "log_records"));
		snprintf(rfrees, sizeof(rfrees), "%" PRIu64,
			 cmd_ju64(a, "remote_frees"));
		jsize(a, "local_free", local, sizeof(local));
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

static void show_heap_summary(struct json_object *h)
{
	char a[UTIL_SIZE_BUF], b[UTIL_SIZE_BUF], c[UTIL_SIZE_BUF];

	printf("\nheap:\n");
	printf("  arenas:       %" PRIu64 " (log of %" PRIu64
	       " records each; %" PRIu64 " not checkpointed)\n",
	       cmd_ju64(h, "narenas"), cmd_ju64(h, "log_capacity"),
	       cmd_ju64(h, "log_records"));
	printf("  size:         %s (used %s, free %s)\n",
	       jsize(h, "size", a, sizeof(a)), jsize(h, "used", b, sizeof(b)),
	       jsize(h, "free", c, sizeof(c)));
	printf("  slabs:        %s\n", jsize(h, "slab_bytes", a, sizeof(a)));
	printf("  extents:      %" PRIu64 " live (%s)\n",
	       cmd_ju64(h, "extents"), jsize(h, "extent_bytes", a, sizeof(a)));
	printf("  largest free: %s\n",
	       jsize(h, "largest_free_extent", a, sizeof(a)));
	if (cmd_ju64(h, "regions_per_part") > 1)
		printf("  regions:      %" PRIu64 " per part (each a whole "
		       "heap)\n",
		       cmd_ju64(h, "regions_per_part"));
	if (cmd_ju64(h, "ring_frees_pending"))
		printf("  free rings:   %" PRIu64 " frees across regions not "
		       "applied yet (their blocks count as used)\n",
		       cmd_ju64(h, "ring_frees_pending"));
	if (cmd_ju64(h, "map_groups"))
		printf("  page map:     layout %" PRIu64 "; open reads %" PRIu64
		       " of %" PRIu64 " groups of %s\n",
		       cmd_ju64(h, "layout_version"),
		       cmd_ju64(h, "map_groups_marked"),
		       cmd_ju64(h, "map_groups"),
		       jsize(h, "map_group_size", a, sizeof(a)));
	else
		printf("  page map:     layout %" PRIu64 ", no summary: open "
		       "reads all of it\n",
		       cmd_ju64(h, "layout_version"));
	if (cmd_ju64(h, "map_summary_invalid"))
		printf("  warning:      %" PRIu64 " page map summary words "
		       "invalid (corrupt): their groups are read in full\n",
		       cmd_ju64(h, "map_summary_invalid"));
}

int cmd_show_numa(struct json_object *doc)
{
	static const char *const head[] = { "PART",
					    "NODE",
					    "ARENAS",
					    "SIZE",
					    "USED",
					    "FREE",
					    "REMOTE FREES PENDING" };
	struct json_object *n = cmd_jobj(doc, "numa"), *p;
	struct json_object *parts = n ? cmd_jobj(n, "parts") : NULL;
	char part[24], node[24], nar[24], size[UTIL_SIZE_BUF];
	char used[UTIL_SIZE_BUF], avail[UTIL_SIZE_BUF], pend[24];
	const char *row[7] = { part, node, nar, size, used, avail, pend };
	struct cmd_table t;
	size_t i;
	int rc;

	if (!n)
		return 0;
	cmd_table_init(&t, 7, head, 0x7f);
	for (i = 0; i < cmd_jlen(parts); i++) {
		p = json_object_array_get_idx(parts, i);
		snprintf(part, sizeof(part), "%" PRIu64, cmd_ju64(p, "part"));
		snprintf(node, sizeof(node), "%" PRId64,
			 json_object_get_int64(cmd_jobj(p, "node")));
		snprintf(nar, sizeof(nar), "%" PRIu64, cmd_ju64(p, "narenas"));
		jsize(p, "size", size, sizeof(size));
		jsize(p, "used", used, sizeof(used));
		jsize(p, "free", avail, sizeof(avail));
		snprintf(pend, sizeof(pend), "%" PRIu64,
			 cmd_ju64(p, "remote_frees_pending"));
		cmd_table_add(&t, row);
	}
	printf("\nheap parts (one per NUMA node; threads allocate from "
	       "their node's part first):\n");
	rc = cmd_table_print(&t, stdout, 2);
	if (rc == 0)
		printf("fallbacks: %" PRIu64 " (allocations a full local part "
		       "sent to another), frees of another part's blocks: "
		       "%" PRIu64 " (since the heap was opened)\n",
		       cmd_ju64(n, "fallbacks"),
		       cmd_ju64(n, "remote_part_frees"));
	cmd_table_release(&t);
	return rc;
}

int cmd_show_heap(struct json_object *doc)
{
	struct json_object *h = cmd_jobj(doc, "heap");

	if (!h)
		return 0;
	show_heap_summary(h);
	if (show_arenas(h) < 0 || show_classes(h) < 0)
		return -ENOMEM;
	return 0;
}

/* the slabs per part, arena and class, then the mixed slabs */
int cmd_show_slabs(struct json_object *doc)
{
	static const char *const head[] = { "PART",  "ARENA", "BLOCK",
					    "SLABS", "USED",  "FREE" };
	static const char *const mhead[] = { "PART",	  "ARENA", "OFFSET",
					     "OLD BLOCK", "BLOCK", "OLD LIVE",
					     "USED",	  "FREE" };
	struct json_object *s = cmd_jobj(doc, "slabs"), *arr, *c;
	char c0[24], c1[24], c2[UTIL_SIZE_BUF], c3[UTIL_SIZE_BUF], c4[24];
	char c5[24], c6[24], c7[24];
	const char *row[8] = { c0, c1, c2, c3, c4, c5, c6, c7 };
	struct cmd_table t;
	size_t i;
	int rc;

	if (!s)
		return 0;
	arr = cmd_jobj(s, "classes");
	cmd_table_init(&t, 6, head, 0x3f);
	for (i = 0; i < cmd_jlen(arr); i++) {
		c = json_object_array_get_idx(arr, i);
		snprintf(c0, sizeof(c0), "%" PRIu64, cmd_ju64(c, "part"));
		snprintf(c1, sizeof(c1), "%" PRIu64, cmd_ju64(c, "arena"));
		jsize(c, "block_size", c2, sizeof(c2));
		snprintf(c3, sizeof(c3), "%" PRIu64, cmd_ju64(c, "slabs"));
		snprintf(c4, sizeof(c4), "%" PRIu64,
			 cmd_ju64(c, "used_blocks"));
		snprintf(c5, sizeof(c5), "%" PRIu64,
			 cmd_ju64(c, "free_blocks"));
		cmd_table_add(&t, row);
	}
	printf("\nslabs by class:%s\n", t.nrows > 1 ? "" : " none");
	rc = t.nrows > 1 ? cmd_table_print(&t, stdout, 2) : 0;
	cmd_table_release(&t);
	if (rc < 0)
		return rc;

	arr = cmd_jobj(s, "mixed");
	cmd_table_init(&t, 8, mhead, 0xf8 | 0x3);
	for (i = 0; i < cmd_jlen(arr); i++) {
		c = json_object_array_get_idx(arr, i);
		snprintf(c0, sizeof(c0), "%" PRIu64, cmd_ju64(c, "part"));
		snprintf(c1, sizeof(c1), "%" PRIu64, cmd_ju64(c, "arena"));
		snprintf(c2, sizeof(c2), "0x%" PRIx64, cmd_ju64(c, "offset"));
		jsize(c, "old_block_size", c3, sizeof(c3));
		jsize(c, "block_size", c4, sizeof(c4));
		snprintf(c5, sizeof(c5), "%" PRIu64,
			 cmd_ju64(c, "old_live_blocks"));
		snprintf(c6, sizeof(c6), "%" PRIu64,
			 cmd_ju64(c, "used_blocks"));
		snprintf(c7, sizeof(c7), "%" PRIu64,
			 cmd_ju64(c, "free_blocks"));
		cmd_table_add(&t, row);
	}
	printf("\nmixed slabs: %" PRIu64 "\n", cmd_ju64(s, "mixed_count"));
	rc = t.nrows > 1 ? cmd_table_print(&t, stdout, 2) : 0;
	cmd_table_release(&t);
	return rc;
}
