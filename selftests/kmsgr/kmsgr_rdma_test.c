// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - kmsgr to kmsgr over the RDMA transport (kmsgr_rdma.ko,
 * soft-RoCE rxe0 on the guest's NIC), in one process with two instances:
 * a listener instance and a client instance, one msgr2 session between
 * them: lossless or lossy, crc mode with auth none or secure mode with
 * cephx (the four variants).
 *
 *  stream_mixed    KMSGR_RDMA_MSGS (10^4) messages client -> server and a
 *                  tenth as many back: segment sizes log-uniform from 0 B
 *                  to 4 MiB (secure: 1 MiB, so that a message stays within
 *                  secure mode's 4 MiB), every combination of front,
 *                  middle and data; each arrives once, in order, with its
 *                  content hash; no DOWN; the DMA-mapped buffers
 *                  (kmsgr_rdma pinned_bytes) and staging buffers
 *                  (staged_bytes) are all released when the instances
 *                  close.  Every variant moves large payloads by RDMA READ
 *                  (offered_bytes and pulled_bytes grow, equally): lossless
 *                  crc ones in place, the others (lossy, and secure mode's
 *                  sealed tails) from staging copies (staged_bytes > 0).
 *  ipv6            a second session over IPv6 (fd00:99::N added to the
 *                  NIC; rxe0 gets its GID): a stream crosses it.
 *  netdev_flap     the netdev under rxe0 down for 2 s under the live
 *                  session, then up: the connection ends with reason
 *                  DEVICE, -ENETDOWN (rxe fails what is sent through a
 *                  port that is down).  Lossless: a stream sent while it
 *                  is down arrives whole once the client has redialled.
 *                  Lossy: the session ends; a new one works (the device
 *                  still takes connections).  Test builds hold kmsgr's
 *                  port-down event 1 s (fault_port_err_ms): the netdev's
 *                  GOING_DOWN, not the late event, must tell kmsgr; and
 *                  when the event comes after the link is up again (lossy:
 *                  a new pair 1.5 s after), it must not mark it down.
 *  comm_est_before_rtu  the listener's QP reports COMM_EST before the
 *                  RTU came (fault_comm_est, test builds; rxe never
 *                  does): the CM hears of it and establishes the
 *                  connection then (the RTU after it counts as a
 *                  duplicate); the pair works.
 *  offer_on_empty_send_queue  on rxe a PULL's registration is posted
 *                  only onto an empty send queue, even when a DONE
 *                  makes an invalidation while the offer maps its pages
 *                  (fault_offer_ms, test builds, holds every offer
 *                  until one is posted, 20 ms at most): every
 *                  kmsgr_rdma_offer event (tracefs) has ahead=0, and
 *                  a stream of 300 messages crosses intact
 *  no_done_peer    the receiving end never says DONE (fault_no_done, test
 *                  builds) but acknowledges: a lossless sender fails the
 *                  connection with EPROTO, its registrations destroyed
 *                  before the application gets the payload back, and
 *                  recovers; lossy ones offer only copies, kept until
 *                  close.  Netlink's instance-get charges each instance
 *                  the buffers of its one connection (2 x credits x
 *                  buf_size pinned) and the client's the copies it
 *                  offers (registered), both 0 once its session is
 *                  closed.
 *  new_pair_resources  a new pair: each connection has a protection
 *                  domain of its own (rdma resource show: pd +2), and
 *                  credits 6 gives each 4 receive and 4 send buffers
 *                  (their rings' counters wrap cleanly only with a power
 *                  of two; pinned_bytes shows it); a stream crosses it.
 *  device_removal  `rdma link delete` of the device under the live
 *                  session: both ends see it go with reason DEVICE (lossy:
 *                  CLOSED; lossless: DOWN), and a listener bound to the
 *                  device's address says it stopped (REFUSED, reason
 *                  DEVICE, -ENODEV).  Lossless: after `rdma link
 *                  add` the client reconnects by itself, the session comes
 *                  UP again and a stream crosses it, nothing lost.
 *  client_killed   a second client process with a stream in flight is
 *                  killed (SIGKILL): its server session goes DOWN (lossless)
 *                  or CLOSED (lossy), the QPs, registrations and cm_ids of
 *                  its connection are destroyed (`rdma resource show`), its
 *                  buffers unmapped, and the first session works on.
 *  many_sessions_bounded  100 sessions from one instance keep at most
 *                  2 x credits x buf_size bytes mapped per connection
 *                  (pinned_bytes; INFO reports the same), all released
 *                  when they close.
 *  refused         a CONNECT to a port without a listener ends with reason
 *                  CONNECT and -ECONNREFUSED, within the timeout.
 *  listen_during_removal  (no fixture; test builds) a LISTEN on the
 *                  device's address that the device's removal meets
 *                  before it listens (fault_listen_ms) fails with ENODEV,
 *                  no oops; a LISTEN after the device is back works.
 *  bind_during_removal  the same, the removal meeting the LISTEN after
 *                  it bound to the device, before its listener is listed
 *                  (fault_bind_ms): the listener was listed after the
 *                  removal's scan, and listened (the removal then waited
 *                  forever for its cm_id) or failed EINVAL (the CM had
 *                  the cm_id in its removal already)
 *
 * The listener binds the wildcard address (so it outlives the device) and
 * the client dials KMSGR_VM_IP (tools/vm/run --rxe; SKIP without it).
 * After each test the kernel log must show no warning, and `rdma resource
 * show` the QP, MR and cm_id counts of before the test.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmsgr_selftest.h"
#include "kmsgr_ring_util.h"
#include "kmsgr_nl_util.h"

#define TX_AREA		(8ULL << 20)	/* >= the largest segment */
#define RX_POOL		(32ULL << 20)	/* > 3 x the largest segment */
#define SQ_ENTRIES	256
#define SETUP_MS	20000
#define PINNED		"/sys/module/kmsgr_rdma/parameters/pinned_bytes"

/* verbs objects counted by `rdma resource show` that must not leak */
static const char *const res_kinds[] = { "qp", "mr", "cm_id", "pd" };
#define NR_RES	ARRAY_SIZE(res_kinds)
#define RES_QP	0
#define RES_PD	3

/* test builds: kmsgr_rdma takes note of a port-down event this late (ms) */
#define PORT_ERR_MS	"/sys/module/kmsgr_rdma/parameters/fault_port_err_ms"

FIXTURE(rdma) {
	const char *why;	/* set: SKIP with this reason */
	const char *dev;	/* the RDMA device, rxe0 */
	char netdev[64];	/* its netdev (netdev_flap) */
	long res0[NR_RES];	/* before the test */
	const char *ip;
	struct kt_inst cli, srv;
	struct kt_loop lp;
	struct kmsgr_listen l;
	struct kmsgr_addr dial;
	uint32_t cli_id, srv_id;
	int kmsg;
};

FIXTURE_VARIANT(rdma) {
	uint32_t flags;		/* KMSGR_SESS_F_* of the session */
	unsigned int max_log2;	/* of stream_mixed's segments */
};

FIXTURE_VARIANT_ADD(rdma, lossless) {
	.flags = KMSGR_SESS_F_LOSSLESS,
	.max_log2 = 22,
};

FIXTURE_VARIANT_ADD(rdma, lossy) {
	.flags = 0,
	.max_log2 = 22,
};

