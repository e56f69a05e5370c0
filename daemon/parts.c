/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad pools with parts: a configured pool with "parts: all-nodes" (every
 * node that has a namespace) or "parts: [N, ...]" is a multi-part pool, one
 * part per node, each on that node's namespace (ns.c): part 0 is
 * NS/NAME.pool, part i NS/NAME.part<i>, every part "size" bytes, and each
 * part's header records its node. Created with lib/pool when part 0 is
 * missing, then opened with its heap like any configured pool; a pool
 * whose nodes have no namespace is listed in state "error" saying so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pmad.h"
#include "pmalloc.h"
#include "pool/pool.h"
#include "util/errmsg.h"
#include "util/log.h"

struct parts {
	int nodes[PMAD_MAX_PARTS];
	char *paths[PMAD_MAX_PARTS];
	unsigned n;
};

static void parts_release(struct parts *pt)
{
	unsigned i;

	for (i = 0; i < pt->n; i++)
		free(pt->paths[i]);
	pt->n = 0;
}

/* the nodes of pc and the path of each part on its namespace */
static int parts_place(const struct pmad *d, const struct pmad_pool_conf *pc,
		       struct parts *pt)
{
	const char *dir;
	unsigned i, n;

	n = pc->parts_all_nodes ? pmad_ns_nodes(d, pt->nodes, PMAD_MAX_PARTS) :
				  pc->nparts;
	if (!pc->parts_all_nodes)
		memcpy(pt->nodes, pc->parts, n * sizeof(*pt->nodes));
	if (!n)
		return util_errmsg_set(ENODEV,
				       "pool '%s': parts on all nodes, but no "
				       "namespace is configured or found",
				       pc->name);
	for (pt->n = 0; pt->n < n; pt->n++) {
		i = pt->n;
		dir = pmad_ns_path(d, pt->nodes[i]);
		if (!dir)
			return util_errmsg_set(ENODEV,
					       "pool '%s': no namespace on "
					       "node %d for part %u",
					       pc->name, pt->nodes[i], i);
		if ((i == 0 && asprintf(&pt->paths[i], "%s/%s.pool", dir,
					pc->name) < 0) ||
		    (i > 0 && asprintf(&pt->paths[i], "%s/%s.part%u", dir,
				       pc->name, i) < 0))
			return util_errmsg_set(ENOMEM, "out of memory");
	}
	return 0;
}

static int parts_create(const struct pmad_pool_conf *pc, const struct parts *pt)
{
	struct pool_create_params params = {
		.nparts = pt->n,
		.paths = (const char *const *)pt->paths,
		.nodes = pt->nodes,
		.part_size = pc->size,
		.mode = pc->mode,
	};
	struct pool *pool;
	int rc;

	rc = pool_create(&params, &pool);
	if (rc < 0)
		return util_errmsg_set(-rc, "cannot create pool '%s': %s",
				       pc->name, pool_errormsg());
	pool_close(&pool);
	util_info("created pool '%s': %u part%s of %llu bytes, part 0 at %s",
		  pc->name, pt->n, pt->n == 1 ? "" : "s",
		  (unsigned long long)pc->size, pt->paths[0]);
	return 0;
}

/* owner, group and mode of the configuration on every part */
static void parts_perms(const struct pmad_pool_conf *pc, const struct parts *pt)
{
	unsigned i;

	for (i = 0; i < pt->n; i++) {
		if (chown(pt->paths[i], pc->owner, pc->group) < 0)
			util_warn("pool '%s': cannot chown %s to %u:%u: %s",
				  pc->name, pt->paths[i], (unsigned)pc->owner,
				  (unsigned)pc->group, strerror(errno));
		if (chmod(pt->paths[i], pc->mode) < 0)
			util_warn("pool '%s': cannot chmod %s to %04o: %s",
				  pc->name, pt->paths[i], (unsigned)pc->mode,
				  strerror(errno));
	}
}

/* the table entry of pc (added with path if new); NULL on ENOMEM */
static struct pmad_pool *
parts_entry(struct pmad *d, const struct pmad_pool_conf *pc, const char *path)
{
	struct pmad_pool *p = pmad_pool_find(d, pc->name);

	if (!p && pmad_pool_add(d, pc->name, path, &p) < 0)
		return NULL;
	p->from_config = 1;
	return p;
}

int pmad_pool_from_parts(struct pmad *d, const struct pmad_pool_conf *pc)
{
	struct parts pt = { .n = 0 };
	struct pmad_pool *p;
	int rc;

	rc = parts_place(d, pc, &pt);
	p = parts_entry(d, pc, rc == 0 ? pt.paths[0] : "-");
	if (!p) {
		parts_release(&pt);
		return -ENOMEM;
	}
	if (rc < 0 || !pt.n) { /* listed with why, as one failing to open */
		if (!p->heap && !p->shared)
			pmad_pool_fail(p, -rc);
		parts_release(&pt);
		return 0;
	}
	if (!p->heap && !p->shared && access(pt.paths[0], F_OK) < 0 &&
	    errno == ENOENT && parts_create(pc, &pt) < 0) {
		pmad_pool_fail(p, EIO);
		parts_release(&pt);
		return 0;
	}
	parts_perms(pc, &pt);
	p->format_regions = pc->regions;
	if (!p->heap && !p->shared)
		(void)pmad_pool_open_heap(p, PMA_HEAP_FORMAT);
	parts_release(&pt);
	return 0;
}
