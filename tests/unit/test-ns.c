/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test-ns: lib/ns on this machine (no PM: empty namespace list, tmpfs files
 * on no node), the PMAD_FAKE_NUMA parser and fake/real topology, and the
 * mountinfo lookup on synthetic input. Inside the pmem-vm guest
 * (PMEM_VM_NODES set) it also checks the emulated namespaces themselves.
 */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ns/internal.h"
#include "ns/ns.h"

static int reset(void **state)
{
	(void)state;
	unsetenv("PMAD_FAKE_NUMA");
	ns_topology_clear_fake();
	return 0;
}

static int have_pm(void)
{
	return access("/sys/bus/nd/devices/region0", F_OK) == 0;
}

/* ---------------------------------------------------------------- ns_list */

static void test_list_no_pm(void **state)
{
	struct ns_namespace *list = (void *)1;
	size_t count = 99, i;

	(void)state;
	assert_int_equal(ns_list(&list, &count), 0);
	if (!have_pm()) {
		assert_int_equal(count, 0);
		assert_null(list);
	}
	for (i = 0; i < count; i++) {
		assert_true(strlen(list[i].name) > 0);
		assert_true(strlen(list[i].bus) > 0);
		assert_true(strlen(list[i].region) > 0);
		assert_true(strcmp(list[i].mode, "fsdax") == 0 ||
			    strcmp(list[i].mode, "devdax") == 0 ||
			    strcmp(list[i].mode, "sector") == 0 ||
			    strcmp(list[i].mode, "raw") == 0);
		assert_true(list[i].size > 0);
	}
	free(list);
}

/* PMAD_FAKE_NS: directories stand for mounted fsdax namespaces */
static void test_list_fake(void **state)
{
	struct ns_namespace *list = NULL;
	size_t count = 0;

	(void)state;
	setenv("PMAD_FAKE_NS", "1=/tmp,0=/", 1);
	assert_int_equal(ns_list(&list, &count), 0);
	assert_int_equal(count, 2);
	assert_int_equal(list[0].node, 1);
	assert_string_equal(list[0].mount, "/tmp");
	assert_string_equal(list[0].mode, "fsdax");
	assert_string_equal(list[1].name, "namespace1.0");
	assert_int_equal(list[1].node, 0);
	assert_string_equal(list[1].mount, "/");
	assert_true(list[1].size > 0);
	free(list);
	setenv("PMAD_FAKE_NS", "", 1);
	assert_int_equal(ns_list(&list, &count), 0);
	assert_int_equal(count, 0);
	assert_null(list);
	setenv("PMAD_FAKE_NS", "0=/a,x=/b", 1);
	assert_int_equal(ns_list(&list, &count), -EINVAL);
	assert_string_equal(ns_errormsg(),
			    "PMAD_FAKE_NS '0=/a,x=/b': entry 'x=/b' is not "
			    "NODE=DIR");
	setenv("PMAD_FAKE_NS", "0=rel", 1);
	assert_int_equal(ns_list(&list, &count), -EINVAL);
	assert_string_equal(ns_errormsg(),
			    "PMAD_FAKE_NS '0=rel': 'rel' is not an absolute "
			    "path");
	unsetenv("PMAD_FAKE_NS");
}

/* inside pmem-vm only: region N holds one namespace on node N */
static void test_list_vm(void **state)
{
	struct ns_namespace *list = NULL;
	char want[NS_PATH_LEN];
	size_t count = 0, i;
	struct stat st;

	(void)state;
	assert_true(have_pm());
	assert_int_equal(ns_list(&list, &count), 0);
	assert_int_equal(count, 2);
	assert_string_equal(list[0].region, "region0"); /* sorted */
	assert_string_equal(list[1].region, "region1");
	for (i = 0; i < count; i++) {
		const struct ns_namespace *e = &list[i];
		int n = e->region[strlen(e->region) - 1] - '0';

		assert_int_equal(e->node, n);
		assert_int_equal(strlen(e->uuid), 36);
		assert_true(e->device[0] != '\0');
		snprintf(want, sizeof(want), "/dev/%s", e->device);
		assert_string_equal(e->dev_path, want);
		assert_int_equal(stat(e->dev_path, &st), 0);
		assert_int_equal(ns_path_node(e->dev_path), n);
		assert_int_equal(ns_path_is_devdax(e->dev_path),
				 strcmp(e->mode, "devdax") == 0);
		if (strcmp(e->mode, "devdax") == 0) {
			uint64_t size = 0;

			assert_int_equal(ns_devdax_size(e->dev_path, &size), 0);
			assert_true(size == e->size);
		}
		if (e->mount[0]) {
			snprintf(want, sizeof(want), "/mnt/%s", e->device);
			assert_string_equal(e->mount, want);
			assert_non_null(strstr(e->mount_opts, "dax"));
			assert_int_equal(ns_path_node(e->mount), n);
		}
	}
	free(list);
}

