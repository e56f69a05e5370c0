/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmactl helpers shared by every command (see common.h): base options,
 * error messages, pool opening, JSON printing, tables and the progress bar.
 * All diagnostics go to stderr so that stdout stays parseable with --json.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "pool/pool.h"
#include "util/json.h"
#include "util/escape.h"
#include "util/size.h"

int cmd_base_option(int c, struct cmd_ctx *ctx, const char *cmd,
		    const char *usage)
{
	switch (c) {
	case 'h':
		fputs(usage, stdout);
		return CMD_EXIT_OK;
	case 'j':
		ctx->json = 1;
		return CMD_CONTINUE;
	case 'H':
		ctx->human = 1;
		return CMD_CONTINUE;
	default:
		/* cmd_getopt already said what was wrong */
		fprintf(stderr, "try '%s %s --help'\n", ctx->prog, cmd);
		return CMD_EXIT_USAGE;
	}
}

char *cmd_escape(const char *s)
{
	return util_escape(s);
}

void cmd_print_escaped(FILE *f, const char *s)
{
	char buf[5];
	const char *esc;

	for (; *s; s++) {
		esc = util_escape_char((unsigned char)*s, buf);
		if (esc)
			fputs(esc, f);
		else
			fputc(*s, f);
	}
}

/* "<prog>[ <cmd>]: <message>" on stderr, the message escaped */
static void cmd_getopt_report(const struct cmd_ctx *ctx, const char *cmd,
			      const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void cmd_getopt_report(const struct cmd_ctx *ctx, const char *cmd,
			      const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	fprintf(stderr, "%s%s%s: ", ctx->prog, cmd ? " " : "", cmd ? cmd : "");
	cmd_print_escaped(stderr, msg ? msg : "(out of memory)");
	fputc('\n', stderr);
	free(msg);
}

/* the long option arg (after "--") names exactly, or else by a prefix;
 * how many match by prefix in *ret_count */
static const struct option *cmd_long_find(const struct option *longopts,
					  const char *name, size_t len,
					  unsigned *ret_count)
{
	const struct option *o, *found = NULL;

	*ret_count = 0;
	for (o = longopts; o && o->name; o++) {
		if (strncmp(o->name, name, len) != 0)
			continue;
		if (strlen(o->name) == len) {
			*ret_count = 1;
			return o;
		}
		found = o;
		++*ret_count;
	}
	return found;
}

/*
 * Report what was wrong with long option arg ("--name[=value]"); 0 if arg
 * is not the culprit after all: an invalid short option in the middle of
 * a cluster leaves optind on that cluster, after a "--name=value".
 */
static int cmd_getopt_long_error(const struct cmd_ctx *ctx, const char *cmd,
				 int c, const char *arg,
				 const struct option *longopts)
{
	const char *name = arg + 2;
	size_t len = strcspn(name, "=");
	const struct option *o;
	unsigned count;

	o = cmd_long_find(longopts, name, len, &count);
	if (c == ':') {
		cmd_getopt_report(ctx, cmd,
				  "option '--%s' requires an argument",
				  o ? o->name : name);
	} else if (!optopt && count > 1) {
		cmd_getopt_report(ctx, cmd, "option '--%.*s' is ambiguous",
				  (int)len, name);
	} else if (!optopt) {
		cmd_getopt_report(ctx, cmd, "unrecognized option '%s'", arg);
	} else if (o && count == 1 && o->val == optopt &&
		   o->has_arg == no_argument && name[len] == '=') {
		cmd_getopt_report(ctx, cmd,
				  "option '--%s' doesn't allow an argument",
				  o->name);
	} else {
		return 0;
	}
	return 1;
}

int cmd_getopt(const struct cmd_ctx *ctx, const char *cmd, int argc,
	       char **argv, const char *optstring,
	       const struct option *longopts)
{
	const char *arg, *plus = *optstring == '+' ? "+" : "";
	char opts[128];
	int c;

	/* a leading ':' (after '+') makes a missing argument ':' */
	snprintf(opts, sizeof(opts), "%s:%s", plus, optstring + strlen(plus));
	opterr = 0;
	c = getopt_long(argc, argv, opts, longopts, NULL);
	if (c != '?' && c != ':')
		return c;
	/* a long option always moves optind past its element */
	arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	if (!strncmp(arg, "--", 2) && arg[2] &&
	    cmd_getopt_long_error(ctx, cmd, c, arg, longopts))
		return '?';
	if (c == ':')
		cmd_getopt_report(ctx, cmd,
				  "option requires an argument -- '%c'",
				  optopt);
	else
		cmd_getopt_report(ctx, cmd, "invalid option -- '%c'", optopt);
	return '?';
}

/* "<prog>: <message>" on stderr, the message escaped: it names paths */
static void cmd_vreport(const struct cmd_ctx *ctx, const char *fmt, va_list ap)
{
	char *msg;

	fprintf(stderr, "%s: ", ctx->prog);
	if (vasprintf(&msg, fmt, ap) < 0) {
		fputs("(out of memory formatting the message)", stderr);
		return;
	}
	cmd_print_escaped(stderr, msg);
	free(msg);
}

int cmd_usage_error(const struct cmd_ctx *ctx, const char *cmd, const char *fmt,
		    ...)
{
	va_list ap;

	va_start(ap, fmt);
	cmd_vreport(ctx, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntry '%s %s --help'\n", ctx->prog, cmd);
	return CMD_EXIT_USAGE;
}

int cmd_error(const struct cmd_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cmd_vreport(ctx, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CMD_EXIT_FAIL;
}

void cmd_header_note(const char *path, const char *note)
{
	/* inspect --heap opens the pool, then the heap: say it once */
	static int reported;

	if (!note || reported)
		return;
	reported = 1;
	fputs("pmactl: warning: pool '", stderr);
	cmd_print_escaped(stderr, path);
	fputs("': ", stderr);
	cmd_print_escaped(stderr, note);
	fputc('\n', stderr);
}

int cmd_pool_open(struct cmd_ctx *ctx, const char *path, unsigned open_flags)
{
	int rc;

	rc = pool_open(path, open_flags, &ctx->pool);
	if (rc < 0)
		return cmd_error(ctx, "cannot open pool '%s': %s", path,
				 pool_errormsg());
	cmd_header_note(path, pool_header_note(ctx->pool));
	return CMD_EXIT_OK;
}

const char *cmd_size_str(uint64_t size, char *buf, size_t buf_size)
{
	return util_size_format(size, buf, buf_size);
}

int cmd_json_add_size(const struct cmd_ctx *ctx, struct json_object *obj,
		      const char *key, uint64_t size)
{
	char buf[UTIL_SIZE_BUF];

	if (ctx->human)
		return util_json_add_str(obj, key,
					 cmd_size_str(size, buf, sizeof(buf)));
	return util_json_add_u64(obj, key, size);
}

int cmd_json_print(const struct cmd_ctx *ctx, struct json_object *obj)
{
	int rc;

	rc = util_json_print(stdout, obj, ctx->human ? UTIL_JSON_PRETTY : 0);
	json_object_put(obj);
	if (rc < 0)
		return cmd_error(ctx, "cannot write JSON output: %s",
				 strerror(-rc));
	return CMD_EXIT_OK;
}

int cmd_table_init(struct cmd_table *t, unsigned ncols,
		   const char *const *headers, unsigned right_mask)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	t->right_mask = right_mask;
	return cmd_table_add(t, headers);
}

static int cmd_table_grow(struct cmd_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 8;
	char **cells;

	cells = reallocarray(t->cells, cap * t->ncols, sizeof(*cells));
	if (!cells)
		return -ENOMEM;
	t->cells = cells;
	t->cap = cap;
	return 0;
}

int cmd_table_add(struct cmd_table *t, const char *const *cells)
{
	char **row;
	unsigned i;

	if (t->nrows == t->cap && cmd_table_grow(t) < 0) {
		t->failed = 1;
		return -ENOMEM;
	}
	row = t->cells + t->nrows * t->ncols;
	for (i = 0; i < t->ncols; i++) {
		/* escaped: a cell may be a path with control characters */
		row[i] = cmd_escape(cells[i] ? cells[i] : "-");
		if (!row[i])
			t->failed = 1;
	}
	t->nrows++;
	return t->failed ? -ENOMEM : 0;
}

/* width of column col: its longest cell */
static int cmd_table_width(const struct cmd_table *t, unsigned col)
{
	size_t width = 0, len;
	size_t r;

	for (r = 0; r < t->nrows; r++) {
		len = strlen(t->cells[r * t->ncols + col]);
		if (len > width)
			width = len;
	}
	return (int)width;
}

static void cmd_table_print_row(const struct cmd_table *t, FILE *f,
				unsigned indent, size_t r, const int *widths)
{
	const char *cell;
	unsigned c;

	fprintf(f, "%*s", (int)indent, "");
	for (c = 0; c < t->ncols; c++) {
		cell = t->cells[r * t->ncols + c];
		if (t->right_mask & (1u << c))
			fprintf(f, "%*s", widths[c], cell);
		else if (c + 1 == t->ncols) /* no trailing blanks */
			fputs(cell, f);
		else
			fprintf(f, "%-*s", widths[c], cell);
		if (c + 1 < t->ncols)
			fputs("  ", f);
	}
	fputc('\n', f);
}

int cmd_table_print(const struct cmd_table *t, FILE *f, unsigned indent)
{
	int *widths;
	unsigned c;
	size_t r;

	if (t->failed)
		return -ENOMEM;
	widths = calloc(t->ncols, sizeof(*widths));
	if (!widths)
		return -ENOMEM;
	for (c = 0; c < t->ncols; c++)
		widths[c] = cmd_table_width(t, c);
	for (r = 0; r < t->nrows; r++)
		cmd_table_print_row(t, f, indent, r, widths);
	free(widths);
	return ferror(f) ? -EIO : 0;
}

void cmd_table_release(struct cmd_table *t)
{
	size_t i;

	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

#define CMD_PROGRESS_WIDTH 30

void cmd_progress_init(struct cmd_progress *p, const char *label)
{
	p->label = label;
	p->last_pct = -1;
	p->drawn = 0;
}

void cmd_progress_update(uint64_t done, uint64_t total, void *arg)
{
	char bar[CMD_PROGRESS_WIDTH + 1];
	char done_buf[UTIL_SIZE_BUF], total_buf[UTIL_SIZE_BUF];
	struct cmd_progress *p = arg;
	int pct, fill;

	if (total == 0 || done > total)
		done = total;
	pct = total ? (int)(done * 100 / total) : 100;
	if (pct == p->last_pct)
		return;
	p->last_pct = pct;
	fill = pct * CMD_PROGRESS_WIDTH / 100;
	memset(bar, '#', (size_t)fill);
	memset(bar + fill, ' ', (size_t)(CMD_PROGRESS_WIDTH - fill));
	bar[CMD_PROGRESS_WIDTH] = '\0';
	/* \r and clear-to-end-of-line: redraw in place */
	fprintf(stderr, "\r%s  [%s] %3d%%  %s/%s\033[K", p->label, bar, pct,
		cmd_size_str(done, done_buf, sizeof(done_buf)),
		cmd_size_str(total, total_buf, sizeof(total_buf)));
	(void)fflush(stderr);
	p->drawn = 1;
}

void cmd_progress_done(struct cmd_progress *p)
{
	if (p->drawn)
		fputc('\n', stderr);
	p->drawn = 0;
}
