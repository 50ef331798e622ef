// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - kmsgr to kmsgr over kernel TCP (and RDMA), in one
 * process with two instances: a listener instance and a client instance,
 * one lossless msgr2 session (crc mode, auth none) between them.
 *
 *  stream_mixed      KMSGR_TCP_MSGS (10^4) messages client -> server and a
 *                    tenth as many back: segment sizes log-uniform from 0 B
 *                    to 4 MiB, every combination of front, middle and data;
 *                    each arrives once, in order, with the type, version,
 *                    lengths and content hash it was sent with.
 *  survives_tcp_kill the same with smaller messages while `ss -K` kills the
 *                    TCP connection three times (client side, server side,
 *                    client side): the session reconnects and nothing is
 *                    lost, duplicated or reordered.
 *
 * Variants: TCP on 127.0.0.1 (loopback) and on the guest's own NIC
 * address (vm_ip: KMSGR_VM_IP, set by tools/vm/run --rxe; SKIP without
 * it); stream_mixed also over RDMA (rdma: the listener on KMSGR_VM_IP,
 * kmsgr_rdma.ko loaded; SKIP without them).  After each test the kernel
 * log must show no warning.
 *
 *  short_writes      (127.0.0.1) with TCP buffers of 4 KiB (tcp_wmem and
 *                    tcp_rmem, restored afterwards) every frame goes out in
 *                    many short writes: 400 messages up to 256 KiB each
 *                    way arrive once, in order, with their content hashes.
 *
 *  reset_mid_send    (127.0.0.1, tcp_zerocopy, a KMSGR_FAULT=y module) a
 *                    send in several socket calls meets a reset after the
 *                    first: the session goes DOWN with -ECONNRESET (not
 *                    EPIPE or an orderly EOF) and its stream arrives whole.
 *
 * Over both transports (fixture tcp): stream_mixed.  TCP only:
 * survives_tcp_kill (fixture tcp_kill: kills TCP connections with ss -K),
 * short_writes (TCP socket buffers, tcp_wmem and tcp_rmem),
 * reset_mid_send (fixture tcp_reset).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmsgr_selftest.h"
#include "kmsgr_ring_util.h"

#define TX_AREA		(8ULL << 20)	/* >= the largest segment */
#define RX_POOL		(32ULL << 20)	/* > 3 x the largest segment */
#define SQ_ENTRIES	256
#define SETUP_MS	20000

FIXTURE(tcp) {
	const char *why;	/* set: SKIP with this reason */
	char whybuf[128];
	const char *ip;
	struct kt_xprt x;	/* transport */
	struct kt_inst cli, srv;
	struct kt_loop lp;
	struct kmsgr_listen l;
	uint32_t cli_id, srv_id;
	int kmsg;
};

FIXTURE_VARIANT(tcp) {
	const char *ip_env;	/* NULL: the transport's (kt_xprt_init()) */
	uint32_t transport;	/* KMSGR_XPRT_* */
	bool zerocopy;		/* with tcp_zerocopy (trusted peers) */
};

FIXTURE_VARIANT_ADD(tcp, loopback) {
	.ip_env = NULL,
	.transport = KMSGR_XPRT_TCP,
};

FIXTURE_VARIANT_ADD(tcp, loopback_zerocopy) {
	.ip_env = NULL,
	.transport = KMSGR_XPRT_TCP,
	.zerocopy = true,
};

FIXTURE_VARIANT_ADD(tcp, vm_ip) {
	.ip_env = "KMSGR_VM_IP",
	.transport = KMSGR_XPRT_TCP,
};

FIXTURE_VARIANT_ADD(tcp, rdma) {
	.ip_env = NULL,
	.transport = KMSGR_XPRT_RDMA,
};

/* the module must do rings and TCP sessions */
static const char *tcp_missing(struct kmsgr_info *info)
{
	struct kmsgr *k;
	int ret;

	ret = kmsgr_open(NULL, &k);
	if (ret)
		return NULL;	/* the setup reports it */
	ret = kmsgr_info(k, info);
	kmsgr_close(k);
	if (ret)
		return NULL;
	if (!(info->features & KMSGR_FEAT_RINGS))
		return "module without rings (KMSGR_FEAT_RINGS)";
	if (!(info->features & KMSGR_FEAT_TCP))
		return "module without TCP sessions (KMSGR_FEAT_TCP)";
	return NULL;
}

