/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pmem map: one libpmem2 mapping of a whole file or devdax device.
 * We require only PAGE granularity so any file maps, and report what pmem2
 * actually gives (BYTE, CACHE_LINE or PAGE; PMEM2_FORCE_GRANULARITY is
 * honoured by libpmem2 itself). pmem2 errors become -errno + errmsg.
 */
#include <errno.h>
#include <libpmem2.h>
#include <stdlib.h>

#include "pmem/internal.h"
#include "pmem/pm.h"
#include "util/errmsg.h"

/*
 * errno for a pmem2 return code. XXX: libpmem2 1.12 declares
 * pmem2_err_to_errno() but does not export it, so map the codes here.
 */
static int pm_pmem2_errno(int pmem2_ret)
{
	if (pmem2_ret < 0 && pmem2_ret > PMEM2_E_UNKNOWN)
		return -pmem2_ret; /* PMEM2_E_ERRNO: a plain -errno */
	switch (pmem2_ret) {
	case PMEM2_E_NOSUPP:
	case PMEM2_E_GRANULARITY_NOT_SUPPORTED:
	case PMEM2_E_SOURCE_TYPE_NOT_SUPPORTED:
		return ENOTSUP;
	case PMEM2_E_INVALID_FILE_HANDLE:
	case PMEM2_E_FILE_HANDLE_NOT_SET:
	case PMEM2_E_FILE_DESCRIPTOR_NOT_SET:
		return EBADF;
	case PMEM2_E_NO_ACCESS:
		return EACCES;
	case PMEM2_E_IO_FAIL:
		return EIO;
	}
	return EINVAL;
}

/* set the errmsg from pmem2's last error and return -errno */
static int pm_pmem2_err(int pmem2_ret, const char *what)
{
	return util_errmsg_set(pm_pmem2_errno(pmem2_ret), "%s: %s", what,
			       pmem2_errormsg());
}

const char *pm_granularity_name(enum pm_granularity g)
{
	switch (g) {
	case PM_GRAN_BYTE:
		return "BYTE";
	case PM_GRAN_CACHE_LINE:
		return "CACHE_LINE";
	case PM_GRAN_PAGE:
		return "PAGE";
	}
	return "UNKNOWN";
}

static enum pm_granularity pm_gran_from_pmem2(enum pmem2_granularity g)
{
	switch (g) {
	case PMEM2_GRANULARITY_BYTE:
		return PM_GRAN_BYTE;
	case PMEM2_GRANULARITY_CACHE_LINE:
		return PM_GRAN_CACHE_LINE;
	case PMEM2_GRANULARITY_PAGE:
		break;
	}
	return PM_GRAN_PAGE;
}

/* a config for a whole-source mapping, read-write or read-only */
static int pm_config_make(unsigned flags, struct pmem2_config **ret_cfg)
{
	struct pmem2_config *cfg;
	unsigned prot = PMEM2_PROT_READ | PMEM2_PROT_WRITE;
	int ret;

	ret = pmem2_config_new(&cfg);
	if (ret)
		return pm_pmem2_err(ret, "pmem2_config_new");
	ret = pmem2_config_set_required_store_granularity(
		cfg, PMEM2_GRANULARITY_PAGE);
	if (ret)
		goto err_cfg;
	ret = pmem2_config_set_sharing(
		cfg, (flags & PM_MAP_PRIVATE) ? PMEM2_PRIVATE : PMEM2_SHARED);
	if (ret)
		goto err_cfg;
	if (flags & PM_MAP_RDONLY)
		prot = PMEM2_PROT_READ;
	ret = pmem2_config_set_protection(cfg, prot);
	if (ret)
		goto err_cfg;
	*ret_cfg = cfg;
	return 0;

err_cfg:
	ret = pm_pmem2_err(ret, "pmem2 config");
	pmem2_config_delete(&cfg);
	return ret;
}

