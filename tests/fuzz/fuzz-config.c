/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz-config: libFuzzer target for pmad's configuration parser
 * (daemon/config.c), which reads pmad.yaml as root. Each input is parsed
 * as a whole file; an accepted config must satisfy what the parser
 * promises (valid unique pool names, sizes, modes, nodes, parts), and a
 * rejected one must fail with a message naming "fuzz.yaml:LINE:COL:".
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/config.h"
#include "util/errmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz.yaml"

static void check_pool(const struct pmad_config *conf,
		       const struct pmad_pool_conf *p)
{
	unsigned i, j;

	if (!p->name || !pmad_pool_name_valid(p->name) || !p->size ||
	    p->mode > 0777 || pmad_config_pool(conf, p->name) != p)
		abort();
	if (p->path && (p->path[0] != '/' || p->nparts || p->parts_all_nodes))
		abort();
	if (p->nparts > PMAD_MAX_PARTS || (p->nparts && p->parts_all_nodes))
		abort();
	for (i = 0; i < p->nparts; i++)
		for (j = 0; j < i; j++)
			if (p->parts[i] == p->parts[j] || p->parts[i] < 0)
				abort();
}

static void check_config(const struct pmad_config *conf)
{
	unsigned i;

	if (conf->npools > PMAD_MAX_POOLS || conf->socket_mode > 0777 ||
	    conf->gc_free_pct > 100 || !conf->gc_interval)
		abort();
	if ((conf->socket_path && conf->socket_path[0] != '/') ||
	    (conf->state_dir && conf->state_dir[0] != '/'))
		abort();
	if (conf->ns_auto && conf->nns)
		abort();
	for (i = 0; i < conf->nns; i++)
		if (conf->ns[i].node < 0 || !conf->ns[i].path ||
		    conf->ns[i].path[0] != '/')
			abort();
	for (i = 0; i < conf->npools; i++)
		check_pool(conf, &conf->pools[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pmad_config *conf = NULL;
	int rc;

	rc = pmad_config_parse(NAME, (const char *)data, size, &conf);
	if (rc == 0) {
		if (!conf)
			abort();
		check_config(conf);
		pmad_config_free(conf);
		return 0;
	}
	/* every error but running out of memory points into the file */
	if (rc != -ENOMEM && strncmp(util_errmsg(), NAME ":", 10) != 0)
		abort();
	return 0;
}
