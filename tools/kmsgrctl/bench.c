// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl bench - message rate, bandwidth and latency of one session
 * against "kmsgrctl session listen [--echo]".
 *
 *   oneway    keep DEPTH messages in flight; a message is done at its SEND
 *             completion (lossy: handed to the transport; lossless: acked
 *             by the peer); latency = submit -> SEND completion.  Echoes,
 *             if the listener sends them, are released and not counted.
 *   pingpong  keep DEPTH round trips in flight (default 1); a message is
 *             done when its echo (same tid) arrives; latency = submit ->
 *             echo received.  Needs "session listen --echo".
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kmsgrctl.h"

#define BENCH_MSG_TYPE		0x7c02
#define BENCH_MAX_DEPTH		1024

enum {
	OPT_TRANSPORT = 256, OPT_SIZE, OPT_DEPTH, OPT_PATTERN, OPT_COUNT,
	OPT_TIME, OPT_WARMUP, OPT_LOSSLESS, OPT_TIMEOUT, OPT_HELP,
};

static void bench_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s bench [--transport tcp] [--size BYTES] [--depth N]\n"
		"                [--pattern oneway|pingpong] [--count N | --time S]\n"
		"                [--warmup N] [--lossless] [--timeout S] ADDR:PORT\n"
		"\n"
		"One session to a \"%s session listen\" at ADDR:PORT; every message\n"
		"carries a data segment of BYTES bytes (default 4096).\n"
		"  oneway   (default) DEPTH messages in flight (default 16); a message\n"
		"           is done at its send completion (lossy: handed to the\n"
		"           transport; --lossless: acknowledged by the peer); latency\n"
		"           is submit -> send completion.  Echoes from an --echo\n"
		"           listener are released, not counted: for bandwidth, run\n"
		"           the listener without --echo.\n"
		"  pingpong DEPTH round trips in flight (default 1) against a\n"
		"           \"session listen --echo\"; a message is done when its echo\n"
		"           arrives; latency is the round trip.\n"
		"Runs --count messages (default 10000) or for --time seconds, after\n"
		"--warmup messages that are not measured (default 0).  Prints\n"
		"messages/s, MB/s (10^6 bytes of data segments, one direction),\n"
		"latency percentiles p50/p99/p999 in microseconds and CPU time per\n"
		"message (kernel time of all CPUs, and this process's own).  --timeout: longest\n"
		"wait for any completion (default 10 s).\n",
		progname, progname);
}

/* CPU time so far, in clock ticks: the whole system's and this process's */
struct cpu_snap {
	unsigned long long sys_kernel;	/* /proc/stat: system + irq + softirq */
	unsigned long long self_user, self_sys;	/* /proc/self/stat */
	bool ok;
};

struct bench {
	struct ctl_conn conn;
	bool pingpong;
	__u32 size, depth;
	__u64 count, warmup, time_ns;

	__u64 *start;	/* submit time per slot */
	bool *busy;
	__u64 next_tid;
	__u32 in_flight;
	__u64 done, measured;
	__u64 t0;		/* end of warm-up */
	struct cpu_snap cpu0;	/* at t0 */
	bool stopping;

	__u64 *lat;		/* measured latencies, ns */
	size_t nlat, caplat;
};

static void cpu_snap(struct cpu_snap *c)
{
	unsigned long long v[7] = { 0 }, ut, st;
	char line[512], *p;
	FILE *f;
	int i;

	memset(c, 0, sizeof(*c));
	f = fopen("/proc/stat", "r");
	if (!f)
		return;
	/* cpu user nice system idle iowait irq softirq ... */
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
		   &v[2], &v[3], &v[4], &v[5], &v[6]) != 7) {
		fclose(f);
		return;
	}
	fclose(f);
	c->sys_kernel = v[2] + v[5] + v[6];
	f = fopen("/proc/self/stat", "r");
	if (!f)
		return;
	p = fgets(line, sizeof(line), f);
	fclose(f);
	/* after "(comm)": state is field 3, utime 14, stime 15 */
	p = p ? strrchr(line, ')') : NULL;
	if (!p)
		return;
	for (i = 3; i < 14 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu %llu", &ut, &st) != 2)
		return;
	c->self_user = ut;
	c->self_sys = st;
	c->ok = true;
}

