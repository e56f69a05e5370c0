/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ns topology: CPU -> NUMA node map, real (libnuma) or fake
 * (PMAD_FAKE_NUMA / ns_topology_set_fake()). The map is one immutable
 * struct topo swapped under a read-write lock, so readers on any thread see
 * either the old or the new map, never a half-built one. The real map is
 * built on first use.
 */
#include <errno.h>
#include <limits.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "ns/internal.h"
#include "ns/ns.h"
#include "util/errmsg.h"

struct topo {
	unsigned nodes; /* >= 1 */
	unsigned ncpus; /* entries in map */
	int is_fake; /* unlisted CPUs: c % nodes (fake) or 0 (real) */
	int map[]; /* cpu -> node */
};

static pthread_rwlock_t topo_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct topo *topo_cur; /* NULL until first use */
static struct topo *topo_real; /* cached libnuma view, never freed */

static struct topo *topo_alloc(unsigned nodes, unsigned ncpus, int is_fake)
{
	struct topo *t = calloc(1, sizeof(*t) + (size_t)ncpus * sizeof(int));

	if (!t)
		return NULL;
	t->nodes = nodes;
	t->ncpus = ncpus;
	t->is_fake = is_fake;
	return t;
}

/* topo_real_build -- ask libnuma; a kernel without NUMA is one node */
static struct topo *topo_real_build(void)
{
	unsigned nodes = 1, ncpus = 0, c;
	struct topo *t;
	int n;

	if (numa_available() >= 0) {
		n = numa_max_node();
		nodes = n >= 0 ? (unsigned)n + 1 : 1;
		n = numa_num_configured_cpus();
		ncpus = n > 0 ? (unsigned)n : 0;
	}
	t = topo_alloc(nodes, ncpus, 0);
	if (!t)
		return NULL;
	for (c = 0; c < ncpus; c++) {
		n = numa_node_of_cpu((int)c);
		t->map[c] = n >= 0 && (unsigned)n < nodes ? n : 0;
	}
	return t;
}

/* topo_install -- make t current (NULL = real); caller holds write lock */
static int topo_install_locked(struct topo *t)
{
	struct topo *old = topo_cur;

	if (!t) {
		if (!topo_real)
			topo_real = topo_real_build();
		if (!topo_real)
			return util_errmsg_set(ENOMEM, "cannot build NUMA map");
		t = topo_real;
	}
	topo_cur = t;
	if (old && old != topo_real)
		free(old);
	return 0;
}

static int topo_install(struct topo *t)
{
	int rc;

	pthread_rwlock_wrlock(&topo_lock);
	rc = topo_install_locked(t);
	pthread_rwlock_unlock(&topo_lock);
	return rc;
}

/* topo_read -- read lock with a current map; 0 or -ENOMEM (lock released) */
static int topo_read(void)
{
	int rc = 0;

	pthread_rwlock_rdlock(&topo_lock);
	if (topo_cur)
		return 0;
	pthread_rwlock_unlock(&topo_lock);
	pthread_rwlock_wrlock(&topo_lock);
	if (!topo_cur)
		rc = topo_install_locked(NULL);
	pthread_rwlock_unlock(&topo_lock);
	if (rc < 0)
		return rc;
	pthread_rwlock_rdlock(&topo_lock);
	return 0;
}

/* fake_uint -- strict decimal: digits only, value <= max; 0 or -EINVAL */
static int fake_uint(const char *s, size_t len, unsigned max, unsigned *ret_val)
{
	unsigned long val = 0;
	size_t i;

	if (len == 0 || len > 9)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		val = val * 10 + (unsigned long)(s[i] - '0');
	}
	if (val > max)
		return -EINVAL;
	*ret_val = (unsigned)val;
	return 0;
}

struct fake_pair {
	unsigned cpu;
	unsigned node;
};