FIXTURE_VARIANT_ADD(rdma, lossless_secure) {
	.flags = KMSGR_SESS_F_LOSSLESS | KMSGR_SESS_F_SECURE,
	.max_log2 = 20,
};

FIXTURE_VARIANT_ADD(rdma, lossy_secure) {
	.flags = KMSGR_SESS_F_SECURE,
	.max_log2 = 20,
};

/* the cephx key of the secure variants (client.admin on both ends) */
static const uint8_t cephx_key[16] = "kmsgr-rdma-key!!";

static const uint8_t *variant_key(uint32_t flags)
{
	return flags & KMSGR_SESS_F_SECURE ? cephx_key : NULL;
}

/*
 * Fill @n with the counts of res_kinds[] on @dev from `rdma resource
 * show` ("0: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ...").  Return: 0 or -1.
 */
static int res_counts(const char *dev, long *n)
{
	char cmd[128], line[512], key[32];
	const char *p;
	size_t i;
	FILE *f;
	int ret = -1;

	snprintf(cmd, sizeof(cmd), "rdma resource show %s 2>/dev/null", dev);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f)) {
		ret = 0;
		for (i = 0; i < NR_RES; i++) {
			snprintf(key, sizeof(key), " %s ", res_kinds[i]);
			p = strstr(line, key);
			if (!p || sscanf(p + strlen(key), "%ld", &n[i]) != 1)
				ret = -1;
		}
	}
	pclose(f);
	return ret;
}

/* Wait until the counts on @dev are @want again; 0, or -1 (in @got). */
static int res_back(const char *dev, const long *want, long *got, int ms)
{
	uint64_t end = kt_now_ms() + ms;

	for (;;) {
		if (!res_counts(dev, got) &&
		    !memcmp(got, want, NR_RES * sizeof(*got)))
			return 0;
		if (kt_now_ms() >= end)
			return -1;
		usleep(50000);
	}
}

FIXTURE_SETUP(rdma)
{
	self->kmsg = -1;
	self->why = kmsgr_missing(1);
	if (self->why)
		return;
	self->ip = getenv("KMSGR_VM_IP");
	if (!self->ip || !*self->ip) {
		self->why = "KMSGR_VM_IP not set (run in the guest with --rxe)";
		return;
	}

	self->dev = getenv("KMSGR_RXE") ? getenv("KMSGR_RXE") : "rxe0";
	ASSERT_EQ(0, res_counts(self->dev, self->res0))
		TH_LOG("cannot read `rdma resource show %s`", self->dev);
	self->kmsg = kt_kmsg_open();
	kt_loop_init(&self->lp);
	ASSERT_EQ(0, kt_inst_open(&self->srv, "server", SQ_ENTRIES, TX_AREA,
				  RX_POOL, 11));
	ASSERT_EQ(0, kt_inst_open(&self->cli, "client", SQ_ENTRIES, TX_AREA,
				  RX_POOL, 22));
	kt_loop_add(&self->lp, &self->srv);
	kt_loop_add(&self->lp, &self->cli);
	self->srv.key = variant_key(variant->flags);
	self->cli.key = self->srv.key;
	/* in the guest the RDMA transport must be there: no SKIP */
	ASSERT_EQ(0, kt_rdma_pair(&self->lp, &self->srv, &self->cli, self->ip,
				  variant->flags, &self->l, &self->dial,
				  &self->srv_id, &self->cli_id));
}

FIXTURE_TEARDOWN(rdma)
{
	char line[512];
	long long pinned = -1;
	long got[NR_RES];
	int i;

	if (!access(PORT_ERR_MS, W_OK))
		kmsgr_write_line(PORT_ERR_MS, "0");
	if (self->cli.k)
		kt_inst_close(&self->cli);
	if (self->srv.k)
		kt_inst_close(&self->srv);
	if (self->kmsg < 0)
		return;
	/* closing tears the connections down: every buffer is unmapped */
	for (i = 0; i < 100; i++) {
		pinned = kt_rdma_counter("pinned_bytes");
		if (!pinned)
			break;
		usleep(50000);
	}
	EXPECT_EQ(0, pinned) TH_LOG("%s after close", PINNED);
	EXPECT_EQ(0, kt_rdma_counter("staged_bytes"));
	/* every QP, registration and cm_id of the test is gone */
	if (res_back(self->dev, self->res0, got, 5000)) {
		for (i = 0; i < (int)NR_RES; i++)
			EXPECT_EQ(self->res0[i], got[i])
				TH_LOG("%s: %s %ld after close, %ld before",
				       self->dev, res_kinds[i], got[i],
				       self->res0[i]);
	}
	usleep(200000);
	EXPECT_EQ(0, kt_kmsg_check(self->kmsg, line, sizeof(line)))
		TH_LOG("kernel log: %s", line);
	close(self->kmsg);
}

/* Run the loop until event @ev of @session on @ti (after event @from). */
static const struct kt_event *wait_for(struct kt_loop *lp,
				       struct kt_inst *ti, uint32_t session,
				       uint8_t ev, unsigned int from, int ms)
{
	uint64_t end = kt_now_ms() + (uint64_t)ms;
	const struct kt_event *e;

	for (;;) {
		e = kt_find_event(lp, ti, session, ev, from);
		if (e || kt_now_ms() >= end)
			return e;
		if (kt_loop_run_once(lp, 50))
			return NULL;
	}
}

typedef void (*mid_fn)(struct __test_metadata *_metadata,
		       FIXTURE_DATA(rdma) *self);

/*
 * A stream each way; everything arrives once, in order, intact.  With
 * @mid, the streams run @mid_ms, then @mid is called, then they finish.
 */
static void streams_mid(struct __test_metadata *_metadata,
			FIXTURE_DATA(rdma) *self, unsigned int count,
			unsigned int max_log2, int ms, int mid_ms, mid_fn mid)
{
	struct kt_plan fwd = {
		.count = count,
		.max_log2 = max_log2,
		.small_log2 = 16,
		.big_one_in = kt_env_long("KMSGR_RDMA_BIG_ONE_IN", 32),
		.seed = 0x5eed0101,
	};
	struct kt_plan back = {
		.count = count / 10 ? count / 10 : 1,
		.max_log2 = 16,
		.small_log2 = 16,
		.big_one_in = 1,
		.seed = 0x5eed0102,
	};
	struct kt_stream a, b;
	uint64_t t0, ms_taken;
	int ret;

	ASSERT_EQ(0, kt_stream_init(&a, &self->cli, self->cli_id, &self->srv,
				    self->srv_id, &fwd, 64));
	ASSERT_EQ(0, kt_stream_init(&b, &self->srv, self->srv_id, &self->cli,
				    self->cli_id, &back, 32));
	self->lp.nr_streams = 0;
	kt_loop_add_stream(&self->lp, &a);
	kt_loop_add_stream(&self->lp, &b);
	t0 = kt_now_ms();
	if (mid) {
		ret = kt_loop_run(&self->lp, kt_loop_streams_finished, mid_ms);
		EXPECT_EQ(-ETIME, ret) TH_LOG("the streams ended before the middle");
		mid(_metadata, self);
	}
	ret = kt_loop_run(&self->lp, kt_loop_streams_finished, ms);
	ms_taken = kt_now_ms() - t0;
	TH_LOG("rdma: %u messages, %llu bytes out, %u back, %llu bytes, in %llu ms",
	       a.total, (unsigned long long)kt_stream_volume(&a), b.total,
	       (unsigned long long)kt_stream_volume(&b),
	       (unsigned long long)ms_taken);
	EXPECT_EQ(0, ret) TH_LOG("loop: %s", kmsgr_strerror(ret));
	EXPECT_EQ(0, a.failed) TH_LOG("client->server: %s", a.why);
	EXPECT_EQ(0, b.failed) TH_LOG("server->client: %s", b.why);
	EXPECT_EQ(a.total, a.received);
	EXPECT_EQ(a.total, a.completed);
	EXPECT_EQ(b.total, b.received);
	EXPECT_EQ(b.total, b.completed);
	EXPECT_EQ(0, self->lp.stray) TH_LOG("%s", self->lp.stray_why);
	self->lp.nr_streams = 0;
	kt_stream_free(&a);
	kt_stream_free(&b);
}