/*
 * The set-up of both fixtures: a session over @transport, the listener on
 * the address in environment variable @ip_env (NULL: the transport's).
 */
static void tcp_open(struct __test_metadata *_metadata,
		     FIXTURE_DATA(tcp) *self, const char *ip_env,
		     uint32_t transport)
{
	struct kmsgr_info info;
	int ret;

	self->kmsg = -1;
	self->why = kmsgr_missing(1);
	if (self->why)
		return;
	self->why = tcp_missing(&info);
	if (self->why)
		return;
	self->why = kt_xprt_init(&self->x, transport);
	if (self->why)
		return;
	self->ip = self->x.ip;
	if (ip_env) {
		self->ip = getenv(ip_env);
		if (!self->ip || !*self->ip) {
			snprintf(self->whybuf, sizeof(self->whybuf),
				 "%s not set (run in the guest with --rxe)",
				 ip_env);
			self->why = self->whybuf;
			return;
		}
	}
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

	ASSERT_EQ(0, kt_listen(&self->srv, self->ip, KMSGR_SESS_F_LOSSLESS,
			       0x5e77, &self->l));
	ASSERT_NE(0, self->l.bound.port);
	ASSERT_EQ(0, kt_connect(&self->cli, &self->l.bound,
				KMSGR_SESS_F_LOSSLESS, KT_PEER_ANY, 0xc11,
				&self->cli_id));
	ret = kt_wait_pair(&self->lp, &self->cli, self->cli_id, &self->srv,
			   &self->srv_id, SETUP_MS);
	ASSERT_EQ(0, ret) TH_LOG("session %s:%u not up: %s", self->ip,
				 ntohs(self->l.bound.port),
				 kmsgr_strerror(ret));
}

static void tcp_close(struct __test_metadata *_metadata,
		      FIXTURE_DATA(tcp) *self)
{
	char line[512];

	if (self->cli.k)
		kt_inst_close(&self->cli);
	if (self->srv.k)
		kt_inst_close(&self->srv);
	if (self->kmsg >= 0) {
		/* Give deferred teardown a moment to complain, if it will. */
		usleep(200000);
		EXPECT_EQ(0, kt_kmsg_check(self->kmsg, line, sizeof(line)))
			TH_LOG("kernel log: %s", line);
		close(self->kmsg);
	}
}

#define TCP_ZEROCOPY	KMSGR_SYS_MODULE "/parameters/tcp_zerocopy"

