// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - the tracepoints (kmod/trace/, docs/tracing.md).
 *
 *  exchange  with the kmsgr events enabled in a tracefs instance of its
 *            own (instances/kmsgr_trace_test.PID, so that nobody else's
 *            tracing is touched): a lossless session between two
 *            instances of this process, NMSG messages of known types and
 *            lengths each way (the same lengths back: an echo's traffic),
 *            then CLOSE of both ends.  The trace must hold, for each end
 *            and nothing more: one UP (the server: ACCEPTED first), one
 *            CLOSED (reason NONE) after every message event, a
 *            kmsgr_msg_send and a kmsgr_msg_send_done (res 0) for seqs 1
 *            to NMSG with the lengths sent, a kmsgr_msg_recv for seqs 1 to
 *            NMSG with the peer's lengths; the events carry this process'
 *            pid and comm (the opener's).  The server may see one DOWN
 *            (its client closed first).  Over rdma (variant rdma,
 *            kmsgr_rdma.ko loaded, KMSGR_VM_IP: tools/vm/run --rxe) the
 *            64 KiB payloads are pulled with RDMA READ: kmsgr_rdma events
 *            show each READ posted (res 0) and completed (SUCCESS), and
 *            the bytes they read add up to the module's pulled_bytes
 *            growth.
 *  cq_pause  a client with an 8-entry CQ does not reap while the server
 *            sends it 32 messages: kmsgr_cq_pause shows its full CQ; when
 *            it reaps again kmsgr_cq_resume follows, and all 32 arrive.
 *
 * tracefs is mounted at /sys/kernel/tracing when it is not; the instance
 * is removed at the end, its events disabled and its buffer cleared first.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "kmsgr_selftest.h"
#include "kmsgr_ring_util.h"

#define TX_AREA		(1ULL << 20)
#define RX_POOL		(4ULL << 20)
#define SQ_ENTRIES	64
#define SETUP_MS	20000
#define RUN_MS		30000
#define NMSG		6
#define UD_CLI		0xc11		/* kt_connect()'s user_data */
#define UD_LSN		0x5e77		/* the listener's (tcp_open() here) */
#define MAX_TEV		512

/* front, middle, data of message i; 64 KiB is above rdma's pull_min */
static const uint32_t msg_len[NMSG][KT_NSEG] = {
	{ 1, 0, 0 },
	{ 100, 0, 4000 },
	{ 0, 0, 65536 },
	{ 512, 64, 0 },
	{ 3, 5, 7 },
	{ 4096, 0, 65536 },
};

/* ---- parsing the trace ------------------------------------------------ */

/* One event line: "... : kmsgr_msg_send: instance=1 session=2 ..." */
struct tev {
	char name[32];
	char args[400];		/* " key=value key=value ..." */
};

/* Split the trace into its kmsgr* events, in order; returns the count. */
static unsigned int tev_parse(char *text, struct tev *ev, unsigned int max)
{
	unsigned int n = 0;
	char *line, *save, *p, *colon;

	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		p = strstr(line, ": kmsgr");
		if (!p || n >= max)
			continue;
		p += 2;
		colon = strchr(p, ':');
		if (!colon || (size_t)(colon - p) >= sizeof(ev[n].name))
			continue;
		memcpy(ev[n].name, p, (size_t)(colon - p));
		ev[n].name[colon - p] = '\0';
		snprintf(ev[n].args, sizeof(ev[n].args), "%s", colon + 1);
		n++;
	}
	return n;
}

/* The value of " @key=" in @e as a string (copied into @out), or false. */
static bool tev_str(const struct tev *e, const char *key, char *out,
		    size_t size)
{
	char pat[40];
	const char *p;
	size_t n;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(e->args, pat);
	if (!p)
		return false;
	p += strlen(pat);
	n = strcspn(p, " ");
	if (n >= size)
		n = size - 1;
	memcpy(out, p, n);
	out[n] = '\0';
	return true;
}

/* The value of " @key=" as a number (decimal, 0x.. or negative); -1: none */
static long long tev_num(const struct tev *e, const char *key)
{
	char v[40];

	if (!tev_str(e, key, v, sizeof(v)))
		return -1;
	return strtoll(v, NULL, 0);
}

static bool tev_is(const struct tev *e, const char *name)
{
	return !strcmp(e->name, name);
}

static bool tev_has(const struct tev *e, const char *key, const char *val)
{
	char v[40];

	return tev_str(e, key, v, sizeof(v)) && !strcmp(v, val);
}

/* ---- the fixture -------------------------------------------------------- */

FIXTURE(trace) {
	const char *why;	/* set: SKIP with this reason */
	struct kt_xprt x;
	struct kt_inst cli, srv;
	struct kt_loop lp;
	struct kmsgr_listen l;
	uint32_t cli_id, srv_id;
	struct kt_trace t;
	int kmsg;
};

KT_XPRT_VARIANTS(trace);

FIXTURE_SETUP(trace)
{
	self->kmsg = -1;
	self->t.dir[0] = '\0';
	self->why = kmsgr_missing(1);
	if (!self->why)
		self->why = kt_xprt_init(&self->x, variant->transport);
	if (self->why)
		return;
	self->kmsg = kt_kmsg_open();
	kt_loop_init(&self->lp);
	ASSERT_EQ(0, kt_inst_open(&self->srv, "server", SQ_ENTRIES, TX_AREA,
				  RX_POOL, 11));
	ASSERT_EQ(0, kt_inst_open(&self->cli, "client", SQ_ENTRIES, TX_AREA,
				  RX_POOL, 22));
	self->srv.transport = self->x.transport;
	self->cli.transport = self->x.transport;
	kt_loop_add(&self->lp, &self->srv);
	kt_loop_add(&self->lp, &self->cli);
	/* before the session: its UP and ACCEPTED are traced */
	self->why = kt_trace_create(&self->t,
				      variant->transport == KMSGR_XPRT_RDMA);
}

FIXTURE_TEARDOWN(trace)
{
	char line[512];

	kt_trace_remove(&self->t);
	if (self->cli.k)
		kt_inst_close(&self->cli);
	if (self->srv.k)
		kt_inst_close(&self->srv);
	if (self->kmsg >= 0) {
		usleep(200000);
		EXPECT_EQ(0, kt_kmsg_check(self->kmsg, line, sizeof(line)))
			TH_LOG("kernel log: %s", line);
		close(self->kmsg);
	}
}

/* Wait for event @ev of @session on @ti; its index in lp->ev, or -1. */
static int wait_event(struct kt_loop *lp, struct kt_inst *ti,
		      uint32_t session, uint8_t ev, int ms)
{
	uint64_t end = kt_now_ms() + ms;
	const struct kt_event *e;

	for (;;) {
		e = kt_find_event(lp, ti, session, ev, 0);
		if (e)
			return (int)(e - lp->ev);
		if (kt_now_ms() >= end || kt_loop_run_once(lp, 50) < 0)
			return -1;
	}
}

/* The stream of NMSG messages of msg_len[] from @src's @sess to @dst's. */
static int stream_plan(struct kt_stream *st, struct kt_inst *src,
		       uint32_t src_sess, struct kt_inst *dst,
		       uint32_t dst_sess, uint16_t type0)
{
	struct kt_plan p = { .count = NMSG, .max_log2 = 4, .small_log2 = 4,
			     .big_one_in = 1, .seed = type0 };
	unsigned int i, s;
	struct kt_msg *m;
	int ret;

	ret = kt_stream_init(st, src, src_sess, dst, dst_sess, &p, NMSG);
	if (ret)
		return ret;
	for (i = 0; i < NMSG; i++) {
		m = &st->msgs[i];
		m->type = type0 + i;
		for (s = 0; s < KT_NSEG; s++) {
			m->len[s] = msg_len[i][s];
			m->off[s] = (i * KT_NSEG + s) * 8192;
			m->hash[s] = kt_hash(src->buf + m->off[s], m->len[s]);
		}
	}
	return 0;
}

/* The instance of the kmsgr_event @what of @sess with @user_data; 0: none */
static long long find_inst(const struct tev *ev, unsigned int n,
			   const char *what, uint32_t sess, uint64_t user_data)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (tev_is(&ev[i], "kmsgr_event") &&
		    tev_has(&ev[i], "event", what) &&
		    tev_num(&ev[i], "session") == sess &&
		    (uint64_t)tev_num(&ev[i], "user_data") == user_data &&
		    tev_num(&ev[i], "pid") == getpid())
			return tev_num(&ev[i], "instance");
	return 0;
}

