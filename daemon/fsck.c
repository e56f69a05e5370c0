/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad's online fsck (the "pool_fsck" request, pmactl --socket S fsck
 * NAME): pmad holds the pool open with its exclusive lock, so pmactl
 * cannot check it; pmad checks it itself, read-only. It quiesces the pool
 * first, and pmad's loop runs one request at a time, so after a
 * checkpoint (every log applied and retired) nothing changes it while the
 * checks run: the pool format (lib/pool, the files read, no lock taken),
 * the heap of every part against pmad's own open heap (lib/pmalloc's
 * walk), and an HDPM file system in it. A pool that clients share
 * (fsck_shared): the leases against the region locks, and the regions no
 * client holds, which pmad opens for the check. No repair: a repair
 * writes, which needs the pool offline. The reply has the keys of pmactl
 * --json fsck (pmactl-fsck(1)).
 */
#include <errno.h>

#include "hdpm/fsck.h"
#include "pmad.h"
#include "pmalloc.h"
#include "pmalloc/fsck.h"
#include "pool/fsck.h"
#include "pool/pool.h"
#include "util/errmsg.h"
#include "util/json.h"
#include "view/view.h"

static int finding_json(const struct pool_fsck_finding *f, void *arg)
{
	return view_fsck_finding_json(f, arg);
}

/*
 * The leases of a shared pool against the region locks (fsck through
 * pmad): each leased region is an info finding naming its client; a
 * leased region whose lock is free is a warning (the client dropped its
 * descriptors: its heap no longer holds it, so another grant could give
 * it away while the client still writes it), and a region locked by a
 * process pmad did not grant one too (pmad restarted while it held it).
 */
static int lease_fsck(struct pmad_pool *p, struct pool_fsck_sink *sink)
{
	uint64_t orphans;
	unsigned i, s, k = p->regions ? p->regions : 1;
	int rc = 0, busy;

	pmad_pool_detach_gone(p);
	orphans = pmad_pool_slots_orphaned(p);
	for (i = 0; rc == 0 && i < p->natts; i++)
		for (s = 0; rc == 0 && s < 64; s++) {
			if (!(p->atts[i].mask >> s & 1))
				continue;
			busy = p->nfds ? pool_fd_slot_busy(p->part_fds[0], s) :
					 -1;
			if (busy == 0)
				rc = pool_fsck_report(
					sink, "lease-lost", POOL_FSCK_WARNING,
					s / k, 0,
					"region slot %u (region %u of part %u) "
					"is leased to pid %d (uid %u), but no "
					"open holds its lock",
					s, s % k, s / k,
					(int)p->atts[i].cl->pid,
					(unsigned)p->atts[i].cl->uid);
			else
				rc = pool_fsck_report(
					sink, "lease-held", POOL_FSCK_INFO,
					s / k, 0,
					"region slot %u (region %u of part %u) "
					"is leased to pid %d (uid %u)",
					s, s % k, s / k,
					(int)p->atts[i].cl->pid,
					(unsigned)p->atts[i].cl->uid);
		}
	for (s = 0; rc == 0 && s < 64; s++)
		if (orphans >> s & 1)
			rc = pool_fsck_report(sink, "lease-unknown",
					      POOL_FSCK_WARNING, s / k, 0,
					      "region slot %u (region %u of "
					      "part %u) is held by a process "
					      "pmad did not grant it to (pmad "
					      "restarted while it held it)",
					      s, s % k, s / k);
	return rc;
}

/*
 * A pool that clients share: the pool format, the leases against the
 * region locks, and the regions no client holds, opened masked (their
 * rings with the leased regions and an HDPM file system, which spans
 * every region, are not checked: info findings say so).
 */
static int fsck_shared(struct pmad_pool *p, struct pool_fsck_sink *sink)
{
	struct pma_heap *heap = NULL;
	uint64_t mask = 0;
	int rc = pool_fsck_flags(p->path, sink, POOL_FSCK_HELD);

	if (rc == 0)
		rc = lease_fsck(p, sink);
	if (rc == 0)
		rc = pmad_pool_open_unleased(p, &heap, &mask);
	if (rc == 0 && !heap)
		rc = pool_fsck_report(sink, "heap-not-checked", POOL_FSCK_INFO,
				      0, 0,
				      "the heap is not checked: clients hold "
				      "every region of pool '%s'",
				      p->name);
	/* quiesce those regions: their logs applied and retired */
	if (rc == 0 && heap) {
		rc = pma_heap_checkpoint(heap);
		if (rc < 0)
			rc = util_errmsg_set(-rc, "checkpoint: %s",
					     pma_errormsg());
	}
	if (rc == 0 && heap)
		rc = pma_fsck_heap(heap, sink);
	if (rc == 0 && heap && hdpm_fsck_present(heap))
		rc = pool_fsck_report(sink, "hdpm-not-checked", POOL_FSCK_INFO,
				      0, 0,
				      "the HDPM file system is not checked: "
				      "clients hold regions of pool '%s'",
				      p->name);
	pma_heap_close(heap);
	return rc;
}

int pmad_pool_fsck(struct pmad_pool *p, struct json_object **ret)
{
	struct json_object *arr = json_object_new_array(), *o = NULL;
	struct pool_fsck_sink sink = { .fn = finding_json, .arg = arr };
	unsigned long errors;
	int rc, err;

	if (!arr)
		return util_errmsg_set(ENOMEM, "out of memory");
	if (!p->heap && !p->shared) {
		json_object_put(arr);
		return util_errmsg_set(p->err, "pool '%s' is not open: %s",
				       p->name, p->errmsg);
	}
	if (p->shared) {
		rc = fsck_shared(p, &sink);
	} else {
		/* quiesce: every log applied and retired, the state on
		 * media */
		rc = pmad_pool_checkpoint(p);
		if (rc == 0)
			rc = pool_fsck_flags(p->path, &sink, POOL_FSCK_HELD);
		if (rc == 0)
			rc = pma_fsck_heap(p->heap, &sink);
		if (rc == 0)
			rc = hdpm_fsck_heap(p->heap, &sink);
	}
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
