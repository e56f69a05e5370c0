/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of pmad's configuration parser (daemon/config.c): a complete
 * valid file, the empty file, YAML syntax errors and every kind of bad
 * value, each with the exact "file:line:column: message" users will see.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/config.h"
#include "util/errmsg.h"

static int parse(const char *yaml, struct pmad_config **ret)
{
	return pmad_config_parse("t.yaml", yaml, strlen(yaml), ret);
}

/* yaml must fail with exactly msg */
static void expect_error(const char *yaml, const char *msg)
{
	struct pmad_config *conf = NULL;

	assert_int_equal(parse(yaml, &conf), -EINVAL);
	assert_null(conf);
	assert_string_equal(util_errmsg(), msg);
}

static const char full[] = "# a complete configuration\n"
			   "socket:\n"
			   "  path: /run/pmad/ctl.sock\n"
			   "  mode: 0600\n"
			   "  group: root\n"
			   "state_dir: /var/lib/pmad\n"
			   "log_level: debug\n"
			   "services:\n"
			   "  checkpoint_interval: 30\n"
			   "  gc_free_pct: 25\n"
			   "  gc_interval: 5\n"
			   "  compact_interval: 300\n"
			   "heap:\n"
			   "  morph_used_pct: 35\n"
			   "  morph_idle: false\n"
			   "namespaces:\n"
			   "  - {node: 0, path: /mnt/pmem0}\n"
			   "  - node: 1\n"
			   "    path: /mnt/pmem1\n"
			   "pools:\n"
			   "  - name: db\n"
			   "    size: 64M\n"
			   "    owner: root\n"
			   "    group: 0\n"
			   "    mode: 0640\n"
			   "  - name: cache.v2\n"
			   "    size: 1048576\n"
			   "    path: /mnt/pmem0/cache.pool\n"
			   "    owner: 65534\n";

static void test_full(void **state)
{
	struct pmad_config *c;

	(void)state;
	assert_int_equal(parse(full, &c), 0);
	assert_string_equal(c->socket_path, "/run/pmad/ctl.sock");
	assert_int_equal(c->socket_mode, 0600);
	assert_int_equal(c->socket_group, 0);
	assert_string_equal(c->state_dir, "/var/lib/pmad");
	assert_int_equal(c->log_level, LOG_DEBUG);
	assert_int_equal(c->checkpoint_interval, 30);
	assert_int_equal(c->gc_free_pct, 25);
	assert_int_equal(c->gc_interval, 5);
	assert_int_equal(c->compact_interval, 300);
	assert_int_equal(c->morph_pct, 35);
	assert_int_equal(c->morph_idle, 0);
	assert_int_equal(c->nns, 2);
	assert_int_equal(c->ns[1].node, 1);
	assert_string_equal(c->ns[1].path, "/mnt/pmem1");
	assert_int_equal(c->npools, 2);
	assert_string_equal(c->pools[0].name, "db");
	assert_int_equal(c->pools[0].size, 64 << 20);
	assert_int_equal(c->pools[0].owner, 0);
	assert_int_equal(c->pools[0].mode, 0640);
	assert_int_equal(c->pools[0].line, 21);
	assert_null(c->pools[0].path);
	assert_string_equal(c->pools[1].path, "/mnt/pmem0/cache.pool");
	assert_int_equal(c->pools[1].owner, 65534);
	assert_int_equal(c->pools[1].mode, 0660); /* the default */
	assert_ptr_equal(pmad_config_pool(c, "cache.v2"), &c->pools[1]);
	assert_null(pmad_config_pool(c, "nope"));
	pmad_config_free(c);
}

static void test_empty(void **state)
{
	struct pmad_config *c;

	(void)state;
	assert_int_equal(parse("", &c), 0);
	assert_int_equal(c->npools, 0);
	assert_null(c->socket_path);
	assert_int_equal(c->socket_mode, 0660);
	assert_int_equal(c->log_level, -1);
	assert_int_equal(c->gc_free_pct, 0); /* the gc service is off */
	assert_int_equal(c->gc_interval, 10);
	assert_int_equal(c->compact_interval, 0); /* compaction is off */
	/* slab morphing: the library's policy */
	assert_int_equal(c->morph_pct, -1);
	assert_int_equal(c->morph_idle, 1);
	pmad_config_free(c);
	assert_int_equal(parse("# only a comment\n", &c), 0);
	pmad_config_free(c);
}

static void test_syntax_errors(void **state)
{
	(void)state;
	expect_error("pools:\n  - name: a\n    size: 1M\n   mode: 0600\n",
		     "t.yaml:4:4: did not find expected '-' indicator "
		     "(while parsing a block collection)");
	expect_error("a: b: c\n",
		     "t.yaml:1:5: mapping values are not allowed in this "
		     "context");
	expect_error("socket: {path: /x\n",
		     "t.yaml:2:1: did not find expected ',' or '}' "
		     "(while parsing a flow mapping)");
	expect_error("\tpools: []\n",
		     "t.yaml:1:1: found character that cannot start any token "
		     "(while scanning for the next token)");
}

