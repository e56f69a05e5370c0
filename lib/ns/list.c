/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/ns list: enumerate PM namespaces with libndctl (bus -> region ->
 * namespace) and libdaxctl (devdax devices), with the block device's mount
 * point from /proc/self/mountinfo. No nd bus means no PM: an empty list.
 * libndctl/libdaxctl logging is silenced: libraries never print.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <daxctl/libdaxctl.h>
#include <ndctl/libndctl.h>

#include "ns/internal.h"
#include "ns/ns.h"
#include "util/errmsg.h"

struct ns_vec {
	struct ns_namespace *v;
	size_t count;
	size_t cap;
};

const char *ns_errormsg(void)
{
	return util_errmsg();
}

/* copy -- bounded string copy, always terminated ("" for NULL) */
static void copy(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

/* ---------------------------------------------------------------- mounts */

/* unescape -- decode mountinfo's \ooo octal escapes into dst */
static void unescape(char *dst, size_t len, const char *src)
{
	size_t o = 0;

	while (*src && o + 1 < len) {
		if (src[0] == '\\' && src[1] >= '0' && src[1] <= '3' &&
		    src[2] >= '0' && src[2] <= '7' && src[3] >= '0' &&
		    src[3] <= '7') {
			dst[o++] = (char)((src[1] - '0') * 64 +
					  (src[2] - '0') * 8 + (src[3] - '0'));
			src += 4;
		} else {
			dst[o++] = *src++;
		}
	}
	dst[o] = '\0';
}

/* has_opt -- 1 if comma list opts contains option opt (len bytes) */
static int has_opt(const char *opts, const char *opt, size_t len)
{
	const char *p = opts;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (n == len && strncmp(p, opt, len) == 0)
			return 1;
		p += n + (p[n] == ',');
	}
	return 0;
}

/* merge_opts -- per-mount options, then super-block ones not yet listed */
static void merge_opts(char *dst, size_t len, const char *mnt,
		       const char *super)
{
	const char *p = super;
	size_t o;

	copy(dst, len, mnt);
	while (*p) {
		size_t n = strcspn(p, ",");

		o = strlen(dst);
		if (n && !has_opt(mnt, p, n))
			snprintf(dst + o, len - o, "%s%.*s", o ? "," : "",
				 (int)n, p);
		p += n + (p[n] == ',');
	}
}

/* mountinfo fields we need, pointing into one split line */
struct mi_line {
	unsigned major, minor;
	const char *root, *target, *opts, *super;
};

/* mi_split -- split a mountinfo line in place; 0 or -EINVAL */
static int mi_split(char *line, struct mi_line *ret_mi)
{
	char *tok[8], *save = NULL, *t;
	unsigned i = 0;
	int after_dash = 0;

	line[strcspn(line, "\n")] = '\0';
	for (t = strtok_r(line, " ", &save); t && i < 8;
	     t = strtok_r(NULL, " ", &save)) {
		if (i < 6 || (after_dash && i < 8))
			tok[i++] = t;
		else if (strcmp(t, "-") == 0)
			after_dash = 1;
	}
	/* tok: id parent maj:min root target opts fstype source; super next */
	if (i < 8 || !t)
		return -EINVAL;
	if (sscanf(tok[2], "%u:%u", &ret_mi->major, &ret_mi->minor) != 2)
		return -EINVAL;
	ret_mi->root = tok[3];
	ret_mi->target = tok[4];
	ret_mi->opts = tok[5];
	ret_mi->super = t;
	return 0;
}

int ns_mountinfo_find(FILE *mountinfo, unsigned major, unsigned minor,
		      char *mount, size_t mount_len, char *opts,
		      size_t opts_len)
{
	size_t cap = 0;
	char *line = NULL;
	struct mi_line mi;
	int found = 0;

	while (found != 2 && getline(&line, &cap, mountinfo) > 0) {
		if (mi_split(line, &mi) < 0 || mi.major != major ||
		    mi.minor != minor)
			continue;
		/* the first mount of the fs root wins over bind mounts */
		if (found && strcmp(mi.root, "/") != 0)
			continue;
		unescape(mount, mount_len, mi.target);
		merge_opts(opts, opts_len, mi.opts, mi.super);
		found = strcmp(mi.root, "/") == 0 ? 2 : 1;
	}
	free(line);
	if (ferror(mountinfo))
		return -EIO;
	return found ? 1 : 0;
}