/* Module parameter tcp_zerocopy: "Y" or "N"; *@old gets what it was. */
static int set_tcp_zerocopy(const char *v, char *old, size_t size)
{
	FILE *f;
	int ret = 0;

	if (old && kmsgr_read_line(TCP_ZEROCOPY, old, size))
		return -EIO;
	f = fopen(TCP_ZEROCOPY, "w");
	if (!f)
		return -errno;
	if (fputs(v, f) < 0)
		ret = -EIO;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

FIXTURE_SETUP(tcp)
{
	char old[8];

	tcp_open(_metadata, self, variant->ip_env, variant->transport);
	if (self->why || !variant->zerocopy)
		return;
	/* copied unless asked: a peer could read reused slices (params.c) */
	ASSERT_EQ(0, set_tcp_zerocopy("Y", old, sizeof(old)));
	EXPECT_STREQ("N", old) TH_LOG("tcp_zerocopy's default");
}

FIXTURE_TEARDOWN(tcp)
{
	tcp_close(_metadata, self);
	if (variant->zerocopy)
		EXPECT_EQ(0, set_tcp_zerocopy("N", NULL, 0));
}

/* count events @ev of @session on @ti */
static unsigned int count_events(const struct kt_loop *lp,
				 const struct kt_inst *ti, uint32_t session,
				 uint8_t ev)
{
	unsigned int i, n = 0;

	for (i = 0; i < lp->nr_ev; i++)
		if (lp->ev[i].inst == ti && lp->ev[i].session == session &&
		    lp->ev[i].event == ev)
			n++;
	return n;
}

static void report(struct __test_metadata *_metadata, const char *what,
		   const struct kt_stream *st, uint64_t ms)
{
	TH_LOG("%s: %u/%u messages, %u sends completed, %llu bytes in %llu ms (%.1f MB/s)",
	       what, st->received, st->total, st->completed,
	       (unsigned long long)st->bytes, (unsigned long long)ms,
	       ms ? st->bytes / 1000.0 / ms : 0.0);
}

TEST_F_TIMEOUT(tcp, stream_mixed, 900)
{
	struct kt_plan fwd = {
		.count = kt_env_long("KMSGR_TCP_MSGS", 10000),
		.max_log2 = 22,		/* 4 MiB */
		.small_log2 = 16,
		.big_one_in = kt_env_long("KMSGR_TCP_BIG_ONE_IN", 32),
		.seed = 0x5eed0001,
	};
	struct kt_plan back = {
		.count = fwd.count / 10,
		.max_log2 = 16,
		.small_log2 = 16,
		.big_one_in = 1,
		.seed = 0x5eed0002,
	};
	struct kt_stream a, b;
	uint64_t t0, ms;
	int ret;

	if (self->why)
		SKIP(return, "%s", self->why);
	ASSERT_EQ(0, kt_stream_init(&a, &self->cli, self->cli_id, &self->srv,
				    self->srv_id, &fwd, 64));
	ASSERT_EQ(0, kt_stream_init(&b, &self->srv, self->srv_id, &self->cli,
				    self->cli_id, &back, 32));
	kt_loop_add_stream(&self->lp, &a);
	kt_loop_add_stream(&self->lp, &b);
	TH_LOG("%s: %u messages, %llu bytes out; %u back, %llu bytes",
	       self->ip, a.total, (unsigned long long)kt_stream_volume(&a),
	       b.total, (unsigned long long)kt_stream_volume(&b));

	t0 = kt_now_ms();
	ret = kt_loop_run(&self->lp, kt_loop_streams_finished, 800 * 1000);
	ms = kt_now_ms() - t0;
	report(_metadata, "client->server", &a, ms);
	report(_metadata, "server->client", &b, ms);
	EXPECT_EQ(0, ret) TH_LOG("loop: %s", kmsgr_strerror(ret));
	EXPECT_EQ(0, a.failed) TH_LOG("client->server: %s", a.why);
	EXPECT_EQ(0, b.failed) TH_LOG("server->client: %s", b.why);
	EXPECT_EQ(a.total, a.received);
	EXPECT_EQ(a.total, a.completed);
	EXPECT_EQ(b.total, b.received);
	EXPECT_EQ(b.total, b.completed);
	EXPECT_EQ(0, self->lp.stray) TH_LOG("%s", self->lp.stray_why);
	/* nothing went down on a healthy connection */
	EXPECT_EQ(0, count_events(&self->lp, &self->cli, self->cli_id,
				  KMSGR_EV_DOWN));
	EXPECT_EQ(0, count_events(&self->lp, &self->srv, self->srv_id,
				  KMSGR_EV_DOWN));
	kt_stream_free(&a);
	kt_stream_free(&b);
}

#define WMEM	"/proc/sys/net/ipv4/tcp_wmem"
#define RMEM	"/proc/sys/net/ipv4/tcp_rmem"

TEST(short_writes)
{
	struct kt_plan plan = {
		.count = 400,
		.max_log2 = 18,		/* 256 KiB */
		.small_log2 = 14,
		.big_one_in = 8,
		.seed = 0x5eed0003,
	};
	char wmem[128], rmem[128];
	struct kt_inst cli = { 0 }, srv = { 0 };
	struct kmsgr_listen l;
	struct kt_stream a, b;
	uint32_t cli_id, srv_id;
	struct kt_loop lp;
	const char *why;
	int ret;

	why = kmsgr_missing(1);
	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, kmsgr_read_line(WMEM, wmem, sizeof(wmem)));
	ASSERT_EQ(0, kmsgr_read_line(RMEM, rmem, sizeof(rmem)));
	ASSERT_EQ(0, kmsgr_write_line(WMEM, "4096 4096 4096"));
	ASSERT_EQ(0, kmsgr_write_line(RMEM, "4096 4096 4096"));

	kt_loop_init(&lp);
	ret = kt_inst_open(&srv, "server", 64, 1 << 20, 4 << 20, 31);
	if (!ret)
		ret = kt_inst_open(&cli, "client", 64, 1 << 20, 4 << 20, 32);
	if (!ret) {
		kt_loop_add(&lp, &srv);
		kt_loop_add(&lp, &cli);
		ret = kt_listen(&srv, "127.0.0.1", KMSGR_SESS_F_LOSSLESS,
				0x5401, &l);
	}
	if (!ret)
		ret = kt_connect(&cli, &l.bound, KMSGR_SESS_F_LOSSLESS,
				 KT_PEER_ANY, 0x5402, &cli_id);
	if (!ret)
		ret = kt_wait_pair(&lp, &cli, cli_id, &srv, &srv_id, SETUP_MS);
	/* the sockets exist: their buffers are set, restore the defaults */
	EXPECT_EQ(0, kmsgr_write_line(WMEM, wmem));
	EXPECT_EQ(0, kmsgr_write_line(RMEM, rmem));
	ASSERT_EQ(0, ret) TH_LOG("session: %s", kmsgr_strerror(ret));

	ASSERT_EQ(0, kt_stream_init(&a, &cli, cli_id, &srv, srv_id, &plan, 32));
	plan.seed++;
	ASSERT_EQ(0, kt_stream_init(&b, &srv, srv_id, &cli, cli_id, &plan, 32));
	kt_loop_add_stream(&lp, &a);
	kt_loop_add_stream(&lp, &b);
	ret = kt_loop_run(&lp, kt_loop_streams_finished, 400 * 1000);
	EXPECT_EQ(0, ret) TH_LOG("loop: %s", kmsgr_strerror(ret));
	EXPECT_EQ(0, a.failed) TH_LOG("client->server: %s", a.why);
	EXPECT_EQ(0, b.failed) TH_LOG("server->client: %s", b.why);
	EXPECT_EQ(a.total, a.received);
	EXPECT_EQ(b.total, b.received);
	EXPECT_EQ(0, lp.stray) TH_LOG("%s", lp.stray_why);
	EXPECT_EQ(0, count_events(&lp, &cli, cli_id, KMSGR_EV_DOWN));
	/* every slice released: the pools are empty again */
	EXPECT_EQ(0, kt_pool_bytes(&cli));
	EXPECT_EQ(0, kt_pool_bytes(&srv));
	TH_LOG("%u + %u messages, %llu + %llu bytes through 4 KiB buffers",
	       a.received, b.received, (unsigned long long)a.bytes,
	       (unsigned long long)b.bytes);
	kt_stream_free(&a);
	kt_stream_free(&b);
	kt_inst_close(&cli);
	kt_inst_close(&srv);
}

