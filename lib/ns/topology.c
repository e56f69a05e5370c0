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

/* node ids need not be dense (nodes 0 and 2): online[] says which exist */
struct topo {
	unsigned nodes; /* >= 1: every node id is below */
	unsigned nonline; /* >= 1: nodes online */
	unsigned char online[NS_FAKE_MAX_NODES]; /* node id -> online */
	unsigned ncpus; /* entries in map */
	int is_fake; /* unlisted CPUs: online node c % nonline (fake) or 0 */
	int map[]; /* cpu -> node */
};

static pthread_rwlock_t topo_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct topo *topo_cur; /* NULL until first use */
static struct topo *topo_real; /* cached libnuma view, never freed */

/* a map of nodes node ids, every one online (NULL) or those in online */
static struct topo *topo_alloc(unsigned nodes, const unsigned char *online,
			       unsigned ncpus, int is_fake)
{
	struct topo *t = calloc(1, sizeof(*t) + (size_t)ncpus * sizeof(int));
	unsigned n;

	if (!t)
		return NULL;
	t->nodes = nodes;
	for (n = 0; n < nodes; n++) {
		t->online[n] = !online || online[n];
		t->nonline += t->online[n];
	}
	t->ncpus = ncpus;
	t->is_fake = is_fake;
	return t;
}

/* the kth online node of t, counting from 0 and wrapping around */
static int topo_nth_online(const struct topo *t, unsigned k)
{
	unsigned n;

	k %= t->nonline;
	for (n = 0; n < t->nodes; n++)
		if (t->online[n] && k-- == 0)
			return (int)n;
	return 0;
}

/* topo_real_build -- ask libnuma; a kernel without NUMA is one node */
static struct topo *topo_real_build(void)
{
	unsigned char online[NS_FAKE_MAX_NODES] = { 1 };
	unsigned nodes = 1, ncpus = 0, c;
	struct topo *t;
	int n;

	if (numa_available() >= 0) {
		n = numa_max_node();
		nodes = n >= 0 ? (unsigned)n + 1 : 1;
		if (nodes > NS_FAKE_MAX_NODES)
			nodes = NS_FAKE_MAX_NODES;
		n = numa_num_configured_cpus();
		ncpus = n > 0 ? (unsigned)n : 0;
		/* node ids may have gaps: the nodes that exist */
		for (c = 0; c < nodes; c++)
			online[c] = (unsigned char)numa_bitmask_isbitset(
				numa_nodes_ptr, c);
		online[0] |= !memchr(online, 1, nodes); /* at least one */
	}
	t = topo_alloc(nodes, online, ncpus, 0);
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
		      unsigned nodes, const unsigned char *online,
		      struct fake_pair *ret_pair)
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
	if (!online[ret_pair->node])
		return util_errmsg_set(EINVAL,
				       "PMAD_FAKE_NUMA '%s': node %u in '%.*s' "
				       "is not in the node list",
				       spec, ret_pair->node, (int)len, tok);
	return 0;
}

/* fake_pairs -- split the comma list into *ret_pairs (*ret_count of them) */
static int fake_pairs(const char *spec, const char *list, unsigned nodes,
		      const unsigned char *online, struct fake_pair **ret_pairs,
		      unsigned *ret_count)
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
		rc = fake_entry(spec, p, (size_t)(end - p), nodes, online,
				&pairs[i]);
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

/* fake_map -- CPU map from pairs: listed CPUs as given, CPU c of the rest
 * on online node c % nonline (ids holds the nonline online node ids) */
static int fake_map(const char *spec, const struct fake_pair *pairs,
		    unsigned count, const int *ids, unsigned nonline,
		    int **ret_map, unsigned *ret_ncpus)
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
		/* cpu < ncpus (see above), said again for clang's analyzer */
		if (pairs[i].cpu >= ncpus || map[pairs[i].cpu] >= 0) {
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
			map[i] = nonline ? ids[i % nonline] : 0;
	*ret_map = map;
	*ret_ncpus = ncpus;
	return 0;
}

/* fake_node_list -- "@n,n,..." of length len: the online node ids */
static int fake_node_list(const char *spec, size_t len, unsigned *ret_nodes,
			  unsigned char *online)
{
	const char *p = spec + 1, *end = spec + len, *comma;
	unsigned id, nodes = 0;

	for (;;) {
		comma = memchr(p, ',', (size_t)(end - p));
		if (!comma)
			comma = end;
		if (fake_uint(p, (size_t)(comma - p), NS_FAKE_MAX_NODES - 1,
			      &id) < 0)
			return util_errmsg_set(EINVAL,
					       "PMAD_FAKE_NUMA '%s': bad node "
					       "'%.*s' in the node list (want "
					       "0..%u)",
					       spec, (int)(comma - p), p,
					       NS_FAKE_MAX_NODES - 1);
		if (online[id])
			return util_errmsg_set(EINVAL,
					       "PMAD_FAKE_NUMA '%s': node %u "
					       "listed twice",
					       spec, id);
		online[id] = 1;
		if (id >= nodes)
			nodes = id + 1;
		if (comma == end)
			break;
		p = comma + 1;
	}
	*ret_nodes = nodes;
	return 0;
}

