/* SPDX-License-Identifier: MIT */
/*
 * report.c - summaries, the per-scenario tables (markdown, on stdout and in
 * report.md), the JSON file and the gnuplot charts.
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <uepoll.h>

void machine_get(struct machine *mc)
{
	struct utsname u;
	FILE *f;
	time_t t = time(NULL);
	struct tm tm;

	memset(mc, 0, sizeof(*mc));
	if (uname(&u) == 0) {
		snprintf(mc->kernel, sizeof(mc->kernel), "%s %s %s", u.sysname,
			 u.release, u.machine);
		snprintf(mc->host, sizeof(mc->host), "%s", u.nodename);
	}
	snprintf(mc->cpu, sizeof(mc->cpu), "unknown");
	f = fopen("/proc/cpuinfo", "r");
	if (f) {
		char line[256];

		while (fgets(line, sizeof(line), f)) {
			char *c = strchr(line, ':');

			if (strncmp(line, "model name", 10) || !c)
				continue;
			c++;
			while (*c == ' ' || *c == '\t')
				c++;
			c[strcspn(c, "\n")] = 0;
			snprintf(mc->cpu, sizeof(mc->cpu), "%s", c);
			break;
		}
		fclose(f);
	}
	mc->nproc = (int)sysconf(_SC_NPROCESSORS_ONLN);
	gmtime_r(&t, &tm);
	strftime(mc->date, sizeof(mc->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void row_summarize(struct row *r)
{
	for (int m = 0; m < M_COUNT; m++) {
		double v[MAX_REPS];

		for (int i = 0; i < r->nreps; i++)
			v[i] = r->rep[i][m];
		r->med[m] = stat_median(v, r->nreps);
		r->min[m] = stat_min(v, r->nreps);
		r->max[m] = stat_max(v, r->nreps);
	}
}

double row_ratio(const struct row *rows, int nrows, const struct row *r)
{
	enum metric h = r->sc->headline;

	if (r->sys->id != SYS_UEPOLL)
		return NAN;
	for (int i = 0; i < nrows; i++) {
		const struct row *k = &rows[i];

		if (k->sc == r->sc && k->sys->id == SYS_KERNEL &&
		    !strcmp(k->c.variant,
			    r->c.pair[0] ? r->c.pair : r->c.variant)) {
			if (isnan(k->med[h]) || isnan(r->med[h]) ||
			    k->med[h] == 0)
				return NAN;
			return r->med[h] / k->med[h];
		}
	}
	return NAN;
}

static void put_val(FILE *f, enum metric m, double v)
{
	if (isnan(v))
		fputs("-", f);
	else
		fprintf(f, "%.*f", metric_info[m].decimals, v);
}

static bool metric_used(const struct scenario *sc, const struct row *rows,
			int nrows, enum metric m)
{
	for (int i = 0; i < nrows; i++)
		if (rows[i].sc == sc && !isnan(rows[i].med[m]))
			return true;
	return false;
}

static const struct row *first_row(const struct scenario *sc,
				   const struct row *rows, int nrows)
{
	for (int i = 0; i < nrows; i++)
		if (rows[i].sc == sc)
			return &rows[i];
	return NULL;
}

void report_table(FILE *f, const struct scenario *sc, const struct row *rows,
		  int nrows)
{
	enum metric h = sc->headline;
	const struct row *r0 = first_row(sc, rows, nrows);

	if (!r0)
		return;
	fprintf(f, "### %s\n\n%s (%s).\n\nparams:", sc->name, sc->what,
		sc->proposal);
	for (int i = 0; i < r0->p.n; i++)
		fprintf(f, " %s=%ld", r0->p.name[i], r0->p.val[i]);
	fprintf(f, "; reps=%d; headline: %s (%s is better); values are "
		   "medians, [min-max] over reps\n\n",
		r0->nreps, metric_info[h].name,
		metric_info[h].lower_better ? "lower" : "higher");

	fprintf(f, "| system | variant | %s [min-max] | uepoll/kernel |",
		metric_info[h].name);
	for (int m = 0; m < M_COUNT; m++)
		if (m != (int)h && metric_used(sc, rows, nrows, m))
			fprintf(f, " %s |", metric_info[m].name);
	fputs("\n|---|---|---:|---:|", f);
	for (int m = 0; m < M_COUNT; m++)
		if (m != (int)h && metric_used(sc, rows, nrows, m))
			fputs("---:|", f);
	fputc('\n', f);

	for (int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		double ratio;

		if (r->sc != sc)
			continue;
		fprintf(f, "| %s | %s | ", r->sys->name, r->c.variant);
		if (r->skipped) {
			fprintf(f, "SKIPPED: %s | - |", r->c.skip);
			for (int m = 0; m < M_COUNT; m++)
				if (m != (int)h &&
				    metric_used(sc, rows, nrows, m))
					fputs(" - |", f);
			fputc('\n', f);
			continue;
		} else if (r->failed && isnan(r->med[h])) {
			fputs("FAILED", f);
		} else {
			put_val(f, h, r->med[h]);
			fputs(" [", f);
			put_val(f, h, r->min[h]);
			fputs("-", f);
			put_val(f, h, r->max[h]);
			fputs("]", f);
			if (r->failed)
				fputs(" FAILED", f);
		}
		ratio = row_ratio(rows, nrows, r);
		if (isnan(ratio))
			fputs(" | - |", f);
		else
			fprintf(f, " | %.2fx |", ratio);
		for (int m = 0; m < M_COUNT; m++) {
			if (m == (int)h || !metric_used(sc, rows, nrows, m))
				continue;
			fputc(' ', f);
			put_val(f, m, r->med[m]);
			fputs(" |", f);
		}
		fputc('\n', f);
	}
	fputc('\n', f);
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v)
{
	if (isnan(v) || isinf(v))
		fputs("null", f);
	else
		fprintf(f, "%.9g", v);
}

int report_json(const char *path, const struct machine *mc,
		const struct row *rows, int nrows, bool quick)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "uepoll-bench: %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	fputs("{\n  \"machine\": {\"kernel\": ", f);
	json_str(f, mc->kernel);
	fputs(", \"cpu_model\": ", f);
	json_str(f, mc->cpu);
	fprintf(f, ", \"nproc\": %d, \"date\": ", mc->nproc);
	json_str(f, mc->date);
	fputs(", \"host\": ", f);
	json_str(f, mc->host);
	fprintf(f, ", \"uepoll_version\": \"%d.%d\", \"suite\": \"%s\"},\n",
		UEPOLL_VERSION_MAJOR, UEPOLL_VERSION_MINOR,
		quick ? "quick" : "full");
	fputs("  \"rows\": [", f);
	for (int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];
		bool first = true;

		fputs(i ? ",\n    {" : "\n    {", f);
		fputs("\"scenario\": ", f);
		json_str(f, r->sc->name);
		fputs(", \"system\": ", f);
		json_str(f, r->sys->name);
		fputs(", \"variant\": ", f);
		json_str(f, r->c.variant);
		fputs(", \"headline\": ", f);
		json_str(f, metric_info[r->sc->headline].name);
		fprintf(f, ", \"reps\": %d, \"ok\": %s, ", r->nreps,
			r->failed ? "false" : "true");
		if (r->skipped) {
			fputs("\"skipped\": ", f);
			json_str(f, r->c.skip);
			fputs(", ", f);
		}
		fputs("\"params\": {", f);
		for (int p = 0; p < r->p.n; p++)
			fprintf(f, "%s\"%s\": %ld", p ? ", " : "", r->p.name[p],
				r->p.val[p]);
		fputs("},\n     \"metrics\": {", f);
		for (int m = 0; m < M_COUNT; m++) {
			if (isnan(r->med[m]))
				continue;
			fprintf(f, "%s\"%s\": ", first ? "" : ", ",
				metric_info[m].name);
			json_num(f, r->med[m]);
			first = false;
		}
		fputs("},\n     \"spread\": {", f);
		first = true;
		for (int m = 0; m < M_COUNT; m++) {
			if (isnan(r->med[m]))
				continue;
			fprintf(f, "%s\"%s\": [", first ? "" : ", ",
				metric_info[m].name);
			json_num(f, r->min[m]);
			fputs(", ", f);
			json_num(f, r->max[m]);
			fputs("]", f);
			first = false;
		}
		fputs("},\n     \"uepoll_over_kernel\": ", f);
		json_num(f, row_ratio(rows, nrows, r));
		fputs("}", f);
	}
	fputs("\n  ]\n}\n", f);
	if (fclose(f)) {
		fprintf(stderr, "uepoll-bench: %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- report.md + charts ------------------------------------------------- */

