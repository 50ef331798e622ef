// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgrctl rados bench - the rados tool's benchmark on kmsgr sessions:
 * DEPTH requests in flight (osdc_start / osdc_reap), one tx slot each.
 *
 *   write  writes SIZE-byte objects kmsgr_bench_data_HOST_PID_object<N>
 *          for SECONDS; deletes them afterwards unless --no-cleanup, which
 *          leaves the object RUN_NAME ("objects size prefix" as text) for
 *          seq and rand
 *   seq    reads those objects in order, until all were read or SECONDS
 *   rand   reads random ones of them for SECONDS
 *
 * Every object starts with a 32-byte header naming it; the rest is a
 * pattern.  Reads check both (unless --no-verify) after copying the bytes
 * out of the receive pool, as librados hands them to rados bench.
 *
 * Copyright (C) 2026 The kmsgr authors
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include "osdc.h"
#include "rados.h"

#define RB_HEADER	32U

struct rb_slot {
	struct osdc_req rq;
	struct osdc_op op;
	char oid[160];
	__u64 index;
	__u64 start_ns;
	__u8 *buf;		/* reads: where the bytes land */
};

/* What a run counts; per second and in total. */
struct rb_stats {
	__u64 started, finished, bytes;
	double lat_sum, lat_sq, lat_min, lat_max, last_lat;
	/* ops finished in each whole second */
	__u64 *per_sec;
	unsigned int n_secs, cap_secs;
};

struct rb_cpu {
	struct rusage ru;
	unsigned long long busy;	/* /proc/stat, all CPUs, ticks */
};

static void rb_cpu_snap(struct rb_cpu *c)
{
	unsigned long long v[7] = { 0 };
	FILE *f;

	getrusage(RUSAGE_SELF, &c->ru);
	c->busy = 0;
	f = fopen("/proc/stat", "r");
	if (!f)
		return;
	/* cpu user nice system idle iowait irq softirq */
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
		   &v[2], &v[3], &v[4], &v[5], &v[6]) == 7)
		c->busy = v[0] + v[1] + v[2] + v[5] + v[6];
	fclose(f);
}

static double tv_us(const struct timeval *a, const struct timeval *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e6 +
	       (double)(b->tv_usec - a->tv_usec);
}

static void header_of(char *h, const char *prefix, __u64 index)
{
	size_t len = strlen(prefix);
	char tmp[RB_HEADER + 1];

	/* fixed width: the index and the prefix's tail (its pid) */
	snprintf(tmp, sizeof(tmp), "%015llu %-15.15s\n",
		 (unsigned long long)index, prefix + (len > 15 ? len - 15 : 0));
	memcpy(h, tmp, RB_HEADER);
}

static void fill_pattern(__u8 *p, __u64 len)
{
	__u64 i;

	for (i = 0; i < len; i++)
		p[i] = (__u8)(i * 7 + 3);
}

static void rb_oid(char *oid, size_t size, const char *prefix, __u64 index)
{
	snprintf(oid, size, "%s_object%llu", prefix, (unsigned long long)index);
}

/* The per-second table's line for second @sec. */
static void rb_tick(const struct rb_stats *st, const struct rb_stats *last,
		    unsigned int sec, unsigned int inflight, __u64 size)
{
	double cur = (double)(st->finished - last->finished) * (double)size /
		     1048576.0;
	double avg = sec ? (double)st->finished * (double)size / 1048576.0 /
			   sec : 0;
	char lat[32];

	if (opt.json)
		return;
	if (!(sec % 20))
		printf("  sec Cur ops   started  finished  avg MB/s  cur MB/s last lat(s)  avg lat(s)\n");
	if (st->finished == last->finished)
		snprintf(lat, sizeof(lat), "%s", "-");
	else
		snprintf(lat, sizeof(lat), "%.6f", st->last_lat);
	printf("%5u %7u %9llu %9llu %9.5g %9.5g %11s %11.6f\n", sec, inflight,
	       (unsigned long long)st->started,
	       (unsigned long long)st->finished, avg, sec ? cur : 0.0, lat,
	       st->finished ? st->lat_sum / (double)st->finished : 0.0);
	fflush(stdout);
}