static void streams(struct __test_metadata *_metadata,
		    FIXTURE_DATA(rdma) *self, unsigned int count,
		    unsigned int max_log2, int ms)
{
	streams_mid(_metadata, self, count, max_log2, ms, 0, NULL);
}

TEST_F_TIMEOUT(rdma, stream_mixed, 900)
{
	long long offered, pulled, staged, lost;

	if (self->why)
		SKIP(return, "%s", self->why);
	offered = kt_rdma_counter("offered_bytes");
	pulled = kt_rdma_counter("pulled_bytes");
	lost = kt_rdma_counter("read_timeouts");
	streams(_metadata, self, kt_env_long("KMSGR_RDMA_MSGS", 10000),
		variant->max_log2, 800 * 1000);
	offered = kt_rdma_counter("offered_bytes") - offered;
	pulled = kt_rdma_counter("pulled_bytes") - pulled;
	staged = kt_rdma_counter("staged_bytes");
	/* a READ the device lost ends its connection: say so if it did */
	lost = kt_rdma_counter("read_timeouts") - lost;
	TH_LOG("pulled with RDMA READ: %lld of %lld bytes offered; %lld bytes of staging buffers",
	       pulled, offered, staged);
	TH_LOG("READs not completed within read_timeout: %lld", lost);
	/* large payloads were pulled, every byte offered */
	EXPECT_LT(0, pulled);
	EXPECT_EQ(offered, pulled);
	/* in place for lossless crc; from staged copies otherwise */
	if (variant->flags == KMSGR_SESS_F_LOSSLESS) {
		EXPECT_EQ(0, staged);
	} else {
		EXPECT_LT(0, staged);
	}
	/* nothing went down on a healthy connection */
	EXPECT_EQ(NULL, kt_find_event(&self->lp, &self->cli, self->cli_id,
				      KMSGR_EV_DOWN, 0));
	EXPECT_EQ(NULL, kt_find_event(&self->lp, &self->srv, self->srv_id,
				      KMSGR_EV_DOWN, 0));
	/* the buffers of one connection each side are mapped */
	EXPECT_LT(0, kt_rdma_counter("pinned_bytes"));
}

/* The netdev under @dev ("rxe0"), from `rdma link show`. */
static int rxe_netdev(const char *dev, char *out, size_t len)
{
	char cmd[128], line[256], *p;
	FILE *f;
	int ret = -1;

	snprintf(cmd, sizeof(cmd), "rdma link show %s/1 2>/dev/null", dev);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f)) {
		p = strstr(line, " netdev ");
		if (p && sscanf(p + 8, "%63s", out) == 1 && strlen(out) < len)
			ret = 0;
	}
	pclose(f);
	return ret;
}

/* Whether the first line of @path contains @str. */
static bool file_has(const char *path, const char *str)
{
	char line[128];
	FILE *f = fopen(path, "r");
	bool ret;

	if (!f)
		return false;
	ret = fgets(line, sizeof(line), f) && strstr(line, str);
	fclose(f);
	return ret;
}

/* Wait until the state of @dev's port 1 is @state ("ACTIVE", "DOWN"). */
static int port_state(const char *dev, const char *state, int ms)
{
	char path[128];
	uint64_t end = kt_now_ms() + ms;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/state",
		 dev);
	do {
		if (file_has(path, state))
			return 0;
		usleep(100000);
	} while (kt_now_ms() < end);
	return -1;
}

static int rxe_active(const char *dev, int ms)
{
	return port_state(dev, "ACTIVE", ms);
}

TEST_F_TIMEOUT(rdma, device_removal, 300)
{
	const char *dev = getenv("KMSGR_RXE") ? getenv("KMSGR_RXE") : "rxe0";
	const uint8_t gone = variant->flags & KMSGR_SESS_F_LOSSLESS ?
			     KMSGR_EV_DOWN : KMSGR_EV_CLOSED;
	const struct kt_event *ec, *es, *el;
	struct kmsgr_listen bound;
	unsigned int mark;
	char netdev[64], cmd[256];
	int ret;

	if (self->why)
		SKIP(return, "%s", self->why);
	ASSERT_EQ(0, rxe_netdev(dev, netdev, sizeof(netdev)));
	/* a listener on the device's address stops with it, and says so */
	ASSERT_EQ(0, kt_listen(&self->srv, self->ip, variant->flags, 0x77,
			       &bound));
	streams(_metadata, self, 200, 18, 120 * 1000);

	mark = self->lp.nr_ev;
	snprintf(cmd, sizeof(cmd), "rdma link delete %s", dev);
	ret = system(cmd);
	ASSERT_EQ(0, ret) TH_LOG("%s failed", cmd);
	ec = wait_for(&self->lp, &self->cli, self->cli_id, gone, mark, 20000);
	es = wait_for(&self->lp, &self->srv, self->srv_id, gone, mark, 20000);
	el = wait_for(&self->lp, &self->srv, bound.id, KMSGR_EV_REFUSED, mark,
		      20000);
	/* put the device back whatever happened: later tests need it */
	snprintf(cmd, sizeof(cmd), "rdma link add %s type rxe netdev %s", dev,
		 netdev);
	ret = system(cmd);
	ASSERT_EQ(0, ret) TH_LOG("%s failed", cmd);
	ASSERT_EQ(0, rxe_active(dev, 30000)) TH_LOG("%s not ACTIVE", dev);

	ASSERT_NE(NULL, ec) TH_LOG("client session did not see the removal");
	ASSERT_NE(NULL, es) TH_LOG("server session did not see the removal");
	EXPECT_EQ(KMSGR_REASON_DEVICE, ec->reason)
		TH_LOG("client: reason %u res %d", ec->reason, ec->res);
	EXPECT_EQ(KMSGR_REASON_DEVICE, es->reason)
		TH_LOG("server: reason %u res %d", es->reason, es->res);
	EXPECT_EQ(-ENODEV, ec->res);
	ASSERT_NE(NULL, el)
		TH_LOG("the listener on %s did not say it stopped", self->ip);
	EXPECT_EQ(KMSGR_REASON_DEVICE, el->reason);
	EXPECT_EQ(-ENODEV, el->res);
	EXPECT_EQ(0, kmsgr_close_id(self->srv.k, bound.id));
	if (!(variant->flags & KMSGR_SESS_F_LOSSLESS))
		return;

	/* lossless: back by itself once the device is there again */
	ASSERT_NE(NULL, wait_for(&self->lp, &self->cli, self->cli_id,
				 KMSGR_EV_UP, mark, 60000))
		TH_LOG("client session not UP again after the device came back");
	ASSERT_NE(NULL, wait_for(&self->lp, &self->srv, self->srv_id,
				 KMSGR_EV_UP, mark, 20000))
		TH_LOG("server session not UP again");
	streams(_metadata, self, 200, 18, 120 * 1000);
}