static void test_bad_values(void **state)
{
	(void)state;
	expect_error("pools:\n  - name: a\n    size: 1M\n    mode: 0999\n",
		     "t.yaml:4:11: mode '0999' is not an octal mode 0..0777 "
		     "(e.g. 0660)");
	expect_error("pools:\n  - name: a\n    size: lots\n",
		     "t.yaml:3:11: size 'lots' is not a size (try 64M or "
		     "1GiB)");
	expect_error("pools:\n  - name: a\n    size: 0\n",
		     "t.yaml:3:11: size '0' is not a size (try 64M or 1GiB)");
	expect_error("pools:\n  - name: .hidden\n    size: 1M\n",
		     "t.yaml:2:11: pool name '.hidden' is invalid (1..64 of "
		     "A-Z a-z 0-9 _ . -, not starting with '.')");
	expect_error("pools:\n  - name: a/b\n    size: 1M\n",
		     "t.yaml:2:11: pool name 'a/b' is invalid (1..64 of "
		     "A-Z a-z 0-9 _ . -, not starting with '.')");
	expect_error(
		"pools:\n  - name: a\n    size: 1M\n    owner: nosuchuser\n",
		"t.yaml:4:12: owner 'nosuchuser': no such user");
	expect_error("socket:\n  group: nosuchgroup\n",
		     "t.yaml:2:10: group 'nosuchgroup': no such group");
	expect_error("log_level: loud\n",
		     "t.yaml:1:12: log_level 'loud' is not one of err, "
		     "warning, notice, info, debug");
	expect_error("state_dir: relative/dir\n",
		     "t.yaml:1:12: state_dir must be an absolute path");
	expect_error("socket:\n  path: ''\n",
		     "t.yaml:2:9: socket path must not be empty");
	expect_error("namespaces:\n  - node: 5000\n    path: /mnt/p\n",
		     "t.yaml:2:11: node '5000' is not an integer 0..1023");
	expect_error("namespaces:\n  - node: -1\n    path: /mnt/p\n",
		     "t.yaml:2:11: node '-1' is not an integer 0..1023");
	expect_error("services:\n  checkpoint_interval: 1e3\n",
		     "t.yaml:2:24: checkpoint_interval '1e3' is not an "
		     "integer 0..86400");
	expect_error("services:\n  gc_free_pct: 101\n",
		     "t.yaml:2:16: gc_free_pct '101' is not an integer 0..100");
	expect_error("services:\n  gc_free_pct: 20%\n",
		     "t.yaml:2:16: gc_free_pct '20%' is not an integer 0..100");
	expect_error("services: {gc_free_pct: [20]}\n",
		     "t.yaml:1:25: gc_free_pct must be a scalar");
	expect_error("services:\n  gc_free_pct: 20\n  gc_interval: 0\n",
		     "t.yaml:3:16: gc_interval must be at least 1 second "
		     "(gc_free_pct: 0 turns the gc off)");
	expect_error("services:\n  compact_interval: 86401\n",
		     "t.yaml:2:21: compact_interval '86401' is not an "
		     "integer 0..86400");
	expect_error("services: {compact_interval: 1s}\n",
		     "t.yaml:1:30: compact_interval '1s' is not an integer "
		     "0..86400");
	expect_error("heap:\n  morph_used_pct: 101\n",
		     "t.yaml:2:19: morph_used_pct '101' is not an integer "
		     "0..100");
	expect_error("heap:\n  morph_idle: maybe\n",
		     "t.yaml:2:15: morph_idle 'maybe' is not true or false");
	expect_error("heap:\n  morph: 20\n",
		     "t.yaml:2:3: unknown key 'morph' in heap");
}

static void test_bad_structure(void **state)
{
	(void)state;
	expect_error("sockets:\n  path: /x\n",
		     "t.yaml:1:1: unknown key 'sockets' in the configuration");
	expect_error("pools:\n  - name: a\n    sise: 1M\n",
		     "t.yaml:3:5: unknown key 'sise' in a pool");
	expect_error("pools: {name: a}\n",
		     "t.yaml:1:8: pools must be a sequence");
	expect_error("pools:\n  - name: a\n",
		     "t.yaml:2:5: pool 'a' has no 'size'");
	expect_error("pools:\n  - size: 1M\n",
		     "t.yaml:2:5: pool has no 'name'");
	expect_error(
		"pools:\n  - {name: a, size: 1M}\n  - {name: a, size: 2M}\n",
		"t.yaml:3:5: pool 'a' is defined twice");
	expect_error("- a\n- b\n",
		     "t.yaml:1:1: the configuration must be a mapping");
	expect_error("socket: /run/x\n",
		     "t.yaml:1:9: socket must be a mapping");
	expect_error("socket:\n  path: [a]\n",
		     "t.yaml:2:9: socket path must be a scalar");
	expect_error("namespaces:\n  - path: /mnt/p\n",
		     "t.yaml:2:5: a namespace needs 'node' and 'path'");
	expect_error("pools: []\npools: []\n",
		     "t.yaml:2:8: pools are defined twice");
}