static int rb_per_sec_add(struct rb_stats *st, __u64 ops)
{
	__u64 *p;

	if (st->n_secs == st->cap_secs) {
		p = realloc(st->per_sec, (st->cap_secs * 2 + 16) * sizeof(*p));
		if (!p)
			return -ENOMEM;
		st->per_sec = p;
		st->cap_secs = st->cap_secs * 2 + 16;
	}
	st->per_sec[st->n_secs++] = ops;
	return 0;
}

/* mean, sample standard deviation, max and min of the per-second ops */
static void rb_sec_stats(const struct rb_stats *st, double out[4])
{
	double sum = 0, sq = 0, v;
	unsigned int i;

	memset(out, 0, 4 * sizeof(*out));
	if (!st->n_secs)
		return;
	out[3] = (double)st->per_sec[0];
	for (i = 0; i < st->n_secs; i++) {
		v = (double)st->per_sec[i];
		sum += v;
		sq += v * v;
		if (v > out[2])
			out[2] = v;
		if (v < out[3])
			out[3] = v;
	}
	out[0] = sum / st->n_secs;
	if (st->n_secs > 1)
		out[1] = sqrt(fmax(0, (sq - sum * sum / st->n_secs) /
				   (st->n_secs - 1)));
}

static void rb_report(const struct rados_bench_opts *b,
		      const struct rb_stats *st, double secs,
		      const struct rb_cpu *c0, const struct rb_cpu *c1,
		      __u64 resends)
{
	double mb = 1048576.0 / (double)b->size, iops[4], lat_avg = 0,
	       lat_sd = 0, n = (double)st->finished, user, sys, all;
	long hz = sysconf(_SC_CLK_TCK);
	bool w = !strcmp(b->mode, "write");

	rb_sec_stats(st, iops);
	if (n) {
		lat_avg = st->lat_sum / n;
		if (n > 1)
			lat_sd = sqrt(fmax(0, (st->lat_sq - st->lat_sum *
					      st->lat_sum / n) / (n - 1)));
	}
	user = n ? tv_us(&c0->ru.ru_utime, &c1->ru.ru_utime) / n : 0;
	sys = n ? tv_us(&c0->ru.ru_stime, &c1->ru.ru_stime) / n : 0;
	all = n && hz > 0 ? (double)(c1->busy - c0->busy) * 1e6 / hz / n : 0;
	if (opt.json) {
		jw_open(NULL, '{');
		jw_string("mode", b->mode);
		jw_u64("size", b->size);
		jw_u64("concurrency", b->depth);
		jw_double("total_time_run", secs);
		jw_u64(w ? "total_writes_made" : "total_reads_made",
		       st->finished);
		jw_double("bandwidth_mb_sec", secs > 0 ? st->bytes /
			  1048576.0 / secs : 0);
		jw_double("average_iops", secs > 0 ? n / secs : 0);
		jw_double("stddev_iops", iops[1]);
		jw_double("max_iops", iops[2]);
		jw_double("min_iops", iops[3]);
		jw_double_g("average_latency_s", lat_avg);
		jw_double_g("stddev_latency_s", lat_sd);
		jw_double_g("max_latency_s", st->lat_max);
		jw_double_g("min_latency_s", st->lat_min);
		jw_open("cpu_us_per_op", '{');
		jw_double("self_user", user);
		jw_double("self_sys", sys);
		jw_double("all", all);
		jw_close('}');
		jw_u64("resends", resends);
		jw_close('}');
		return;
	}
	printf("Total time run:         %.4f\n", secs);
	printf("Total %s made:      %llu\n", w ? "writes" : "reads",
	       (unsigned long long)st->finished);
	printf("%s size:             %llu\n", w ? "Write" : "Read",
	       (unsigned long long)b->size);
	printf("Object size:            %llu\n", (unsigned long long)b->size);
	printf("Bandwidth (MB/sec):     %.4f\n",
	       secs > 0 ? st->bytes / 1048576.0 / secs : 0);
	if (w) {
		printf("Stddev Bandwidth:       %.4f\n", iops[1] / mb);
		printf("Max bandwidth (MB/sec): %.4f\n", iops[2] / mb);
		printf("Min bandwidth (MB/sec): %.4f\n", iops[3] / mb);
	}
	printf("Average IOPS:           %.0f\n", secs > 0 ? n / secs : 0);
	printf("Stddev IOPS:            %.4f\n", iops[1]);
	printf("Max IOPS:               %.0f\n", iops[2]);
	printf("Min IOPS:               %.0f\n", iops[3]);
	printf("Average Latency(s):     %.6f\n", lat_avg);
	if (w)
		printf("Stddev Latency(s):      %.6f\n", lat_sd);
	printf("Max latency(s):         %.6f\n", st->lat_max);
	printf("Min latency(s):         %.6f\n", st->lat_min);
	printf("CPU per op (us):        self user %.1f, self sys %.1f, all CPUs %.1f\n",
	       user, sys, all);
	/* not in rados' report: requests sent again on a new map */
	printf("Resends:                %llu\n", (unsigned long long)resends);
}