/*
 * Message events @name of instance @inst: exactly NMSG, on @sess, seqs 1
 * to NMSG once each, type type0 + seq - 1, the lengths of msg_len[], res
 * 0 (@res: the event has one).  Their indexes are kept in [*first, *last].
 */
static void check_msgs(struct __test_metadata *_metadata,
		       const struct tev *ev, unsigned int n, const char *name,
		       long long inst, uint32_t sess, uint16_t type0, bool res,
		       unsigned int *first, unsigned int *last)
{
	unsigned int i, count = 0, seen[NMSG + 1] = { 0 };
	long long seq;

	for (i = 0; i < n; i++) {
		if (!tev_is(&ev[i], name) || tev_num(&ev[i], "instance") != inst)
			continue;
		count++;
		*first = i < *first ? i : *first;
		*last = i > *last ? i : *last;
		seq = tev_num(&ev[i], "seq");
		EXPECT_EQ(sess, tev_num(&ev[i], "session"))
			TH_LOG("%s:%s", name, ev[i].args);
		ASSERT_TRUE(seq >= 1 && seq <= NMSG)
			TH_LOG("%s:%s", name, ev[i].args);
		seen[seq]++;
		EXPECT_EQ(type0 + seq - 1, tev_num(&ev[i], "type"))
			TH_LOG("%s:%s", name, ev[i].args);
		EXPECT_EQ(msg_len[seq - 1][0], tev_num(&ev[i], "front"))
			TH_LOG("%s:%s", name, ev[i].args);
		EXPECT_EQ(msg_len[seq - 1][1], tev_num(&ev[i], "middle"))
			TH_LOG("%s:%s", name, ev[i].args);
		EXPECT_EQ(msg_len[seq - 1][2], tev_num(&ev[i], "data"))
			TH_LOG("%s:%s", name, ev[i].args);
		if (res)
			EXPECT_EQ(0, tev_num(&ev[i], "res"))
				TH_LOG("%s:%s", name, ev[i].args);
	}
	EXPECT_EQ(NMSG, count) TH_LOG("%s events of instance %lld", name, inst);
	for (seq = 1; seq <= NMSG; seq++)
		EXPECT_EQ(1, seen[seq])
			TH_LOG("%s of instance %lld, seq %lld", name, inst, seq);
}

