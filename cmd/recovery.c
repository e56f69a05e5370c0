/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl: the recovery pending in a heap (recovery.h), as text or JSON.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "recovery.h"
#include "util/json.h"

const char *cmd_recovery_summary(const struct pma_fsck_pending *p, char *buf,
				 size_t len)
{
	if (!p->ops && !p->torn && !p->root_unsealed) {
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

int cmd_recovery_pending_print(const struct pma_fsck_pending *p)
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

	printf("recovery: %s\n", cmd_recovery_summary(p, sum, sizeof(sum)));
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

struct json_object *cmd_recovery_pending_json(const struct pma_fsck_pending *p)
{
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
		err |= util_json_add_bool(
			o, "needed", p->ops || p->torn || p->root_unsealed);
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
	if (err) {
		json_object_put(o);
		return NULL;
	}
	return o;
}
