// SPDX-License-Identifier: BSD-3-Clause
/*
 * Heap configuration objects (struct pma_config): the tuning of one
 * create or open. heap.c copies the config into every heap of the pool,
 * so nothing here is process-wide.
 */
#include <errno.h>
#include <stdlib.h>

#include "pmalloc/internal.h"
#include "util/errmsg.h"

/* what a heap opened without a config gets */
void pma_config_init(struct pma_config *cfg)
{
	unsigned p;

	*cfg = (struct pma_config){
		.flags = 0,
		.slab_keep = 1,
		.membarrier = 1,
		.morph_pct = PMA_MORPH_PCT_DEFAULT,
		.morph_idle = 1,
		/* version 10, slab morphing on (PMA_HEAP_NO_MORPH or
		 * pma_config_set_morph(cfg, 0, ...) turns it off) */
		.format_version = PMA_HEAP_VERSION,
		.sum_shift = PMA_SUM_SHIFT_DEFAULT,
		.nparts = 1,
		.regions = 1,
		.mode = 0600,
	};
	for (p = 0; p < POOL_MAX_PARTS; p++)
		cfg->nodes[p] = -1;
}

PMA_API int pma_config_new(struct pma_config **ret_cfg)
{
	struct pma_config *cfg;

	if (!ret_cfg)
		return util_errmsg_set(EINVAL, "no ret_cfg");
	cfg = malloc(sizeof(*cfg));
	if (!cfg)
		return util_errmsg_set(ENOMEM, "out of memory");
	pma_config_init(cfg);
	*ret_cfg = cfg;
	return 0;
}

PMA_API void pma_config_delete(struct pma_config **cfg)
{
	if (!cfg)
		return;
	free(*cfg);
	*cfg = NULL;
}

/* the flags a config may carry (PMA_HEAP_FORCE for a create) */
#define CONFIG_FLAGS                                          \
	(PMA_HEAP_FORCE | PMA_HEAP_FORMAT | PMA_HEAP_RDONLY | \
	 PMA_HEAP_LOCAL_CHECKPOINTS | PMA_HEAP_INTERLEAVE | PMA_HEAP_NO_MORPH)

PMA_API int pma_config_set_flags(struct pma_config *cfg, unsigned flags)
{
	if (!cfg)
		return util_errmsg_set(EINVAL, "no config");
	if (flags & ~(unsigned)CONFIG_FLAGS)
		return util_errmsg_set(EINVAL, "unknown heap flags 0x%x",
				       flags & ~(unsigned)CONFIG_FLAGS);
	if ((flags & PMA_HEAP_RDONLY) && (flags & PMA_HEAP_FORMAT))
		return util_errmsg_set(EINVAL, "PMA_HEAP_RDONLY with "
					       "PMA_HEAP_FORMAT");
	cfg->flags = flags;
	return 0;
}

PMA_API int pma_config_set_slab_keep(struct pma_config *cfg, unsigned slabs)
{
	if (!cfg)
		return util_errmsg_set(EINVAL, "no config");
	cfg->slab_keep = slabs;
	return 0;
}

PMA_API int pma_config_set_morph(struct pma_config *cfg, unsigned used_pct,
				 int idle)
{
	if (!cfg)
		return util_errmsg_set(EINVAL, "no config");
	if (used_pct > 100)
		return util_errmsg_set(
			EINVAL, "morph threshold %u%% is over 100%%", used_pct);
	cfg->morph_pct = used_pct;
	cfg->morph_idle = idle != 0;
	return 0;
}

PMA_API int pma_config_set_membarrier(struct pma_config *cfg, int use)
{
	if (!cfg || (use != 0 && use != 1))
		return util_errmsg_set(EINVAL, "membarrier use must be 0 or 1");
	cfg->membarrier = use;
	return 0;
}

static int hook_set(struct pma_config *cfg, struct pma_hook *h,
		    int (*fn)(struct pma_heap *heap, void *arg, char *why,
			      size_t why_len),
		    void *arg)
{
	if (!cfg)
		return util_errmsg_set(EINVAL, "no config");
	h->fn = fn;
	h->arg = arg;
	return 0;
}

PMA_API int pma_config_set_root_hook(struct pma_config *cfg,
				     int (*hook)(struct pma_heap *heap,
						 void *arg, char *why,
						 size_t why_len),
				     void *arg)
{
	return hook_set(cfg, cfg ? &cfg->root_hook : NULL, hook, arg);
}

PMA_API int pma_config_set_room_hook(struct pma_config *cfg,
				     int (*hook)(struct pma_heap *heap,
						 void *arg, char *why,
						 size_t why_len),
				     void *arg)
{
	return hook_set(cfg, cfg ? &cfg->room_hook : NULL, hook, arg);
}

PMA_API int pma_config_set_parts(struct pma_config *cfg, unsigned nparts)
{
	if (!cfg || nparts < 1 || nparts > POOL_MAX_PARTS)
		return util_errmsg_set(EINVAL, "%u parts (1..%u)", nparts,
				       POOL_MAX_PARTS);
	cfg->nparts = nparts;
	return 0;
}

PMA_API int pma_config_set_part_node(struct pma_config *cfg, unsigned part,
				     int node)
{
	if (!cfg || part >= POOL_MAX_PARTS)
		return util_errmsg_set(EINVAL, "part %u (0..%u)", part,
				       POOL_MAX_PARTS - 1);
	if (node < -1)
		return util_errmsg_set(EINVAL, "node %d (-1 or a node)", node);
	cfg->nodes[part] = node;
	return 0;
}

PMA_API int pma_config_set_mode(struct pma_config *cfg, unsigned mode)
{
	if (!cfg || (mode & ~07777u))
		return util_errmsg_set(EINVAL, "mode 0%o is not a file mode",
				       mode);
	cfg->mode = mode;
	return 0;
}

PMA_API int pma_config_set_regions(struct pma_config *cfg, unsigned regions)
{
	if (!cfg)
		return util_errmsg_set(EINVAL, "no config");
	if (regions < 1 || regions > PMA_REGIONS_MAX ||
	    (regions & (regions - 1)))
		return util_errmsg_set(EINVAL,
				       "%u regions per part (a power of two, "
				       "1..%u)",
				       regions, PMA_REGIONS_MAX);
	cfg->regions = regions;
	return 0;
}

PMA_API int pma_config_set_region_mask(struct pma_config *cfg, uint64_t mask)
{
	if (!cfg)
		return util_errmsg_set(EINVAL, "no config");
	cfg->region_mask = mask;
	return 0;
}

int pma_config_set_format(struct pma_config *cfg, uint32_t version,
			  uint32_t sum_shift)
{
	if (!cfg || version < PMA_HEAP_VERSION_MIN ||
	    version > PMA_HEAP_VERSION)
		return util_errmsg_set(EINVAL, "layout version %u (%u..%u)",
				       version, PMA_HEAP_VERSION_MIN,
				       PMA_HEAP_VERSION);
	if (sum_shift &&
	    (sum_shift < PMA_SUM_SHIFT_MIN || sum_shift > PMA_SUM_SHIFT_MAX))
		return util_errmsg_set(EINVAL, "summary shift %u", sum_shift);
	cfg->format_version = version;
	cfg->sum_shift = sum_shift ? sum_shift : PMA_SUM_SHIFT_DEFAULT;
	return 0;
}
