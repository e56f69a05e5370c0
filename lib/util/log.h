/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util log: one process-wide log context with a caller-installed sink.
 * Silent by default; PMAD_LOG=err|warning|notice|info|debug (or a syslog
 * number) raises the level at util_log_init(). Libraries log, never print.
 */
#ifndef PMAD_UTIL_LOG_H
#define PMAD_UTIL_LOG_H

#include <stdarg.h>
#include <syslog.h>

typedef void (*util_log_fn)(int priority, const char *file, int line,
			    const char *func, const char *fmt, va_list ap);

/* read PMAD_LOG from the environment; keeps the current sink */
void util_log_init(void);
/* install a sink (NULL restores the silent default) */
void util_log_set_sink(util_log_fn fn);
/* messages with priority <= level are passed to the sink (LOG_ERR..LOG_DEBUG) */
void util_log_set_priority(int level);
int util_log_get_priority(void);
/* parse "err", "warning", "notice", "info", "debug" or a number 0..7 */
int util_log_parse_priority(const char *s);
/* ready-made sink: "pmad: <level>: <message>" on stderr */
void util_log_stderr(int priority, const char *file, int line, const char *func,
		     const char *fmt, va_list ap);

void util_log_msg(int priority, const char *file, int line, const char *func,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define util_log(prio, ...) \
	util_log_msg(prio, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define util_err(...) util_log(LOG_ERR, __VA_ARGS__)
#define util_warn(...) util_log(LOG_WARNING, __VA_ARGS__)
#define util_info(...) util_log(LOG_INFO, __VA_ARGS__)
#if PMAD_DEBUG
#define util_dbg(...) util_log(LOG_DEBUG, __VA_ARGS__)
#else
#define util_dbg(...) \
	do {          \
	} while (0)
#endif

#endif
