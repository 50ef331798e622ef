// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr_pair_stream - message streams over rdma to an echo listener on
 * another host (rdma_pair.sh runs it on vm0, against kmsgrctl session
 * listen --transport rdma --echo on vm1).
 *
 *   kmsgr_pair_stream stream [-l [-r]] [-k KEYRING [-s]] [-n COUNT]
 *                     [-t SECS] ADDR:PORT
 *
 *	One session (lossless with -l; cephx as client.admin with the key
 *	from KEYRING with -k; secure mode with -s, else crc) and a stream of
 *	COUNT messages (default $KMSGR_PAIR_MSGS, else 10^4): segment sizes
 *	log-uniform from 0 B to 4 MiB, every combination of front, middle
 *	and data in turn.  The receiver of the stream is the same session:
 *	the echoes must come back once each, in order, with the type,
 *	version, lengths and content hashes that were sent, within SECS
 *	(default 600).  No DOWN on the way (with -r, lossless only: DOWNs
 *	are counted and allowed, the session must come back and lose
 *	nothing).  A lossless session must have
 *	pulled echoes with RDMA READ (pulled_bytes grew).  After CLOSE no
 *	buffer stays mapped (pinned_bytes 0).
 *
 *   kmsgr_pair_stream kill [-t SECS] SENTINEL LOSSLESS LOSSY
 *
 *	The peer host killed: a lossless session to LOSSLESS and a lossy one
 *	to LOSSY (echo listeners, ADDR:PORT; dialled again until they answer,
 *	up to 120 s: the peer may still be starting them), each with a
 *	stream under way (echoes verified as above), then one message to
 *	SENTINEL, after which the peer resets itself.  Within SECS (default
 *	60) of that message the lossless session must report DOWN and the
 *	lossy one CLOSED, each with a reason; the echoes that came were
 *	right; CLOSE works on both; every SEND queued gets its completion;
 *	after closing the instance no buffer stays mapped.
 *
 * Prints what it did and one last line, "PASS: ..." or "FAIL: ...".
 * Exit status: 0 on success, 1 on failure, 2 on a usage error.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kmsgr_ring_util.h"

#define TX_AREA		(8ULL << 20)	/* >= the largest segment, 4 MiB */
#define RX_POOL		(64ULL << 20)	/* > 2 x the largest message */
#define SQ_ENTRIES	256
#define WINDOW		64		/* SENDs in flight per stream */
#define DIAL_MS		120000		/* the peer may still be starting */
#define CLOSE_MS	20000
#define KEY_ENTITY	"client.admin"	/* of -k KEYRING */
#define KEY_ID		"admin"
#define SENTINEL_UD	0x5e471e1ULL	/* user_data of the sentinel SEND */
#define KILL_MSGS	200000		/* more than can go before the kill */
#define KILL_ECHOES	20		/* echoes per stream before the kill */
/*
 * Secure mode sends messages of at most KMSGR_SECURE_MSG_MAX bytes in all
 * (the session's tx scratch holds one sealed tail); a larger one fails
 * with EMSGSIZE.
 */
#define SECURE_MSG_MAX	KMSGR_SECURE_MSG_MAX

static int failures;

