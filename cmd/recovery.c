/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl: the recovery pending in a pool (recovery.h): its heap's, and an
 * HDPM file system's in it, as text or JSON.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "recovery.h"
#include "util/json.h"

int cmd_recovery_pending(const char *path, struct cmd_recovery *ret)
{
	struct pma_heap *heap;
	int rc;

	memset(ret, 0, sizeof(*ret));
	rc = pma_fsck_pending(path, &ret->heap);
	if (rc < 0)
		return rc;
	rc = pma_heap_open(path, PMA_HEAP_RDONLY, &heap);
	if (rc < 0)
		return rc;
	rc = hdpm_fsck_pending(heap, &ret->hdpm);
	pma_heap_close(heap);
	return rc;
}

void cmd_recovery_free(struct cmd_recovery *r)
{
	pma_fsck_pending_free(&r->heap);
}

static int heap_needed(const struct pma_fsck_pending *p)
{
	return p->ops || p->torn || p->root_unsealed;
}

static int hdpm_needed(const struct hdpm_fsck_pending *h)
{
	return h->undo || h->finish || h->merges;
}

int cmd_recovery_needed(const struct cmd_recovery *r)
{
	return heap_needed(&r->heap) || hdpm_needed(&r->hdpm);
}

const char *cmd_recovery_summary(const struct pma_fsck_pending *p, char *buf,
				 size_t len)
{
	if (!heap_needed(p)) {
		snprintf(buf, len, "nothing (every log is empty)");
		return buf;
	}
	snprintf(buf, len,
		 "replay %" PRIu64 " operation%s in %u arena%s, drop %" PRIu64
		 " torn tail%s, %" PRIu64 " remote free%s pending%s",
		 p->ops, p->ops == 1 ? "" : "s", p->arenas_pending,
		 p->arenas_pending == 1 ? "" : "s", p->torn,
		 p->torn == 1 ? "" : "s", p->rfree_pending,
		 p->rfree_pending == 1 ? "" : "s",
		 p->root_unsealed ? ", seal the root word" : "");
	return buf;
}

/* "alloc 3, free 2" into buf */
static const char *by_type_str(const struct pma_fsck_pending_arena *a,
			       char *buf, size_t len)
{
	size_t n = 0;
	unsigned t;

	buf[0] = '\0';
	for (t = 1; t < PMA_REC_NTYPES && n < len; t++) {
		if (!a->by_type[t])
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s %" PRIu64,
				      n ? ", " : "", pma_booklog_type_name(t),
				      a->by_type[t]);
	}
	return buf;
}

/* "undo N interrupted operations, ..." into buf */
static const char *hdpm_summary(const struct hdpm_fsck_pending *h, char *buf,
				size_t len)
{
	if (!hdpm_needed(h)) {
		snprintf(buf, len, "%s",
			 h->refused ? "the mount refuses the file system (a "
				      "journal names no state: pmactl fsck "
				      "says which)" :
				      "nothing (every journal is idle)");
		return buf;
	}
	snprintf(buf, len,
		 "undo %u interrupted operation%s, finish %u committed "
		 "operation%s, finish or undo %u background merge%s (%" PRIu64
		 " retired page%s to free)%s",
		 h->undo, h->undo == 1 ? "" : "s", h->finish,
		 h->finish == 1 ? "" : "s", h->merges,
		 h->merges == 1 ? "" : "s", h->retire,
		 h->retire == 1 ? "" : "s",
		 h->refused ? "; the mount refuses the file system (pmactl "
			      "fsck says why)" :
			      "");
	return buf;
}

/* the HDPM line and its table of interrupted operations */
static int hdpm_print(const struct hdpm_fsck_pending *h)
{
	static const char *const head[] = { "SLOT", "OPERATION", "STATE",
					    "RECORDS", "MOUNT" };
	char slot[16], seq[24], recs[16], sum[256];
	const char *row[5] = { slot, seq, NULL, recs, NULL };
	struct cmd_table t;
	unsigned i;
	int rc;

	printf("HDPM recovery: %s\n", hdpm_summary(h, sum, sizeof(sum)));
	if (!h->nops)
		return 0;
	cmd_table_init(&t, 5, head, 0x0b);
	for (i = 0; i < h->nops; i++) {
		const struct hdpm_fsck_pending_op *op = &h->ops[i];

		snprintf(slot, sizeof(slot), "%u", op->slot);
		snprintf(seq, sizeof(seq), "%" PRIu64, op->seq);
		row[2] = op->committed ? "committed" : "active";
		snprintf(recs, sizeof(recs), "%u", op->records);
		row[4] = op->committed ? "finishes it" : "undoes it";
		cmd_table_add(&t, row);
	}
	rc = cmd_table_print(&t, stdout, 2);
	cmd_table_release(&t);
	return rc;
}