/*
 * The kmsgr_event lines of instance @inst: all of @sess, owned by this
 * process (pid, comm); one UP, one CLOSED (reason NONE) after [first,
 * last]; ACCEPTED before the UP for a server; at most @max_down DOWN;
 * nothing else.
 */
static void check_events(struct __test_metadata *_metadata,
			 const struct tev *ev, unsigned int n, long long inst,
			 uint32_t sess, bool server, unsigned int max_down,
			 unsigned int first, unsigned int last)
{
	unsigned int i, up = 0, closed = 0, accepted = 0, down = 0;
	unsigned int up_at = 0, closed_at = 0, accepted_at = 0;
	char comm[32] = "", tcomm[32];

	kmsgr_read_line("/proc/self/comm", comm, sizeof(comm));
	for (i = 0; i < n; i++) {
		if (!tev_is(&ev[i], "kmsgr_event") ||
		    tev_num(&ev[i], "instance") != inst)
			continue;
		EXPECT_EQ(sess, tev_num(&ev[i], "session"))
			TH_LOG("event:%s", ev[i].args);
		EXPECT_EQ(getpid(), tev_num(&ev[i], "pid"))
			TH_LOG("event:%s", ev[i].args);
		EXPECT_TRUE(tev_str(&ev[i], "comm", tcomm, sizeof(tcomm)) &&
			    !strcmp(tcomm, comm))
			TH_LOG("event:%s (comm %s)", ev[i].args, comm);
		if (tev_has(&ev[i], "event", "UP")) {
			up++;
			up_at = i;
		} else if (tev_has(&ev[i], "event", "CLOSED")) {
			closed++;
			closed_at = i;
			EXPECT_TRUE(tev_has(&ev[i], "reason", "NONE"))
				TH_LOG("event:%s", ev[i].args);
		} else if (tev_has(&ev[i], "event", "ACCEPTED")) {
			accepted++;
			accepted_at = i;
		} else if (tev_has(&ev[i], "event", "DOWN")) {
			down++;
		} else {
			EXPECT_TRUE(false)
				TH_LOG("unexpected event:%s", ev[i].args);
		}
	}
	EXPECT_EQ(1, up) TH_LOG("UP events of instance %lld", inst);
	EXPECT_EQ(1, closed) TH_LOG("CLOSED events of instance %lld", inst);
	EXPECT_EQ(server ? 1 : 0, accepted)
		TH_LOG("ACCEPTED events of instance %lld", inst);
	EXPECT_GE(max_down, down) TH_LOG("DOWN events of instance %lld", inst);
	EXPECT_LT(up_at, first) TH_LOG("UP after a message event");
	EXPECT_GT(closed_at, last) TH_LOG("CLOSED before a message event");
	if (server)
		EXPECT_LT(accepted_at, up_at) TH_LOG("ACCEPTED after UP");
}

