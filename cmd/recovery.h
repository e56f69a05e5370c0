/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What recovery still has to do in a pool's heap (pma_fsck_pending), as
 * text or JSON: shared by pmactl inspect --recovery and pmactl fsck
 * --recovery (pmactl-inspect(1), pmactl-fsck(1) document the output).
 */
#ifndef PMAD_CMD_RECOVERY_H
#define PMAD_CMD_RECOVERY_H

#include "util/json.h"

#include "pmalloc/fsck.h"

/* the pending work as a new JSON object (NULL: out of memory) */
struct json_object *cmd_recovery_pending_json(const struct pma_fsck_pending *p);
/* as text on stdout: a summary line, then a table of the arenas with
 * work pending (0, or -ENOMEM/-EIO) */
int cmd_recovery_pending_print(const struct pma_fsck_pending *p);
/* "replay N operations in N arenas, drop N torn tails, N remote frees
 * pending" (or "nothing") into buf */
const char *cmd_recovery_summary(const struct pma_fsck_pending *p, char *buf,
				 size_t len);

#endif
