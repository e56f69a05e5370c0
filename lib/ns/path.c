/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ns path: which PM device backs a path, through sysfs. A file maps to
 * its file system's block device (st_dev), a device node to itself; the
 * device's /sys/dev/{block,char}/M:m entry then leads to the nd namespace
 * or dax device and its numa_node. Only PM devices (nd bus, dax) report a
 * node: a file on tmpfs, a disk or a virtual device is -1 (unknown).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "ns/internal.h"
#include "ns/ns.h"
#include "util/errmsg.h"

int ns_sysfs_read(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do {
		n = read(fd, buf, len - 1);
	} while (n < 0 && errno == EINTR);
	err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int ns_sysfs_read_int(const char *path, long long *ret_val)
{
	char buf[64], *end;
	long long val;
	int rc;

	rc = ns_sysfs_read(path, buf, sizeof(buf));
	if (rc < 0)
		return rc;
	errno = 0;
	val = strtoll(buf, &end, 0);
	if (errno || end == buf || *end)
		return -EINVAL;
	*ret_val = val;
	return 0;
}

/* subsystem_is -- 1 if the sysfs device dir's subsystem link ends in name */
static int subsystem_is(const char *dir, const char *name)
{
	char link[PATH_MAX], target[PATH_MAX];
	const char *base;
	ssize_t n;

	if (snprintf(link, sizeof(link), "%s/subsystem", dir) >=
	    (int)sizeof(link))
		return 0;
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return 0;
	target[n] = '\0';
	base = strrchr(target, '/');
	return strcmp(base ? base + 1 : target, name) == 0;
}

/* read_node -- dir/numa_node as a node number, or -1 */
static int read_node(const char *dir)
{
	char path[PATH_MAX];
	long long val;

	if (snprintf(path, sizeof(path), "%s/numa_node", dir) >=
	    (int)sizeof(path))
		return -1;
	if (ns_sysfs_read_int(path, &val) < 0 || val < 0 || val > INT_MAX)
		return -1;
	return (int)val;
}

/* block_node -- node of block device dev: pmem namespace or btt, else -1 */
static int block_node(dev_t dev)
{
	unsigned ma = major(dev), mi = minor(dev);
	char path[96];
	struct stat st;

	/* a partition's parent directory is the whole disk */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/partition", ma, mi);
	if (stat(path, &st) == 0)
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../device",
			 ma, mi);
	else
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/device", ma,
			 mi);
	if (!subsystem_is(path, "nd"))
		return -1;
	return read_node(path);
}

/* char_node -- node of a dax character device, else -1 */
static int char_node(dev_t dev)
{
	char dir[64], path[96];
	int node;

	snprintf(dir, sizeof(dir), "/sys/dev/char/%u:%u", major(dev),
		 minor(dev));
	if (!subsystem_is(dir, "dax"))
		return -1;
	node = read_node(dir);
	if (node >= 0)
		return node;
	/* older kernels: the node lives on the parent nd dax device */
	snprintf(path, sizeof(path), "%s/device", dir);
	return read_node(path);
}

/* a file of a fake namespace (PMAD_FAKE_NS: under one of its
 * directories): that entry's node, else -1 */
static int fake_path_node(const char *spec, const char *path)
{
	struct ns_namespace *list = NULL;
	char real[PATH_MAX], mount[PATH_MAX];
	size_t n = 0, i, len;
	int node = -1;

	if (!realpath(path, real) || ns_fake_list(spec, &list, &n) < 0) {
		util_errmsg_clear();
		return -1;
	}
	for (i = 0; node < 0 && i < n; i++) {
		if (!realpath(list[i].mount, mount))
			continue;
		len = strlen(mount);
		if (!strncmp(real, mount, len) && real[len] == '/')
			node = list[i].node;
	}
	free(list);
	return node;
}

int ns_path_node(const char *path)
{
	const char *fake = getenv("PMAD_FAKE_NS");
	struct stat st;

	if (fake && *fake)
		return fake_path_node(fake, path);
	if (stat(path, &st) < 0)
		return -1;
	if (S_ISCHR(st.st_mode))
		return char_node(st.st_rdev);
	if (S_ISBLK(st.st_mode))
		return block_node(st.st_rdev);
	return block_node(st.st_dev);
}

int ns_path_is_devdax(const char *path)
{
	char dir[64];
	struct stat st;

	if (stat(path, &st) < 0 || !S_ISCHR(st.st_mode))
		return 0;
	snprintf(dir, sizeof(dir), "/sys/dev/char/%u:%u", major(st.st_rdev),
		 minor(st.st_rdev));
	return subsystem_is(dir, "dax");
}

int ns_devdax_size(const char *path, uint64_t *ret_size)
{
	char attr[96], buf[64], *end;
	unsigned long long size;
	struct stat st;
	int rc;

	if (stat(path, &st) < 0) {
		rc = errno;
		return util_errmsg_set(rc, "cannot stat '%s': %s", path,
				       strerror(rc));
	}
	if (!ns_path_is_devdax(path))
		return util_errmsg_set(ENODEV, "'%s' is not a devdax device",
				       path);
	snprintf(attr, sizeof(attr), "/sys/dev/char/%u:%u/size",
		 major(st.st_rdev), minor(st.st_rdev));
	rc = ns_sysfs_read(attr, buf, sizeof(buf));
	if (rc < 0)
		return util_errmsg_set(-rc, "cannot read '%s': %s", attr,
				       strerror(-rc));
	errno = 0;
	size = strtoull(buf, &end, 0);
	if (errno || end == buf || *end)
		return util_errmsg_set(EINVAL, "bad size '%s' in '%s'", buf,
				       attr);
	*ret_size = size;
	return 0;
}