/*
 * kmsgr_rdma: every READ posted (res 0) completed with SUCCESS, their
 * bytes are what pulled_bytes grew by (@pulled), and both 64 KiB
 * payloads were among them.  Every READ is of an address kmsgr offered:
 * 2^32 plus an offset, never the DMA address of the sender's memory (a
 * kernel address under rxe).
 */
static void check_pulls(struct __test_metadata *_metadata,
			const struct tev *ev, unsigned int n, const char *ip,
			long long pulled)
{
	unsigned int i, posted = 0, done = 0;
	long long bytes = 0, want = 0;
	char peer[64];

	for (i = 0; i < NMSG; i++)
		if (msg_len[i][2] >= 32768)
			want += 2 * msg_len[i][2];
	for (i = 0; i < n; i++) {
		if (strncmp(ev[i].name, "kmsgr_rdma_read_", 16))
			continue;
		EXPECT_TRUE(tev_str(&ev[i], "peer", peer, sizeof(peer)) &&
			    !strncmp(peer, ip, strlen(ip)) &&
			    peer[strlen(ip)] == ':')
			TH_LOG("%s:%s (peer %s)", ev[i].name, ev[i].args, ip);
		EXPECT_LT(0, tev_num(&ev[i], "len"))
			TH_LOG("%s:%s", ev[i].name, ev[i].args);
		if (tev_is(&ev[i], "kmsgr_rdma_read_post")) {
			posted++;
			EXPECT_EQ(0, tev_num(&ev[i], "res"))
				TH_LOG("%s:%s", ev[i].name, ev[i].args);
			/* kmsgr offers an opaque address, not its own */
			EXPECT_TRUE(tev_str(&ev[i], "addr", peer,
					    sizeof(peer)) &&
				    strtoull(peer, NULL, 0) >> 32 == 1)
				TH_LOG("a PULL offered addr %s, not 2^32 + offset",
				       peer);
		} else {
			done++;
			bytes += tev_num(&ev[i], "len");
			EXPECT_TRUE(tev_has(&ev[i], "status", "SUCCESS"))
				TH_LOG("%s:%s", ev[i].name, ev[i].args);
		}
	}
	TH_LOG("rdma: %u READs posted, %u completed, %lld bytes (pulled_bytes grew by %lld)",
	       posted, done, bytes, pulled);
	EXPECT_LT(0, posted);
	EXPECT_EQ(posted, done);
	EXPECT_EQ(pulled, bytes);
	EXPECT_LE(want, bytes);
}

/* A lossless session from the client instance to the server's listener. */
static void pair_up(struct __test_metadata *_metadata,
		    FIXTURE_DATA(trace) *self)
{
	int ret;

	ASSERT_EQ(0, kt_listen(&self->srv, self->x.ip, KMSGR_SESS_F_LOSSLESS,
			       UD_LSN, &self->l));
	ASSERT_EQ(0, kt_connect(&self->cli, &self->l.bound,
				KMSGR_SESS_F_LOSSLESS, KT_PEER_ANY, UD_CLI,
				&self->cli_id));
	ret = kt_wait_pair(&self->lp, &self->cli, self->cli_id, &self->srv,
			   &self->srv_id, SETUP_MS);
	ASSERT_EQ(0, ret) TH_LOG("session %s:%u not up: %s", self->x.ip,
				 ntohs(self->l.bound.port),
				 kmsgr_strerror(ret));
}

/* Stop the events and parse the trace into *@ev; returns the count. */
static unsigned int trace_collect(struct __test_metadata *_metadata,
				  FIXTURE_DATA(trace) *self, struct tev **ev)
{
	unsigned int n;
	char *text;

	kt_trace_write(&self->t, "events/kmsgr/enable", "0");
	if (self->t.rdma)
		kt_trace_write(&self->t, "events/kmsgr_rdma/enable", "0");
	text = kt_trace_read(&self->t);
	ASSERT_NE(NULL, text);
	*ev = calloc(MAX_TEV, sizeof(**ev));
	ASSERT_NE(NULL, *ev);
	n = tev_parse(text, *ev, MAX_TEV);
	free(text);
	TH_LOG("%s: %u kmsgr events traced", self->x.name, n);
	return n;
}