/* ---------------------------------------------------------------- paths */

static void test_path_tmpfs(void **state)
{
	char path[] = "/dev/shm/test-ns.XXXXXX";
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(ns_path_node(path), -1);
	assert_int_equal(ns_path_is_devdax(path), 0);
	close(fd);
	unlink(path);
	assert_int_equal(ns_path_node(path), -1); /* gone */
	assert_int_equal(ns_path_node("/dev/shm"), -1);
}

static void test_path_not_devdax(void **state)
{
	uint64_t size = 12345;

	(void)state;
	assert_int_equal(ns_path_is_devdax("/dev/null"), 0);
	assert_int_equal(ns_path_is_devdax("/dev/zero"), 0);
	assert_int_equal(ns_path_is_devdax("/proc/self/status"), 0);
	assert_int_equal(ns_path_is_devdax("/"), 0);
	assert_int_equal(ns_path_is_devdax("/nonexistent/dax0.0"), 0);
	assert_int_equal(ns_path_node("/dev/null"), -1);

	assert_int_equal(ns_devdax_size("/dev/null", &size), -ENODEV);
	assert_non_null(strstr(ns_errormsg(), "/dev/null"));
	assert_int_equal(ns_devdax_size("/nonexistent/dax0.0", &size), -ENOENT);
	assert_non_null(strstr(ns_errormsg(), "/nonexistent/dax0.0"));
	assert_int_equal(size, 12345); /* untouched on failure */
}

/* ---------------------------------------------------------------- fake */

static void test_fake_env_plain(void **state)
{
	(void)state;
	setenv("PMAD_FAKE_NUMA", "4", 1);
	assert_int_equal(ns_topology_init(), 0);
	assert_true(ns_topology_is_fake());
	assert_int_equal(ns_node_count(), 4);
	assert_int_equal(ns_cpu_node(0), 0);
	assert_int_equal(ns_cpu_node(5), 1);
	assert_int_equal(ns_cpu_node(7), 3);
	assert_int_equal(ns_cpu_node(100003), 3);
	assert_in_range(ns_current_node(), 0, 3);
}

static void test_fake_env_map(void **state)
{
	(void)state;
	setenv("PMAD_FAKE_NUMA", "2:0=1,1=0,5=1", 1);
	assert_int_equal(ns_topology_init(), 0);
	assert_int_equal(ns_node_count(), 2);
	assert_int_equal(ns_cpu_node(0), 1);
	assert_int_equal(ns_cpu_node(1), 0);
	assert_int_equal(ns_cpu_node(2), 0); /* unlisted: c % 2 */
	assert_int_equal(ns_cpu_node(3), 1);
	assert_int_equal(ns_cpu_node(4), 0);
	assert_int_equal(ns_cpu_node(5), 1);
	assert_int_equal(ns_cpu_node(6), 0); /* past the map: c % 2 */
	assert_int_equal(ns_cpu_node(9), 1);
}

static void test_fake_parse_map(void **state)
{
	unsigned nodes = 0, ncpus = 0;
	int *map = NULL;

	(void)state;
	assert_int_equal(ns_fake_parse("3:4=0,1=2", &nodes, &map, &ncpus, NULL),
			 0);
	assert_int_equal(nodes, 3);
	assert_int_equal(ncpus, 5);
	assert_int_equal(map[0], 0);
	assert_int_equal(map[1], 2);
	assert_int_equal(map[2], 2);
	assert_int_equal(map[3], 0);
	assert_int_equal(map[4], 0);
	free(map);
	map = (int *)&nodes;
	assert_int_equal(ns_fake_parse("1", &nodes, &map, &ncpus, NULL), 0);
	assert_int_equal(nodes, 1);
	assert_int_equal(ncpus, 0);
	assert_null(map);
}

/* "@0,2": online nodes with a gap; unlisted CPUs go round them */
static void test_fake_env_gaps(void **state)
{
	(void)state;
	setenv("PMAD_FAKE_NUMA", "@0,2:1=2", 1);
	assert_int_equal(ns_topology_init(), 0);
	assert_int_equal(ns_node_count(), 3);
	assert_true(ns_node_is_online(0));
	assert_false(ns_node_is_online(1));
	assert_true(ns_node_is_online(2));
	assert_false(ns_node_is_online(3));
	assert_false(ns_node_is_online(-1));
	assert_int_equal(ns_node_nth_online(0), 0);
	assert_int_equal(ns_node_nth_online(1), 2);
	assert_int_equal(ns_node_nth_online(2), 0);
	assert_int_equal(ns_cpu_node(1), 2);
	assert_int_equal(ns_cpu_node(4), 0); /* past the map: c % 2 */
	assert_int_equal(ns_cpu_node(5), 2);
	setenv("PMAD_FAKE_NUMA", "@0,2:1=1", 1);
	assert_int_equal(ns_topology_init(), -EINVAL);
	setenv("PMAD_FAKE_NUMA", "@2,2", 1);
	assert_int_equal(ns_topology_init(), -EINVAL);
	setenv("PMAD_FAKE_NUMA", "@", 1);
	assert_int_equal(ns_topology_init(), -EINVAL);
}

