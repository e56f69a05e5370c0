/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/view compact: the report of pma_heap_compact (or of its plan) as
 * the document `pmactl compact --json` prints, built by pmactl for a pool
 * it compacted itself and by pmad for one it holds (pmactl-compact(1)).
 */
#include <errno.h>

#include "pmalloc.h"
#include "util/errmsg.h"
#include "util/json.h"
#include "view/view.h"

int view_compact_json(const struct pma_compact_report *r, int dry_run,
		      unsigned flags, struct json_object *obj)
{
	int err;

	err = util_json_add_bool(obj, "dry_run", dry_run);
	err |= util_json_add_u64(obj, "slabs_released", r->slabs_released);
	err |= util_json_add_u64(obj, "log_records_before",
				 r->log_records_before);
	err |= util_json_add_u64(obj, "log_records_after",
				 dry_run ? 0 : r->log_records_after);
	err |= util_json_add_u64(obj, "free_runs_before", r->free_runs_before);
	err |= util_json_add_u64(obj, "free_runs_after", r->free_runs_after);
	err |= view_add_size(obj, "largest_free_before", r->largest_free_before,
			     flags);
	err |= view_add_size(obj, "largest_free_after", r->largest_free_after,
			     flags);
	err |= view_add_size(obj, "free_bytes_after", r->free_bytes_after,
			     flags);
	err |= view_add_size(obj, "punched_bytes", r->punched_bytes, flags);
	err |= view_add_size(obj, "file_bytes_before", r->file_bytes_before,
			     flags);
	err |= view_add_size(obj, "file_bytes_after", r->file_bytes_after,
			     flags);
	err |= view_add_size(obj, "bytes_reclaimed", r->reclaimed_bytes, flags);
	err |= util_json_add_bool(obj, "holes_punched", r->punched);
	if (r->note[0])
		err |= util_json_add_str(obj, "note", r->note);
	return err ? util_errmsg_set(ENOMEM, "out of memory") : 0;
}