static void trace_show(struct __test_metadata *_metadata,
		       const struct tev *ev, unsigned int n)
{
	unsigned int i;

	if (!_metadata->passed || getenv("KMSGR_TRACE_SHOW"))
		for (i = 0; i < n; i++)
			fprintf(stderr, "# %s:%s\n", ev[i].name, ev[i].args);
}

TEST_F_TIMEOUT(trace, exchange, 120)
{
	struct tev *ev = NULL;
	long long cli_inst, srv_inst, pulled = 0;
	unsigned int n, first[2] = { ~0U, ~0U }, last[2] = { 0, 0 };
	struct kt_stream a, b;
	int ret;

	if (self->why)
		SKIP(return, "%s", self->why);
	if (self->x.transport == KMSGR_XPRT_RDMA)
		pulled = kt_rdma_counter("pulled_bytes");

	pair_up(_metadata, self);
	ASSERT_EQ(0, stream_plan(&a, &self->cli, self->cli_id, &self->srv,
				 self->srv_id, 0x4100));
	ASSERT_EQ(0, stream_plan(&b, &self->srv, self->srv_id, &self->cli,
				 self->cli_id, 0x4200));
	kt_loop_add_stream(&self->lp, &a);
	kt_loop_add_stream(&self->lp, &b);
	ret = kt_loop_run(&self->lp, kt_loop_streams_finished, RUN_MS);
	EXPECT_EQ(0, ret) TH_LOG("loop: %s", kmsgr_strerror(ret));
	EXPECT_EQ(0, a.failed) TH_LOG("client->server: %s", a.why);
	EXPECT_EQ(0, b.failed) TH_LOG("server->client: %s", b.why);
	EXPECT_EQ(NMSG, a.received);
	EXPECT_EQ(NMSG, b.received);

	/* the client goes first; the server session is CLOSEd after it */
	ASSERT_EQ(0, kmsgr_close_id(self->cli.k, self->cli_id));
	ASSERT_LE(0, wait_event(&self->lp, &self->cli, self->cli_id,
				KMSGR_EV_CLOSED, SETUP_MS));
	ASSERT_EQ(0, kmsgr_close_id(self->srv.k, self->srv_id));
	ASSERT_LE(0, wait_event(&self->lp, &self->srv, self->srv_id,
				KMSGR_EV_CLOSED, SETUP_MS));
	if (self->x.transport == KMSGR_XPRT_RDMA)
		pulled = kt_rdma_counter("pulled_bytes") - pulled;

	n = trace_collect(_metadata, self, &ev);
	cli_inst = find_inst(ev, n, "UP", self->cli_id, UD_CLI);
	srv_inst = find_inst(ev, n, "ACCEPTED", self->srv_id, UD_LSN);
	EXPECT_NE(0, cli_inst) TH_LOG("no UP of client session %u",
				      self->cli_id);
	EXPECT_NE(0, srv_inst) TH_LOG("no ACCEPTED of server session %u",
				      self->srv_id);
	if (cli_inst && srv_inst) {
		EXPECT_NE(cli_inst, srv_inst);
		check_msgs(_metadata, ev, n, "kmsgr_msg_send", cli_inst,
			   self->cli_id, 0x4100, true, &first[0], &last[0]);
		check_msgs(_metadata, ev, n, "kmsgr_msg_send_done", cli_inst,
			   self->cli_id, 0x4100, true, &first[0], &last[0]);
		check_msgs(_metadata, ev, n, "kmsgr_msg_recv", srv_inst,
			   self->srv_id, 0x4100, false, &first[1], &last[1]);
		check_msgs(_metadata, ev, n, "kmsgr_msg_send", srv_inst,
			   self->srv_id, 0x4200, true, &first[1], &last[1]);
		check_msgs(_metadata, ev, n, "kmsgr_msg_send_done", srv_inst,
			   self->srv_id, 0x4200, true, &first[1], &last[1]);
		check_msgs(_metadata, ev, n, "kmsgr_msg_recv", cli_inst,
			   self->cli_id, 0x4200, false, &first[0], &last[0]);
		check_events(_metadata, ev, n, cli_inst, self->cli_id, false,
			     0, first[0], last[0]);
		check_events(_metadata, ev, n, srv_inst, self->srv_id, true,
			     1, first[1], last[1]);
	}
	if (self->x.transport == KMSGR_XPRT_RDMA)
		check_pulls(_metadata, ev, n, self->x.ip, pulled);
	trace_show(_metadata, ev, n);
	free(ev);
	kt_stream_free(&a);
	kt_stream_free(&b);
}

