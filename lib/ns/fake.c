/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ns fake namespaces: PMAD_FAKE_NS="NODE=DIR[,NODE=DIR...]" makes
 * ns_list() report one mounted fsdax namespace per entry, DIR standing for
 * its mount point, instead of asking libndctl. Tests use it with plain
 * directories to drive namespace discovery (pmad's "namespaces: auto") on
 * machines without PM, as PMAD_FAKE_NUMA fakes the topology.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "ns/internal.h"
#include "util/errmsg.h"

/* one "NODE=DIR" entry of len bytes into e (the kth entry) */
static int fake_entry(const char *spec, const char *tok, size_t len, unsigned k,
		      struct ns_namespace *e)
{
	const char *eq = memchr(tok, '=', len);
	struct statvfs sv;
	unsigned long node;
	char *end;

	errno = 0;
	node = eq ? strtoul(tok, &end, 10) : 0;
	if (!eq || eq == tok || end != eq || errno ||
	    node >= NS_FAKE_MAX_NODES || tok[0] == '-')
		return util_errmsg_set(EINVAL,
				       "PMAD_FAKE_NS '%s': entry '%.*s' is not "
				       "NODE=DIR",
				       spec, (int)len, tok);
	if (eq[1] != '/' || (size_t)(tok + len - eq - 1) >= NS_PATH_LEN)
		return util_errmsg_set(EINVAL,
				       "PMAD_FAKE_NS '%s': '%.*s' is not an "
				       "absolute path",
				       spec, (int)(tok + len - eq - 1), eq + 1);
	memset(e, 0, sizeof(*e));
	snprintf(e->bus, sizeof(e->bus), "fake");
	snprintf(e->region, sizeof(e->region), "region%u", k);
	snprintf(e->name, sizeof(e->name), "namespace%u.0", k);
	snprintf(e->mode, sizeof(e->mode), "fsdax");
	snprintf(e->device, sizeof(e->device), "pmem%u", k);
	snprintf(e->mount, sizeof(e->mount), "%.*s", (int)(tok + len - eq - 1),
		 eq + 1);
	snprintf(e->mount_opts, sizeof(e->mount_opts), "fake");
	e->node = (int)node;
	if (statvfs(e->mount, &sv) == 0)
		e->size = (uint64_t)sv.f_blocks * sv.f_frsize;
	return 0;
}

int ns_fake_list(const char *spec, struct ns_namespace **ret_list,
		 size_t *ret_count)
{
	struct ns_namespace *list;
	size_t n = 1, count = 0, len;
	const char *p;
	int rc;

	for (p = spec; *p; p++)
		n += *p == ',';
	list = calloc(n, sizeof(*list));
	if (!list)
		return util_errmsg_set(ENOMEM, "out of memory");
	for (p = spec; *p; p += len + (p[len] == ',')) {
		len = strcspn(p, ",");
		rc = fake_entry(spec, p, len, (unsigned)count, &list[count]);
		if (rc < 0) {
			free(list);
			return rc;
		}
		count++;
	}
	*ret_list = count ? list : NULL;
	if (!count)
		free(list);
	*ret_count = count;
	return 0;
}
