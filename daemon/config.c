/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad config parser: loads the YAML document with libyaml and walks it
 * against a fixed schema (root keys, socket, namespaces, pools, services).
 * Every node keeps its start mark, so each error points at the value that
 * is wrong. Unknown keys are errors: a typo must not silently fall back to
 * a default.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <yaml.h>

#include "config.h"
#include "util/errmsg.h"
#include "util/log.h"
#include "util/size.h"

#define CONFIG_FILE_MAX ((size_t)1024 * 1024)
#define CONFIG_MAX_NODE 1023
#define CONFIG_INTERVAL_MAX 86400

struct cfg {
	const char *name; /* file name for messages */
	yaml_document_t *doc;
	struct pmad_config *conf;
};

__attribute__((format(printf, 3, 4))) static int
cfg_error(const struct cfg *c, const yaml_node_t *node, const char *fmt, ...)
{
	char msg[UTIL_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	/* va_start is right above (an analyzer false positive) */
	/* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	(void)util_errmsg_set(EINVAL, "%s:%zu:%zu: %s", c->name,
			      node->start_mark.line + 1,
			      node->start_mark.column + 1, msg);
	return -EINVAL;
}

static yaml_node_t *cfg_node(const struct cfg *c, int id)
{
	return yaml_document_get_node(c->doc, id);
}

static int cfg_scalar(const struct cfg *c, const yaml_node_t *node,
		      const char *what, const char **ret_s)
{
	*ret_s = ""; /* never NULL, even on error */
	if (node->type != YAML_SCALAR_NODE || !node->data.scalar.value)
		return cfg_error(c, node, "%s must be a scalar", what);
	*ret_s = (const char *)node->data.scalar.value;
	if (strlen(*ret_s) != node->data.scalar.length)
		return cfg_error(c, node, "%s contains a NUL byte", what);
	return 0;
}

static int cfg_string(const struct cfg *c, const yaml_node_t *node,
		      const char *what, char **ret_s)
{
	const char *s = NULL;
	int rc = cfg_scalar(c, node, what, &s);

	if (rc < 0)
		return rc;
	if (!*s)
		return cfg_error(c, node, "%s must not be empty", what);
	free(*ret_s);
	*ret_s = strdup(s);
	return *ret_s ? 0 : util_errmsg_set(ENOMEM, "out of memory");
}

static int cfg_path(const struct cfg *c, const yaml_node_t *node,
		    const char *what, char **ret_s)
{
	int rc = cfg_string(c, node, what, ret_s);

	if (rc < 0 || !*ret_s)
		return rc < 0 ? rc : -EINVAL;
	if ((*ret_s)[0] != '/')
		return cfg_error(c, node, "%s must be an absolute path", what);
	if (strlen(*ret_s) >= 4096)
		return cfg_error(c, node, "%s is too long", what);
	return rc;
}

static int cfg_uint(const struct cfg *c, const yaml_node_t *node,
		    const char *what, unsigned long max, unsigned long *ret)
{
	unsigned long v;
	const char *s = NULL;
	char *end;
	int rc = cfg_scalar(c, node, what, &s);

	if (rc < 0)
		return rc;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || v > max)
		return cfg_error(c, node, "%s '%s' is not an integer 0..%lu",
				 what, s, max);
	*ret = v;
	return 0;
}

static int cfg_mode(const struct cfg *c, const yaml_node_t *node,
		    mode_t *ret_mode)
{
	unsigned long v;
	const char *s = NULL;
	char *end;
	int rc = cfg_scalar(c, node, "mode", &s);

	if (rc < 0)
		return rc;
	errno = 0;
	v = strtoul(s, &end, 8);
	if (!*s || *end || errno || v > 0777 ||
	    strspn(s, "01234567") != strlen(s))
		return cfg_error(c, node,
				 "mode '%s' is not an octal mode 0..0777 "
				 "(e.g. 0660)",
				 s);
	*ret_mode = (mode_t)v;
	return 0;
}

static int cfg_size(const struct cfg *c, const yaml_node_t *node,
		    uint64_t *ret_size)
{
	const char *s = NULL;
	int rc = cfg_scalar(c, node, "size", &s);

	if (rc < 0)
		return rc;
	if (util_size_parse(s, ret_size) < 0 || *ret_size == 0)
		return cfg_error(c, node,
				 "size '%s' is not a size (try 64M or 1GiB)",
				 s);
	return 0;
}