/* Read the metadata object: how many objects of which size and prefix. */
static int rb_read_metadata(struct osdc *o, const struct osdc_pool *pool,
			    const char *run_name, __u64 *objects, __u64 *size,
			    char *prefix, size_t prefix_size)
{
	struct osdc_op op = { .op = OSD_OP_READ, .length = 4096 };
	unsigned long long n, sz;
	char text[256], pfx[128];
	int ret;

	ret = osdc_exec(o, pool, run_name, &op, 1, false, NULL);
	if (ret == -ENOENT) {
		error("no %s in pool %s: run \"%s rados bench %s SECONDS write --no-cleanup\" first",
		      run_name, pool->name, progname, pool->name);
		return ret;
	}
	if (ret)
		return ret;
	snprintf(text, sizeof(text), "%.*s", (int)op.out_len,
		 op.out ? (char *)op.out : "");
	osdc_ops_free(&op, 1);
	if (sscanf(text, "%llu %llu %127s", &n, &sz, pfx) != 3 || !n || !sz ||
	    sz > OSDC_OP_MAX) {
		error("%s/%s: not a bench metadata object (\"%.40s\")",
		      pool->name, run_name, text);
		return -EBADMSG;
	}
	*objects = n;
	*size = sz;
	snprintf(prefix, prefix_size, "%s", pfx);
	return 0;
}

static int rb_write_metadata(struct osdc *o, const struct osdc_pool *pool,
			     const char *run_name, __u64 objects, __u64 size,
			     const char *prefix)
{
	struct osdc_op op = { .op = OSD_OP_WRITEFULL };
	char text[256];
	int ret;

	snprintf(text, sizeof(text), "%llu %llu %s\n",
		 (unsigned long long)objects, (unsigned long long)size,
		 prefix);
	op.length = strlen(text);
	op.in = text;
	ret = osdc_exec(o, pool, run_name, &op, 1, true, NULL);
	osdc_ops_free(&op, 1);
	return ret;
}

/* Delete objects 0 .. @objects - 1, @depth at a time. */
static int rb_cleanup(struct osdc *o, const struct osdc_pool *pool,
		      const char *prefix, struct rb_slot *slots,
		      unsigned int depth, __u64 objects)
{
	unsigned int i, inflight = 0;
	struct osdc_req *rq;
	struct rb_slot *s;
	__u64 next = 0;
	int ret = 0, err = 0;

	for (;;) {
		for (i = 0; i < depth && next < objects && !err &&
		     inflight < depth; i++) {
			s = &slots[i];
			if (s->rq.priv)
				continue;		/* busy */
			rb_oid(s->oid, sizeof(s->oid), prefix, next++);
			s->op = (struct osdc_op){ .op = OSD_OP_DELETE };
			s->rq = (struct osdc_req){
				.oid = s->oid, .ops = &s->op, .n = 1,
				.write = true, .slot = i, .priv = s,
			};
			ret = osdc_start(o, pool, &s->rq);
			if (ret) {
				s->rq.priv = NULL;
				err = ret;
				break;
			}
			inflight++;
		}
		if (!inflight)
			break;
		ret = osdc_reap(o, 0, &rq);
		if (ret)
			return ret;
		s = rq->priv;
		s->rq.priv = NULL;
		inflight--;
		if (rq->result && rq->result != -ENOENT && !err) {
			error("rm %s/%s: %s", pool->name, rq->oid,
			      osdc_strerror(rq->result));
			err = rq->result;
		}
	}
	return err;
}