/*
 * Kill the established TCP connection(s) whose local (@local) or remote
 * port is @port with `ss -K`.  Return: sockets killed, 0 when none matched,
 * -EOPNOTSUPP when the kernel cannot destroy sockets, -errno.
 */
static int ss_kill(uint16_t port, bool local, char *msg, size_t len)
{
	char cmd[256], line[512];
	int n = 0, st;
	FILE *f;

	/* inet_diag and tcp_diag are modules in Debian's kernel */
	if (system("modprobe -q tcp_diag 2>/dev/null"))
		snprintf(msg, len, "modprobe tcp_diag failed");
	snprintf(cmd, sizeof(cmd),
		 "ss -K -t -n -H state established '( %s = :%u )' 2>&1",
		 local ? "sport" : "dport", port);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "not supported") ||
		    strstr(line, "SOCK_DESTROY")) {
			snprintf(msg, len, "%s", line);
			pclose(f);
			return -EOPNOTSUPP;
		}
		n++;
		line[strcspn(line, "\n")] = 0;
		snprintf(msg, len, "%s", line);
	}
	st = pclose(f);
	if (st == -1)
		return -errno;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		snprintf(msg, len, "\"%s\" exited with %d", cmd, st);
		return -EIO;
	}
	return n;
}

#define NR_KILLS	3