/* fill map from a fresh pmem2 mapping */
static void pm_map_init(struct pm_map *map, struct pmem2_map *pmem2,
			unsigned flags)
{
	map->pmem2 = pmem2;
	map->addr = pmem2_map_get_address(pmem2);
	map->size = pmem2_map_get_size(pmem2);
	map->gran = pm_gran_from_pmem2(pmem2_map_get_store_granularity(pmem2));
	map->flags = flags;
	map->flush_fn = pmem2_get_flush_fn(pmem2);
	map->drain_fn = pmem2_get_drain_fn(pmem2);
	map->persist_fn = pmem2_get_persist_fn(pmem2);
	map->memcpy_fn = pmem2_get_memcpy_fn(pmem2);
	map->memset_fn = pmem2_get_memset_fn(pmem2);
	map->crash = NULL;
	pm_map_noflush_update(map);
}

/* a pmem2 source for fd, refusing an empty one with a clear message */
static int pm_source_make(int fd, struct pmem2_source **ret_src)
{
	struct pmem2_source *src;
	size_t size;
	int ret;

	ret = pmem2_source_from_fd(&src, fd);
	if (ret)
		return pm_pmem2_err(ret, "cannot map fd");
	ret = pmem2_source_size(src, &size);
	if (ret) {
		ret = pm_pmem2_err(ret, "cannot get the size to map");
		goto err_src;
	}
	if (size == 0) {
		ret = util_errmsg_set(EINVAL, "cannot map an empty file");
		goto err_src;
	}
	*ret_src = src;
	return 0;

err_src:
	pmem2_source_delete(&src);
	return ret;
}

int pm_map_new(int fd, unsigned flags, struct pm_map **ret_map)
{
	struct pmem2_config *cfg = NULL;
	struct pmem2_source *src = NULL;
	struct pmem2_map *pmem2 = NULL;
	struct pm_map *map;
	int ret;

	if ((flags & ~(unsigned)(PM_MAP_RDONLY | PM_MAP_PRIVATE)) ||
	    (flags & PM_MAP_RDONLY && flags & PM_MAP_PRIVATE))
		return util_errmsg_set(EINVAL, "pm_map_new: bad flags 0x%x",
				       flags);
	map = calloc(1, sizeof(*map));
	if (!map)
		return util_errmsg_set(ENOMEM, "pm_map_new: out of memory");
	map->node = -1;
	ret = pm_source_make(fd, &src);
	if (ret)
		goto err_map;
	ret = pm_config_make(flags, &cfg);
	if (ret)
		goto err_src;
	ret = pmem2_map_new(&pmem2, cfg, src);
	if (ret) {
		ret = pm_pmem2_err(ret, "cannot map");
		goto err_cfg;
	}
	pm_map_init(map, pmem2, flags);
	ret = pm_crash_map_attach(map, fd);
	if (ret)
		goto err_pmem2;
	pmem2_config_delete(&cfg);
	pmem2_source_delete(&src);
	*ret_map = map;
	return 0;

err_pmem2:
	pmem2_map_delete(&pmem2);
err_cfg:
	pmem2_config_delete(&cfg);
err_src:
	pmem2_source_delete(&src);
err_map:
	free(map);
	return ret;
}

void pm_map_delete(struct pm_map **map)
{
	if (!map || !*map)
		return;
	if ((*map)->crash)
		pm_crash_map_detach(*map);
	pmem2_map_delete(&(*map)->pmem2);
	free(*map);
	*map = NULL;
}

void *pm_map_addr(const struct pm_map *map)
{
	return map->addr;
}

size_t pm_map_size(const struct pm_map *map)
{
	return map->size;
}

enum pm_granularity pm_map_granularity(const struct pm_map *map)
{
	return map->gran;
}

const char *pm_errormsg(void)
{
	return util_errmsg();
}

void pm_map_discarded(struct pm_map *map, size_t off, size_t len)
{
	if (map->crash)
		pm_crash_on_discard(map, off, len);
}

void pm_map_set_node(struct pm_map *map, int node)
{
	map->node = node < 0 ? -1 : node;
}
