// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl bench - message rate, bandwidth and latency of sessions
 * against "kmsgrctl session listen [--echo]".
 *
 *   oneway    keep DEPTH messages in flight per session; a message is
 *             done at its SEND completion (lossy: handed to the transport;
 *             lossless: acked by the peer); latency = submit -> SEND
 *             completion.  Echoes, if the listener sends them, are
 *             released and not counted.
 *   pingpong  keep DEPTH round trips in flight per session (default 1); a
 *             message is done when its echo (same tid) arrives; latency =
 *             submit -> echo received.  Needs "session listen --echo".
 *
 * --sessions N connects N sessions to the same listener; --threads T
 * spreads them round-robin over T workers (session i on worker i % T),
 * each with its own kmsgr instance (rings, buffer area, receive pool)
 * that only it drives.  Worker 0 runs on the main thread, the others on
 * threads of their own.  The instances are set up and the sessions
 * connected before the threads start.  Each worker runs its sessions'
 * warm-up, waits for the others, then all measure together; the report
 * merges the latency samples of every session.
 *
 * --keyring FILE [--name client.ID] authenticates every session with
 * cephx (ctl_conn_open() loads the key), in crc mode or with --secure in
 * secure mode; --busy-poll USEC has each worker spin on its CQ for up to
 * USEC before it sleeps (kmsgr_set_busy_poll()).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kmsgrctl.h"

#define BENCH_MSG_TYPE		0x7c02
#define BENCH_MAX_DEPTH		1024
#define BENCH_MAX_SESSIONS	64
/* the module's default max_sq_entries; the backlog takes the rest */
#define BENCH_MAX_SQ		4096

enum {
	OPT_TRANSPORT = 256, OPT_SIZE, OPT_DEPTH, OPT_PATTERN, OPT_COUNT,
	OPT_TIME, OPT_WARMUP, OPT_LOSSLESS, OPT_TIMEOUT, OPT_SESSIONS,
	OPT_THREADS, OPT_SECURE, OPT_NAME, OPT_KEYRING, OPT_BUSY_POLL,
	OPT_HELP,
};

static void bench_usage(FILE *f)
{
	fprintf(f,
		"Usage: %s bench [--transport tcp|rdma] [--size BYTES] [--depth N]\n"
		"                [--pattern oneway|pingpong] [--count N | --time S]\n"
		"                [--warmup N] [--lossless] [--timeout S]\n"
		"                [--sessions N] [--threads T]\n"
		"                [--keyring FILE [--name client.ID] [--secure]]\n"
		"                [--busy-poll USEC] ADDR:PORT\n"
		"\n"
		"N sessions (default 1, at most %d) to a \"%s session listen\" at\n"
		"ADDR:PORT, spread round-robin over T threads (default 1, at most N),\n"
		"each thread with its own kmsgr instance.  Every message carries a\n"
		"data segment of BYTES bytes (default 4096).\n"
		"  oneway   (default) DEPTH messages in flight per session (default\n"
		"           16); a message is done at its send completion (lossy:\n"
		"           handed to the transport; --lossless: acknowledged by the\n"
		"           peer); latency is submit -> send completion.  Echoes from\n"
		"           an --echo listener are released, not counted: for\n"
		"           bandwidth, run the listener without --echo.\n"
		"  pingpong DEPTH round trips in flight per session (default 1)\n"
		"           against a \"session listen --echo\"; a message is done\n"
		"           when its echo arrives; latency is the round trip.\n"
		"Runs --count messages in all (default 10000, split evenly over the\n"
		"sessions) or for --time seconds, after --warmup messages per session\n"
		"that are not measured (default 0).  Prints messages/s, MB/s (10^6\n"
		"bytes of data segments, one direction) of all sessions together,\n"
		"latency percentiles p50/p99/p999 in microseconds over every\n"
		"session's messages and CPU time per message (kernel time of all\n"
		"CPUs, and this process's own).  --timeout: longest wait for any\n"
		"completion (default 10 s).\n"
		"--keyring: cephx as --name (default client.admin, key from FILE),\n"
		"in crc mode, or in secure mode with --secure (which needs cephx);\n"
		"without it, auth none in crc mode.  --busy-poll: each thread\n"
		"spins on its completion queue for up to USEC microseconds (0 to\n"
		"%u; default 0, off) before it sleeps.\n",
		progname, BENCH_MAX_SESSIONS, progname, KMSGR_BUSY_POLL_MAX_US);
}

