/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad's online fsck (the "pool_fsck" request, pmactl --socket S fsck
 * NAME): pmad holds the pool open with its exclusive lock, so pmactl
 * cannot check it; pmad checks it itself, read-only. It quiesces the pool
 * first: no client may hold it (-EBUSY, pmad_pool_busy), and pmad's loop
 * runs one request at a time, so after a checkpoint (every log applied
 * and retired) nothing changes it while the checks run: the pool format
 * (lib/pool, the files read, no lock taken), the heap of every part
 * against pmad's own open heap (lib/pmalloc's walk), and an HDPM file
 * system in it. No repair: a repair writes, which needs the pool offline.
 * The reply has the keys of pmactl --json fsck (pmactl-fsck(1)).
 */
#include <errno.h>

#include "hdpm/fsck.h"
#include "pmad.h"
#include "pmalloc/fsck.h"
#include "pool/fsck.h"
#include "util/errmsg.h"
#include "util/json.h"
#include "view/view.h"

static int finding_json(const struct pool_fsck_finding *f, void *arg)
{
	return view_fsck_finding_json(f, arg);
}

int pmad_pool_fsck(struct pmad_pool *p, struct json_object **ret)
{
	struct json_object *arr = json_object_new_array(), *o = NULL;
	struct pool_fsck_sink sink = { .fn = finding_json, .arg = arr };
	unsigned long errors;
	int rc, err;

	if (!arr)
		return util_errmsg_set(ENOMEM, "out of memory");
	if (p->shared) { /* a client has the heap: it is not pmad's now */
		json_object_put(arr);
		return pmad_pool_busy(p);
	}
	if (!p->heap) {
		json_object_put(arr);
		return util_errmsg_set(p->err, "pool '%s' is not open: %s",
				       p->name, p->errmsg);
	}
	/* quiesce: every log applied and retired, the state on media */
	rc = pmad_pool_checkpoint(p);
	if (rc == 0)
		rc = pool_fsck_flags(p->path, &sink, POOL_FSCK_HELD);
	if (rc == 0)
		rc = pma_fsck_heap(p->heap, &sink);
	if (rc == 0)
		rc = hdpm_fsck_heap(p->heap, &sink);
	if (rc < 0) {
		json_object_put(arr);
		if (sink.rc < 0)
			return util_errmsg_set(ENOMEM, "out of memory");
		util_errmsg_prefix("pool '%s': fsck", p->name);
		return rc;
	}
	errors = sink.counts[POOL_FSCK_ERROR];
	o = json_object_new_object();
	err = !o;
	if (o) {
		err |= util_json_add_str(o, "pool", p->name);
		err |= util_json_add_bool(o, "online", 1);
		err |= util_json_add_bool(o, "consistent", !errors);
		err |= util_json_add_u64(o, "errors", errors);
		err |= util_json_add_u64(o, "warnings",
					 sink.counts[POOL_FSCK_WARNING]);
		err |= util_json_add_obj(o, "findings", arr);
		arr = NULL;
	}
	json_object_put(arr);
	if (err) {
		json_object_put(o);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	*ret = o;
	return 0;
}