static int heap_print(const struct pma_fsck_pending *p, int hdpm_work)
{
	/* a heap over several parts: PART first */
	static const char *const head[] = { "PART",	     "ARENA",
					    "HEAD",	     "TAIL",
					    "OPS",	     "TORN",
					    "RFREE-PENDING", "OPS BY TYPE" };
	char part[16], arena[16], hd[24], tl[24], ops[24], rf[24], types[256];
	const char *row[8] = { part, arena, hd, tl, ops, NULL, rf, types };
	unsigned skip = p->nparts > 1 ? 0 : 1;
	char sum[256];
	struct cmd_table t;
	unsigned a;
	int rc;

	/* the heap's line says so when only the file system has work */
	printf("recovery: %s\n",
	       !heap_needed(p) && hdpm_work ?
		       "nothing in the heap (every log is empty)" :
		       cmd_recovery_summary(p, sum, sizeof(sum)));
	if (!p->arenas_pending)
		return 0;
	cmd_table_init(&t, 8 - skip, head + skip, skip ? 0x2f : 0x5f);
	for (a = 0; a < p->narenas; a++) {
		const struct pma_fsck_pending_arena *x = &p->arenas[a];

		if (!x->ops && !x->torn)
			continue;
		snprintf(part, sizeof(part), "%u", x->part);
		snprintf(arena, sizeof(arena), "%u", x->arena);
		snprintf(hd, sizeof(hd), "%" PRIu64, x->head);
		snprintf(tl, sizeof(tl), "%" PRIu64, x->tail);
		snprintf(ops, sizeof(ops), "%" PRIu64, x->ops);
		row[5] = x->torn ? "yes" : "no";
		snprintf(rf, sizeof(rf), "%" PRIu64, x->rfree_pending);
		by_type_str(x, types, sizeof(types));
		cmd_table_add(&t, row + skip);
	}
	rc = cmd_table_print(&t, stdout, 2);
	cmd_table_release(&t);
	return rc;
}

int cmd_recovery_pending_print(const struct cmd_recovery *r)
{
	int rc = heap_print(&r->heap, hdpm_needed(&r->hdpm));

	if (rc == 0 && r->hdpm.present)
		rc = hdpm_print(&r->hdpm);
	return rc;
}

static struct json_object *arena_json(const struct pma_fsck_pending_arena *x)
{
	struct json_object *o = json_object_new_object();
	struct json_object *types = json_object_new_object();
	int err = !o || !types;
	unsigned t;

	for (t = 1; !err && t < PMA_REC_NTYPES; t++)
		if (x->by_type[t])
			err |= util_json_add_u64(
				types, pma_booklog_type_name(t), x->by_type[t]);
	if (!err) {
		err |= util_json_add_u64(o, "part", x->part);
		err |= util_json_add_u64(o, "arena", x->arena);
		err |= util_json_add_u64(o, "head", x->head);
		err |= util_json_add_u64(o, "tail", x->tail);
		err |= util_json_add_u64(o, "operations", x->ops);
		err |= util_json_add_bool(o, "torn_tail", x->torn);
		err |= util_json_add_u64(o, "remote_frees_pending",
					 x->rfree_pending);
		err |= util_json_add_obj(o, "by_type", types);
		types = NULL;
	}
	json_object_put(types);
	if (err) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static struct json_object *hdpm_op_json(const struct hdpm_fsck_pending_op *op)
{
	struct json_object *o = json_object_new_object();
	int err = !o;

	if (!err) {
		err |= util_json_add_u64(o, "slot", op->slot);
		err |= util_json_add_u64(o, "sequence", op->seq);
		err |= util_json_add_str(
			o, "state", op->committed ? "committed" : "active");
		err |= util_json_add_u64(o, "records", op->records);
		err |= util_json_add_u64(o, "part", op->part);
		err |= util_json_add_hex(o, "offset", op->off);
	}
	if (err) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* the "hdpm" object: the next mount's recovery */
static struct json_object *hdpm_json(const struct hdpm_fsck_pending *h)
{
	struct json_object *o = json_object_new_object();
	struct json_object *arr = json_object_new_array(), *x;
	int err = !o || !arr;
	unsigned i;

	for (i = 0; !err && i < h->nops; i++) {
		x = hdpm_op_json(&h->ops[i]);
		if (!x || json_object_array_add(arr, x) < 0) {
			json_object_put(x);
			err = 1;
		}
	}
	if (!err) {
		err |= util_json_add_bool(o, "needed", hdpm_needed(h));
		err |= util_json_add_bool(o, "refused", h->refused);
		err |= util_json_add_u64(o, "operations_to_undo", h->undo);
		err |= util_json_add_u64(o, "operations_to_finish", h->finish);
		err |= util_json_add_u64(o, "background_merges", h->merges);
		err |= util_json_add_bool(o, "merge_building",
					  h->merge_building);
		err |= util_json_add_u64(o, "retired_pages", h->retire);
		err |= util_json_add_obj(o, "operations", arr);
		arr = NULL;
	}
	json_object_put(arr);
	if (err) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

struct json_object *cmd_recovery_pending_json(const struct cmd_recovery *r)
{
	const struct pma_fsck_pending *p = &r->heap;
	struct json_object *o = json_object_new_object();
	struct json_object *arr = json_object_new_array(), *x;
	int err = !o || !arr;
	unsigned a;

	for (a = 0; !err && a < p->narenas; a++) {
		if (!p->arenas[a].ops && !p->arenas[a].torn)
			continue;
		x = arena_json(&p->arenas[a]);
		if (!x || json_object_array_add(arr, x) < 0) {
			json_object_put(x);
			err = 1;
		}
	}
	if (!err) {
		err |= util_json_add_bool(o, "needed", cmd_recovery_needed(r));
		err |= util_json_add_u64(o, "operations", p->ops);
		err |= util_json_add_u64(o, "arenas_pending",
					 p->arenas_pending);
		err |= util_json_add_u64(o, "torn_tails", p->torn);
		err |= util_json_add_u64(o, "remote_frees_pending",
					 p->rfree_pending);
		err |= util_json_add_bool(o, "root_unsealed", p->root_unsealed);
		err |= util_json_add_obj(o, "arenas", arr);
		arr = NULL;
	}
	json_object_put(arr);
	if (!err && r->hdpm.present)
		err |= util_json_add_obj(o, "hdpm", hdpm_json(&r->hdpm));
	if (err) {
		json_object_put(o);
		return NULL;
	}
	return o;
}