/* `ip link set dev @netdev up|down`; 0 on success. */
static int link_set(const char *netdev, const char *how)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ip link set dev %s %s", netdev, how);
	return system(cmd);
}

/* netdev_flap's middle: the link comes back. */
static void netdev_up(struct __test_metadata *_metadata,
		      FIXTURE_DATA(rdma) *self)
{
	ASSERT_EQ(0, link_set(self->netdev, "up"));
	ASSERT_EQ(0, rxe_active(self->dev, 30000))
		TH_LOG("%s not ACTIVE", self->dev);
}

/*
 * The netdev under rxe0 goes down under a live session and comes back
 * after a few seconds.  rxe fails every work request sent through a port
 * that is down at once (no retransmission), so the session's connection
 * ends with reason DEVICE and -ENETDOWN.  Lossless: messages submitted
 * while the link is down and after are all delivered once, in order, when
 * the client has redialled.  Lossy: the session ends; a new one works.
 * Either way the device still accepts connections afterwards (kmsgr
 * keeps the cm_ids of the failed connections until the port is up:
 * kmsgr_rdma_park()), and every QP, MR and cm_id goes with the instances.
 */
TEST_F_TIMEOUT(rdma, netdev_flap, 300)
{
	const bool lossless = variant->flags & KMSGR_SESS_F_LOSSLESS;
	const struct kt_event *ec, *es;
	unsigned int mark;

	if (self->why)
		SKIP(return, "%s", self->why);
	ASSERT_EQ(0, rxe_netdev(self->dev, self->netdev,
				sizeof(self->netdev)));
	/*
	 * test builds: the port-down event comes 1 s late (a busy ib_wq),
	 * and the first SEND fails well before it
	 */
	if (!access(PORT_ERR_MS, W_OK))
		ASSERT_EQ(0, kmsgr_write_line(PORT_ERR_MS, "1000"));
	mark = self->lp.nr_ev;
	ASSERT_EQ(0, link_set(self->netdev, "down"));
	if (port_state(self->dev, "DOWN", 10000)) {
		link_set(self->netdev, "up");
		ASSERT_TRUE(false) TH_LOG("%s port not DOWN", self->dev);
	}
	if (lossless) {
		/* sent while the link is down; it is up after 2 s */
		streams_mid(_metadata, self, 500, 18, 240 * 1000,
			    kt_env_long("KMSGR_FLAP_MS", 2000), netdev_up);
		ec = kt_find_event(&self->lp, &self->cli, self->cli_id,
				   KMSGR_EV_DOWN, mark);
		ASSERT_NE(NULL, ec) TH_LOG("client session never DOWN");
		EXPECT_NE(NULL, kt_find_event(&self->lp, &self->cli,
					      self->cli_id, KMSGR_EV_UP,
					      mark));
	} else {
		struct kt_plan plan = {
			.count = 100, .max_log2 = 18, .small_log2 = 16,
			.big_one_in = 4, .seed = 0xf1a9,
		};
		struct kt_stream a;

		ASSERT_EQ(0, kt_stream_init(&a, &self->cli, self->cli_id,
					    &self->srv, self->srv_id, &plan,
					    16));
		self->lp.nr_streams = 0;
		kt_loop_add_stream(&self->lp, &a);
		ec = wait_for(&self->lp, &self->cli, self->cli_id,
			      KMSGR_EV_CLOSED, mark, 20000);
		self->lp.nr_streams = 0;
		kt_stream_free(&a);
		netdev_up(_metadata, self);
		ASSERT_NE(NULL, ec) TH_LOG("client session not CLOSED");
		/* the server's ends by the disconnect, now or later */
		es = wait_for(&self->lp, &self->srv, self->srv_id,
			      KMSGR_EV_CLOSED, mark, 40000);
		ASSERT_NE(NULL, es) TH_LOG("server session not CLOSED");
		TH_LOG("server session closed: reason %u res %d", es->reason,
		       es->res);
	}
	EXPECT_EQ(KMSGR_REASON_DEVICE, ec->reason)
		TH_LOG("client: reason %u res %d", ec->reason, ec->res);
	EXPECT_EQ(-ENETDOWN, ec->res);
	if (!lossless) {
		/*
		 * the device still takes connections: a new session (test
		 * builds: once the late port-down event has come, after the
		 * link was up again)
		 */
		if (!access(PORT_ERR_MS, W_OK))
			usleep(1500 * 1000);
		self->lp.stray = 0;
		ASSERT_EQ(0, kt_rdma_pair(&self->lp, &self->srv, &self->cli,
					  self->ip, variant->flags, &self->l,
					  &self->dial, &self->srv_id,
					  &self->cli_id));
	}
	streams(_metadata, self, 100, 18, 120 * 1000);
}

#define NO_DONE	"/sys/module/kmsgr_rdma/parameters/fault_no_done"
#define OFFER_MS "/sys/module/kmsgr_rdma/parameters/fault_offer_ms"

/*
 * Soft-RoCE executes a fast registration again when its QP retransmits
 * behind it, and that second execution stops the send queue for good: a
 * PULL's registration goes only onto an empty send queue
 * (docs/rdma-wire.md).  An offer checked that before it mapped the pages
 * and posted without looking again, while a DONE arriving meanwhile
 * posts an invalidation from the receive completion.  fault_offer_ms
 * holds each offer there until an invalidation is posted: the offers
 * traced must all have found the queue empty (ahead=0).
 */
TEST_F_TIMEOUT(rdma, offer_on_empty_send_queue, 300)
{
	unsigned int offers = 0, ahead = 0;
	struct kt_trace t;
	const char *why;
	char *trace, *p;

	if (self->why)
		SKIP(return, "%s", self->why);
	if (access(OFFER_MS, W_OK))
		SKIP(return, "kmsgr_rdma.ko built without KMSGR_FAULT=y");
	why = kt_trace_create(&t, true);
	ASSERT_EQ(NULL, why) TH_LOG("%s", why);
	/* the offers only: the sessions' events would fill the buffer */
	ASSERT_EQ(0, kt_trace_write(&t, "events/kmsgr/enable", "0"));
	ASSERT_EQ(0, kmsgr_write_line(OFFER_MS, "20"));
	streams(_metadata, self, 300, 17, 240 * 1000);
	EXPECT_EQ(0, kmsgr_write_line(OFFER_MS, "0"));
	trace = kt_trace_read(&t);
	kt_trace_remove(&t);
	ASSERT_NE(NULL, trace);
	for (p = trace; (p = strstr(p, "kmsgr_rdma_offer:")); p++) {
		offers++;
		p = strstr(p, " ahead=");
		if (!p)
			break;
		ahead += strtoul(p + 7, NULL, 10) != 0;
	}
	free(trace);
	TH_LOG("%u offers traced, %u of them onto a busy send queue",
	       offers, ahead);
	EXPECT_LT(0, offers) TH_LOG("nothing was offered: the test proves nothing");
	EXPECT_EQ(0, ahead);
}