/* fake_entry -- parse one "c=n" token of length len */
static int fake_entry(const char *spec, const char *tok, size_t len,
		      unsigned nodes, struct fake_pair *ret_pair)
{
	const char *eq = memchr(tok, '=', len);
	size_t clen = eq ? (size_t)(eq - tok) : len;

	if (!eq)
		return util_errmsg_set(EINVAL,
				       "PMAD_FAKE_NUMA '%s': bad entry "
				       "'%.*s' (want cpu=node)",
				       spec, (int)len, tok);
	if (fake_uint(tok, clen, NS_FAKE_MAX_CPUS - 1, &ret_pair->cpu) < 0)
		return util_errmsg_set(EINVAL,
				       "PMAD_FAKE_NUMA '%s': bad cpu "
				       "'%.*s' in '%.*s'",
				       spec, (int)clen, tok, (int)len, tok);
	if (fake_uint(eq + 1, len - clen - 1, nodes - 1, &ret_pair->node) < 0)
		return util_errmsg_set(EINVAL,
				       "PMAD_FAKE_NUMA '%s': bad node "
				       "'%.*s' in '%.*s' (want 0..%u)",
				       spec, (int)(len - clen - 1), eq + 1,
				       (int)len, tok, nodes - 1);
	return 0;
}

/* fake_pairs -- split the comma list into *ret_pairs (*ret_count of them) */
static int fake_pairs(const char *spec, const char *list, unsigned nodes,
		      struct fake_pair **ret_pairs, unsigned *ret_count)
{
	unsigned count = 1, i;
	struct fake_pair *pairs;
	const char *p, *end;
	int rc;

	for (p = list; *p; p++)
		count += *p == ',';
	pairs = calloc(count, sizeof(*pairs));
	if (!pairs)
		return util_errmsg_set(ENOMEM, "PMAD_FAKE_NUMA: out of memory");
	for (i = 0, p = list; i < count; i++, p = end + 1) {
		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		rc = fake_entry(spec, p, (size_t)(end - p), nodes, &pairs[i]);
		if (rc < 0)
			goto out_free;
	}
	*ret_pairs = pairs;
	*ret_count = count;
	return 0;

out_free:
	free(pairs);
	return rc;
}

/* fake_map -- CPU map from pairs: listed CPUs as given, the rest c % nodes */
static int fake_map(const char *spec, const struct fake_pair *pairs,
		    unsigned count, unsigned nodes, int **ret_map,
		    unsigned *ret_ncpus)
{
	unsigned ncpus = 0, i;
	int *map;

	for (i = 0; i < count; i++)
		if (pairs[i].cpu >= ncpus)
			ncpus = pairs[i].cpu + 1;
	/* no pairs: an empty map (malloc(0) may return NULL) */
	map = malloc((size_t)(ncpus ? ncpus : 1) * sizeof(*map));
	if (!map)
		return util_errmsg_set(ENOMEM, "PMAD_FAKE_NUMA: out of memory");
	for (i = 0; i < ncpus; i++)
		map[i] = -1;
	for (i = 0; i < count; i++) {
		if (map[pairs[i].cpu] >= 0) {
			free(map);
			return util_errmsg_set(EINVAL,
					       "PMAD_FAKE_NUMA '%s': "
					       "cpu %u listed twice",
					       spec, pairs[i].cpu);
		}
		map[pairs[i].cpu] = (int)pairs[i].node;
	}
	for (i = 0; i < ncpus; i++)
		if (map[i] < 0)
			map[i] = (int)(i % nodes);
	*ret_map = map;
	*ret_ncpus = ncpus;
	return 0;
}