/* Microseconds of CPU per message from @ticks clock ticks. */
static double cpu_us(unsigned long long ticks, __u64 msgs)
{
	long hz = sysconf(_SC_CLK_TCK);

	if (!msgs || hz <= 0)
		return 0;
	return (double)ticks * 1e6 / (double)hz / (double)msgs;
}

static int bench_record(struct bench *b, __u64 ns)
{
	__u64 *p;

	if (b->done++ < b->warmup) {
		if (b->done == b->warmup) {
			b->t0 = ctl_now_ns();
			cpu_snap(&b->cpu0);
		}
		return 0;
	}
	if (b->nlat == b->caplat) {
		b->caplat = b->caplat ? 2 * b->caplat : 65536;
		p = realloc(b->lat, b->caplat * sizeof(*p));
		if (!p) {
			error("out of memory for latency samples");
			return -ENOMEM;
		}
		b->lat = p;
	}
	b->lat[b->nlat++] = ns;
	b->measured++;
	return 0;
}

static int bench_submit(struct bench *b, __u32 slot)
{
	struct kmsgr_slice none = { 0 }, data = { 0, b->size };
	struct kmsgr_sqe sqe;

	/* tid: sequence in the high bits, slot in the low 16 */
	kmsgr_prep_send(&sqe, b->conn.id, BENCH_MSG_TYPE,
			++b->next_tid << 16 | slot, none, none, data, slot);
	sqe.version = 1;
	b->busy[slot] = true;
	b->in_flight++;
	b->start[slot] = ctl_now_ns();
	return ctl_queue(&sqe);
}

static bool bench_more(struct bench *b)
{
	if (b->stopping || ctl_stopped())
		return false;
	if (b->time_ns) {
		if (b->done < b->warmup)
			return true;
		if (ctl_now_ns() - b->t0 >= b->time_ns) {
			b->stopping = true;
			return false;
		}
		return true;
	}
	return b->next_tid < b->warmup + b->count;
}

/* A message (slot) is done: record it and refill the slot. */
static int bench_done(struct bench *b, __u32 slot, __u64 now)
{
	int ret;

	if (slot >= b->depth || !b->busy[slot]) {
		error("completion for an unknown message (slot %u)", slot);
		return -EBADMSG;
	}
	b->busy[slot] = false;
	b->in_flight--;
	ret = bench_record(b, now - b->start[slot]);
	if (!ret && bench_more(b))
		ret = bench_submit(b, slot);
	return ret;
}