/*
 * Wait until netlink's instance-get says instance @id has @pinned bytes
 * pinned and @registered registered (-1: any number but 0), or @ms ran
 * out; the last report in @got.  0, or -1 (also when @id is gone).
 */
static int nl_inst_mem(struct kmsgr_nl *nl, struct kt_loop *lp, uint64_t id,
		       long long pinned, long long registered, int ms,
		       struct kmsgr_instance_info *got)
{
	uint64_t end = kt_now_ms() + (uint64_t)ms;

	for (;;) {
		memset(got, 0, sizeof(*got));
		if (kmsgr_nl_instance_get(nl, id, got))
			return -1;
		if ((pinned < 0 ? got->pinned != 0 :
				  got->pinned == (uint64_t)pinned) &&
		    (registered < 0 ? got->registered != 0 :
				      got->registered == (uint64_t)registered))
			return 0;
		if (kt_now_ms() >= end)
			return -1;
		kt_loop_run_once(lp, 50);
	}
}

/* Bytes one connection keeps DMA-mapped: 2 x credits x buf_size. */
static long long conn_pinned(void)
{
	long long n = kt_rdma_counter("credits");
	long long size = kt_rdma_counter("buf_size");

	if (n < 0 || size < 0)
		return -1;
	n = n < 4 ? 4 : n > 1024 ? 1024 : n;
	while (n & (n - 1))		/* rounded down to a power of two */
		n &= n - 1;
	size = size < 1024 ? 1024 : size > (1 << 20) ? (1 << 20) : size;
	return 2 * n * size;
}

#define CREDITS	"/sys/module/kmsgr_rdma/parameters/credits"

/*
 * What a new pair of connections (one at each end) holds.  Each has a
 * protection domain of its own (`rdma resource show`: pd +2 with qp +2),
 * so that a key one connection offers its peer is worth nothing on any
 * other queue pair.  A credits value that is not a power of two is
 * rounded down (6: 4 receive and 4 send buffers per connection, as
 * pinned_bytes shows): the u32 counters of a connection's rings index
 * them modulo their size, which stays right across the counters' wrap
 * only for a power of two.  Messages flow over such a pair.
 */
TEST_F_TIMEOUT(rdma, new_pair_resources, 180)
{
	const long long size = kt_rdma_counter("buf_size");
	long long before, grew = 0;
	long res[NR_RES], got[NR_RES];
	char old[32];
	int i, ret;

	if (self->why)
		SKIP(return, "%s", self->why);
	ASSERT_LT(0, size);
	ASSERT_EQ(0, kmsgr_read_line(CREDITS, old, sizeof(old)));
	ASSERT_EQ(0, res_counts(self->dev, res));
	before = kt_rdma_counter("pinned_bytes");
	ASSERT_EQ(0, kmsgr_write_line(CREDITS, "6"));
	ret = kt_rdma_pair(&self->lp, &self->srv, &self->cli, self->ip,
			   variant->flags, &self->l, &self->dial,
			   &self->srv_id, &self->cli_id);
	ASSERT_EQ(0, kmsgr_write_line(CREDITS, old));
	ASSERT_EQ(0, ret);
	/* both ends' new connections, 4 + 4 buffers each */
	for (i = 0; i < 40 && grew != 2 * 2 * 4 * size; i++) {
		grew = kt_rdma_counter("pinned_bytes") - before;
		if (grew != 2 * 2 * 4 * size)
			kt_loop_run_once(&self->lp, 50);
	}
	EXPECT_EQ(2 * 2 * 4 * size, grew)
		TH_LOG("pinned_bytes grew by %lld for two connections with credits 6 (buf_size %lld)",
		       grew, size);
	ASSERT_EQ(0, res_counts(self->dev, got));
	EXPECT_EQ(res[RES_QP] + 2, got[RES_QP]);
	EXPECT_EQ(res[RES_PD] + 2, got[RES_PD])
		TH_LOG("protection domains %ld -> %ld for two new connections",
		       res[RES_PD], got[RES_PD]);
	streams(_metadata, self, 100, 18, 120 * 1000);
}

#define COMM_EST	"/sys/module/kmsgr_rdma/parameters/fault_comm_est"

/* The RTUs @dev's CM dropped as duplicates (port 1), or -1. */
static long long rtu_duplicates(const char *dev)
{
	char path[160], line[64];

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/cm_rx_duplicates/rtu", dev);
	if (kmsgr_read_line(path, line, sizeof(line)))
		return -1;
	return strtoll(line, NULL, 0);
}

/*
 * A packet that overtakes the RTU (fault_comm_est, test builds: the
 * listener's QP reports IB_EVENT_COMM_EST right after the accept; rxe
 * itself never reports it): the listener tells its CM, which establishes
 * the connection there and then, so the RTU that comes after is a
 * duplicate (the CM's cm_rx_duplicates/rtu; a pair without it makes
 * none, unless its REP had to be resent).  The pair comes up and a
 * stream crosses it.
 */
TEST_F_TIMEOUT(rdma, comm_est_before_rtu, 180)
{
	struct kmsgr_listen l;
	struct kmsgr_addr dial;
	uint32_t srv_id, cli_id;
	long long d0, d1, d2;
	int i, ret, try;

	if (self->why)
		SKIP(return, "%s", self->why);
	if (access(COMM_EST, W_OK))
		SKIP(return, "kmsgr_rdma.ko built without KMSGR_FAULT=y");
	d0 = rtu_duplicates(self->dev);
	ASSERT_LE(0, d0) TH_LOG("no cm_rx_duplicates/rtu for %s", self->dev);
	ASSERT_EQ(0, kt_rdma_pair(&self->lp, &self->srv, &self->cli, self->ip,
				  variant->flags, &l, &dial, &srv_id, &cli_id));
	d1 = rtu_duplicates(self->dev);
	/* not asserted: a REP resent on a slow guest (after 4 s) makes one */
	if (d1 != d0)
		TH_LOG("RTU duplicates %lld -> %lld for a pair without COMM_EST",
		       d0, d1);

	for (try = 0;; try++) {
		ASSERT_EQ(0, kmsgr_write_line(COMM_EST, "1"));
		ret = kt_rdma_pair(&self->lp, &self->srv, &self->cli, self->ip,
				   variant->flags, &self->l, &self->dial,
				   &self->srv_id, &self->cli_id);
		ASSERT_EQ(0, kmsgr_write_line(COMM_EST, "0"));
		ASSERT_EQ(0, ret);
		d2 = rtu_duplicates(self->dev);
		for (i = 0; i < 100 && d2 == d1; i++) {
			kt_loop_run_once(&self->lp, 50);
			d2 = rtu_duplicates(self->dev);
		}
		if (d2 > d1 || try == 2)
			break;
		/*
		 * The REP, the client's RTU and the CM's handling of it all
		 * came before the listener's notify (another vCPU ran them
		 * meanwhile): the CM was established already and the round
		 * proves nothing.  Again, with a new pair.
		 */
		TH_LOG("round %d: the RTU came before the COMM_EST", try);
		ASSERT_EQ(0, kmsgr_close_id(self->cli.k, self->cli_id));
		/* a lossy server session may have ended with its peer */
		ret = kmsgr_close_id(self->srv.k, self->srv_id);
		ASSERT_TRUE(!ret || ret == -ENOENT) TH_LOG("close: %d", ret);
		ASSERT_EQ(0, kmsgr_close_id(self->srv.k, self->l.id));
	}
	EXPECT_LT(d1, d2) TH_LOG("RTU duplicates %lld -> %lld: the CM did not take the COMM_EST",
				 d1, d2);
	streams(_metadata, self, 50, 16, 120 * 1000);
}

