/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmad log sink: every util_log message (the daemon's and the libraries')
 * goes to the journal with its priority and code location when stderr is
 * connected to it ($JOURNAL_STREAM names stderr's device and inode, as
 * systemd sets it for services), and to stderr otherwise or with
 * --foreground.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include "pmad.h"
#include "util/log.h"

/* format attribute: fmt is checked at the util_log_msg call sites */
__attribute__((format(printf, 5, 0))) static void
log_journal(int priority, const char *file, int line, const char *func,
	    const char *fmt, va_list ap)
{
	char file_field[256], line_field[32];

	snprintf(file_field, sizeof(file_field), "CODE_FILE=%s", file);
	snprintf(line_field, sizeof(line_field), "CODE_LINE=%d", line);
	(void)sd_journal_printv_with_location(priority, file_field, line_field,
					      func, fmt, ap);
}

static int stderr_is_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!env || sscanf(env, "%llu:%llu", &dev, &ino) != 2)
		return 0;
	if (fstat(STDERR_FILENO, &st) < 0)
		return 0;
	return st.st_dev == dev && st.st_ino == ino;
}

void pmad_log_setup(const struct pmad *d)
{
	int level = LOG_INFO;

	if (d->conf && d->conf->log_level >= 0)
		level = d->conf->log_level;
	util_log_set_priority(level);
	util_log_init(); /* PMAD_LOG overrides the configuration */
	if (!d->opts.foreground && stderr_is_journal())
		util_log_set_sink(log_journal);
	else
		util_log_set_sink(util_log_stderr);
}