/* Start slot @s on object @index. */
static int rb_start(struct osdc *o, const struct osdc_pool *pool,
		    const struct rados_bench_opts *b, const char *prefix,
		    struct rb_slot *s, unsigned int slot, __u64 index, bool w)
{
	rb_oid(s->oid, sizeof(s->oid), prefix, index);
	s->index = index;
	if (w) {
		__u8 *data = osdc_slot_data(o, slot);

		header_of((char *)data, prefix, index);
		s->op = (struct osdc_op){
			.op = OSD_OP_WRITEFULL, .length = b->size, .in = data,
		};
	} else {
		s->op = (struct osdc_op){
			.op = OSD_OP_READ, .length = b->size, .dst = s->buf,
		};
	}
	s->rq = (struct osdc_req){
		.oid = s->oid, .ops = &s->op, .n = 1, .write = w,
		.slot = slot, .priv = s,
	};
	s->start_ns = ctl_now_ns();
	return osdc_start(o, pool, &s->rq);
}

/* A finished read: the header names the object, the pattern follows. */
static int rb_verify(const struct rados_bench_opts *b, const char *prefix,
		     const struct rb_slot *s, const __u8 *pattern)
{
	char h[RB_HEADER];

	if (s->op.out_len != b->size) {
		error("read %s: %u bytes, want %llu", s->oid, s->op.out_len,
		      (unsigned long long)b->size);
		return -EBADMSG;
	}
	if (!b->verify)
		return 0;
	header_of(h, prefix, s->index);
	if (memcmp(s->buf, h, b->size < RB_HEADER ? b->size : RB_HEADER) ||
	    (b->size > RB_HEADER &&
	     memcmp(s->buf + RB_HEADER, pattern + RB_HEADER,
		    b->size - RB_HEADER))) {
		error("read %s: the bytes are not what bench wrote", s->oid);
		return -EILSEQ;
	}
	return 0;
}