/*
 * A peer that acknowledges messages without saying DONE for their PULLs
 * (fault_no_done, test builds: the receiving end reads the payload, never
 * says DONE, and its msgr2 acks still go): the sender must not hand a
 * payload back to the application while the peer can still read it.
 * Lossless: when the ack comes, the sender fails the connection with
 * EPROTO after destroying its registrations (registered_bytes 0); the
 * session comes back, every message arrives once.  Lossy sessions never
 * offer the application's memory, only copies (staging buffers), and
 * complete a message once it is written: the copies stay offered
 * (registered_bytes > 0) until the session is closed.  Meanwhile
 * netlink's instance-get reports each instance's share: the buffers of
 * its one connection pinned, the copies the client offers registered, and
 * nothing once the client's session is closed.
 */
TEST_F_TIMEOUT(rdma, no_done_peer, 180)
{
	const bool lossless = variant->flags & KMSGR_SESS_F_LOSSLESS;
	const long long one_conn = conn_pinned();
	const struct kt_event *e = NULL;
	struct kmsgr_instance_info ii;
	uint64_t cli_inst, srv_inst;
	struct kmsgr_nl *nl;
	long long pulled;
	unsigned int mark, i;

	if (self->why)
		SKIP(return, "%s", self->why);
	if (access(NO_DONE, W_OK))
		SKIP(return, "kmsgr_rdma.ko built without KMSGR_FAULT=y");
	ASSERT_LT(0, one_conn);
	ASSERT_EQ(0, kmsgr_nl_open(&nl));
	cli_inst = kt_nl_instance_of(nl, self->cli_id, false,
				     KMSGR_XPRT_RDMA);
	srv_inst = kt_nl_instance_of(nl, self->srv_id, true,
				     KMSGR_XPRT_RDMA);
	ASSERT_NE(0, cli_inst) TH_LOG("no client session in the dump");
	ASSERT_NE(0, srv_inst) TH_LOG("no server session in the dump");
	ASSERT_NE(cli_inst, srv_inst);
	/* one connection each, nothing offered yet */
	EXPECT_EQ(0, nl_inst_mem(nl, &self->lp, cli_inst, one_conn, 0, 5000,
				 &ii))
		TH_LOG("client instance: pinned %llu registered %llu, expected %lld and 0",
		       (unsigned long long)ii.pinned,
		       (unsigned long long)ii.registered, one_conn);
	EXPECT_EQ(0, nl_inst_mem(nl, &self->lp, srv_inst, one_conn, 0, 5000,
				 &ii))
		TH_LOG("server instance: pinned %llu registered %llu, expected %lld and 0",
		       (unsigned long long)ii.pinned,
		       (unsigned long long)ii.registered, one_conn);
	mark = self->lp.nr_ev;
	pulled = kt_rdma_counter("pulled_bytes");
	ASSERT_EQ(0, kmsgr_write_line(NO_DONE, "1"));
	/* lossy: at most 4 pieces, within the 4 staging registrations */
	streams(_metadata, self, lossless ? 16 : 4, 20, 120 * 1000);
	ASSERT_EQ(0, kmsgr_write_line(NO_DONE, "0"));
	EXPECT_LT(pulled, kt_rdma_counter("pulled_bytes"))
		TH_LOG("nothing was pulled: the test proves nothing");
	if (lossless) {
		for (i = mark; i < self->lp.nr_ev && !e; i++)
			if (self->lp.ev[i].inst == &self->cli &&
			    self->lp.ev[i].event == KMSGR_EV_DOWN &&
			    self->lp.ev[i].res == -EPROTO)
				e = &self->lp.ev[i];
		ASSERT_NE(NULL, e)
			TH_LOG("the sender never failed its connection");
		EXPECT_EQ(0, kt_rdma_counter("registered_bytes"));
		streams(_metadata, self, 50, 20, 120 * 1000);
	} else {
		EXPECT_EQ(NULL, kt_find_event(&self->lp, &self->cli,
					      self->cli_id, KMSGR_EV_DOWN,
					      mark));
		EXPECT_LT(0, kt_rdma_counter("registered_bytes"));
		/* the copies the client offered are its instance's */
		EXPECT_EQ(0, nl_inst_mem(nl, &self->lp, cli_inst, one_conn,
					 -1, 0, &ii))
			TH_LOG("client instance: pinned %llu registered %llu",
			       (unsigned long long)ii.pinned,
			       (unsigned long long)ii.registered);
		EXPECT_GE(kt_rdma_counter("registered_bytes"),
			  (long long)ii.registered);
		TH_LOG("client instance %llu: pinned %llu, registered %llu",
		       (unsigned long long)cli_inst,
		       (unsigned long long)ii.pinned,
		       (unsigned long long)ii.registered);
	}
	EXPECT_EQ(0, kmsgr_close_id(self->cli.k, self->cli_id));
	for (i = 0; i < 100 && kt_rdma_counter("registered_bytes"); i++)
		kt_loop_run_once(&self->lp, 50);
	EXPECT_EQ(0, kt_rdma_counter("registered_bytes"));
	/* closed: nothing of it is the client instance's any more */
	EXPECT_EQ(0, nl_inst_mem(nl, &self->lp, cli_inst, 0, 0, 5000, &ii))
		TH_LOG("client instance after close: pinned %llu registered %llu",
		       (unsigned long long)ii.pinned,
		       (unsigned long long)ii.registered);
	kmsgr_nl_close(nl);
}

/* Wait until a GID of @dev's port 1 is @gid ("fd00:0099:...": sysfs form). */
static int gid_present(const char *dev, const char *gid, int ms)
{
	char path[128];
	uint64_t end = kt_now_ms() + ms;
	int i;

	do {
		for (i = 0; i < 16; i++) {
			snprintf(path, sizeof(path),
				 "/sys/class/infiniband/%s/ports/1/gids/%d",
				 dev, i);
			if (file_has(path, gid))
				return 0;
		}
		usleep(100000);
	} while (kt_now_ms() < end);
	return -1;
}

/*
 * A second session, over IPv6: a unique-local address fd00:99::N (N the
 * last byte of KMSGR_VM_IP) on the NIC, rxe0's GID for it, a listener on
 * :: (IPv6 only) and a client dialling [fd00:99::N]; a stream crosses it
 * both ways; the address goes again.
 */