/* "pngcairo" if this gnuplot has it, else "png", NULL without gnuplot. */
static const char *gnuplot_terminal(void)
{
	FILE *p = popen("gnuplot -e 'set terminal' 2>&1", "r");
	char line[256];
	bool cairo = false, png = false;
	int st;

	if (!p)
		return NULL;
	while (fgets(line, sizeof(line), p)) {
		if (strstr(line, "pngcairo"))
			cairo = true;
		else if (strstr(line, " png "))
			png = true;
	}
	st = pclose(p);
	if (st != 0)
		return NULL;
	return cairo ? "pngcairo" : png ? "png" : NULL;
}

static unsigned sys_color(enum sys_id id)
{
	return id == SYS_KERNEL ? 0x4477aa : id == SYS_UEPOLL ? 0xee6677
							      : 0x228833;
}

static int chart(const char *dir, const char *term, const struct scenario *sc,
		 const struct row *rows, int nrows)
{
	char path[4096], cmd[4200];
	enum metric h = sc->headline;
	FILE *f;
	int st;

	snprintf(path, sizeof(path), "%s/%s.dat", dir, sc->name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	for (int i = 0; i < nrows; i++) {
		const struct row *r = &rows[i];

		if (r->sc != sc || isnan(r->med[h]))
			continue;
		fprintf(f, "\"%s %s\" %.9g %.9g %.9g %u\n", r->sys->name,
			r->c.variant, r->med[h], r->min[h], r->max[h],
			sys_color(r->sys->id));
	}
	fclose(f);

	snprintf(path, sizeof(path), "%s/%s.gp", dir, sc->name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f,
		"set terminal %s size 1100,600 noenhanced\n"
		"set output '%s.png'\n"
		"set title '%s: %s (median; bars: min-max over reps; "
		"%s is better)'\n"
		"set style fill solid 0.7 border -1\n"
		"set boxwidth 0.6\n"
		"set yrange [0:*]\n"
		"set xtics rotate by -30 nomirror\n"
		"set grid ytics\n"
		"set ylabel '%s'\n"
		"set bmargin 10\nset rmargin 22\n"
		"plot '%s.dat' using 0:2:5:xtic(1) with boxes "
		"lc rgb variable notitle, \\\n"
		"     '' using 0:2:3:4 with yerrorbars lc rgb 'black' pt 0 "
		"notitle\n",
		term, sc->name, sc->name, metric_info[h].name,
		metric_info[h].lower_better ? "lower" : "higher",
		metric_info[h].name, sc->name);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cd '%s' && gnuplot '%s.gp'", dir,
		 sc->name);
	st = system(cmd);
	if (st != 0) {
		fprintf(stderr, "uepoll-bench: gnuplot failed for %s\n",
			sc->name);
		return -1;
	}
	return 0;
}