static void survives_tcp_kill(struct __test_metadata *_metadata,
			      FIXTURE_DATA(tcp) *self)
{
	struct kt_plan fwd = {
		.count = kt_env_long("KMSGR_KILL_MSGS", 3000),
		.max_log2 = 18,		/* 256 KiB */
		.small_log2 = 14,
		.big_one_in = 4,
		.seed = 0x5eed0003,
	};
	struct kt_plan back = {
		.count = fwd.count / 2,
		.max_log2 = 14,
		.small_log2 = 14,
		.big_one_in = 1,
		.seed = 0x5eed0004,
	};
	uint16_t port = ntohs(self->l.bound.port);
	unsigned int kills = 0, ups, downs;
	struct kt_stream a, b;
	char msg[512] = "";
	uint64_t t0, end;
	int ret = 0, n;

	if (self->why)
		SKIP(return, "%s", self->why);
	ASSERT_EQ(0, kt_stream_init(&a, &self->cli, self->cli_id, &self->srv,
				    self->srv_id, &fwd, 32));
	ASSERT_EQ(0, kt_stream_init(&b, &self->srv, self->srv_id, &self->cli,
				    self->cli_id, &back, 16));
	kt_loop_add_stream(&self->lp, &a);
	kt_loop_add_stream(&self->lp, &b);

	t0 = kt_now_ms();
	end = t0 + 500 * 1000;
	while (!kt_loop_streams_finished(&self->lp)) {
		if (kt_now_ms() >= end) {
			ret = -ETIME;
			break;
		}
		/* kill at 1/4, 2/4 and 3/4 of the forward stream */
		if (kills < NR_KILLS &&
		    a.received >= a.total * (kills + 1) / (NR_KILLS + 1)) {
			n = ss_kill(port, kills % 2 == 1, msg, sizeof(msg));
			if (n == -EOPNOTSUPP)
				SKIP(goto out, "ss -K: %s", msg);
			ASSERT_LT(0, n) TH_LOG("ss -K %s port %u killed nothing: %s",
					       kills % 2 ? "local" : "remote",
					       port, msg);
			TH_LOG("kill %u at message %u (%s side): %s",
			       kills + 1, a.received,
			       kills % 2 ? "server" : "client", msg);
			kills++;
		}
		ret = kt_loop_run_once(&self->lp, 50);
		if (ret)
			break;
	}
	report(_metadata, "client->server", &a, kt_now_ms() - t0);
	report(_metadata, "server->client", &b, kt_now_ms() - t0);
	EXPECT_EQ(0, ret) TH_LOG("loop: %s", kmsgr_strerror(ret));
	EXPECT_EQ(NR_KILLS, kills);
	EXPECT_EQ(0, a.failed) TH_LOG("client->server: %s", a.why);
	EXPECT_EQ(0, b.failed) TH_LOG("server->client: %s", b.why);
	EXPECT_EQ(a.total, a.received);
	EXPECT_EQ(a.total, a.completed);
	EXPECT_EQ(b.total, b.received);
	EXPECT_EQ(b.total, b.completed);
	EXPECT_EQ(0, self->lp.stray) TH_LOG("%s", self->lp.stray_why);

	/* every kill took the connection down and the session came back */
	downs = count_events(&self->lp, &self->cli, self->cli_id,
			     KMSGR_EV_DOWN);
	ups = count_events(&self->lp, &self->cli, self->cli_id, KMSGR_EV_UP);
	TH_LOG("client session: %u DOWN, %u UP events", downs, ups);
	EXPECT_LE(kills, downs);
	EXPECT_LE(kills + 1, ups);
	EXPECT_EQ(0, count_events(&self->lp, &self->cli, self->cli_id,
				  KMSGR_EV_CLOSED));
	EXPECT_EQ(0, count_events(&self->lp, &self->cli, self->cli_id,
				  KMSGR_EV_RESET));
	EXPECT_EQ(0, count_events(&self->lp, &self->srv, self->srv_id,
				  KMSGR_EV_CLOSED));
	EXPECT_EQ(0, count_events(&self->lp, &self->srv, self->srv_id,
				  KMSGR_EV_RESET));
out:
	kt_stream_free(&a);
	kt_stream_free(&b);
}

/* The TCP-only tests: the fixture tcp without its rdma variant. */
FIXTURE(tcp_kill) {
	FIXTURE_DATA(tcp) t;
};

FIXTURE_VARIANT(tcp_kill) {
	const char *ip_env;	/* NULL: 127.0.0.1 */
};