/*
 * CPU time so far: the whole system's in clock ticks (/proc/stat has
 * nothing finer), this process's in microseconds (getrusage(): /proc/
 * self/stat's clock ticks would make a 0.5 s run's figure a multiple of
 * 10 us per message at 1000 messages)
 */
struct cpu_snap {
	unsigned long long sys_kernel;	/* /proc/stat: system + irq + softirq */
	unsigned long long self_user_us, self_sys_us;	/* getrusage() */
	bool ok;
};

/* The options, and what the workers share. */
struct bench {
	struct ctl_conn conn;	/* options of every session */
	bool pingpong;
	__u32 size, depth, nsess, nthreads;
	__u32 busy_poll_us;	/* kmsgr_set_busy_poll() of every worker */
	__u64 count, warmup, time_ns;

	struct bench_worker *w0;	/* the one on the main thread */
	unsigned int started;	/* workers running: w0 and its threads */
	pthread_mutex_t lock;	/* protects warm, go */
	pthread_cond_t cond;
	unsigned int warm;	/* workers done with their warm-up */
	bool go;		/* the measured phase began: t0, deadline set */
	int failed;		/* a worker failed: the others stop (atomic) */
	__u64 t0;		/* start of the measured phase */
	__u64 deadline;		/* --time: its end */
	struct cpu_snap cpu0;	/* at t0 */
};

struct bench_slot {
	__u64 start;		/* submit time */
	bool busy;
};

/* One session, driven by one worker. */
struct bench_sess {
	struct ctl_conn conn;
	char what[40];		/* for messages: "bench session 3 of 8" */
	char label[96];		/* conn.addr_str: "ADDR (session 3 of 8)" */
	__u64 share;		/* its part of --count */
	struct bench_slot *slot;	/* depth of them */
	__u64 next_tid;		/* messages submitted so far */
	__u64 limit;		/* ... at the end of this phase, at most */
	__u32 in_flight;
};

/* A worker: its instance and its sessions. */
struct bench_worker {
	struct bench *b;
	struct kmsgr *k;
	struct bench_sess *sess;
	unsigned int nsess;
	pthread_t thread;	/* not w0's: that is the main thread */

	/* SQEs that found the SQ full, in order: q[head..len) */
	struct kmsgr_sqe *q;
	size_t head, len, cap;

	/*
	 * CQEs of its sessions that ctl_conn_open() set aside while it
	 * connected the next ones (an early CLOSED, say): handed out
	 * before the ring's, early[early_next..nearly)
	 */
	struct kmsgr_cqe *early;
	size_t early_next, nearly;

	__u32 in_flight;	/* of all its sessions */
	bool measuring, stopping;
	__u64 end;		/* when its measured phase ended */
	__u64 *lat;		/* measured latencies, ns */
	size_t nlat, caplat;
	int ret;
};

/* error() from a worker: whole lines even when two workers fail at once */
#define bench_error(...)			\
	do {					\
		flockfile(stderr);		\
		error(__VA_ARGS__);		\
		funlockfile(stderr);		\
	} while (0)