int rados_bench(struct osdc *o, const struct osdc_pool *pool,
		const struct rados_bench_opts *b)
{
	bool w = !strcmp(b->mode, "write"), seq = !strcmp(b->mode, "seq");
	struct rb_stats st = { .lat_min = 0 }, last = { 0 };
	__u64 objects = 0, osize = 0, next = 0, t0, t1, end, tick, now;
	unsigned int i, inflight = 0, sec = 0;
	struct rb_slot *slots;
	struct rb_cpu c0, c1;
	struct osdc_req *rq;
	struct rb_slot *s;
	char prefix[128], host[64];
	__u8 *pattern = NULL;
	double lat;
	int ret = 0, err = 0;

	if (w) {
		if (gethostname(host, sizeof(host)))
			snprintf(host, sizeof(host), "%s", "localhost");
		host[sizeof(host) - 1] = '\0';
		snprintf(prefix, sizeof(prefix), "%s_%s_%d",
			 RADOS_BENCH_PREFIX, host, (int)getpid());
	} else {
		ret = rb_read_metadata(o, pool, b->run_name, &objects, &osize,
				       prefix, sizeof(prefix));
		if (ret)
			return ret;
		if (osize != b->size) {
			error("the bench objects are %llu bytes, not %llu (-b)",
			      (unsigned long long)osize,
			      (unsigned long long)b->size);
			return -EINVAL;
		}
	}
	slots = calloc(b->depth, sizeof(*slots));
	pattern = malloc(b->size);
	if (!slots || !pattern) {
		free(slots);
		free(pattern);
		return -ENOMEM;
	}
	fill_pattern(pattern, b->size);
	for (i = 0; i < b->depth; i++) {
		if (w) {
			memcpy(osdc_slot_data(o, i), pattern, b->size);
			continue;
		}
		slots[i].buf = malloc(b->size);
		if (!slots[i].buf) {
			ret = -ENOMEM;
			goto out;
		}
	}
	if (!opt.json) {
		printf("hints = 1\n");
		if (w)
			printf("Maintaining %u concurrent writes of %llu bytes to objects of size %llu for up to %llu seconds or 0 objects\nObject prefix: %s\n",
			       b->depth, (unsigned long long)b->size,
			       (unsigned long long)b->size,
			       (unsigned long long)(b->seconds_ns / NSEC_PER_SEC),
			       prefix);
	}

	rb_cpu_snap(&c0);
	t0 = ctl_now_ns();
	end = t0 + b->seconds_ns;
	tick = t0 + NSEC_PER_SEC;
	rb_tick(&st, &last, 0, 0, b->size);
	for (;;) {
		now = ctl_now_ns();
		for (i = 0; i < b->depth && !err && now < end; i++) {
			s = &slots[i];
			if (s->rq.priv || (seq && next >= objects))
				continue;
			ret = rb_start(o, pool, b, prefix, s, i,
				       w || seq ? next : (__u64)random() %
				       objects, w);
			if (ret) {
				s->rq.priv = NULL;
				err = ret;
				break;
			}
			next++;
			st.started++;
			inflight++;
		}
		if (!inflight)
			break;
		ret = osdc_reap(o, tick, &rq);
		now = ctl_now_ns();
		while (now >= tick) {
			sec++;
			rb_tick(&st, &last, sec, inflight, b->size);
			if (rb_per_sec_add(&st, st.finished - last.finished))
				err = err ? err : -ENOMEM;
			last.finished = st.finished;
			tick += NSEC_PER_SEC;
		}
		if (ret == -ETIME)
			continue;
		if (ret) {
			err = ret;
			break;
		}
		s = rq->priv;
		s->rq.priv = NULL;
		inflight--;
		if (rq->result) {
			error("%s %s/%s: %s", w ? "write" : "read", pool->name,
			      rq->oid, osdc_strerror(rq->result));
			err = err ? err : rq->result;
			continue;
		}
		if (!w) {
			ret = rb_verify(b, prefix, s, pattern);
			if (ret) {
				err = err ? err : ret;
				continue;
			}
		}
		lat = (double)(now - s->start_ns) / 1e9;
		st.finished++;
		st.bytes += b->size;
		st.last_lat = lat;
		st.lat_sum += lat;
		st.lat_sq += lat * lat;
		if (lat > st.lat_max)
			st.lat_max = lat;
		if (!st.lat_min || lat < st.lat_min)
			st.lat_min = lat;
	}
	t1 = ctl_now_ns();
	rb_cpu_snap(&c1);
	if (err == -EINTR || (err && inflight)) {
		/*
		 * a signal, or reaping failed: requests may still be out
		 * (osdc_fini() forgets them)
		 */
		ret = err;
		goto out;
	}
	rb_report(b, &st, (double)(t1 - t0) / 1e9, &c0, &c1, o->resends);
	ret = err;
	if (w && !ret && !b->cleanup)
		ret = rb_write_metadata(o, pool, b->run_name, next, b->size,
					prefix);
	if (w && b->cleanup && next) {
		if (!opt.json)
			printf("Cleaning up (deleting benchmark objects)\n");
		t0 = ctl_now_ns();
		err = rb_cleanup(o, pool, prefix, slots, b->depth, next);
		ret = ret ? ret : err;
		if (!opt.json)
			printf("Removed %llu objects\nClean up completed and total clean up time :%.4f\n",
			       (unsigned long long)next,
			       (double)(ctl_now_ns() - t0) / 1e9);
	}
out:
	for (i = 0; i < b->depth; i++)
		free(slots[i].buf);
	free(slots);
	free(pattern);
	free(st.per_sec);
	return ret;
}
