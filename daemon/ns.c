/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad namespaces: where pools with parts go. The table is the config's
 * explicit node/path list, or with "namespaces: auto" every mounted fsdax
 * namespace lib/ns finds (devdax devices are left to pools that name them
 * with path: a part needs a whole device). Rebuilt at start and on each
 * reload; a pool's part on node N goes to the first namespace of node N.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ns/ns.h"
#include "pmad.h"
#include "util/errmsg.h"
#include "util/json.h"
#include "util/log.h"

void pmad_ns_release(struct pmad *d)
{
	unsigned i;

	for (i = 0; i < d->nns; i++)
		free(d->ns[i].path);
	free(d->ns);
	d->ns = NULL;
	d->nns = 0;
}

static int ns_add(struct pmad *d, int node, const char *path, int is_auto)
{
	struct pmad_ns *ns;

	ns = reallocarray(d->ns, d->nns + 1, sizeof(*ns));
	if (!ns)
		return util_errmsg_set(ENOMEM, "out of memory");
	d->ns = ns;
	ns[d->nns].node = node;
	ns[d->nns].is_auto = is_auto;
	ns[d->nns].path = strdup(path);
	if (!ns[d->nns].path)
		return util_errmsg_set(ENOMEM, "out of memory");
	d->nns++;
	util_info("namespace on node %d: %s (%s)", node, path,
		  is_auto ? "discovered" : "configured");
	return 0;
}

/* namespaces: auto, through lib/ns */
static int ns_discover(struct pmad *d)
{
	struct ns_namespace *list = NULL;
	size_t i, count = 0;
	int rc;

	rc = ns_list(&list, &count);
	if (rc < 0)
		return util_errmsg_set(-rc, "namespaces: auto: %s",
				       ns_errormsg());
	for (i = 0; i < count && rc == 0; i++) {
		if (strcmp(list[i].mode, "fsdax") != 0 || !list[i].mount[0]) {
			util_info("namespace %s (%s%s) is not a mounted fsdax "
				  "namespace: not used for pool parts",
				  list[i].name, list[i].mode,
				  list[i].dev_path[0] ? ", " : "");
			continue;
		}
		if (list[i].node < 0) {
			util_warn("namespace %s at %s has no NUMA node: not "
				  "used for pool parts",
				  list[i].name, list[i].mount);
			continue;
		}
		rc = ns_add(d, list[i].node, list[i].mount, 1);
	}
	free(list);
	if (rc == 0 && !d->nns)
		util_info("namespaces: auto found no mounted fsdax namespace");
	return rc;
}

int pmad_ns_load(struct pmad *d)
{
	unsigned i;
	int rc = 0;

	pmad_ns_release(d);
	if (d->conf->ns_auto)
		return ns_discover(d);
	for (i = 0; i < d->conf->nns && rc == 0; i++)
		rc = ns_add(d, d->conf->ns[i].node, d->conf->ns[i].path, 0);
	return rc;
}

const char *pmad_ns_path(const struct pmad *d, int node)
{
	unsigned i;

	for (i = 0; i < d->nns; i++)
		if (d->ns[i].node == node)
			return d->ns[i].path;
	return NULL;
}

unsigned pmad_ns_nodes(const struct pmad *d, int *nodes, unsigned max)
{
	unsigned i, j, n = 0;
	int node, dup;

	/* every node with a namespace, ascending, once */
	for (;;) {
		node = -1;
		for (i = 0; i < d->nns; i++) {
			dup = 0;
			for (j = 0; j < n; j++)
				dup |= nodes[j] == d->ns[i].node;
			if (!dup && (node < 0 || d->ns[i].node < node))
				node = d->ns[i].node;
		}
		if (node < 0 || n == max)
			return n;
		nodes[n++] = node;
	}
}

int pmad_ns_json(const struct pmad *d, struct json_object *obj)
{
	struct json_object *arr = json_object_new_array(), *o;
	unsigned i;
	int err = !arr;

	for (i = 0; arr && i < d->nns && !err; i++) {
		o = json_object_new_object();
		err |= !o;
		err |= util_json_add_u64(o, "node", (uint64_t)d->ns[i].node);
		err |= util_json_add_str(o, "path", d->ns[i].path);
		err |= util_json_add_str(o, "source",
					 d->ns[i].is_auto ? "auto" : "config");
		if (err || json_object_array_add(arr, o) < 0) {
			json_object_put(o);
			err = 1;
		}
	}
	if (err) {
		json_object_put(arr);
		return -1;
	}
	return util_json_add_obj(obj, "namespaces", arr);
}
