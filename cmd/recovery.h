/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What recovery still has to do in a pool: its heap's logs
 * (pma_fsck_pending) and, if the heap holds one, the HDPM file system's
 * journals (hdpm_fsck_pending), as text or JSON: shared by pmactl
 * inspect --recovery and pmactl fsck --recovery (pmactl-inspect(1),
 * pmactl-fsck(1) document the output).
 */
#ifndef PMAD_CMD_RECOVERY_H
#define PMAD_CMD_RECOVERY_H

#include "util/json.h"

#include "hdpm/fsck.h"
#include "pmalloc/fsck.h"

struct cmd_recovery {
	struct pma_fsck_pending heap; /* the next writable open's */
	struct hdpm_fsck_pending hdpm; /* the next mount's */
};

/* both, from read-only opens of the pool at path: 0, or -errno with a
 * message (pma_errormsg). Release ret with cmd_recovery_free (also after
 * an error). */
int cmd_recovery_pending(const char *path, struct cmd_recovery *ret);
void cmd_recovery_free(struct cmd_recovery *r);
/* has recovery work to do (the heap's or the file system's)? */
int cmd_recovery_needed(const struct cmd_recovery *r);

/* the pending work as a new JSON object (NULL: out of memory) */
struct json_object *cmd_recovery_pending_json(const struct cmd_recovery *r);
/* as text on stdout: a summary line, then a table of the arenas with
 * work pending; for a file system an "HDPM recovery" line and a table of
 * its interrupted operations (0, or -ENOMEM/-EIO) */
int cmd_recovery_pending_print(const struct cmd_recovery *r);
/* "replay N operations in N arenas, drop N torn tails, N remote frees
 * pending" (or "nothing") into buf */
const char *cmd_recovery_summary(const struct pma_fsck_pending *p, char *buf,
				 size_t len);

#endif