static void fail(const char *fmt, ...)
{
	va_list ap;

	failures++;
	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static void print_usage(FILE *f)
{
	fprintf(f,
		"usage: kmsgr_pair_stream stream [-l [-r]] [-k KEYRING [-s]] [-n COUNT] [-t SECS] ADDR:PORT\n"
		"       kmsgr_pair_stream kill [-t SECS] SENTINEL LOSSLESS LOSSY\n");
}

static double secs_since(uint64_t t0)
{
	return (double)(kt_now_ms() - t0) / 1000.0;
}

/* An instance over rdma in @lp; 0 or -1 (said why). */
static int open_inst(struct kt_inst *ti, struct kt_loop *lp)
{
	struct kmsgr_info info;

	if (kt_inst_open(ti, "vm0", SQ_ENTRIES, TX_AREA, RX_POOL, 0x9a17))
		return -1;
	if (kmsgr_info(ti->k, &info) || !(info.features & KMSGR_FEAT_RDMA)) {
		printf("kmsgr_rdma.ko is not loaded\n");
		kt_inst_close(ti);
		return -1;
	}
	ti->transport = KMSGR_XPRT_RDMA;
	kt_loop_init(lp);
	kt_loop_add(lp, ti);
	return 0;
}

/*
 * CONNECT to @addr and wait for UP.  A session that is CLOSED or DOWN
 * before it was up (nobody listening yet; a lossless one would redial
 * with a backoff of up to 15 s) is closed and dialled again a second
 * later, until @ms passed.  Return: 0 (*@id: the session), or -1.
 */
static int dial_up(struct kt_loop *lp, struct kt_inst *ti, const char *addr,
		   uint32_t flags, const uint8_t *key, uint64_t user_data,
		   int ms, uint32_t *id)
{
	uint64_t end = kt_now_ms() + (uint64_t)ms, t0 = kt_now_ms();
	const struct kt_event *e;
	struct kmsgr_addr a;
	unsigned int mark, tries = 0;
	uint64_t retry;

	if (kmsgr_addr_parse(addr, &a)) {
		printf("bad address %s\n", addr);
		return -1;
	}
	for (;;) {
		mark = lp->nr_ev;
		tries++;
		if (kt_connect_as(ti, &a, flags, KT_PEER_ANY, user_data,
				  key ? KEY_ID : "kmsgr-selftest", key,
				  id))
			return -1;
		for (;;) {
			if (kt_find_event(lp, ti, *id, KMSGR_EV_UP, mark)) {
				printf("session %u to %s up in %.1f s (attempt %u)\n",
				       *id, addr, secs_since(t0), tries);
				return 0;
			}
			e = kt_find_event(lp, ti, *id, KMSGR_EV_CLOSED, mark);
			if (!e)
				e = kt_find_event(lp, ti, *id, KMSGR_EV_DOWN,
						  mark);
			if (e || kt_now_ms() >= end)
				break;
			if (kt_loop_run_once(lp, 50))
				return -1;
		}
		if (!e) {
			printf("session %u to %s not up after %.1f s (%u attempts)\n",
			       *id, addr, secs_since(t0), tries);
			kmsgr_close_id(ti->k, *id);
			return -1;
		}
		kmsgr_close_id(ti->k, *id);
		if (kt_now_ms() + 1000 >= end) {
			printf("session to %s %s: %s (%s), %u attempts in %.1f s\n",
			       addr, kmsgr_event_str(e->event),
			       kmsgr_reason_str(e->reason),
			       strerror(-e->res), tries, secs_since(t0));
			return -1;
		}
		retry = kt_now_ms() + 1000;
		while (kt_now_ms() < retry)
			if (kt_loop_run_once(lp, 50))
				return -1;
	}
}

/*
 * Run @lp until @st finished or @ms passed, saying how far it got every
 * 30 s and at each session event.
 */
static int run_stream(struct kt_loop *lp, struct kt_stream *st, int ms)
{
	uint64_t t0 = kt_now_ms(), end = t0 + (uint64_t)ms, next = t0 + 30000;
	unsigned int nr_ev = lp->nr_ev;
	int ret;

	while (!kt_stream_finished(st)) {
		if (kt_now_ms() >= end)
			return -ETIME;
		if (kt_now_ms() >= next || lp->nr_ev != nr_ev) {
			printf("... %.1f s: %u of %u echoes, %u sends completed%s\n",
			       secs_since(t0), st->received, st->total,
			       st->completed,
			       lp->nr_ev != nr_ev ? " (session event)" : "");
			fflush(stdout);
			if (kt_now_ms() >= next)
				next += 30000;
			nr_ev = lp->nr_ev;
		}
		ret = kt_loop_run_once(lp, 50);
		if (ret)
			return ret;
	}
	return 0;
}

/* Wait until pinned_bytes is 0 (the instances are closed). */
static long long pinned_gone(int ms)
{
	uint64_t end = kt_now_ms() + (uint64_t)ms;
	long long pinned;

	for (;;) {
		pinned = kt_rdma_counter("pinned_bytes");
		if (!pinned || kt_now_ms() >= end)
			return pinned;
		usleep(50000);
	}
}

/* the first DOWN, CLOSED or RESET of @id since @from, or NULL */
static const struct kt_event *gone_event(const struct kt_loop *lp,
					 const struct kt_inst *ti, uint32_t id,
					 unsigned int from)
{
	static const uint8_t evs[] = {
		KMSGR_EV_DOWN, KMSGR_EV_CLOSED, KMSGR_EV_RESET,
	};
	const struct kt_event *e, *first = NULL;
	unsigned int i;

	for (i = 0; i < sizeof(evs); i++) {
		e = kt_find_event(lp, ti, id, evs[i], from);
		if (e && (!first || e < first))
			first = e;
	}
	return first;
}

/* ---- stream --------------------------------------------------------------- */

/*
 * Scale the segments of @st's messages above @max bytes in all down to
 * fit (each keeps at least a byte: the front/middle/data combination
 * stays); returns how many were.
 */
static unsigned int cap_messages(struct kt_stream *st, uint32_t max)
{
	const uint8_t *buf = st->src->buf;
	unsigned int i, s, n = 0;
	struct kt_msg *m;
	uint64_t total;

	for (i = 0; i < st->total; i++) {
		m = &st->msgs[i];
		total = (uint64_t)m->len[0] + m->len[1] + m->len[2];
		if (total <= max)
			continue;
		n++;
		for (s = 0; s < KT_NSEG; s++) {
			if (!m->len[s])
				continue;
			m->len[s] = (uint32_t)((uint64_t)m->len[s] * max / total);
			if (!m->len[s])
				m->len[s] = 1;
			m->hash[s] = kt_hash(buf + m->off[s], m->len[s]);
		}
	}
	return n;
}

static int do_stream(int argc, char **argv)
{
	long count = kt_env_long("KMSGR_PAIR_MSGS", 10000), secs = 600;
	struct kt_plan plan = {
		/* 0 B to 4 MiB; above 64 KiB for 1 in 32 segments */
		.max_log2 = 22,
		.small_log2 = 16,
		.big_one_in = kt_env_long("KMSGR_PAIR_BIG_ONE_IN", 32),
	};
	long long offered, pulled, pinned;
	const char *keyring = NULL, *mode;
	const struct kt_event *e;
	uint32_t flags = 0, id;
	bool redial = false;
	struct kt_stream st;
	unsigned int up, downs;
	struct kt_inst ti;
	struct kt_loop lp;
	uint8_t key[16];
	uint64_t t0, vol, ms;
	double mbs;
	int c, ret;

	while ((c = getopt(argc, argv, "lrsk:n:t:")) != -1) {
		switch (c) {
		case 'l':
			flags |= KMSGR_SESS_F_LOSSLESS;
			break;
		case 'r':
			redial = true;
			break;
		case 's':
			flags |= KMSGR_SESS_F_SECURE;
			break;
		case 'k':
			keyring = optarg;
			break;
		case 'n':
			count = strtol(optarg, NULL, 0);
			break;
		case 't':
			secs = strtol(optarg, NULL, 0);
			break;
		default:
			print_usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1 || count < 1 || secs < 1 ||
	    ((flags & KMSGR_SESS_F_SECURE) && !keyring) ||
	    (redial && !(flags & KMSGR_SESS_F_LOSSLESS))) {
		print_usage(stderr);
		return 2;
	}
	mode = flags & KMSGR_SESS_F_SECURE ? "secure" : "crc";
	if (keyring) {
		ret = kmsgr_keyring_load(keyring, KEY_ENTITY, key);
		if (ret) {
			fail("cannot read the key of %s from %s: %s", KEY_ENTITY,
			     keyring, kmsgr_strerror(ret));
			return 1;
		}
	}
	if (open_inst(&ti, &lp)) {
		fail("no rdma instance");
		return 1;
	}
	if (dial_up(&lp, &ti, argv[optind], flags, keyring ? key : NULL,
		    0x5a17, DIAL_MS, &id)) {
		fail("no %s %s session to %s", flags & KMSGR_SESS_F_LOSSLESS ?
		     "lossless" : "lossy", mode, argv[optind]);
		kt_inst_close(&ti);
		return 1;
	}
	up = lp.nr_ev;
	plan.count = (unsigned int)count;
	plan.seed = 0x5eed0200 + flags;
	if (kt_stream_init(&st, &ti, id, &ti, id, &plan, WINDOW)) {
		fail("no memory for %ld messages", count);
		kt_inst_close(&ti);
		return 1;
	}
	if (flags & KMSGR_SESS_F_SECURE)
		printf("secure mode: %u messages above %u bytes scaled down to fit\n",
		       cap_messages(&st, SECURE_MSG_MAX), SECURE_MSG_MAX);
	vol = kt_stream_volume(&st);
	printf("%ld messages, %llu bytes of payload, segments 0 B to 4 MiB, to %s and back\n",
	       count, (unsigned long long)vol, argv[optind]);
	fflush(stdout);
	kt_loop_add_stream(&lp, &st);
	offered = kt_rdma_counter("offered_bytes");
	pulled = kt_rdma_counter("pulled_bytes");
	t0 = kt_now_ms();
	ret = run_stream(&lp, &st, (int)secs * 1000);
	ms = kt_now_ms() - t0;
	offered = kt_rdma_counter("offered_bytes") - offered;
	pulled = kt_rdma_counter("pulled_bytes") - pulled;
	mbs = ms ? (double)st.bytes / 1e3 / (double)ms : 0;
	printf("%u of %u echoes (%llu bytes) in %.1f s: %.2f MB/s each way, %.0f messages/s\n",
	       st.received, st.total, (unsigned long long)st.bytes,
	       (double)ms / 1000.0, mbs,
	       ms ? st.received * 1000.0 / (double)ms : 0.0);
	printf("vm0 pulled %lld bytes of echoes with RDMA READ; offered %lld bytes of its messages\n",
	       pulled, offered);
	if (ret)
		fail("stream: %s after %.1f s (%u of %u echoes, %u sends completed)",
		     kmsgr_strerror(ret), (double)ms / 1000.0, st.received,
		     st.total, st.completed);
	if (st.failed)
		fail("stream: %s", st.why);
	if (lp.stray)
		fail("%u unexpected completions, the first: %s", lp.stray,
		     lp.stray_why);
	if (ti.nr_op_errors)
		fail("%u rejected submissions", ti.nr_op_errors);
	e = gone_event(&lp, &ti, id, up);
	for (downs = 0; e && up < lp.nr_ev; up++)
		downs += lp.ev[up].event == KMSGR_EV_DOWN &&
			 lp.ev[up].session == id;
	if (e && redial && e->event == KMSGR_EV_DOWN) {
		/* -r: allowed, the stream above proved nothing was lost */
		printf("the session went DOWN %u times and came back (-r), the first: %s (res %d)\n",
		       downs, kmsgr_reason_str(e->reason), e->res);
	} else if (e) {
		fail("session %u went %s during the stream (%u DOWN in all), the first: %s (res %d)",
		     id, kmsgr_event_str(e->event), downs,
		     kmsgr_reason_str(e->reason), e->res);
	}
	if ((flags & KMSGR_SESS_F_LOSSLESS) && pulled <= 0)
		fail("lossless, but no echo was pulled with RDMA READ");

	t0 = kt_now_ms();
	ret = kmsgr_close_id(ti.k, id);
	if (ret)
		fail("CLOSE of session %u: %s", id, kmsgr_strerror(ret));
	kt_stream_free(&st);
	kt_inst_close(&ti);
	pinned = pinned_gone(10000);
	if (pinned)
		fail("pinned_bytes %lld after closing the instance", pinned);
	else
		printf("closed: no buffer mapped %.1f s later\n",
		       secs_since(t0));
	if (failures)
		return 1;
	printf("PASS: %s %s: %ld messages echoed once, in order, hashes equal, in %.1f s (%.2f MB/s each way)\n",
	       flags & KMSGR_SESS_F_LOSSLESS ? "lossless" : "lossy", mode,
	       count, (double)ms / 1000.0, mbs);
	return 0;
}

/* ---- kill ----------------------------------------------------------------- */

struct kill {
	struct kt_stream *st[2];	/* lossless, lossy */
	bool killing;			/* the sentinel is on its way */
	/* the first DOWN, CLOSED or RESET before that: on a healthy link */
	struct kmsgr_cqe early[2];
	unsigned int nr_early[2];
	unsigned int failed_sends[2];	/* SEND completions with -errno */
	int first_err[2];
	unsigned int sentinel_done;	/* its SEND completed */
	int sentinel_res;
	uint64_t t_sentinel;
};

/*
 * SENDs that fail are counted here, not as stream failures, and stop
 * their stream's queueing, as does any event once the sentinel is on its
 * way.  Events before that are kept for the report.
 */
static int kill_hook(struct kt_loop *lp, struct kt_inst *ti,
		     const struct kmsgr_cqe *cqe)
{
	struct kill *k = lp->priv;
	int i;

	(void)ti;
	if (cqe->kind == KMSGR_CQE_SEND && cqe->user_data == SENTINEL_UD) {
		k->sentinel_done++;
		k->sentinel_res = cqe->res;
		k->t_sentinel = kt_now_ms();
		return 1;
	}
	for (i = 0; i < 2; i++) {
		if (cqe->session != k->st[i]->src_sess)
			continue;
		if (cqe->kind == KMSGR_CQE_EVENT &&
		    (cqe->event == KMSGR_EV_DOWN ||
		     cqe->event == KMSGR_EV_CLOSED ||
		     cqe->event == KMSGR_EV_RESET)) {
			if (k->killing)
				k->st[i]->window = 0;
			else if (!k->nr_early[i]++)
				k->early[i] = *cqe;
		}
		if (cqe->kind == KMSGR_CQE_SEND && cqe->res) {
			if (!k->failed_sends[i]++)
				k->first_err[i] = cqe->res;
			k->st[i]->window = 0;
			return 1;
		}
	}
	return 0;
}

static bool echoes_under_way(struct kt_loop *lp)
{
	struct kill *k = lp->priv;

	return k->st[0]->failed || k->st[1]->failed ||
	       k->st[0]->window == 0 || k->st[1]->window == 0 ||
	       (k->st[0]->received >= KILL_ECHOES &&
		k->st[1]->received >= KILL_ECHOES);
}

static bool sentinel_sent(struct kt_loop *lp)
{
	return ((struct kill *)lp->priv)->sentinel_done;
}

static bool all_sends_done(struct kt_loop *lp)
{
	struct kill *k = lp->priv;
	int i;

	for (i = 0; i < 2; i++)
		if (k->st[i]->completed + k->failed_sends[i] <
		    k->st[i]->queued)
			return false;
	return true;
}

static int do_kill(int argc, char **argv)
{
	static const char *const what[2] = { "lossless", "lossy" };
	const uint8_t want[2] = { KMSGR_EV_DOWN, KMSGR_EV_CLOSED };
	const uint32_t sflags[2] = { KMSGR_SESS_F_LOSSLESS, 0 };
	const struct kt_event *gone[2] = { NULL, NULL }, *e;
	struct kmsgr_slice none = { 0 }, data = { 0, 64 };
	struct kt_plan plan = {
		/*
		 * up to 16 KiB, below pull_min: no RDMA READ in flight, since
		 * READ streams across this link stall now and then (see
		 * rdma_pair.sh) and the step is about the peer's death
		 */
		.count = KILL_MSGS,
		.max_log2 = 14,
		.small_log2 = 14,
		.big_one_in = 1,
	};
	uint64_t t_gone[2] = { 0, 0 };
	uint32_t id[2], sentinel;
	bool have_sentinel = false;
	struct kt_stream st[2];
	struct kmsgr_sqe *sqe;
	struct kill k = { 0 };
	struct kt_inst ti;
	struct kt_loop lp;
	unsigned int mark, i;
	long long pinned;
	long secs = 60;
	uint64_t end;
	int c, ret;

	while ((c = getopt(argc, argv, "t:")) != -1) {
		switch (c) {
		case 't':
			secs = strtol(optarg, NULL, 0);
			break;
		default:
			print_usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 3 || secs < 1) {
		print_usage(stderr);
		return 2;
	}
	if (open_inst(&ti, &lp)) {
		fail("no rdma instance");
		return 1;
	}
	for (i = 0; i < 2; i++) {
		if (dial_up(&lp, &ti, argv[optind + 1 + i], sflags[i], NULL,
			    0xd00 + i, DIAL_MS, &id[i])) {
			fail("no %s session to %s", what[i],
			     argv[optind + 1 + i]);
			kt_inst_close(&ti);
			return 1;
		}
	}
	for (i = 0; i < 2; i++) {
		plan.seed = 0x5eed0300 + i;
		if (kt_stream_init(&st[i], &ti, id[i], &ti, id[i], &plan,
				   32)) {
			fail("no memory for the streams");
			kt_inst_close(&ti);
			return 1;
		}
		kt_loop_add_stream(&lp, &st[i]);
		k.st[i] = &st[i];
	}
	lp.priv = &k;
	lp.hook = kill_hook;
	ret = kt_loop_run(&lp, echoes_under_way, 60000);
	for (i = 0; i < 2; i++)
		printf("%s session %u: %u echoes back, %u sends in flight\n",
		       what[i], id[i], st[i].received,
		       st[i].queued - st[i].completed);
	if (ret || st[0].failed || st[1].failed || !st[0].window ||
	    !st[1].window) {
		fail("the streams did not get under way (%d echoes each within 60 s): %s; %s; %s",
		     KILL_ECHOES, ret ? kmsgr_strerror(ret) : "-",
		     st[0].failed ? st[0].why : "-",
		     st[1].failed ? st[1].why : "-");
		goto close;
	}

	/* the sentinel: one message, and the peer resets itself */
	if (dial_up(&lp, &ti, argv[optind], 0, NULL, 0x5e4, 20000,
		    &sentinel)) {
		fail("no session to the sentinel %s", argv[optind]);
		goto close;
	}
	have_sentinel = true;
	sqe = kt_sqe(&ti);
	if (!sqe) {
		fail("no SQE for the sentinel");
		goto close;
	}
	kmsgr_prep_send(sqe, sentinel, 0x7c02, 1, none, none, data,
			SENTINEL_UD);
	mark = lp.nr_ev;
	k.killing = true;
	ret = kt_loop_run(&lp, sentinel_sent, 20000);
	if (ret || k.sentinel_res) {
		fail("the sentinel message did not go: %s",
		     kmsgr_strerror(ret ? ret : k.sentinel_res));
		goto close;
	}
	printf("sentinel sent: the peer resets now; sends in flight: lossless %u, lossy %u\n",
	       st[0].queued - st[0].completed, st[1].queued - st[1].completed);
	fflush(stdout);

	/* both sessions must notice, with a reason, in bounded time */
	end = k.t_sentinel + (uint64_t)secs * 1000;
	while (!(gone[0] && gone[1]) && kt_now_ms() < end) {
		if (kt_loop_run_once(&lp, 50))
			break;
		for (i = 0; i < 2; i++) {
			if (gone[i])
				continue;
			gone[i] = gone_event(&lp, &ti, id[i], mark);
			t_gone[i] = kt_now_ms() - k.t_sentinel;
		}
	}
	for (i = 0; i < 2; i++) {
		if (!gone[i]) {
			fail("%s session %u: no DOWN or CLOSED within %ld s of the sentinel (%u echoes, %u sends completed, %u failed)",
			     what[i], id[i], secs, st[i].received,
			     st[i].completed, k.failed_sends[i]);
			continue;
		}
		printf("%s session %u: %s after %.1f s, reason \"%s\" (res %d)\n",
		       what[i], id[i], kmsgr_event_str(gone[i]->event),
		       (double)t_gone[i] / 1000.0,
		       kmsgr_reason_str(gone[i]->reason), gone[i]->res);
		printf("  %u echoes verified before it, %u sends completed, %u failed (first: %s)\n",
		       st[i].received, st[i].completed, k.failed_sends[i],
		       k.failed_sends[i] ? strerror(-k.first_err[i]) : "-");
		if (gone[i]->event != want[i])
			fail("%s session %u: %s, expected %s", what[i], id[i],
			     kmsgr_event_str(gone[i]->event),
			     kmsgr_event_str(want[i]));
		if (gone[i]->reason == KMSGR_REASON_NONE)
			fail("%s session %u: %s without a reason", what[i],
			     id[i], kmsgr_event_str(gone[i]->event));
		if (st[i].failed)
			fail("%s stream: %s", what[i], st[i].why);
	}
	if (lp.stray)
		fail("%u unexpected completions, the first: %s", lp.stray,
		     lp.stray_why);

close:
	/* nothing should have gone down while the peer was healthy */
	for (i = 0; i < 2; i++)
		if (k.nr_early[i])
			fail("%s session %u: %u DOWN/CLOSED/RESET before the kill, the first: %s, reason \"%s\" (res %d)",
			     what[i], id[i], k.nr_early[i],
			     kmsgr_event_str(k.early[i].event),
			     kmsgr_reason_str(k.early[i].reason),
			     k.early[i].res);
	/* CLOSE works on both (client sessions keep their ids until then) */
	mark = lp.nr_ev;
	for (i = 0; i < 2; i++) {
		ret = kmsgr_close_id(ti.k, id[i]);
		if (ret)
			fail("CLOSE of the %s session %u: %s", what[i], id[i],
			     kmsgr_strerror(ret));
	}
	if (have_sentinel)
		kmsgr_close_id(ti.k, sentinel);
	/* the lossless one ends with CLOSED, every SEND completes */
	end = kt_now_ms() + CLOSE_MS;
	while (kt_now_ms() < end &&
	       (!all_sends_done(&lp) ||
		(gone[0] && gone[0]->event != KMSGR_EV_CLOSED &&
		 !kt_find_event(&lp, &ti, id[0], KMSGR_EV_CLOSED, mark))))
		if (kt_loop_run_once(&lp, 50))
			break;
	if (gone[0] && gone[0]->event != KMSGR_EV_CLOSED) {
		e = kt_find_event(&lp, &ti, id[0], KMSGR_EV_CLOSED, mark);
		if (!e)
			fail("lossless session %u: no CLOSED within %d s of CLOSE",
			     id[0], CLOSE_MS / 1000);
	}
	for (i = 0; i < 2; i++)
		if (st[i].completed + k.failed_sends[i] != st[i].queued)
			fail("%s session: %u SENDs queued, %u completed, %u failed",
			     what[i], st[i].queued, st[i].completed,
			     k.failed_sends[i]);
	kt_stream_free(&st[0]);
	kt_stream_free(&st[1]);
	kt_inst_close(&ti);
	pinned = pinned_gone(15000);
	if (pinned)
		fail("pinned_bytes %lld after closing the instance", pinned);
	if (failures)
		return 1;
	printf("PASS: peer killed: lossless DOWN in %.1f s, lossy CLOSED in %.1f s, with reasons; closed, every SEND done\n",
	       (double)t_gone[0] / 1000.0, (double)t_gone[1] / 1000.0);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		print_usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "stream"))
		return do_stream(argc - 1, argv + 1);
	if (!strcmp(argv[1], "kill"))
		return do_kill(argc - 1, argv + 1);
	print_usage(stderr);
	return 2;
}