FIXTURE_VARIANT_ADD(tcp_kill, loopback) {
	.ip_env = NULL,
};

FIXTURE_VARIANT_ADD(tcp_kill, vm_ip) {
	.ip_env = "KMSGR_VM_IP",
};

FIXTURE_SETUP(tcp_kill)
{
	tcp_open(_metadata, &self->t, variant->ip_env, KMSGR_XPRT_TCP);
}

FIXTURE_TEARDOWN(tcp_kill)
{
	tcp_close(_metadata, &self->t);
}

TEST_F_TIMEOUT(tcp_kill, survives_tcp_kill, 600)
{
	survives_tcp_kill(_metadata, &self->t);
}

/* kmod/kmsgr.h enum kmsgr_fault_point: KMSGR_FAULT_TX_RESET */
#define FAULT_TX_RESET	(1U << 19)

/*
 * (KMSGR_FAULT=y, zero copy) A send that goes to the socket in several
 * calls (the frame's copied bytes, then its payload's pages) meets the
 * peer's reset between two of them (the fault point aborts the socket
 * once).  The failing call consumes the socket's error: kmsgr must keep
 * it, so the connection goes DOWN with -ECONNRESET, not as an orderly
 * EOF (res 0) or -EPIPE; and the lossless stream still arrives whole.
 */
static void reset_mid_send(struct __test_metadata *_metadata,
			   FIXTURE_DATA(tcp) *self)
{
	struct kt_plan fwd = {
		.count = 40,
		.max_log2 = 17,		/* 128 KiB */
		.small_log2 = 17,
		.big_one_in = 1,
		.seed = 0x5eed0005,
	};
	const struct kt_event *down;
	struct kt_stream a;
	char left[32] = "";
	int ret;

	if (self->why)
		SKIP(return, "%s", self->why);
	if (access(KMSGR_FAULT_PARAM, W_OK))
		SKIP(return, "module built without KMSGR_FAULT=y");
	ASSERT_EQ(0, kt_stream_init(&a, &self->cli, self->cli_id, &self->srv,
				    self->srv_id, &fwd, 8));
	kt_loop_add_stream(&self->lp, &a);
	ASSERT_EQ(0, kmsgr_set_faults(FAULT_TX_RESET, 200));
	ret = kt_loop_run(&self->lp, kt_loop_streams_finished, 200 * 1000);
	EXPECT_EQ(0, kmsgr_read_line(KMSGR_FAULT_PARAM, left, sizeof(left)));
	kmsgr_faults_off();
	report(_metadata, "client->server", &a, 0);
	EXPECT_EQ(0, ret) TH_LOG("loop: %s", kmsgr_strerror(ret));
	EXPECT_EQ(0, a.failed) TH_LOG("client->server: %s", a.why);
	EXPECT_EQ(a.total, a.received);
	EXPECT_EQ(a.total, a.completed);
	/* the fault fired (its bit cleared itself) */
	EXPECT_STREQ("0", left);
	down = kt_find_event(&self->lp, &self->cli, self->cli_id,
			     KMSGR_EV_DOWN, 0);
	ASSERT_NE(NULL, down) TH_LOG("the client's session never went down");
	TH_LOG("the client's DOWN: reason %u, res %d (%s)", down->reason,
	       down->res, kmsgr_strerror(down->res));
	EXPECT_EQ(-ECONNRESET, down->res);
	kt_stream_free(&a);
}

/* The same over loopback with tcp_zerocopy: sends in several calls. */
FIXTURE(tcp_reset) {
	FIXTURE_DATA(tcp) t;
};

FIXTURE_SETUP(tcp_reset)
{
	char old[8];

	tcp_open(_metadata, &self->t, NULL, KMSGR_XPRT_TCP);
	if (self->t.why)
		return;
	ASSERT_EQ(0, set_tcp_zerocopy("Y", old, sizeof(old)));
}

FIXTURE_TEARDOWN(tcp_reset)
{
	tcp_close(_metadata, &self->t);
	EXPECT_EQ(0, set_tcp_zerocopy("N", NULL, 0));
}

TEST_F_TIMEOUT(tcp_reset, reset_mid_send, 300)
{
	reset_mid_send(_metadata, &self->t);
}

TEST_HARNESS_MAIN
