/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/pmem crash simulator, absent: builds without --enable-crash-sim.
 * Mappings are never armed (map->crash stays NULL), so the flush path never
 * reaches the simulator; the public calls report -ENOTSUP.
 */
#include <errno.h>

#include "pmem/crash.h"
#include "pmem/internal.h"
#include "util/errmsg.h"

static int crash_off(void)
{
	return util_errmsg_set(ENOTSUP, "crash simulation is not built in "
					"(configure --enable-crash-sim)");
}

int pm_crash_enabled(void)
{
	return 0;
}

int pm_crash_arm(int on)
{
	(void)on;
	return crash_off();
}

uint64_t pm_crash_fence_count(void)
{
	return 0;
}

int pm_crash_set_hook(pm_crash_hook_fn fn, void *arg)
{
	(void)fn;
	(void)arg;
	return crash_off();
}

int pm_crash_image(struct pm_map *map, uint64_t seed, void *buf)
{
	(void)map;
	(void)seed;
	(void)buf;
	return crash_off();
}

int pm_crash_write_image(struct pm_map *map, uint64_t seed, const char *path)
{
	(void)map;
	(void)seed;
	(void)path;
	return crash_off();
}

size_t pm_crash_dirty_lines(struct pm_map *map)
{
	(void)map;
	return 0;
}

int pm_crash_map_attach(struct pm_map *map, int fd)
{
	(void)map;
	(void)fd;
	return 0;
}

void pm_crash_map_detach(struct pm_map *map)
{
	map->crash = NULL;
	pm_map_noflush_update(map);
}

void pm_crash_on_flush(struct pm_map *map, const void *addr, size_t len)
{
	(void)map;
	(void)addr;
	(void)len;
}

void pm_crash_on_fence(struct pm_map *map)
{
	(void)map;
}

void pm_crash_on_discard(struct pm_map *map, size_t off, size_t len)
{
	(void)map;
	(void)off;
	(void)len;
}