static const struct {
	const char *spec;
	const char *token; /* must be named in the message */
} bad_specs[] = {
	{ "0", "'0'" },
	{ "x", "'x'" },
	{ "-1", "'-1'" },
	{ "2 ", "'2 '" },
	{ "1025", "'1025'" },
	{ "99999999999", "'9" },
	{ ":0=0", "''" },
	{ "2:", "''" },
	{ "2:0", "'0'" },
	{ "2:0=2", "'2'" },
	{ "2:a=1", "'a'" },
	{ "2:0=1,", "''" },
	{ "2:0=1,,1=0", "''" },
	{ "2:0=1,0=0", "cpu 0" },
	{ "2:0=", "''" },
	{ "2:=1", "''" },
	{ "2:0=1x", "'1x'" },
	{ "2:+1=0", "'+1'" },
	{ "2:65536=0", "'65536'" },
};

static void test_fake_invalid(void **state)
{
	size_t i;

	(void)state;
	/* a known-good fake first: a bad value must leave it in place */
	assert_int_equal(ns_topology_set_fake(3, NULL, 0), 0);
	for (i = 0; i < sizeof(bad_specs) / sizeof(bad_specs[0]); i++) {
		setenv("PMAD_FAKE_NUMA", bad_specs[i].spec, 1);
		assert_int_equal(ns_topology_init(), -EINVAL);
		if (!strstr(ns_errormsg(), bad_specs[i].token) ||
		    !strstr(ns_errormsg(), "PMAD_FAKE_NUMA"))
			fail_msg("'%s': message '%s' lacks %s",
				 bad_specs[i].spec, ns_errormsg(),
				 bad_specs[i].token);
		assert_int_equal(ns_node_count(), 3);
		assert_true(ns_topology_is_fake());
	}
}

static void test_set_fake(void **state)
{
	const int good[] = { 1, 1, 0 };
	const int bad[] = { 0, 2 };

	(void)state;
	assert_int_equal(ns_topology_set_fake(2, good, 3), 0);
	assert_int_equal(ns_node_count(), 2);
	assert_int_equal(ns_cpu_node(0), 1);
	assert_int_equal(ns_cpu_node(1), 1);
	assert_int_equal(ns_cpu_node(2), 0);
	assert_int_equal(ns_cpu_node(3), 1);

	assert_int_equal(ns_topology_set_fake(2, bad, 2), -EINVAL);
	assert_non_null(strstr(ns_errormsg(), "cpu 1"));
	assert_int_equal(ns_topology_set_fake(0, NULL, 0), -EINVAL);
	assert_int_equal(ns_topology_set_fake(NS_FAKE_MAX_NODES + 1, NULL, 0),
			 -EINVAL);
	assert_int_equal(ns_topology_set_fake(2, NULL, 4), -EINVAL);
	assert_int_equal(ns_cpu_node(0), 1); /* unchanged */
}

static void test_clear_fake(void **state)
{
	unsigned real;

	(void)state;
	real = ns_node_count();
	assert_false(ns_topology_is_fake());
	assert_int_equal(ns_topology_set_fake(real + 3, NULL, 0), 0);
	assert_int_equal(ns_node_count(), real + 3);
	ns_topology_clear_fake();
	assert_false(ns_topology_is_fake());
	assert_int_equal(ns_node_count(), real);
	/* init without PMAD_FAKE_NUMA keeps the real topology */
	assert_int_equal(ns_topology_init(), 0);
	assert_false(ns_topology_is_fake());
}

/* ---------------------------------------------------------------- real */

static void test_real_topology(void **state)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	unsigned nodes;
	long c;

	(void)state;
	assert_int_equal(ns_topology_init(), 0);
	nodes = ns_node_count();
	assert_true(nodes >= 1);
	if (numa_available() >= 0)
		assert_int_equal(nodes, (unsigned)numa_max_node() + 1);
	for (c = 0; c < ncpus; c++) {
		assert_in_range(ns_cpu_node((unsigned)c), 0, nodes - 1);
		if (numa_available() >= 0 && numa_node_of_cpu((int)c) >= 0)
			assert_int_equal(ns_cpu_node((unsigned)c),
					 numa_node_of_cpu((int)c));
	}
	assert_int_equal(ns_cpu_node(1u << 30), 0); /* unknown CPU */
	assert_in_range(ns_current_node(), 0, nodes - 1);
	if (getenv("PMEM_VM_NODES"))
		assert_int_equal(nodes, atoi(getenv("PMEM_VM_NODES")));
}