/*
 * A client whose CQ has CQ_SMALL entries does not reap while the server
 * sends it CQ_MSGS messages: its CQ fills, delivery pauses
 * (kmsgr_cq_pause: a full CQ of CQ_SMALL entries); once it reaps again,
 * delivery resumes (kmsgr_cq_resume) and every message arrives.
 */
#define CQ_SMALL	8
#define CQ_MSGS		32
#define CQ_IDLE_MS	1000

TEST_F_TIMEOUT(trace, cq_pause, 120)
{
	struct kt_plan p = { .count = CQ_MSGS, .max_log2 = 10,
			     .small_log2 = 10, .big_one_in = 1, .seed = 0x7ace };
	unsigned int i, n, pauses = 0, resumes = 0, resumed_after = 0;
	long long cli_inst, paused_at = -1;
	struct tev *ev = NULL;
	struct kt_stream b;
	struct kt_loop lp;
	uint64_t end;
	int ret;

	if (self->why)
		SKIP(return, "%s", self->why);
	/* the same client, with a small CQ */
	kt_inst_close(&self->cli);
	ASSERT_EQ(0, kt_inst_open_cq(&self->cli, "client", CQ_SMALL, CQ_SMALL,
				     TX_AREA, RX_POOL, 22));
	self->cli.transport = self->x.transport;
	pair_up(_metadata, self);

	ASSERT_EQ(0, kt_stream_init(&b, &self->srv, self->srv_id, &self->cli,
				    self->cli_id, &p, CQ_MSGS));
	kt_loop_init(&lp);
	kt_loop_add(&lp, &self->srv);		/* the client is not run */
	kt_loop_add_stream(&lp, &b);
	end = kt_now_ms() + CQ_IDLE_MS;
	while (kt_now_ms() < end)
		ASSERT_LE(0, kt_loop_run_once(&lp, 50));
	EXPECT_EQ(0, b.received);
	kt_loop_add(&lp, &self->cli);		/* it reaps from here on */
	ret = kt_loop_run(&lp, kt_loop_streams_finished, RUN_MS);
	EXPECT_EQ(0, ret) TH_LOG("loop: %s", kmsgr_strerror(ret));
	EXPECT_EQ(0, b.failed) TH_LOG("server->client: %s", b.why);
	EXPECT_EQ(CQ_MSGS, b.received);

	n = trace_collect(_metadata, self, &ev);
	cli_inst = find_inst(ev, n, "UP", self->cli_id, UD_CLI);
	ASSERT_NE(0, cli_inst) TH_LOG("no UP of client session %u",
				      self->cli_id);
	for (i = 0; i < n; i++) {
		if (tev_num(&ev[i], "instance") != cli_inst)
			continue;
		if (tev_is(&ev[i], "kmsgr_cq_pause")) {
			pauses++;
			if (paused_at < 0)
				paused_at = i;
			EXPECT_EQ(CQ_SMALL, tev_num(&ev[i], "entries"))
				TH_LOG("pause:%s", ev[i].args);
			/* full: what is ready and what is promised */
			EXPECT_EQ(CQ_SMALL, tev_num(&ev[i], "ready") +
					    tev_num(&ev[i], "reserved"))
				TH_LOG("pause:%s", ev[i].args);
		} else if (tev_is(&ev[i], "kmsgr_cq_resume")) {
			resumes++;
			if (paused_at >= 0 && i > paused_at)
				resumed_after++;
			EXPECT_GT(CQ_SMALL, tev_num(&ev[i], "ready"))
				TH_LOG("resume:%s", ev[i].args);
		}
	}
	TH_LOG("client instance %lld: %u pauses, %u resumes", cli_inst,
	       pauses, resumes);
	EXPECT_LE(1, pauses);
	EXPECT_LE(1, resumed_after);
	trace_show(_metadata, ev, n);
	free(ev);
	kt_stream_free(&b);
}

TEST_HARNESS_MAIN
