/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util log: the process-wide log priority and sink. Both are atomics, so a
 * thread may log while another installs a sink or changes the level. The
 * default is silent: no sink is installed and the priority is LOG_ERR, so a
 * program that installs util_log_stderr sees errors, and PMAD_LOG raises it.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/log.h"

#define LOG_LINE_MAX 1024

static _Atomic(util_log_fn) log_sink;
static atomic_int log_priority = LOG_ERR;

/* names accepted by PMAD_LOG, and the aliases users type */
static const struct {
	const char *name;
	int priority;
} log_names[] = {
	{ "emerg", LOG_EMERG },	 { "alert", LOG_ALERT },
	{ "crit", LOG_CRIT },	 { "err", LOG_ERR },
	{ "error", LOG_ERR },	 { "warning", LOG_WARNING },
	{ "warn", LOG_WARNING }, { "notice", LOG_NOTICE },
	{ "info", LOG_INFO },	 { "debug", LOG_DEBUG },
};

/* label printed by util_log_stderr, indexed by priority */
static const char *const log_labels[] = {
	"emergency", "alert",  "critical", "error",
	"warning",   "notice", "info",	   "debug",
};

void util_log_set_sink(util_log_fn fn)
{
	atomic_store(&log_sink, fn);
}

void util_log_set_priority(int level)
{
	if (level < LOG_EMERG)
		level = LOG_EMERG;
	if (level > LOG_DEBUG)
		level = LOG_DEBUG;
	atomic_store(&log_priority, level);
}

int util_log_get_priority(void)
{
	return atomic_load(&log_priority);
}

/* returns the priority, or -EINVAL for anything else (also "", " 3", "3x") */
int util_log_parse_priority(const char *s)
{
	size_t i;

	if (!s || !*s)
		return -EINVAL;
	if (s[0] >= '0' && s[0] <= '7' && s[1] == '\0')
		return s[0] - '0';
	for (i = 0; i < sizeof(log_names) / sizeof(log_names[0]); i++)
		if (strcasecmp(s, log_names[i].name) == 0)
			return log_names[i].priority;
	return -EINVAL;
}

/* an unset or invalid PMAD_LOG leaves the priority as it was */
void util_log_init(void)
{
	const char *env = getenv("PMAD_LOG");
	int prio;

	if (!env)
		return;
	prio = util_log_parse_priority(env);
	if (prio >= 0)
		util_log_set_priority(prio);
}

/* format attribute: fmt is checked at the util_log_msg call sites */
__attribute__((format(printf, 5, 0))) void
util_log_stderr(int priority, const char *file, int line, const char *func,
		const char *fmt, va_list ap)
{
	char msg[LOG_LINE_MAX];
	const char *label = "log";
	size_t len;

	(void)file;
	(void)line;
	(void)func;
	if (priority >= LOG_EMERG && priority <= LOG_DEBUG)
		label = log_labels[priority];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* callers may or may not end with a newline: print exactly one */
	len = strlen(msg);
	if (len && msg[len - 1] == '\n')
		msg[len - 1] = '\0';
	/* one call, so lines of concurrent threads do not interleave */
	fprintf(stderr, "pmad: %s: %s\n", label, msg);
}

/* errno is preserved: logging on an error path must not change it */
void util_log_msg(int priority, const char *file, int line, const char *func,
		  const char *fmt, ...)
{
	util_log_fn sink = atomic_load(&log_sink);
	int saved_errno = errno;
	va_list ap;

	if (!sink || priority > atomic_load(&log_priority))
		return;
	va_start(ap, fmt);
	sink(priority, file, line, func, fmt, ap);
	va_end(ap);
	errno = saved_errno;
}