/* a user name or a number */
static int cfg_owner(const struct cfg *c, const yaml_node_t *node,
		     uid_t *ret_uid)
{
	unsigned long v;
	struct passwd *pw;
	const char *s = NULL;
	char *end;
	int rc = cfg_scalar(c, node, "owner", &s);

	if (rc < 0)
		return rc;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*s && !*end && !errno && v < (uid_t)-1) {
		*ret_uid = (uid_t)v;
		return 0;
	}
	pw = getpwnam(s);
	if (!pw)
		return cfg_error(c, node, "owner '%s': no such user", s);
	*ret_uid = pw->pw_uid;
	return 0;
}

static int cfg_group(const struct cfg *c, const yaml_node_t *node,
		     gid_t *ret_gid)
{
	unsigned long v;
	struct group *gr;
	const char *s = NULL;
	char *end;
	int rc = cfg_scalar(c, node, "group", &s);

	if (rc < 0)
		return rc;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*s && !*end && !errno && v < (gid_t)-1) {
		*ret_gid = (gid_t)v;
		return 0;
	}
	gr = getgrnam(s);
	if (!gr)
		return cfg_error(c, node, "group '%s': no such group", s);
	*ret_gid = gr->gr_gid;
	return 0;
}

static int cfg_log_level(const struct cfg *c, const yaml_node_t *node)
{
	const char *s = NULL;
	int rc = cfg_scalar(c, node, "log_level", &s);

	if (rc < 0)
		return rc;
	rc = util_log_parse_priority(s);
	if (rc < 0)
		return cfg_error(c, node,
				 "log_level '%s' is not one of err, warning, "
				 "notice, info, debug",
				 s);
	c->conf->log_level = rc;
	return 0;
}

/* a handler for one key of a mapping; item is the value's owner object */
typedef int (*cfg_key_fn)(const struct cfg *c, const yaml_node_t *value,
			  void *item);
struct cfg_key {
	const char *key;
	cfg_key_fn fn;
};