/* ns_mount_lookup -- fill e->mount/mount_opts from e->device's dev number */
static void ns_mount_lookup(struct ns_namespace *e)
{
	char attr[NS_PATH_LEN + 32], buf[32];
	unsigned major, minor;
	FILE *f;

	snprintf(attr, sizeof(attr), "/sys/class/block/%s/dev", e->device);
	if (ns_sysfs_read(attr, buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "%u:%u", &major, &minor) != 2)
		return;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	if (ns_mountinfo_find(f, major, minor, e->mount, sizeof(e->mount),
			      e->mount_opts, sizeof(e->mount_opts)) <= 0) {
		e->mount[0] = '\0';
		e->mount_opts[0] = '\0';
	}
	(void)fclose(f);
}

/* ---------------------------------------------------------------- ndctl */

static void quiet_ndctl(struct ndctl_ctx *ctx, int priority, const char *file,
			int line, const char *fn, const char *format,
			va_list args)
{
	(void)ctx, (void)priority, (void)file, (void)line, (void)fn;
	(void)format, (void)args;
}

static void quiet_daxctl(struct daxctl_ctx *ctx, int priority, const char *file,
			 int line, const char *fn, const char *format,
			 va_list args)
{
	(void)ctx, (void)priority, (void)file, (void)line, (void)fn;
	(void)format, (void)args;
}