/* fake_nodes -- the part before ':': "N" (nodes 0..N-1) or "@n,n,..." */
static int fake_nodes(const char *spec, size_t len, unsigned *ret_nodes,
		      unsigned char *online)
{
	unsigned nodes;

	memset(online, 0, NS_FAKE_MAX_NODES);
	if (len && spec[0] == '@')
		return fake_node_list(spec, len, ret_nodes, online);
	if (fake_uint(spec, len, NS_FAKE_MAX_NODES, &nodes) < 0 || !nodes)
		return util_errmsg_set(EINVAL,
				       "PMAD_FAKE_NUMA '%s': bad node "
				       "count '%.*s' (want 1..%u, or @ and a "
				       "list of node ids)",
				       spec, (int)len, spec, NS_FAKE_MAX_NODES);
	memset(online, 1, nodes);
	*ret_nodes = nodes;
	return 0;
}

int ns_fake_parse(const char *spec, unsigned *ret_nodes, int **ret_map,
		  unsigned *ret_ncpus, unsigned char *ret_online)
{
	const char *colon = strchr(spec, ':');
	size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
	unsigned char online[NS_FAKE_MAX_NODES];
	struct fake_pair *pairs = NULL;
	unsigned nodes = 0, count = 0, ncpus = 0, nonline = 0, n;
	int ids[NS_FAKE_MAX_NODES];
	int *map = NULL;
	int rc;

	rc = fake_nodes(spec, nlen, &nodes, online);
	if (rc < 0)
		return rc;
	for (n = 0; n < nodes; n++)
		if (online[n])
			ids[nonline++] = (int)n;
	if (colon) {
		rc = fake_pairs(spec, colon + 1, nodes, online, &pairs, &count);
		if (rc < 0)
			return rc;
		rc = fake_map(spec, pairs, count, ids, nonline, &map, &ncpus);
		free(pairs);
		if (rc < 0)
			return rc;
	}
	*ret_nodes = nodes;
	*ret_map = map;
	*ret_ncpus = ncpus;
	if (ret_online)
		memcpy(ret_online, online, sizeof(online));
	return 0;
}

/* topo_fake_set -- install a fake map; online NULL: every node online */
static int topo_fake_set(unsigned nodes, const unsigned char *online,
			 const int *cpu_node, unsigned ncpus)
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
		if (cpu_node[c] < 0 || (unsigned)cpu_node[c] >= nodes ||
		    (online && !online[cpu_node[c]]))
			return util_errmsg_set(
				EINVAL,
				"fake topology: cpu %u on node %d "
				"(want 0..%u)",
				c, cpu_node[c], nodes - 1);
	t = topo_alloc(nodes, online, ncpus, 1);
	if (!t)
		return util_errmsg_set(ENOMEM, "fake topology: out of memory");
	if (ncpus)
		memcpy(t->map, cpu_node, (size_t)ncpus * sizeof(int));
	return topo_install(t);
}

int ns_topology_init(void)
{
	const char *spec = getenv("PMAD_FAKE_NUMA");
	unsigned char online[NS_FAKE_MAX_NODES];
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
	rc = ns_fake_parse(spec, &nodes, &map, &ncpus, online);
	if (rc < 0)
		return rc;
	rc = topo_fake_set(nodes, online, map, ncpus);
	free(map);
	return rc;
}

int ns_topology_set_fake(unsigned nodes, const int *cpu_node, unsigned ncpus)
{
	return topo_fake_set(nodes, NULL, cpu_node, ncpus);
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
		node = topo_nth_online(topo_cur, cpu);
	pthread_rwlock_unlock(&topo_lock);
	return node;
}

int ns_current_node(void)
{
	int cpu = sched_getcpu();

	return cpu < 0 ? 0 : ns_cpu_node((unsigned)cpu);
}

int ns_node_is_online(int node)
{
	int online;

	if (node < 0 || topo_read() < 0)
		return 0;
	online = (unsigned)node < topo_cur->nodes && topo_cur->online[node];
	pthread_rwlock_unlock(&topo_lock);
	return online;
}

int ns_node_nth_online(unsigned k)
{
	int node;

	if (topo_read() < 0)
		return 0;
	node = topo_nth_online(topo_cur, k);
	pthread_rwlock_unlock(&topo_lock);
	return node;
}

int ns_nodes_online_format(char *buf, size_t len)
{
	size_t used = 0;
	unsigned n;
	int w;

	if (!len)
		return -EINVAL;
	buf[0] = '\0';
	if (topo_read() < 0)
		return -ENOMEM;
	for (n = 0; n < topo_cur->nodes && used < len; n++) {
		if (!topo_cur->online[n])
			continue;
		w = snprintf(buf + used, len - used, "%s%u", used ? "," : "",
			     n);
		used += w > 0 ? (size_t)w : 0;
	}
	pthread_rwlock_unlock(&topo_lock);
	return used < len ? 0 : -ENOSPC;
}

int ns_node_distance(int a, int b)
{
	int fake, d = -1;

	if (a == b)
		return 10;
	if (topo_read() < 0)
		return 20;
	fake = topo_cur->is_fake;
	pthread_rwlock_unlock(&topo_lock);
	if (!fake && numa_available() >= 0)
		d = numa_distance(a, b);
	/* fake nodes, or no distance table: every other node one hop */
	return d > 0 ? d : 20;
}