static void *reader(void *arg)
{
	int i, bad = 0;

	(void)arg;
	for (i = 0; i < 20000; i++) {
		unsigned n = ns_node_count();

		if (n < 1 || n > 8 || ns_cpu_node((unsigned)i % 64) >= 8)
			bad++;
	}
	return (void *)(long)bad;
}

/* readers never see a torn map while another thread swaps it */
static void test_concurrent(void **state)
{
	pthread_t t[3];
	void *bad;
	int i;

	(void)state;
	for (i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&t[i], NULL, reader, NULL), 0);
	for (i = 0; i < 2000; i++) {
		assert_int_equal(ns_topology_set_fake(1 + i % 8, NULL, 0), 0);
		if (i % 3 == 0)
			ns_topology_clear_fake();
	}
	for (i = 0; i < 3; i++) {
		assert_int_equal(pthread_join(t[i], &bad), 0);
		assert_null(bad);
	}
}

/* ---------------------------------------------------------------- mounts */

static const char mountinfo[] =
	"22 1 0:20 / /proc rw,relatime - proc proc rw\n"
	"garbage line\n"
	"30 1 259:1 /sub /mnt/bind rw,relatime - ext4 /dev/pmem1 rw,dax\n"
	"31 1 259:1 / /mnt/pm\\040one rw,noatime shared:7 master:2 - "
	"ext4 /dev/pmem1 rw,dax=always,stripe=8\n"
	"32 1 259:1 / /mnt/second rw - ext4 /dev/pmem1 rw,dax=always\n"
	"33 1 259:2 /x /mnt/only-bind ro - ext4 /dev/pmem2 ro,dax\n"
	"34 1 259:3 / /mnt/short rw - ext4 /dev/pmem3\n";

static int find(unsigned major, unsigned minor, char *mnt, char *opts)
{
	FILE *f = fmemopen((void *)mountinfo, strlen(mountinfo), "r");
	int rc;

	assert_non_null(f);
	mnt[0] = opts[0] = '\0';
	rc = ns_mountinfo_find(f, major, minor, mnt, NS_PATH_LEN, opts,
			       NS_PATH_LEN);
	fclose(f);
	return rc;
}

static void test_mountinfo(void **state)
{
	char mnt[NS_PATH_LEN], opts[NS_PATH_LEN];

	(void)state;
	assert_int_equal(find(259, 1, mnt, opts), 1);
	assert_string_equal(mnt, "/mnt/pm one");
	assert_string_equal(opts, "rw,noatime,dax=always,stripe=8");
	assert_int_equal(find(259, 2, mnt, opts), 1);
	assert_string_equal(mnt, "/mnt/only-bind");
	assert_string_equal(opts, "ro,dax");
	assert_int_equal(find(259, 3, mnt, opts), 0); /* malformed: skipped */
	assert_int_equal(find(259, 9, mnt, opts), 0);
	assert_int_equal(find(0, 20, mnt, opts), 1);
	assert_string_equal(mnt, "/proc");
	assert_string_equal(opts, "rw,relatime");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_list_no_pm, reset),
		cmocka_unit_test_teardown(test_list_fake, reset),
		cmocka_unit_test_teardown(test_path_tmpfs, reset),
		cmocka_unit_test_teardown(test_path_not_devdax, reset),
		cmocka_unit_test_teardown(test_fake_env_plain, reset),
		cmocka_unit_test_teardown(test_fake_env_map, reset),
		cmocka_unit_test_teardown(test_fake_env_gaps, reset),
		cmocka_unit_test_teardown(test_fake_parse_map, reset),
		cmocka_unit_test_teardown(test_fake_invalid, reset),
		cmocka_unit_test_teardown(test_set_fake, reset),
		cmocka_unit_test_setup_teardown(test_clear_fake, reset, reset),
		cmocka_unit_test_setup_teardown(test_real_topology, reset,
						reset),
		cmocka_unit_test_teardown(test_concurrent, reset),
		cmocka_unit_test(test_mountinfo),
		/* last: run only in the guest (automake's TAP driver counts
		 * cmocka's "not ok # SKIP" as a failure, so never skip()) */
		cmocka_unit_test_teardown(test_list_vm, reset),
	};
	size_t count = sizeof(tests) / sizeof(tests[0]);

	if (!getenv("PMEM_VM_NODES"))
		count--;
	return _cmocka_run_group_tests("test-ns", tests, count, reset, NULL);
}