int ns_fake_parse(const char *spec, unsigned *ret_nodes, int **ret_map,
		  unsigned *ret_ncpus)
{
	const char *colon = strchr(spec, ':');
	size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
	struct fake_pair *pairs = NULL;
	unsigned nodes, count = 0, ncpus = 0;
	int *map = NULL;
	int rc;

	if (fake_uint(spec, nlen, NS_FAKE_MAX_NODES, &nodes) < 0 || !nodes)
		return util_errmsg_set(EINVAL,
				       "PMAD_FAKE_NUMA '%s': bad node "
				       "count '%.*s' (want 1..%u)",
				       spec, (int)nlen, spec,
				       NS_FAKE_MAX_NODES);
	if (colon) {
		rc = fake_pairs(spec, colon + 1, nodes, &pairs, &count);
		if (rc < 0)
			return rc;
		rc = fake_map(spec, pairs, count, nodes, &map, &ncpus);
		free(pairs);
		if (rc < 0)
			return rc;
	}
	*ret_nodes = nodes;
	*ret_map = map;
	*ret_ncpus = ncpus;
	return 0;
}

int ns_topology_init(void)
{
	const char *spec = getenv("PMAD_FAKE_NUMA");
	unsigned nodes = 0, ncpus = 0;
	int *map = NULL;
	int rc;

	if (!spec || !spec[0]) {
		/* no fake requested: keep what is set, build the real map */
		rc = topo_read();
		if (rc < 0)
			return rc;
		pthread_rwlock_unlock(&topo_lock);
		return 0;
	}
	rc = ns_fake_parse(spec, &nodes, &map, &ncpus);
	if (rc < 0)
		return rc;
	rc = ns_topology_set_fake(nodes, map, ncpus);
	free(map);
	return rc;
}

int ns_topology_set_fake(unsigned nodes, const int *cpu_node, unsigned ncpus)
{
	struct topo *t;
	unsigned c;

	if (nodes < 1 || nodes > NS_FAKE_MAX_NODES)
		return util_errmsg_set(EINVAL,
				       "fake topology: %u nodes (want 1..%u)",
				       nodes, NS_FAKE_MAX_NODES);
	if (ncpus && !cpu_node)
		return util_errmsg_set(EINVAL, "fake topology: no CPU map");
	for (c = 0; c < ncpus; c++)
		if (cpu_node[c] < 0 || (unsigned)cpu_node[c] >= nodes)
			return util_errmsg_set(
				EINVAL,
				"fake topology: cpu %u on node %d "
				"(want 0..%u)",
				c, cpu_node[c], nodes - 1);
	t = topo_alloc(nodes, ncpus, 1);
	if (!t)
		return util_errmsg_set(ENOMEM, "fake topology: out of memory");
	if (ncpus)
		memcpy(t->map, cpu_node, (size_t)ncpus * sizeof(int));
	return topo_install(t);
}

void ns_topology_clear_fake(void)
{
	pthread_rwlock_wrlock(&topo_lock);
	if (topo_cur != topo_real)
		free(topo_cur);
	topo_cur = topo_real; /* NULL: the next reader builds it */
	pthread_rwlock_unlock(&topo_lock);
}

int ns_topology_is_fake(void)
{
	int is_fake;

	if (topo_read() < 0)
		return 0;
	is_fake = topo_cur->is_fake;
	pthread_rwlock_unlock(&topo_lock);
	return is_fake;
}

unsigned ns_node_count(void)
{
	unsigned nodes;

	if (topo_read() < 0)
		return 1;
	nodes = topo_cur->nodes;
	pthread_rwlock_unlock(&topo_lock);
	return nodes;
}

int ns_cpu_node(unsigned cpu)
{
	int node = 0;

	if (topo_read() < 0)
		return 0;
	if (cpu < topo_cur->ncpus)
		node = topo_cur->map[cpu];
	else if (topo_cur->is_fake)
		node = (int)(cpu % topo_cur->nodes);
	pthread_rwlock_unlock(&topo_lock);
	return node;
}

int ns_current_node(void)
{
	int cpu = sched_getcpu();

	return cpu < 0 ? 0 : ns_cpu_node((unsigned)cpu);
}