TEST_F_TIMEOUT(rdma, ipv6, 120)
{
	char netdev[64], ip6[64], gid[64], cmd[192];
	const char *dot;
	int ret;

	if (self->why)
		SKIP(return, "%s", self->why);
	ASSERT_EQ(0, rxe_netdev(self->dev, netdev, sizeof(netdev)));
	dot = strrchr(self->ip, '.');
	ASSERT_NE(NULL, dot);
	snprintf(ip6, sizeof(ip6), "fd00:99::%x", atoi(dot + 1));
	snprintf(gid, sizeof(gid), "fd00:0099:0000:0000:0000:0000:0000:%04x",
		 atoi(dot + 1));
	snprintf(cmd, sizeof(cmd), "ip -6 addr add %s/64 dev %s nodad", ip6,
		 netdev);
	ret = system(cmd);
	ASSERT_EQ(0, ret) TH_LOG("%s failed", cmd);
	ret = gid_present(self->dev, gid, 10000);
	EXPECT_EQ(0, ret) TH_LOG("no GID %s on %s", gid, self->dev);
	if (!ret) {
		EXPECT_EQ(0, kt_rdma_pair(&self->lp, &self->srv, &self->cli,
					  ip6, variant->flags, &self->l,
					  &self->dial, &self->srv_id,
					  &self->cli_id));
		EXPECT_EQ(AF_INET6, self->dial.family);
		EXPECT_EQ(AF_INET6, self->l.bound.family);
		if (!_metadata->passed)
			goto out;
		streams(_metadata, self, 200, 18, 60 * 1000);
	}
out:
	snprintf(cmd, sizeof(cmd), "ip -6 addr del %s/64 dev %s", ip6, netdev);
	ret = system(cmd);
	EXPECT_EQ(0, ret) TH_LOG("%s failed", cmd);
}

/*
 * The client process: a session to @dial, a stream in flight, a byte
 * to @fd once it is under way, then wait to be killed.
 */
static void doomed_client(const struct kmsgr_addr *dial, uint32_t flags,
			  int fd)
{
	struct kt_plan plan = {
		.count = 1000, .max_log2 = 20, .small_log2 = 20,
		.big_one_in = 1, .seed = 0xdead,
	};
	struct kt_inst ti;
	struct kt_stream st;
	struct kt_loop lp;
	uint32_t id;
	int i;

	if (kt_inst_open(&ti, "doomed", SQ_ENTRIES, TX_AREA, RX_POOL, 33))
		_exit(2);
	ti.transport = KMSGR_XPRT_RDMA;
	ti.key = variant_key(flags);
	kt_loop_init(&lp);
	kt_loop_add(&lp, &ti);
	if (kt_connect(&ti, dial, flags, KT_PEER_ANY, 0xdead, &id) ||
	    !wait_for(&lp, &ti, id, KMSGR_EV_UP, 0, SETUP_MS))
		_exit(3);
	/* the peer session id is not known here: the stream only sends */
	if (kt_stream_init(&st, &ti, id, &ti, 0, &plan, 16))
		_exit(4);
	kt_loop_add_stream(&lp, &st);
	for (i = 0; i < 5; i++)
		kt_loop_run_once(&lp, 20);
	if (write(fd, "x", 1) != 1)
		_exit(5);
	for (;;)
		kt_loop_run_once(&lp, 1000);
}

TEST_F_TIMEOUT(rdma, client_killed, 120)
{
	const uint8_t gone = variant->flags & KMSGR_SESS_F_LOSSLESS ?
			     KMSGR_EV_DOWN : KMSGR_EV_CLOSED;
	long long pinned0;
	long res[NR_RES], got[NR_RES];
	const struct kt_event *acc = NULL;
	unsigned int mark, i;
	int pfd[2], status;
	uint64_t end;
	pid_t pid;
	char c;

	if (self->why)
		SKIP(return, "%s", self->why);
	ASSERT_EQ(0, res_counts(self->dev, res));
	pinned0 = kt_rdma_counter("pinned_bytes");
	mark = self->lp.nr_ev;
	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(pfd[0]);
		doomed_client(&self->dial, variant->flags, pfd[1]);
	}
	close(pfd[1]);
	/* serve its handshake until it says its stream is under way */
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	end = kt_now_ms() + SETUP_MS;
	while (read(pfd[0], &c, 1) != 1 && kt_now_ms() < end)
		kt_loop_run_once(&self->lp, 20);
	close(pfd[0]);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status))
		TH_LOG("the client exited by itself: status %d", status);
	for (i = mark; i < self->lp.nr_ev && !acc; i++)
		if (self->lp.ev[i].inst == &self->srv &&
		    self->lp.ev[i].event == KMSGR_EV_ACCEPTED)
			acc = &self->lp.ev[i];
	ASSERT_NE(NULL, acc) TH_LOG("the killed client was never accepted");
	/* its server session sees the connection go */
	ASSERT_NE(NULL, wait_for(&self->lp, &self->srv, acc->session, gone,
				 mark, 30000));
	/* and the connection's verbs objects and buffers with it */
	EXPECT_EQ(0, res_back(self->dev, res, got, 10000))
		TH_LOG("qp %ld mr %ld cm_id %ld, before %ld %ld %ld", got[0],
		       got[1], got[2], res[0], res[1], res[2]);
	for (i = 0; i < 100 && kt_rdma_counter("pinned_bytes") != pinned0; i++)
		usleep(50000);
	EXPECT_EQ(pinned0, kt_rdma_counter("pinned_bytes"));
	/* the first session did not notice (the killed one's were strays) */
	self->lp.stray = 0;
	streams(_metadata, self, 100, 18, 60 * 1000);
}

#define MANY	100
#define HALF_OPEN	"/sys/module/kmsgr/parameters/max_half_open"

/*
 * MANY sessions from one instance: the memory they keep mapped stays
 * within the documented bound (per connection: credits receive and as
 * many send buffers of buf_size bytes), INFO reports what the module
 * parameter does, and all of it goes with the sessions.
 */
TEST_F_TIMEOUT(rdma, many_sessions_bounded, 300)
{
	long long pinned0, pinned, per_conn, bound;
	struct kmsgr_info info;
	char half_open[32];
	uint32_t id[MANY];
	unsigned int i, up = 0;
	long res[NR_RES], got[NR_RES];

	if (self->why)
		SKIP(return, "%s", self->why);
	ASSERT_EQ(0, res_counts(self->dev, res));
	pinned0 = kt_rdma_counter("pinned_bytes");
	per_conn = 2 * kt_rdma_counter("credits") * kt_rdma_counter("buf_size");
	ASSERT_LT(0, per_conn);
	/*
	 * All MANY handshakes may be in progress at once: above the
	 * listener's max_half_open (64) a lossy client would be refused and
	 * closed, which is not what this test is about.
	 */
	ASSERT_EQ(0, kmsgr_read_line(HALF_OPEN, half_open, sizeof(half_open)));
	ASSERT_EQ(0, kmsgr_write_line(HALF_OPEN, "256"));
	/* no ASSERT until the old limit is back, for the tests after */
	for (i = 0; i < MANY; i++) {
		id[i] = 0;
		EXPECT_EQ(0, kt_connect(&self->cli, &self->dial,
					variant->flags, KT_PEER_ANY, 0x100 + i,
					&id[i]));
	}
	for (i = 0; i < MANY; i++)
		up += id[i] && wait_for(&self->lp, &self->cli, id[i],
					KMSGR_EV_UP, 0, 60000);
	EXPECT_EQ(0, kmsgr_write_line(HALF_OPEN, half_open));
	ASSERT_EQ(MANY, up);
	EXPECT_EQ(0, self->lp.nr_ev_dropped);

	/* both ends of each connection are in this guest */
	pinned = kt_rdma_counter("pinned_bytes") - pinned0;
	bound = 2LL * MANY * per_conn;
	TH_LOG("%u sessions: %lld bytes mapped (bound %lld, %lld per connection)",
	       MANY, pinned, bound, per_conn);
	EXPECT_LE(pinned, bound);
	EXPECT_LT(0, pinned);
	ASSERT_EQ(0, kmsgr_info(self->cli.k, &info));
	EXPECT_EQ(kt_rdma_counter("pinned_bytes"), (long long)info.pinned_bytes);
	EXPECT_EQ(kt_rdma_counter("registered_bytes"),
		  (long long)info.registered_bytes);

	for (i = 0; i < MANY; i++)
		EXPECT_EQ(0, kmsgr_close_id(self->cli.k, id[i]));
	for (i = 0; i < 200 && kt_rdma_counter("pinned_bytes") != pinned0; i++)
		kt_loop_run_once(&self->lp, 50);
	EXPECT_EQ(pinned0, kt_rdma_counter("pinned_bytes"));
	EXPECT_EQ(0, res_back(self->dev, res, got, 20000))
		TH_LOG("qp %ld mr %ld cm_id %ld, before %ld %ld %ld", got[0],
		       got[1], got[2], res[0], res[1], res[2]);
}