/* walk a mapping, calling the handler of each key; keys listed in msg */
static int cfg_mapping(const struct cfg *c, const yaml_node_t *node,
		       const char *what, const struct cfg_key *keys, void *item)
{
	yaml_node_pair_t *p;
	yaml_node_t *k, *v;
	const char *name = NULL;
	size_t i;
	int rc;

	if (node->type != YAML_MAPPING_NODE)
		return cfg_error(c, node, "%s must be a mapping", what);
	for (p = node->data.mapping.pairs.start;
	     p < node->data.mapping.pairs.top; p++) {
		k = cfg_node(c, p->key);
		v = cfg_node(c, p->value);
		rc = cfg_scalar(c, k, "a key", &name);
		if (rc < 0)
			return rc;
		for (i = 0; keys[i].key && strcmp(keys[i].key, name) != 0; i++)
			;
		if (!keys[i].key)
			return cfg_error(c, k, "unknown key '%s' in %s", name,
					 what);
		rc = keys[i].fn(c, v, item);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int socket_path(const struct cfg *c, const yaml_node_t *v, void *item)
{
	(void)item;
	return cfg_path(c, v, "socket path", &c->conf->socket_path);
}

static int socket_mode(const struct cfg *c, const yaml_node_t *v, void *item)
{
	(void)item;
	return cfg_mode(c, v, &c->conf->socket_mode);
}

static int socket_group(const struct cfg *c, const yaml_node_t *v, void *item)
{
	(void)item;
	return cfg_group(c, v, &c->conf->socket_group);
}

static const struct cfg_key socket_keys[] = {
	{ "path", socket_path },
	{ "mode", socket_mode },
	{ "group", socket_group },
	{ NULL, NULL },
};

static int ns_node(const struct cfg *c, const yaml_node_t *v, void *item)
{
	struct pmad_ns_conf *ns = item;
	unsigned long n = 0;
	int rc = cfg_uint(c, v, "node", CONFIG_MAX_NODE, &n);

	ns->node = (int)n;
	return rc;
}

static int ns_path(const struct cfg *c, const yaml_node_t *v, void *item)
{
	struct pmad_ns_conf *ns = item;

	return cfg_path(c, v, "namespace path", &ns->path);
}

static const struct cfg_key ns_keys[] = {
	{ "node", ns_node },
	{ "path", ns_path },
	{ NULL, NULL },
};

static int pool_name(const struct cfg *c, const yaml_node_t *v, void *item)
{
	struct pmad_pool_conf *p = item;
	int rc = cfg_string(c, v, "pool name", &p->name);

	if (rc == 0 && !pmad_pool_name_valid(p->name))
		return cfg_error(c, v,
				 "pool name '%s' is invalid (1..%d of "
				 "A-Z a-z 0-9 _ . -, not starting with '.')",
				 p->name, PMAD_POOL_NAME_MAX);
	return rc;
}

static int pool_size(const struct cfg *c, const yaml_node_t *v, void *item)
{
	return cfg_size(c, v, &((struct pmad_pool_conf *)item)->size);
}

static int pool_path(const struct cfg *c, const yaml_node_t *v, void *item)
{
	return cfg_path(c, v, "pool path",
			&((struct pmad_pool_conf *)item)->path);
}

static int pool_owner(const struct cfg *c, const yaml_node_t *v, void *item)
{
	return cfg_owner(c, v, &((struct pmad_pool_conf *)item)->owner);
}

static int pool_group(const struct cfg *c, const yaml_node_t *v, void *item)
{
	return cfg_group(c, v, &((struct pmad_pool_conf *)item)->group);
}

static int pool_mode(const struct cfg *c, const yaml_node_t *v, void *item)
{
	return cfg_mode(c, v, &((struct pmad_pool_conf *)item)->mode);
}

static int pool_regions(const struct cfg *c, const yaml_node_t *v, void *item)
{
	unsigned long k = 0;
	int rc = cfg_uint(c, v, "regions", 16, &k);

	if (rc == 0 && (k < 1 || (k & (k - 1))))
		return cfg_error(c, v,
				 "regions %lu is not a power of two 1..16", k);
	if (rc == 0)
		((struct pmad_pool_conf *)item)->regions = (unsigned)k;
	return rc;
}

/* one node of a parts list, not listed twice */
static int pool_part_node(const struct cfg *c, const yaml_node_t *v,
			  struct pmad_pool_conf *p)
{
	unsigned long n = 0;
	unsigned i;
	int rc = cfg_uint(c, v, "node", CONFIG_MAX_NODE, &n);

	if (rc < 0)
		return rc;
	for (i = 0; i < p->nparts; i++)
		if (p->parts[i] == (int)n)
			return cfg_error(c, v, "node %lu is listed twice", n);
	if (p->nparts == PMAD_MAX_PARTS)
		return cfg_error(c, v, "too many parts (at most %d)",
				 PMAD_MAX_PARTS);
	p->parts[p->nparts++] = (int)n;
	return 0;
}

/* parts: all-nodes, or a sequence of NUMA nodes */
static int pool_parts(const struct cfg *c, const yaml_node_t *v, void *item)
{
	struct pmad_pool_conf *p = item;
	yaml_node_item_t *it;
	int rc;

	if (p->parts_all_nodes || p->nparts)
		return cfg_error(c, v, "parts are defined twice");
	if (v->type == YAML_SCALAR_NODE && v->data.scalar.value &&
	    strcmp((const char *)v->data.scalar.value, "all-nodes") == 0) {
		p->parts_all_nodes = 1;
		return 0;
	}
	if (v->type != YAML_SEQUENCE_NODE ||
	    v->data.sequence.items.top == v->data.sequence.items.start)
		return cfg_error(c, v,
				 "parts must be 'all-nodes' or a non-empty "
				 "sequence of NUMA nodes");
	for (it = v->data.sequence.items.start; it < v->data.sequence.items.top;
	     it++) {
		rc = pool_part_node(c, cfg_node(c, *it), p);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static const struct cfg_key pool_keys[] = {
	{ "name", pool_name },	 { "size", pool_size },
	{ "path", pool_path },	 { "owner", pool_owner },
	{ "group", pool_group }, { "mode", pool_mode },
	{ "parts", pool_parts }, { "regions", pool_regions },
	{ NULL, NULL },
};

static int pool_entry(const struct cfg *c, const yaml_node_t *v,
		      struct pmad_pool_conf *p)
{
	int rc;

	p->mode = 0660;
	p->line = (unsigned)v->start_mark.line + 1;
	rc = cfg_mapping(c, v, "a pool", pool_keys, p);
	if (rc < 0)
		return rc;
	if (!p->name)
		return cfg_error(c, v, "pool has no 'name'");
	if (!p->size)
		return cfg_error(c, v, "pool '%s' has no 'size'", p->name);
	if (pmad_config_pool(c->conf, p->name) != p)
		return cfg_error(c, v, "pool '%s' is defined twice", p->name);
	if (p->path && (p->nparts || p->parts_all_nodes))
		return cfg_error(c, v,
				 "pool '%s' has both 'path' and 'parts': parts "
				 "are placed on the namespaces",
				 p->name);
	return 0;
}

static int ns_entry(const struct cfg *c, const yaml_node_t *v,
		    struct pmad_ns_conf *ns)
{
	int rc;

	ns->node = -1;
	rc = cfg_mapping(c, v, "a namespace", ns_keys, ns);
	if (rc == 0 && (ns->node < 0 || !ns->path))
		return cfg_error(c, v, "a namespace needs 'node' and 'path'");
	return rc;
}

static int root_pools(const struct cfg *c, const yaml_node_t *v, void *item)
{
	struct pmad_config *conf = c->conf;
	size_t n;
	int rc;

	(void)item;
	if (v->type != YAML_SEQUENCE_NODE)
		return cfg_error(c, v, "pools must be a sequence");
	n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (n > PMAD_MAX_POOLS)
		return cfg_error(c, v, "too many pools (at most %d)",
				 PMAD_MAX_POOLS);
	if (conf->pools)
		return cfg_error(c, v, "pools are defined twice");
	conf->pools = calloc(n ? n : 1, sizeof(*conf->pools));
	if (!conf->pools)
		return util_errmsg_set(ENOMEM, "out of memory");
	for (conf->npools = 0; conf->npools < n;) {
		conf->npools++;
		rc = pool_entry(c,
				cfg_node(c, v->data.sequence.items
						    .start[conf->npools - 1]),
				&conf->pools[conf->npools - 1]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int root_namespaces(const struct cfg *c, const yaml_node_t *v,
			   void *item)
{
	struct pmad_config *conf = c->conf;
	yaml_node_item_t *it;
	size_t n;
	int rc;

	(void)item;
	if (conf->ns || conf->ns_auto)
		return cfg_error(c, v, "namespaces are defined twice");
	if (v->type == YAML_SCALAR_NODE && v->data.scalar.value &&
	    strcmp((const char *)v->data.scalar.value, "auto") == 0) {
		conf->ns_auto = 1;
		return 0;
	}
	if (v->type != YAML_SEQUENCE_NODE)
		return cfg_error(c, v,
				 "namespaces must be 'auto' or a sequence of "
				 "node/path mappings");
	n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	conf->ns = calloc(n ? n : 1, sizeof(*conf->ns));
	if (!conf->ns)
		return util_errmsg_set(ENOMEM, "out of memory");
	for (it = v->data.sequence.items.start; it < v->data.sequence.items.top;
	     it++) {
		conf->nns++;
		rc = ns_entry(c, cfg_node(c, *it), &conf->ns[conf->nns - 1]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int root_socket(const struct cfg *c, const yaml_node_t *v, void *item)
{
	return cfg_mapping(c, v, "socket", socket_keys, item);
}

static int root_state_dir(const struct cfg *c, const yaml_node_t *v, void *item)
{
	(void)item;
	return cfg_path(c, v, "state_dir", &c->conf->state_dir);
}

static int root_log_level(const struct cfg *c, const yaml_node_t *v, void *item)
{
	(void)item;
	return cfg_log_level(c, v);
}

/* a services interval in seconds (0..CONFIG_INTERVAL_MAX, 0 = off) */
static int services_seconds(const struct cfg *c, const yaml_node_t *v,
			    const char *key, unsigned *out)
{
	unsigned long n = 0;
	int rc = cfg_uint(c, v, key, CONFIG_INTERVAL_MAX, &n);

	*out = (unsigned)n;
	return rc;
}

static int services_checkpoint(const struct cfg *c, const yaml_node_t *v,
			       void *item)
{
	(void)item;
	return services_seconds(c, v, "checkpoint_interval",
				&c->conf->checkpoint_interval);
}

static int services_gc_free_pct(const struct cfg *c, const yaml_node_t *v,
				void *item)
{
	unsigned long n = 0;
	int rc = cfg_uint(c, v, "gc_free_pct", 100, &n);

	(void)item;
	c->conf->gc_free_pct = (unsigned)n;
	return rc;
}

static int services_gc_interval(const struct cfg *c, const yaml_node_t *v,
				void *item)
{
	unsigned long n = 0;
	int rc = cfg_uint(c, v, "gc_interval", CONFIG_INTERVAL_MAX, &n);

	(void)item;
	if (rc == 0 && n == 0)
		return cfg_error(c, v,
				 "gc_interval must be at least 1 second "
				 "(gc_free_pct: 0 turns the gc off)");
	c->conf->gc_interval = (unsigned)n;
	return rc;
}

static int services_compact_interval(const struct cfg *c, const yaml_node_t *v,
				     void *item)
{
	(void)item;
	return services_seconds(c, v, "compact_interval",
				&c->conf->compact_interval);
}

static int services_sync_interval(const struct cfg *c, const yaml_node_t *v,
				  void *item)
{
	(void)item;
	return services_seconds(c, v, "sync_interval", &c->conf->sync_interval);
}

static const struct cfg_key services_keys[] = {
	{ "checkpoint_interval", services_checkpoint },
	{ "compact_interval", services_compact_interval },
	{ "gc_free_pct", services_gc_free_pct },
	{ "gc_interval", services_gc_interval },
	{ "sync_interval", services_sync_interval },
	{ NULL, NULL },
};

static int root_services(const struct cfg *c, const yaml_node_t *v, void *item)
{
	return cfg_mapping(c, v, "services", services_keys, item);
}

static int heap_morph_pct(const struct cfg *c, const yaml_node_t *v, void *item)
{
	unsigned long n = 0;
	int rc = cfg_uint(c, v, "morph_used_pct", 100, &n);

	(void)item;
	c->conf->morph_pct = (int)n;
	return rc;
}

static int heap_morph_idle(const struct cfg *c, const yaml_node_t *v,
			   void *item)
{
	const char *s = NULL;
	int rc = cfg_scalar(c, v, "morph_idle", &s);

	(void)item;
	if (rc < 0)
		return rc;
	if (strcmp(s, "true") == 0 || strcmp(s, "yes") == 0)
		c->conf->morph_idle = 1;
	else if (strcmp(s, "false") == 0 || strcmp(s, "no") == 0)
		c->conf->morph_idle = 0;
	else
		return cfg_error(c, v, "morph_idle '%s' is not true or false",
				 s);
	return 0;
}

static const struct cfg_key heap_keys[] = {
	{ "morph_used_pct", heap_morph_pct },
	{ "morph_idle", heap_morph_idle },
	{ NULL, NULL },
};

static int root_heap(const struct cfg *c, const yaml_node_t *v, void *item)
{
	return cfg_mapping(c, v, "heap", heap_keys, item);
}

static const struct cfg_key root_keys[] = {
	{ "socket", root_socket },	 { "state_dir", root_state_dir },
	{ "log_level", root_log_level }, { "namespaces", root_namespaces },
	{ "pools", root_pools },	 { "services", root_services },
	{ "heap", root_heap },		 { NULL, NULL },
};

int pmad_pool_name_valid(const char *name)
{
	size_t n = strlen(name);

	return n >= 1 && n <= PMAD_POOL_NAME_MAX && name[0] != '.' &&
	       strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "abcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

const struct pmad_pool_conf *pmad_config_pool(const struct pmad_config *conf,
					      const char *name)
{
	unsigned i;

	for (i = 0; i < conf->npools; i++)
		if (conf->pools[i].name &&
		    strcmp(conf->pools[i].name, name) == 0)
			return &conf->pools[i];
	return NULL;
}

int pmad_config_default(struct pmad_config **ret_conf)
{
	struct pmad_config *conf = calloc(1, sizeof(*conf));

	if (!conf) {
		(void)util_errmsg_set(ENOMEM, "out of memory");
		return -ENOMEM;
	}
	conf->socket_mode = 0660;
	conf->socket_group = (gid_t)-1;
	conf->log_level = -1;
	conf->gc_interval = CONFIG_GC_INTERVAL_DEFAULT;
	conf->sync_interval = CONFIG_SYNC_INTERVAL_DEFAULT;
	conf->morph_pct = -1;
	conf->morph_idle = 1;
	*ret_conf = conf;
	return 0;
}

void pmad_config_free(struct pmad_config *conf)
{
	unsigned i;

	if (!conf)
		return;
	for (i = 0; i < conf->npools; i++) {
		free(conf->pools[i].name);
		free(conf->pools[i].path);
	}
	for (i = 0; i < conf->nns; i++)
		free(conf->ns[i].path);
	free(conf->pools);
	free(conf->ns);
	free(conf->file);
	free(conf->socket_path);
	free(conf->state_dir);
	free(conf);
}

/* the parser's own error (syntax), with its mark */
static int yaml_syntax_error(const char *name, const yaml_parser_t *p)
{
	const yaml_mark_t *m = &p->problem_mark;

	if (p->error == YAML_MEMORY_ERROR)
		return util_errmsg_set(ENOMEM, "out of memory");
	if (p->context)
		return util_errmsg_set(EINVAL, "%s:%zu:%zu: %s (%s)", name,
				       m->line + 1, m->column + 1, p->problem,
				       p->context);
	return util_errmsg_set(EINVAL, "%s:%zu:%zu: %s", name, m->line + 1,
			       m->column + 1,
			       p->problem ? p->problem : "syntax error");
}

static int parse_document(const char *name, yaml_document_t *doc,
			  struct pmad_config *conf)
{
	struct cfg c = { .name = name, .doc = doc, .conf = conf };
	yaml_node_t *root = yaml_document_get_root_node(doc);

	if (!root) /* an empty file: the defaults */
		return 0;
	if (root->type == YAML_SCALAR_NODE && root->data.scalar.length == 0)
		return 0;
	return cfg_mapping(&c, root, "the configuration", root_keys, NULL);
}

int pmad_config_parse(const char *name, const char *text, size_t len,
		      struct pmad_config **ret_conf)
{
	struct pmad_config *conf = NULL;
	yaml_document_t doc;
	yaml_parser_t parser;
	int rc;

	rc = pmad_config_default(&conf);
	if (rc < 0 || !conf)
		return rc;
	if (!yaml_parser_initialize(&parser)) {
		pmad_config_free(conf);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		rc = yaml_syntax_error(name, &parser);
		yaml_parser_delete(&parser);
		pmad_config_free(conf);
		return rc;
	}
	rc = parse_document(name, &doc, conf);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (rc < 0) {
		pmad_config_free(conf);
		return rc;
	}
	*ret_conf = conf;
	return 0;
}

/* the whole file into a malloc'ed buffer, at most CONFIG_FILE_MAX bytes */
static int read_file(const char *file, char **ret_buf, size_t *ret_len)
{
	FILE *f = fopen(file, "re");
	size_t n;
	char *buf;
	int err;

	if (!f)
		return util_errmsg_set(errno, "%s: %s", file, strerror(errno));
	buf = malloc(CONFIG_FILE_MAX + 1);
	if (!buf) {
		(void)fclose(f);
		return util_errmsg_set(ENOMEM, "out of memory");
	}
	n = fread(buf, 1, CONFIG_FILE_MAX + 1, f);
	err = ferror(f) ? EIO : 0;
	(void)fclose(f); /* read-only: nothing to lose */
	if (!err && n > CONFIG_FILE_MAX)
		err = EFBIG;
	if (err) {
		free(buf);
		return util_errmsg_set(err, "%s: %s", file,
				       err == EFBIG ? "larger than 1 MiB" :
						      "read error");
	}
	*ret_buf = buf;
	*ret_len = n;
	return 0;
}

int pmad_config_load(const char *file, struct pmad_config **ret_conf)
{
	size_t len = 0;
	char *buf = NULL;
	int rc;

	rc = read_file(file, &buf, &len);
	if (rc < 0)
		return rc;
	*ret_conf = NULL;
	rc = pmad_config_parse(file, buf, len, ret_conf);
	free(buf);
	if (rc == 0 && *ret_conf) {
		(*ret_conf)->file = strdup(file);
		if (!(*ret_conf)->file) {
			pmad_config_free(*ret_conf);
			return util_errmsg_set(ENOMEM, "out of memory");
		}
	}
	return rc;
}