/* mkdir -p */
static int mkdir_p(const char *dir)
{
	char path[4096];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof(path))
		return -1;
	memcpy(path, dir, n + 1);
	for (char *c = path + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = 0;
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			return -1;
		*c = '/';
	}
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

int report_dir(const char *dir, const struct machine *mc,
	       const struct scenario *const *scs, int nsc,
	       const struct row *rows, int nrows, bool quick,
	       const char *cmdline)
{
	char path[4096];
	const char *term;
	FILE *f;

	if (mkdir_p(dir) < 0) {
		fprintf(stderr, "uepoll-bench: mkdir %s: %s\n", dir,
			strerror(errno));
		return -1;
	}
	term = gnuplot_terminal();
	if (!term)
		fprintf(stderr, "uepoll-bench: gnuplot with a png terminal not "
				"found; report without charts\n");
	snprintf(path, sizeof(path), "%s/report.md", dir);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "uepoll-bench: %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	fprintf(f, "# uepoll-bench report (%s suite)\n\n", quick ? "quick"
								   : "full");
	fprintf(f, "- command: `%s`\n- date: %s\n- kernel: %s\n- cpu: %s\n"
		   "- nproc: %d\n- uepoll: %d.%d\n\n",
		cmdline, mc->date, mc->kernel, mc->cpu, mc->nproc,
		UEPOLL_VERSION_MAJOR, UEPOLL_VERSION_MINOR);
	for (int i = 0; i < nsc; i++) {
		report_table(f, scs[i], rows, nrows);
		if (term && chart(dir, term, scs[i], rows, nrows) == 0)
			fprintf(f, "![%s](%s.png)\n\n", scs[i]->name,
				scs[i]->name);
	}
	if (fclose(f))
		return -1;
	return 0;
}