TEST_F_TIMEOUT(rdma, refused, 60)
{
	const struct kt_event *e;
	struct kmsgr_addr a;
	uint32_t id;

	if (self->why)
		SKIP(return, "%s", self->why);
	/* the listener's port + 1: nobody listens there */
	ASSERT_EQ(0, kt_addr(&a, self->ip, ntohs(self->l.bound.port) + 1));
	ASSERT_EQ(0, kt_connect(&self->cli, &a, 0, KT_PEER_ANY, 0xbad, &id));
	e = wait_for(&self->lp, &self->cli, id, KMSGR_EV_CLOSED, 0, 20000);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(KMSGR_REASON_CONNECT, e->reason);
	EXPECT_EQ(-ECONNREFUSED, e->res);
}

/*
 * LISTENs that fail (the port taken; an address no RDMA device has) leave
 * nothing behind: the transport's failed listen kicked its owner, whose
 * accept work then ran on the freed listener (slub_debug: an oops).
 */
TEST_F_TIMEOUT(rdma, listen_failures, 60)
{
	struct kmsgr_listen l;
	int i, ret;

	if (self->why)
		SKIP(return, "%s", self->why);
	for (i = 0; i < 20; i++) {
		memset(&l, 0, sizeof(l));
		ASSERT_EQ(0, kt_addr(&l.addr, self->ip,
				     ntohs(self->l.bound.port)));
		l.transport = KMSGR_XPRT_RDMA;
		ret = kmsgr_listen(self->srv.k, &l);
		ASSERT_GT(0, ret);	/* rdma_bind_addr() refuses it */
		if (!i)
			TH_LOG("the port taken: %s", kmsgr_strerror(ret));
		memset(&l, 0, sizeof(l));
		ASSERT_EQ(0, kt_addr(&l.addr, "192.0.2.1", 0));
		l.transport = KMSGR_XPRT_RDMA;
		ret = kmsgr_listen(self->srv.k, &l);
		ASSERT_GT(0, ret);
	}
	usleep(300 * 1000);	/* what was queued has run */
	ASSERT_EQ(0, kt_listen(&self->srv, self->ip, 0, 0, &l));
	EXPECT_EQ(0, kmsgr_close_id(self->srv.k, l.id));
}

#define LISTEN_MS	"/sys/module/kmsgr_rdma/parameters/fault_listen_ms"
#define BIND_MS		"/sys/module/kmsgr_rdma/parameters/fault_bind_ms"

/* The child of listen_during_removal: its LISTEN's result, as exit code. */
static int listen_child(const char *ip)
{
	struct kmsgr_listen l;
	struct kt_inst ti;
	int ret;

	if (kt_inst_open(&ti, "listener", 16, 1 << 16, 1 << 16, 33))
		return 100;
	memset(&l, 0, sizeof(l));
	if (kt_addr(&l.addr, ip, 0))
		return 101;
	l.transport = KMSGR_XPRT_RDMA;
	ret = kmsgr_listen(ti.k, &l);
	printf("# the LISTEN during the removal: %s\n",
	       ret ? kmsgr_strerror(ret) : "listening");
	fflush(stdout);		/* the child leaves by _exit() */
	kt_inst_close(&ti);
	return ret == -ENODEV ? 0 : ret ? 102 : 103;
}

/*
 * A LISTEN on the device's address that its removal meets after @param
 * (a fault point's sleep, test builds): between listing the listener and
 * listening (fault_listen_ms), or between binding to the device and
 * listing the listener (fault_bind_ms).  The LISTEN fails with ENODEV.
 * The removal used to destroy the cm_id the LISTEN then listened on
 * (slub_debug: a use-after-free); met before the listing, it did not see
 * the listener, which then listened (and the removal waited forever for
 * its cm_id) or, as here, failed EINVAL.  After the device is back, a
 * LISTEN there works.
 */
static void removal_meets_listen(struct __test_metadata *_metadata,
				 const char *param)
{
	const char *dev = getenv("KMSGR_RXE") ? getenv("KMSGR_RXE") : "rxe0";
	const char *ip = getenv("KMSGR_VM_IP");
	const char *why = kmsgr_missing(1);
	struct kmsgr_listen l;
	char netdev[64], cmd[256];
	struct kt_inst ti;
	int status, ret;
	pid_t pid;

	if (why)
		SKIP(return, "%s", why);
	if (!ip || !*ip)
		SKIP(return, "KMSGR_VM_IP not set (run in the guest with --rxe)");
	if (access(param, W_OK))
		SKIP(return, "kmsgr_rdma.ko built without KMSGR_FAULT=y");
	ASSERT_EQ(0, rxe_netdev(dev, netdev, sizeof(netdev)));
	ASSERT_EQ(0, kmsgr_write_line(param, "5000"));
	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(listen_child(ip));
	/* it sleeps in its LISTEN (msleep(): state D), at most 10 s */
	for (ret = 0; ret < 1000 && !kmsgr_task_in_d(pid); ret++)
		usleep(10000);
	snprintf(cmd, sizeof(cmd), "rdma link delete %s", dev);
	ret = system(cmd);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	kmsgr_write_line(param, "0");
	snprintf(cmd, sizeof(cmd), "rdma link add %s type rxe netdev %s", dev,
		 netdev);
	ASSERT_EQ(0, system(cmd)) TH_LOG("%s failed", cmd);
	ASSERT_EQ(0, rxe_active(dev, 30000)) TH_LOG("%s not ACTIVE", dev);
	ASSERT_EQ(0, ret) TH_LOG("rdma link delete %s failed", dev);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("the LISTEN did not fail with ENODEV (exit %d)",
		       WEXITSTATUS(status));

	ASSERT_EQ(0, kt_inst_open(&ti, "listener", 16, 1 << 16, 1 << 16, 34));
	ASSERT_EQ(0, kt_listen(&ti, ip, 0, 0, &l));
	EXPECT_EQ(0, kmsgr_close_id(ti.k, l.id));
	kt_inst_close(&ti);
}

FIXTURE(removal) {
};

FIXTURE_SETUP(removal)
{
}

FIXTURE_TEARDOWN(removal)
{
}

/* a fixture only for its timeout: the device takes seconds to come back */
TEST_F_TIMEOUT(removal, listen_during_removal, 120)
{
	removal_meets_listen(_metadata, LISTEN_MS);
}

TEST_F_TIMEOUT(removal, bind_during_removal, 120)
{
	removal_meets_listen(_metadata, BIND_MS);
}

TEST_HARNESS_MAIN