static int bench_cqe(struct bench *b, const struct kmsgr_cqe *cqe)
{
	__u64 now = ctl_now_ns();

	switch (cqe->kind) {
	case KMSGR_CQE_SEND:
		if (cqe->res) {
			error("a send failed: %s", kmsgr_strerror(cqe->res));
			return cqe->res;
		}
		if (!b->pingpong)
			return bench_done(b, (__u32)cqe->user_data, now);
		return 0;
	case KMSGR_CQE_RECV:
		ctl_queue_release(cqe);
		if (!b->pingpong || cqe->session != b->conn.id)
			return 0;
		if (cqe->type != BENCH_MSG_TYPE || cqe->seg[2].len != b->size) {
			error("unexpected reply: type %u, %u data bytes",
			      cqe->type, cqe->seg[2].len);
			return -EBADMSG;
		}
		return bench_done(b, (__u32)(cqe->tid & 0xffff), now);
	case KMSGR_CQE_EVENT:
		if (cqe->session != b->conn.id)
			return 0;
		if (cqe->event == KMSGR_EV_CLOSED)
			b->conn.open = false;
		if (cqe->event == KMSGR_EV_CLOSED ||
		    cqe->event == KMSGR_EV_RESET ||
		    (cqe->event == KMSGR_EV_DOWN &&
		     !(b->conn.flags & KMSGR_SESS_F_LOSSLESS))) {
			ctl_report_event("bench", cqe);
			return cqe->res ? cqe->res : -ECONNABORTED;
		}
		return 0;
	case KMSGR_CQE_OP:
		if (cqe->res) {
			error("a submission was rejected: %s",
			      kmsgr_strerror(cqe->res));
			return cqe->res;
		}
		return 0;
	default:
		return 0;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static double pct(const struct bench *b, double p)
{
	size_t i;

	if (!b->nlat)
		return 0;
	i = (size_t)(p * (double)b->nlat);
	if (i >= b->nlat)
		i = b->nlat - 1;
	return (double)b->lat[i] / 1e3;
}

static void bench_report(struct bench *b, __u64 elapsed,
			 const struct cpu_snap *cpu1)
{
	bool cpu = b->cpu0.ok && cpu1->ok;
	double kern = cpu ? cpu_us(cpu1->sys_kernel - b->cpu0.sys_kernel,
				   b->measured) : 0;
	double self_u = cpu ? cpu_us(cpu1->self_user - b->cpu0.self_user,
				     b->measured) : 0;
	double self_s = cpu ? cpu_us(cpu1->self_sys - b->cpu0.self_sys,
				     b->measured) : 0;
	double secs = (double)elapsed / 1e9, sum = 0;
	double rate = secs > 0 ? (double)b->measured / secs : 0;
	double mbps = rate * b->size / 1e6;
	size_t i;

	qsort(b->lat, b->nlat, sizeof(*b->lat), cmp_u64);
	for (i = 0; i < b->nlat; i++)
		sum += (double)b->lat[i];
	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("peer", b->conn.addr_str);
		jw_string("transport", ctl_transport_name(b->conn.transport));
		jw_string("pattern", b->pingpong ? "pingpong" : "oneway");
		jw_u64("size", b->size);
		jw_u64("depth", b->depth);
		jw_bool("lossless", b->conn.flags & KMSGR_SESS_F_LOSSLESS);
		jw_u64("messages", b->measured);
		jw_u64("bytes", b->measured * b->size);
		jw_double("seconds", secs);
		jw_double("msgs_per_sec", rate);
		jw_double("mb_per_sec", mbps);
		jw_open("latency_us", '{');
		jw_double("min", pct(b, 0));
		jw_double("mean", b->nlat ? sum / (double)b->nlat / 1e3 : 0);
		jw_double("p50", pct(b, 0.50));
		jw_double("p99", pct(b, 0.99));
		jw_double("p999", pct(b, 0.999));
		jw_double("max", pct(b, 1.0));
		jw_close('}');
		if (cpu) {
			jw_open("cpu_us_per_msg", '{');
			jw_double("kernel_all", kern);
			jw_double("self_user", self_u);
			jw_double("self_sys", self_s);
			jw_close('}');
		}
		jw_close('}');
		return;
	}
	printf("bench %s %s size %u depth %u%s: %llu messages in %.3f s\n",
	       ctl_transport_name(b->conn.transport),
	       b->pingpong ? "pingpong" : "oneway", b->size, b->depth,
	       b->conn.flags & KMSGR_SESS_F_LOSSLESS ? " lossless" : "",
	       (unsigned long long)b->measured, secs);
	printf("  %.0f msg/s  %.2f MB/s\n", rate, mbps);
	printf("  latency us: p50 %.1f  p99 %.1f  p999 %.1f  (min %.1f, mean %.1f, max %.1f)\n",
	       pct(b, 0.50), pct(b, 0.99), pct(b, 0.999), pct(b, 0),
	       b->nlat ? sum / (double)b->nlat / 1e3 : 0, pct(b, 1.0));
	if (cpu)
		printf("  cpu us/msg: kernel %.1f (all CPUs: system+irq+softirq), this process user %.1f sys %.1f\n",
		       kern, self_u, self_s);
}

static int bench_run(struct bench *b)
{
	struct cpu_snap cpu1;
	struct kmsgr_cqe cqe;
	__u64 elapsed;
	__u32 slot;
	int ret = 0;

	memset(kmsgr_buf(ctl_k), 0x5a, b->size);
	b->t0 = ctl_now_ns();
	cpu_snap(&b->cpu0);
	for (slot = 0; slot < b->depth && bench_more(b); slot++) {
		ret = bench_submit(b, slot);
		if (ret)
			return ret;
	}
	while (b->in_flight) {
		ret = ctl_wait(&cqe, ctl_now_ns() + b->conn.timeout_ns);
		if (ret == -ETIME) {
			error("no completion for %.1f s (%u messages in flight)",
			      (double)b->conn.timeout_ns / 1e9, b->in_flight);
			return ret;
		}
		if (ret == -EINTR) {
			if (ctl_stopped() && !b->stopping)
				b->stopping = true;
			continue;
		}
		if (ret)
			return ret;
		do {
			ret = bench_cqe(b, &cqe);
			if (ret)
				return ret;
		} while (ctl_poll(&cqe));
	}
	elapsed = ctl_now_ns() - b->t0;
	cpu_snap(&cpu1);
	if (!b->measured) {
		error("nothing measured (interrupted during the warm-up?)");
		return -EINTR;
	}
	bench_report(b, elapsed, &cpu1);
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "transport", required_argument, NULL, OPT_TRANSPORT },
		{ "size", required_argument, NULL, OPT_SIZE },
		{ "depth", required_argument, NULL, OPT_DEPTH },
		{ "pattern", required_argument, NULL, OPT_PATTERN },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "time", required_argument, NULL, OPT_TIME },
		{ "warmup", required_argument, NULL, OPT_WARMUP },
		{ "lossless", no_argument, NULL, OPT_LOSSLESS },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct bench b = {
		.conn = {
			.transport = KMSGR_XPRT_TCP,
			.name = "client.admin",
			.timeout_ns = 10 * NSEC_PER_SEC,
		},
		.size = 4096,
	};
	__u64 v, pool;
	int c, ret;

	/* getopt skips argv[0]: start at the object name, "bench" */
	argc++;
	argv--;
	optind = 0;
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case OPT_TRANSPORT:
			if (ctl_parse_transport(optarg, &b.conn.transport)) {
				error("unknown transport \"%s\"", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_SIZE:
			if (ctl_parse_size(optarg, 1, 64ULL << 20, &v)) {
				error("bad --size \"%s\" (1 byte to 64M)", optarg);
				return EXIT_USAGE;
			}
			b.size = (__u32)v;
			break;
		case OPT_DEPTH:
			if (ctl_parse_size(optarg, 1, BENCH_MAX_DEPTH, &v)) {
				error("bad --depth \"%s\" (1 to %d)", optarg,
				      BENCH_MAX_DEPTH);
				return EXIT_USAGE;
			}
			b.depth = (__u32)v;
			break;
		case OPT_PATTERN:
			if (!strcmp(optarg, "pingpong")) {
				b.pingpong = true;
			} else if (strcmp(optarg, "oneway")) {
				error("bad --pattern \"%s\" (oneway or pingpong)",
				      optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_COUNT:
			if (ctl_parse_size(optarg, 1, 1ULL << 40, &b.count)) {
				error("bad --count \"%s\"", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_TIME:
			if (ctl_parse_secs(optarg, &b.time_ns)) {
				error("bad --time \"%s\" (seconds)", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_WARMUP:
			if (ctl_parse_size(optarg, 0, 1ULL << 40, &b.warmup)) {
				error("bad --warmup \"%s\"", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_LOSSLESS:
			b.conn.flags |= KMSGR_SESS_F_LOSSLESS;
			break;
		case OPT_TIMEOUT:
			if (ctl_parse_secs(optarg, &b.conn.timeout_ns)) {
				error("bad --timeout \"%s\" (seconds)", optarg);
				return EXIT_USAGE;
			}
			break;
		case OPT_HELP:
			bench_usage(stdout);
			return EXIT_SUCCESS;
		default:
			bench_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		error("bench wants exactly one ADDR:PORT");
		return EXIT_USAGE;
	}
	if (b.count && b.time_ns) {
		error("give --count or --time, not both");
		return EXIT_USAGE;
	}
	if (!b.count && !b.time_ns)
		b.count = 10000;
	if (!b.depth)
		b.depth = b.pingpong ? 1 : 16;
	b.conn.addr_str = argv[optind];
	if (ctl_conn_check(&b.conn))
		return EXIT_USAGE;

	b.start = calloc(b.depth, sizeof(*b.start));
	b.busy = calloc(b.depth, sizeof(*b.busy));
	if (!b.start || !b.busy) {
		error("out of memory");
		ret = -ENOMEM;
		goto out_free;
	}

	ctl_catch_signals();
	/* room for every echo in flight, twice */
	pool = 2ULL * b.depth * ((b.size + 4095ULL) & ~4095ULL) + (1 << 20);
	ret = ctl_setup(b.depth > 128 ? 2 * b.depth : 256, b.size, pool);
	if (ret)
		goto out_free;
	ret = ctl_conn_open(&b.conn);
	if (!ret) {
		ret = bench_run(&b);
		ctl_conn_close(&b.conn);
	}
	ctl_teardown();
out_free:
	free(b.start);
	free(b.busy);
	free(b.lat);
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}