static void test_load_file(void **state)
{
	char path[] = "/tmp/test-pmad-config-XXXXXX";
	struct pmad_config *c;
	char msg[256];
	FILE *f;
	int fd;

	(void)state;
	assert_int_equal(pmad_config_load("/nonexistent/pmad.yaml", &c),
			 -ENOENT);
	assert_string_equal(
		util_errmsg(),
		"/nonexistent/pmad.yaml: No such file or directory");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs("pools:\n  - name: x\n    size: 2M\n    mode: rw\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(pmad_config_load(path, &c), -EINVAL);
	snprintf(msg, sizeof(msg),
		 "%s:4:11: mode 'rw' is not an octal mode 0..0777 (e.g. 0660)",
		 path);
	assert_string_equal(util_errmsg(), msg);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("pools:\n  - name: x\n    size: 2M\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(pmad_config_load(path, &c), 0);
	assert_string_equal(c->file, path);
	assert_int_equal(c->pools[0].size, 2 << 20);
	pmad_config_free(c);
	unlink(path);
}

static void test_pool_names(void **state)
{
	char long_name[PMAD_POOL_NAME_MAX + 2];

	(void)state;
	assert_true(pmad_pool_name_valid("db"));
	assert_true(pmad_pool_name_valid("a-b_c.9"));
	assert_false(pmad_pool_name_valid(""));
	assert_false(pmad_pool_name_valid("."));
	assert_false(pmad_pool_name_valid("a b"));
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	assert_false(pmad_pool_name_valid(long_name));
	long_name[PMAD_POOL_NAME_MAX] = '\0';
	assert_true(pmad_pool_name_valid(long_name));
}

/* namespaces: auto or listed; pools with parts on all nodes or some */
static void test_namespaces_parts(void **state)
{
	struct pmad_config *c;

	(void)state;
	assert_int_equal(parse("namespaces: auto\n"
			       "pools:\n"
			       "  - {name: wide, size: 4M, parts: all-nodes}\n"
			       "  - {name: two, size: 4M, parts: [1, 0]}\n"
			       "  - {name: one, size: 4M}\n",
			       &c),
			 0);
	assert_true(c->ns_auto);
	assert_int_equal(c->nns, 0);
	assert_true(c->pools[0].parts_all_nodes);
	assert_int_equal(c->pools[0].nparts, 0);
	assert_false(c->pools[1].parts_all_nodes);
	assert_int_equal(c->pools[1].nparts, 2);
	assert_int_equal(c->pools[1].parts[0], 1);
	assert_int_equal(c->pools[1].parts[1], 0);
	assert_int_equal(c->pools[2].nparts, 0);
	assert_false(c->pools[2].parts_all_nodes);
	pmad_config_free(c);
	expect_error("namespaces: manual\n",
		     "t.yaml:1:13: namespaces must be 'auto' or a sequence of "
		     "node/path mappings");
	expect_error("pools:\n  - {name: a, size: 1M, parts: [0, 0]}\n",
		     "t.yaml:2:36: node 0 is listed twice");
	expect_error("pools:\n  - {name: a, size: 1M, parts: []}\n",
		     "t.yaml:2:32: parts must be 'all-nodes' or a non-empty "
		     "sequence of NUMA nodes");
	expect_error("pools:\n  - {name: a, size: 1M, parts: some}\n",
		     "t.yaml:2:32: parts must be 'all-nodes' or a non-empty "
		     "sequence of NUMA nodes");
	expect_error("pools:\n  - {name: a, size: 1M, parts: [x]}\n",
		     "t.yaml:2:33: node 'x' is not an integer 0..1023");
	expect_error("pools:\n  - {name: a, size: 1M, path: /p, "
		     "parts: all-nodes}\n",
		     "t.yaml:2:5: pool 'a' has both 'path' and 'parts': parts "
		     "are placed on the namespaces");
	expect_error("pools:\n  - {name: a, size: 1M, parts: [0,1,2,3,4,5,6,"
		     "7,8,9,10,11,12,13,14,15,16]}\n",
		     "t.yaml:2:71: too many parts (at most 16)");
}

#define T(f) cmocka_unit_test(f)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_full),	       T(test_empty),
		T(test_syntax_errors), T(test_bad_values),
		T(test_bad_structure), T(test_load_file),
		T(test_pool_names),    T(test_namespaces_parts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