static void cpu_snap(struct cpu_snap *c)
{
	unsigned long long v[7] = { 0 };
	struct rusage ru;
	FILE *f;

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
	/* every thread's, the workers' included */
	if (getrusage(RUSAGE_SELF, &ru))
		return;
	c->self_user_us = (unsigned long long)ru.ru_utime.tv_sec * 1000000ULL +
			  (unsigned long long)ru.ru_utime.tv_usec;
	c->self_sys_us = (unsigned long long)ru.ru_stime.tv_sec * 1000000ULL +
			 (unsigned long long)ru.ru_stime.tv_usec;
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

/* ---- a worker's instance: like ctl_queue(), ctl_wait(), ctl_poll() ---- */

/*
 * ctl.c drives the one instance ctl_k; the workers run at the same time,
 * each on its own instance, so they queue and wait here.  An SQE goes
 * into the SQ if it has room, else behind the others in the backlog,
 * which bench_wait() moves into the SQ before it sleeps.
 */
static int bench_queue(struct bench_worker *w, const struct kmsgr_sqe *src)
{
	struct kmsgr_sqe *sqe, *q;
	size_t cap;

	if (w->head == w->len) {
		w->head = 0;
		w->len = 0;
		sqe = kmsgr_get_sqe(w->k);
		if (sqe) {
			*sqe = *src;
			return 0;
		}
	}
	if (w->len == w->cap && w->head) {
		w->len -= w->head;
		memmove(w->q, w->q + w->head, w->len * sizeof(*w->q));
		w->head = 0;
	}
	if (w->len == w->cap) {
		cap = w->cap ? 2 * w->cap : 64;
		q = realloc(w->q, cap * sizeof(*q));
		if (!q) {
			bench_error("out of memory queueing a submission");
			return -ENOMEM;
		}
		w->q = q;
		w->cap = cap;
	}
	w->q[w->len++] = *src;
	return 0;
}

/* Submit the backlog as long as the kernel takes it (see ctl.c). */
static void bench_flush(struct bench_worker *w)
{
	struct kmsgr_sqe *sqe;

	while (w->head < w->len) {
		while (w->head < w->len && (sqe = kmsgr_get_sqe(w->k)))
			*sqe = w->q[w->head++];
		if (kmsgr_submit(w->k, 0, 0) <= 0)
			return;
	}
}

static int bench_poll_early(struct bench_worker *w, struct kmsgr_cqe *cqe)
{
	if (w->early_next == w->nearly)
		return 0;
	*cqe = w->early[w->early_next++];
	return 1;
}

/* Take over what ctl_conn_open() set aside on the worker's instance. */
static int bench_take_early(struct bench_worker *w)
{
	struct kmsgr_cqe cqe, *p;

	while (ctl_take_deferred(&cqe)) {
		p = realloc(w->early, (w->nearly + 1) * sizeof(*p));
		if (!p) {
			error("out of memory keeping a completion");
			return -ENOMEM;
		}
		w->early = p;
		w->early[w->nearly++] = cqe;
	}
	return 0;
}

/*
 * Next CQE within @timeout_ns: 0, -ETIME, -EINTR or an error (printed).
 * No clock read here: the library reads it only when it has to sleep.
 */
static int bench_wait(struct bench_worker *w, struct kmsgr_cqe *cqe,
		      __u64 timeout_ns)
{
	struct kmsgr_cqe *c;
	int ret;

	if (bench_poll_early(w, cqe))
		return 0;
	bench_flush(w);
	ret = kmsgr_wait_cqe(w->k, &c, timeout_ns);
	if (ret == -ETIME || ret == -EINTR)
		return ret;
	if (ret) {
		bench_error("waiting for completions failed: %s",
			    kmsgr_strerror(ret));
		return ret;
	}
	*cqe = *c;
	kmsgr_cqe_seen(w->k);
	return 0;
}

static int bench_poll(struct bench_worker *w, struct kmsgr_cqe *cqe)
{
	struct kmsgr_cqe *c;

	if (bench_poll_early(w, cqe))
		return 1;
	c = kmsgr_peek_cqe(w->k);
	if (!c)
		return 0;
	*cqe = *c;
	kmsgr_cqe_seen(w->k);
	return 1;
}

/* ---- the run ------------------------------------------------------------ */

static void bench_fail(struct bench *b)
{
	__atomic_store_n(&b->failed, 1, __ATOMIC_RELAXED);
}

static struct bench_sess *bench_find(struct bench_worker *w, __u32 id)
{
	unsigned int i;

	for (i = 0; i < w->nsess; i++)
		if (w->sess[i].conn.id == id)
			return &w->sess[i];
	return NULL;
}

static int bench_record(struct bench_worker *w, __u64 ns)
{
	__u64 *p;

	if (!w->measuring)
		return 0;
	if (w->nlat == w->caplat) {
		w->caplat = w->caplat ? 2 * w->caplat : 65536;
		p = realloc(w->lat, w->caplat * sizeof(*p));
		if (!p) {
			bench_error("out of memory for latency samples");
			return -ENOMEM;
		}
		w->lat = p;
	}
	w->lat[w->nlat++] = ns;
	return 0;
}

static int bench_submit(struct bench_worker *w, struct bench_sess *s,
			__u32 slot)
{
	struct kmsgr_slice none = { 0 }, data = { 0, w->b->size };
	struct kmsgr_sqe sqe;

	/*
	 * tid: sequence in the high bits, slot in the low 16; user_data:
	 * the session's index in the worker above the slot
	 */
	kmsgr_prep_send(&sqe, s->conn.id, BENCH_MSG_TYPE,
			++s->next_tid << 16 | slot, none, none, data,
			(__u64)(s - w->sess) << 16 | slot);
	sqe.version = 1;
	s->slot[slot].busy = true;
	s->slot[slot].start = ctl_now_ns();
	s->in_flight++;
	w->in_flight++;
	return bench_queue(w, &sqe);
}

static bool bench_more(struct bench_worker *w, const struct bench_sess *s)
{
	const struct bench *b = w->b;

	if (!w->stopping &&
	    (ctl_stopped() || __atomic_load_n(&b->failed, __ATOMIC_RELAXED) ||
	     (w->measuring && b->time_ns && ctl_now_ns() >= b->deadline)))
		w->stopping = true;
	return !w->stopping && s->next_tid < s->limit;
}

/* A message (slot) is done: record it and refill the slot. */
static int bench_done(struct bench_worker *w, struct bench_sess *s,
		      __u32 slot, __u64 now)
{
	int ret;

	if (slot >= w->b->depth || !s->slot[slot].busy) {
		bench_error("%s: completion for an unknown message (slot %u)",
			    s->what, slot);
		return -EBADMSG;
	}
	s->slot[slot].busy = false;
	s->in_flight--;
	w->in_flight--;
	ret = bench_record(w, now - s->slot[slot].start);
	if (!ret && bench_more(w, s))
		ret = bench_submit(w, s, slot);
	return ret;
}

static int bench_cqe(struct bench_worker *w, const struct kmsgr_cqe *cqe)
{
	const struct bench *b = w->b;
	struct kmsgr_sqe sqe;
	struct bench_sess *s;
	int ret;

	switch (cqe->kind) {
	case KMSGR_CQE_SEND:
		if ((cqe->user_data >> 16) >= w->nsess) {
			bench_error("completion for an unknown session");
			return -EBADMSG;
		}
		s = &w->sess[cqe->user_data >> 16];
		if (cqe->res) {
			bench_error("%s: a send failed: %s", s->what,
				    kmsgr_strerror(cqe->res));
			return cqe->res;
		}
		if (!b->pingpong)
			return bench_done(w, s, cqe->user_data & 0xffff,
					  ctl_now_ns());
		return 0;
	case KMSGR_CQE_RECV:
		kmsgr_prep_release(&sqe, cqe);
		ret = bench_queue(w, &sqe);
		s = bench_find(w, cqe->session);
		if (ret || !b->pingpong || !s)
			return ret;
		if (cqe->type != BENCH_MSG_TYPE || cqe->seg[2].len != b->size) {
			bench_error("%s: unexpected reply: type %u, %u data bytes",
				    s->what, cqe->type, cqe->seg[2].len);
			return -EBADMSG;
		}
		return bench_done(w, s, (__u32)(cqe->tid & 0xffff),
				  ctl_now_ns());
	case KMSGR_CQE_EVENT:
		s = bench_find(w, cqe->session);
		if (!s)
			return 0;
		if (cqe->event == KMSGR_EV_CLOSED)
			s->conn.open = false;
		if (cqe->event == KMSGR_EV_CLOSED ||
		    cqe->event == KMSGR_EV_RESET ||
		    (cqe->event == KMSGR_EV_DOWN &&
		     !(b->conn.flags & KMSGR_SESS_F_LOSSLESS))) {
			flockfile(stderr);
			ctl_report_event(s->what, cqe);
			funlockfile(stderr);
			return cqe->res ? cqe->res : -ECONNABORTED;
		}
		return 0;
	case KMSGR_CQE_OP:
		if (cqe->res) {
			bench_error("a submission was rejected: %s",
				    kmsgr_strerror(cqe->res));
			return cqe->res;
		}
		return 0;
	default:
		return 0;
	}
}

/* No completion within --timeout: name the sessions that wait. */
static void bench_stalled(const struct bench_worker *w)
{
	double secs = (double)w->b->conn.timeout_ns / 1e9;
	unsigned int i;

	for (i = 0; i < w->nsess; i++)
		if (w->sess[i].in_flight)
			bench_error("%s: no completion for %.1f s (%u messages in flight)",
				    w->sess[i].what, secs, w->sess[i].in_flight);
}

/*
 * One phase of a worker: the warm-up (@measure false: --warmup messages
 * per session, not recorded) or the measured run (each session's share
 * of --count, or until the deadline of --time).  Returns when no message
 * is in flight any more.
 */
static int bench_phase(struct bench_worker *w, bool measure)
{
	const struct bench *b = w->b;
	struct kmsgr_cqe cqe;
	struct bench_sess *s;
	unsigned int i;
	__u32 slot;
	int ret;

	w->measuring = measure;
	for (i = 0; i < w->nsess; i++) {
		s = &w->sess[i];
		if (!measure)
			s->limit = b->warmup;
		else if (b->time_ns)
			s->limit = ~0ULL;
		else
			s->limit = s->next_tid + s->share;
		for (slot = 0; slot < b->depth && bench_more(w, s); slot++) {
			ret = bench_submit(w, s, slot);
			if (ret)
				return ret;
		}
	}
	while (w->in_flight) {
		ret = bench_wait(w, &cqe, b->conn.timeout_ns);
		if (ret == -ETIME) {
			bench_stalled(w);
			return ret;
		}
		if (ret == -EINTR)
			continue;	/* bench_more() sees ctl_stopped() */
		if (ret)
			return ret;
		do {
			ret = bench_cqe(w, &cqe);
			if (ret)
				return ret;
		} while (bench_poll(w, &cqe));
	}
	return 0;
}

/*
 * A worker: warm up, wait until every worker is warm, measure.  Worker 0
 * runs on the main thread and starts the measured phase for all: t0, the
 * CPU times, the deadline.
 */
static void *bench_thread(void *arg)
{
	struct bench_worker *w = arg;
	struct bench *b = w->b;

	w->ret = bench_phase(w, false);
	if (w->ret)
		bench_fail(b);
	pthread_mutex_lock(&b->lock);
	b->warm++;
	if (w != b->w0) {
		pthread_cond_broadcast(&b->cond);
		while (!b->go)
			pthread_cond_wait(&b->cond, &b->lock);
	} else {
		while (b->warm < b->started)
			pthread_cond_wait(&b->cond, &b->lock);
		b->t0 = ctl_now_ns();
		cpu_snap(&b->cpu0);
		b->deadline = b->t0 + b->time_ns;
		b->go = true;
		pthread_cond_broadcast(&b->cond);
	}
	pthread_mutex_unlock(&b->lock);
	if (!w->ret)
		w->ret = bench_phase(w, true);
	w->end = ctl_now_ns();
	if (w->ret)
		bench_fail(b);
	return NULL;
}

/* ---- the report --------------------------------------------------------- */

static void bench_report(const struct bench *b, __u64 *lat, size_t n,
			 __u64 elapsed, const struct cpu_snap *cpu1)
{
	bool cpu = b->cpu0.ok && cpu1->ok;
	double kern = cpu ? cpu_us(cpu1->sys_kernel - b->cpu0.sys_kernel,
				   n) : 0;
	double self_u = cpu && n ? (double)(cpu1->self_user_us -
					    b->cpu0.self_user_us) / n : 0;
	double self_s = cpu && n ? (double)(cpu1->self_sys_us -
					    b->cpu0.self_sys_us) / n : 0;
	double secs = (double)elapsed / 1e9, sum = 0;
	double rate = secs > 0 ? (double)n / secs : 0;
	double mbps = rate * b->size / 1e6;
	size_t i;

	qsort(lat, n, sizeof(*lat), ctl_cmp_u64);
	for (i = 0; i < n; i++)
		sum += (double)lat[i];
	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("peer", b->conn.addr_str);
		jw_string("transport", ctl_transport_name(b->conn.transport));
		jw_string("pattern", b->pingpong ? "pingpong" : "oneway");
		jw_u64("size", b->size);
		jw_u64("depth", b->depth);
		jw_u64("sessions", b->nsess);
		jw_u64("threads", b->nthreads);
		jw_bool("lossless", b->conn.flags & KMSGR_SESS_F_LOSSLESS);
		jw_string("auth", ctl_conn_auth(&b->conn));
		jw_string("mode", ctl_conn_mode(&b->conn));
		jw_u64("busy_poll_us", b->busy_poll_us);
		jw_u64("messages", n);
		jw_u64("bytes", n * b->size);
		jw_double("seconds", secs);
		jw_double("msgs_per_sec", rate);
		jw_double("mb_per_sec", mbps);
		jw_open("latency_us", '{');
		jw_double("min", ctl_pct_us(lat, n, 0));
		jw_double("mean", n ? sum / (double)n / 1e3 : 0);
		jw_double("p50", ctl_pct_us(lat, n, 0.50));
		jw_double("p99", ctl_pct_us(lat, n, 0.99));
		jw_double("p999", ctl_pct_us(lat, n, 0.999));
		jw_double("max", ctl_pct_us(lat, n, 1.0));
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
	printf("bench %s %s size %u depth %u%s",
	       ctl_transport_name(b->conn.transport),
	       b->pingpong ? "pingpong" : "oneway", b->size, b->depth,
	       b->conn.flags & KMSGR_SESS_F_LOSSLESS ? " lossless" : "");
	if (b->nsess > 1)
		printf(", sessions %u, threads %u", b->nsess, b->nthreads);
	if (b->conn.keyring)
		printf(", auth %s, mode %s", ctl_conn_auth(&b->conn),
		       ctl_conn_mode(&b->conn));
	if (b->busy_poll_us)
		printf(", busy-poll %u us", b->busy_poll_us);
	printf(": %llu messages in %.3f s\n", (unsigned long long)n, secs);
	printf("  %.0f msg/s  %.2f MB/s\n", rate, mbps);
	printf("  latency us: p50 %.1f  p99 %.1f  p999 %.1f  (min %.1f, mean %.1f, max %.1f)\n",
	       ctl_pct_us(lat, n, 0.50), ctl_pct_us(lat, n, 0.99), ctl_pct_us(lat, n, 0.999),
	       ctl_pct_us(lat, n, 0), n ? sum / (double)n / 1e3 : 0,
	       ctl_pct_us(lat, n, 1.0));
	if (!cpu)
		return;
	printf("  cpu us/msg: kernel %.1f (all CPUs: system+irq+softirq), ",
	       kern);
	printf("this process user %.1f sys %.1f\n", self_u, self_s);
}

/* ---- setup, run, teardown ----------------------------------------------- */

/*
 * Worker @i gets sessions i, i + T, i + 2T, ...  Set up its instance with
 * ctl_setup() and connect its sessions with ctl_conn_open(), which work
 * on ctl_k: lend it the worker's instance meanwhile (the threads do not
 * run yet).
 */
static int bench_worker_start(struct bench *b, struct bench_worker *w,
			      unsigned int i)
{
	__u64 inflight, pool, sq;
	struct bench_sess *s;
	unsigned int j, nr;
	int ret, err;

	w->b = b;
	w->nsess = b->nsess / b->nthreads + (i < b->nsess % b->nthreads);
	w->sess = calloc(w->nsess, sizeof(*w->sess));
	if (!w->sess) {
		error("out of memory");
		return -ENOMEM;
	}
	for (j = 0; j < w->nsess; j++) {
		s = &w->sess[j];
		nr = j * b->nthreads + i;	/* from 0 */
		s->conn = b->conn;
		s->share = b->count / b->nsess + (nr < b->count % b->nsess);
		if (b->nsess == 1) {
			snprintf(s->what, sizeof(s->what), "bench");
		} else {
			snprintf(s->what, sizeof(s->what),
				 "bench session %u of %u", nr + 1, b->nsess);
			snprintf(s->label, sizeof(s->label),
				 "%s (session %u of %u)", b->conn.addr_str,
				 nr + 1, b->nsess);
			s->conn.addr_str = s->label;
		}
		s->slot = calloc(b->depth, sizeof(*s->slot));
		if (!s->slot) {
			error("out of memory");
			return -ENOMEM;
		}
	}

	inflight = (__u64)w->nsess * b->depth;
	/* room for every echo in flight, twice */
	pool = 2 * inflight * ((b->size + 4095ULL) & ~4095ULL) + (1 << 20);
	sq = inflight > 128 ? 2 * inflight : 256;
	if (sq > BENCH_MAX_SQ)
		sq = BENCH_MAX_SQ;
	ret = ctl_setup((__u32)sq, b->size, pool);
	if (ret)
		return ret;
	w->k = ctl_k;
	ret = kmsgr_set_busy_poll(w->k, b->busy_poll_us);
	if (ret) {
		error("cannot set busy-poll to %u us: %s", b->busy_poll_us,
		      kmsgr_strerror(ret));
		ctl_k = NULL;
		return ret;
	}
	memset(kmsgr_buf(w->k), 0x5a, b->size);
	for (j = 0; j < w->nsess && !ret; j++)
		ret = ctl_conn_open(&w->sess[j].conn);
	/* even after a failure: none may reach another worker's instance */
	err = bench_take_early(w);
	ctl_k = NULL;
	return ret ? ret : err;
}

/* Close the sessions and the instance; free what the worker holds. */
static void bench_worker_stop(struct bench_worker *w)
{
	unsigned int j;

	if (w->k) {
		ctl_k = w->k;
		for (j = 0; j < w->nsess; j++)
			ctl_conn_close(&w->sess[j].conn);
		ctl_teardown();
	}
	for (j = 0; j < w->nsess; j++)
		free(w->sess[j].slot);
	free(w->sess);
	free(w->q);
	free(w->early);
	free(w->lat);
}

/* Run worker 0 here and the others on threads of their own; report. */
static int bench_run(struct bench *b, struct bench_worker *w)
{
	struct cpu_snap cpu1;
	__u64 *lat, end = 0;
	unsigned int i;
	size_t n = 0;
	int ret = 0;

	b->w0 = w;
	for (b->started = 1; b->started < b->nthreads; b->started++) {
		ret = pthread_create(&w[b->started].thread, NULL,
				     bench_thread, &w[b->started]);
		if (ret) {
			error("cannot start a thread: %s", strerror(ret));
			bench_fail(b);
			break;
		}
	}
	bench_thread(w);
	for (i = 0; i < b->started; i++) {
		if (i)
			pthread_join(w[i].thread, NULL);
		if (w[i].ret && !ret)
			ret = w[i].ret;
		if (w[i].end > end)
			end = w[i].end;
		n += w[i].nlat;
	}
	cpu_snap(&cpu1);
	if (ret)
		return ret;
	if (!n) {
		error("nothing measured (interrupted during the warm-up?)");
		return -EINTR;
	}

	/* every session's samples together */
	lat = malloc(n * sizeof(*lat));
	if (!lat) {
		error("out of memory for latency samples");
		return -ENOMEM;
	}
	n = 0;
	for (i = 0; i < b->nthreads; i++) {
		if (!w[i].nlat)
			continue;
		memcpy(lat + n, w[i].lat, w[i].nlat * sizeof(*lat));
		n += w[i].nlat;
	}
	bench_report(b, lat, n, end - b->t0, &cpu1);
	free(lat);
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
		{ "sessions", required_argument, NULL, OPT_SESSIONS },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "secure", no_argument, NULL, OPT_SECURE },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "keyring", required_argument, NULL, OPT_KEYRING },
		{ "busy-poll", required_argument, NULL, OPT_BUSY_POLL },
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
		.nsess = 1,
		.nthreads = 1,
		.lock = PTHREAD_MUTEX_INITIALIZER,
		.cond = PTHREAD_COND_INITIALIZER,
	};
	struct bench_worker *w;
	unsigned int i;
	__u64 v;
	int c, ret = 0;

	if (argc < 1 || !strcmp(argv[0], "help")) {
		bench_usage(argc < 1 ? stderr : stdout);
		return argc < 1 ? EXIT_USAGE : EXIT_SUCCESS;
	}

	/* getopt skips argv[0]: start at the object name, "bench" */
	argc++;
	argv--;
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
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
		case OPT_SESSIONS:
			if (ctl_parse_size(optarg, 1, BENCH_MAX_SESSIONS, &v)) {
				error("bad --sessions \"%s\" (1 to %d)", optarg,
				      BENCH_MAX_SESSIONS);
				return EXIT_USAGE;
			}
			b.nsess = (__u32)v;
			break;
		case OPT_THREADS:
			if (ctl_parse_size(optarg, 1, BENCH_MAX_SESSIONS, &v)) {
				error("bad --threads \"%s\" (1 to --sessions)",
				      optarg);
				return EXIT_USAGE;
			}
			b.nthreads = (__u32)v;
			break;
		case OPT_SECURE:
			b.conn.flags |= KMSGR_SESS_F_SECURE;
			break;
		case OPT_NAME:
			b.conn.name = optarg;
			break;
		case OPT_KEYRING:
			b.conn.keyring = optarg;
			break;
		case OPT_BUSY_POLL:
			if (ctl_parse_busy_poll(optarg, &b.busy_poll_us))
				return EXIT_USAGE;
			break;
		case OPT_HELP:
		case 'h':
			bench_usage(stdout);
			return EXIT_SUCCESS;
		default:
			ctl_bad_option("bench", argv);
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
	if (b.nthreads > b.nsess) {
		error("bad --threads %u (1 to --sessions, %u)", b.nthreads,
		      b.nsess);
		return EXIT_USAGE;
	}
	if (!b.count && !b.time_ns)
		b.count = 10000;
	if (b.count && b.count < b.nsess) {
		error("bad --count %llu (at least one message per session, %u)",
		      (unsigned long long)b.count, b.nsess);
		return EXIT_USAGE;
	}
	if (!b.depth)
		b.depth = b.pingpong ? 1 : 16;
	b.conn.addr_str = argv[optind];
	if (ctl_conn_check(&b.conn))
		return EXIT_USAGE;
	if ((b.conn.flags & KMSGR_SESS_F_SECURE) &&
	    b.size > KMSGR_SECURE_MSG_MAX) {
		error("--size %u: a secure session sends messages of at most %u bytes",
		      b.size, KMSGR_SECURE_MSG_MAX);
		return EXIT_USAGE;
	}

	w = calloc(b.nthreads, sizeof(*w));
	if (!w) {
		error("out of memory");
		return EXIT_FAILURE;
	}
	ctl_catch_signals();
	for (i = 0; i < b.nthreads && !ret; i++)
		ret = bench_worker_start(&b, &w[i], i);
	if (!ret)
		ret = bench_run(&b, w);
	for (i = 0; i < b.nthreads; i++)
		bench_worker_stop(&w[i]);
	free(w);
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}