/* uuid_format -- "xxxxxxxx-xxxx-..." or "" for the all-zero UUID */
static void uuid_format(char *dst, size_t len, const unsigned char *u)
{
	static const unsigned char zero[16];

	if (memcmp(u, zero, sizeof(zero)) == 0) {
		copy(dst, len, "");
		return;
	}
	snprintf(dst, len,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* devdax_fill -- size and first dax device ("dax1.0") of a devdax ns */
static void devdax_fill(struct ndctl_namespace *ndns, struct ns_namespace *e)
{
	struct ndctl_dax *dax = ndctl_namespace_get_dax(ndns);
	struct daxctl_region *region;
	struct daxctl_dev *dev;

	copy(e->mode, sizeof(e->mode), "devdax");
	if (!dax)
		return;
	e->size = ndctl_dax_get_size(dax);
	region = ndctl_dax_get_daxctl_region(dax);
	if (!region)
		return;
	daxctl_dev_foreach(region, dev) {
		if (daxctl_dev_get_size(dev) == 0)
			continue;
		copy(e->device, sizeof(e->device), daxctl_dev_get_devname(dev));
		e->size = daxctl_dev_get_size(dev);
		break;
	}
}

/* mode_fill -- mode, usable size and device node of one namespace */
static void mode_fill(struct ndctl_namespace *ndns, struct ns_namespace *e)
{
	struct ndctl_pfn *pfn = ndctl_namespace_get_pfn(ndns);
	struct ndctl_btt *btt = ndctl_namespace_get_btt(ndns);
	const char *blk = NULL;

	e->size = ndctl_namespace_get_size(ndns);
	switch (ndctl_namespace_get_mode(ndns)) {
	case NDCTL_NS_MODE_FSDAX:
		copy(e->mode, sizeof(e->mode), "fsdax");
		if (pfn)
			e->size = ndctl_pfn_get_size(pfn);
		blk = pfn ? ndctl_pfn_get_block_device(pfn) :
			    ndctl_namespace_get_block_device(ndns);
		break;
	case NDCTL_NS_MODE_DEVDAX:
		devdax_fill(ndns, e);
		break;
	case NDCTL_NS_MODE_SECTOR:
		copy(e->mode, sizeof(e->mode), "sector");
		if (btt)
			e->size = ndctl_btt_get_size(btt);
		blk = btt ? ndctl_btt_get_block_device(btt) : NULL;
		break;
	default:
		copy(e->mode, sizeof(e->mode), "raw");
		blk = ndctl_namespace_get_block_device(ndns);
		break;
	}
	if (blk && *blk)
		copy(e->device, sizeof(e->device), blk);
	if (e->device[0])
		snprintf(e->dev_path, sizeof(e->dev_path), "/dev/%s",
			 e->device);
	if (blk && *blk)
		ns_mount_lookup(e);
}

/* ns_fill -- one ns_namespace from a libndctl namespace */
static void ns_fill(struct ndctl_namespace *ndns, struct ns_namespace *e)
{
	struct ndctl_region *region = ndctl_namespace_get_region(ndns);
	unsigned char uu[16];

	memset(e, 0, sizeof(*e));
	copy(e->bus, sizeof(e->bus),
	     ndctl_bus_get_devname(ndctl_region_get_bus(region)));
	copy(e->region, sizeof(e->region), ndctl_region_get_devname(region));
	copy(e->name, sizeof(e->name), ndctl_namespace_get_devname(ndns));
	e->node = ndctl_namespace_get_numa_node(ndns);
	if (e->node < 0)
		e->node = ndctl_region_get_numa_node(region);
	if (e->node < 0)
		e->node = -1;
	ndctl_namespace_get_uuid(ndns, uu);
	uuid_format(e->uuid, sizeof(e->uuid), uu);
	mode_fill(ndns, e);
}

/* vec_add -- append a zeroed entry; NULL on ENOMEM */
static struct ns_namespace *vec_add(struct ns_vec *vec)
{
	struct ns_namespace *v;
	size_t cap;

	if (vec->count == vec->cap) {
		cap = vec->cap ? vec->cap * 2 : 4;
		v = realloc(vec->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		vec->v = v;
		vec->cap = cap;
	}
	return &vec->v[vec->count++];
}

/* ns_cmp -- order by bus, region, namespace, numbers compared as numbers */
static int ns_cmp(const void *a, const void *b)
{
	const struct ns_namespace *x = a, *y = b;
	int c = strverscmp(x->bus, y->bus);

	if (!c)
		c = strverscmp(x->region, y->region);
	return c ? c : strverscmp(x->name, y->name);
}

/* list_all -- every active, non-empty namespace of every bus */
static int list_all(struct ndctl_ctx *ctx, struct ns_vec *vec)
{
	struct ndctl_namespace *ndns;
	struct ndctl_region *region;
	struct ndctl_bus *bus;
	struct ns_namespace *e;

	ndctl_bus_foreach(ctx, bus) {
		ndctl_region_foreach(bus, region) {
			ndctl_namespace_foreach(region, ndns) {
				if (!ndctl_namespace_is_active(ndns) ||
				    ndctl_namespace_get_size(ndns) == 0)
					continue;
				e = vec_add(vec);
				if (!e)
					return util_errmsg_set(
						ENOMEM,
						"cannot list namespaces:"
						" out of memory");
				ns_fill(ndns, e);
			}
		}
	}
	return 0;
}

int ns_list(struct ns_namespace **ret_list, size_t *ret_count)
{
	struct ns_vec vec = { NULL, 0, 0 };
	const char *fake = getenv("PMAD_FAKE_NS");
	struct ndctl_ctx *ctx;
	int rc;

	if (fake) /* tests: directories stand for fsdax mounts (fake.c) */
		return ns_fake_list(fake, ret_list, ret_count);
	/* no libnvdimm in this kernel: no PM, nothing to list */
	if (access("/sys/bus/nd", F_OK) < 0)
		goto out_empty;
	rc = ndctl_new(&ctx);
	if (rc == -ENOMEM)
		return util_errmsg_set(ENOMEM, "cannot start libndctl: "
					       "out of memory");
	if (rc != 0)
		goto out_empty;
	ndctl_set_log_fn(ctx, quiet_ndctl);
	if (ndctl_get_daxctl_ctx(ctx))
		daxctl_set_log_fn(ndctl_get_daxctl_ctx(ctx), quiet_daxctl);
	rc = list_all(ctx, &vec);
	ndctl_unref(ctx);
	if (rc < 0) {
		free(vec.v);
		return rc;
	}
	if (vec.count > 1) /* libndctl order is not stable: sort */
		qsort(vec.v, vec.count, sizeof(*vec.v), ns_cmp);
	*ret_list = vec.v;
	*ret_count = vec.count;
	return 0;

out_empty:
	*ret_list = NULL;
	*ret_count = 0;
	return 0;
}
