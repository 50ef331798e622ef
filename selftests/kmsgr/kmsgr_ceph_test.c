// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - kmsgr as a client of a real ceph-mon 16.2 in the guest.
 *
 * Variants: auth none in crc mode; cephx in crc mode; cephx in secure mode.
 * Each connects one lossy session to the mon through libkmsgr and checks:
 *
 *   MPing (2)            -> an MPing whose front is JSON with "health";
 *                           again with a 64 KiB and a 3 MiB data segment
 *   MMonGetVersion (19)  -> MMonGetVersionReply (20): echoed handle (front
 *                           and tid), version == `osd dump` epoch (just
 *                           raised by a flag set and cleared)
 *   MMonGetMap (5)       -> MMonMap (4) whose fsid is the cluster's
 *
 * The clusters come from selftests/msgr2/ceph_cluster.sh: the directories
 * in KMSGR_CEPH_NONE / KMSGR_CEPH_CEPHX when set (run_guest.sh starts the
 * two clusters once), else the test starts and stops its own.  SKIP when
 * ceph-mon is not installed.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <ctype.h>
#include <stdint.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmsgr_selftest.h"
#include "kmsgr_ring_util.h"

#define MSG_PING		2
#define MSG_MON_MAP		4
#define MSG_MON_GET_MAP		5
#define MSG_MON_GET_VERSION	19
#define MSG_MON_GET_VERSION_REPLY 20
#define ENTITY_MON		1
#define WAIT_MS			30000
#define DATA_OFF		4096		/* tx area: data after the front */
#define DATA_MAX		(3U << 20)

FIXTURE(ceph) {
	const char *why;
	char whybuf[160];
	char dir[256];
	bool own_cluster;
	struct kt_inst ti;
	uint32_t id;
	int kmsg;
	uint8_t *reply;		/* front of the last reply */
	uint32_t reply_len;
	uint64_t reply_tid;
};

FIXTURE_VARIANT(ceph) {
	const char *auth;	/* "none" or "cephx" */
	const char *env;	/* cluster directory from run_guest.sh */
	uint32_t flags;
};

FIXTURE_VARIANT_ADD(ceph, none_crc) {
	.auth = "none", .env = "KMSGR_CEPH_NONE", .flags = 0,
};

FIXTURE_VARIANT_ADD(ceph, cephx_crc) {
	.auth = "cephx", .env = "KMSGR_CEPH_CEPHX", .flags = 0,
};

FIXTURE_VARIANT_ADD(ceph, cephx_secure) {
	.auth = "cephx", .env = "KMSGR_CEPH_CEPHX",
	.flags = KMSGR_SESS_F_SECURE,
};

static const char *top_dir(void)
{
	const char *t = getenv("KMSGR_TOP");

	return t && *t ? t : ".";
}

/* Read the first line of DIR/NAME into @buf. */
static int read_cluster_file(const char *dir, const char *name, char *buf,
			     size_t len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return kmsgr_read_line(path, buf, len);
}

FIXTURE_SETUP(ceph)
{
	struct kmsgr_connect c;
	struct kmsgr_cqe *cqe;
	char cmd[1024], addr[64];
	const char *env;
	uint8_t key[16];
	uint64_t end;
	int ret;

	self->kmsg = -1;
	self->why = kmsgr_missing(1);
	if (self->why)
		return;
	if (system("command -v ceph-mon >/dev/null 2>&1")) {
		self->why = "ceph-mon is not installed (apt install ceph-mon ceph-common)";
		return;
	}
	env = getenv(variant->env);
	if (env && *env) {
		snprintf(self->dir, sizeof(self->dir), "%s", env);
	} else {
		snprintf(self->dir, sizeof(self->dir), "/tmp/kmsgr-ceph.%d",
			 getpid());
		snprintf(cmd, sizeof(cmd),
			 "%s/selftests/msgr2/ceph_cluster.sh start %s %s >&2",
			 top_dir(), variant->auth, self->dir);
		ASSERT_EQ(0, system(cmd)) TH_LOG("%s failed", cmd);
		self->own_cluster = true;
	}
	ASSERT_EQ(0, read_cluster_file(self->dir, "addr", addr,
				       sizeof(addr)));

	self->kmsg = kt_kmsg_open();
	ASSERT_EQ(0, kt_inst_open(&self->ti, "mon-client", 64,
				  DATA_OFF + DATA_MAX, 8 << 20, 1));
	memset(&c, 0, sizeof(c));
	ASSERT_EQ(0, kmsgr_addr_parse(addr, &c.addr));
	c.transport = KMSGR_XPRT_TCP;
	c.flags = variant->flags;
	c.peer_type = ENTITY_MON;
	c.my_type = KT_ENTITY_CLIENT;
	snprintf(c.name, sizeof(c.name), "admin");
	c.user_data = 0x3011;
	if (!strcmp(variant->auth, "cephx")) {
		snprintf(cmd, sizeof(cmd), "%s/keyring", self->dir);
		ASSERT_EQ(0, kmsgr_keyring_load(cmd, "client.admin", key));
		c.auth = KMSGR_AUTH_CEPHX;
		c.key = (uintptr_t)key;
		c.key_len = sizeof(key);
	} else {
		c.auth = KMSGR_AUTH_NONE;
	}
	ret = kmsgr_connect(self->ti.k, &c);
	ASSERT_EQ(0, ret) TH_LOG("connect to the mon at %s: %s", addr,
				 kmsgr_strerror(ret));
	self->id = c.id;

	/* wait for UP; anything else is a failure */
	end = kt_now_ms() + WAIT_MS;
	for (;;) {
		ASSERT_GT(end, kt_now_ms()) TH_LOG("no UP event in %d ms",
						   WAIT_MS);
		ret = kmsgr_wait_cqe(self->ti.k, &cqe, 1000000000ULL);
		if (ret == -ETIME)
			continue;
		ASSERT_EQ(0, ret);
		ASSERT_EQ(KMSGR_CQE_EVENT, cqe->kind);
		ASSERT_EQ(self->id, cqe->session);
		ASSERT_EQ(KMSGR_EV_UP, cqe->event)
			TH_LOG("session event %s (%s, res %d)",
			       kmsgr_event_str(cqe->event),
			       kmsgr_reason_str(cqe->reason), cqe->res);
		kmsgr_cqe_seen(self->ti.k);
		break;
	}
}

FIXTURE_TEARDOWN(ceph)
{
	char cmd[1024], line[512];

	free(self->reply);
	if (self->ti.k)
		kt_inst_close(&self->ti);
	if (self->own_cluster) {
		snprintf(cmd, sizeof(cmd),
			 "%s/selftests/msgr2/ceph_cluster.sh stop %s >&2",
			 top_dir(), self->dir);
		EXPECT_EQ(0, system(cmd));
	}
	if (self->kmsg >= 0) {
		usleep(200000);
		EXPECT_EQ(0, kt_kmsg_check(self->kmsg, line, sizeof(line)))
			TH_LOG("kernel log: %s", line);
		close(self->kmsg);
	}
}

static void put_le32(uint8_t *p, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t get_le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * Send a message whose front is @front (copied to the start of the tx
 * area) and whose data segment is @data_len bytes of a pattern, wait for its SEND completion and for a message of @reply_type
 * (others are released and ignored); keep that one's front in self->reply.
 * Return: 0 or a negative errno (-ETIME, the send's error, -ECONNRESET on
 * a session event).
 */
static int mon_call(struct __test_metadata *_metadata,
		    FIXTURE_DATA(ceph) *self, uint16_t type, uint16_t version,
		    uint16_t compat, uint64_t tid, const void *front,
		    uint32_t front_len, uint32_t data_len,
		    uint16_t reply_type)
{
	struct kmsgr_slice f = { 0, front_len }, none = { 0, 0 };
	struct kmsgr_slice d = { DATA_OFF, data_len };
	struct kmsgr_cqe *cqe, c;
	struct kmsgr_sqe *sqe;
	bool sent = false, got = false;
	uint64_t end = kt_now_ms() + WAIT_MS;
	uint32_t i;
	int ret;

	memcpy(self->ti.buf, front, front_len);
	for (i = 0; i < data_len; i++)
		self->ti.buf[DATA_OFF + i] = (uint8_t)(i * 13 + (i >> 12));
	sqe = kt_sqe(&self->ti);
	if (!sqe)
		return -EBUSY;
	kmsgr_prep_send(sqe, self->id, type, tid, f, none, d, 0x5e4d);
	sqe->version = version;
	sqe->compat_version = compat;
	free(self->reply);
	self->reply = NULL;
	while (!sent || !got) {
		if (kt_now_ms() >= end) {
			TH_LOG("no %s in %d ms", sent ? "reply" :
			       "SEND completion", WAIT_MS);
			return -ETIME;
		}
		ret = kmsgr_wait_cqe(self->ti.k, &cqe, 1000000000ULL);
		if (ret == -ETIME)
			continue;
		if (ret)
			return ret;
		c = *cqe;
		kmsgr_cqe_seen(self->ti.k);
		switch (c.kind) {
		case KMSGR_CQE_SEND:
			if (c.res)
				return c.res;
			sent = true;
			break;
		case KMSGR_CQE_RECV:
			if (c.type == reply_type && !got) {
				got = true;
				self->reply_len = c.seg[0].len;
				self->reply_tid = c.tid;
				self->reply = malloc(c.seg[0].len + 1);
				if (!self->reply)
					return -ENOMEM;
				memcpy(self->reply, self->ti.buf + c.seg[0].off,
				       c.seg[0].len);
				self->reply[c.seg[0].len] = 0;
			} else {
				TH_LOG("ignoring message type %u", c.type);
			}
			sqe = kt_sqe(&self->ti);
			if (!sqe)
				return -EBUSY;
			kmsgr_prep_release(sqe, &c);
			break;
		case KMSGR_CQE_EVENT:
			TH_LOG("session event %s (%s, res %d)",
			       kmsgr_event_str(c.event),
			       kmsgr_reason_str(c.reason), c.res);
			return -ECONNRESET;
		default:
			TH_LOG("unexpected CQE kind %u res %d", c.kind, c.res);
			return -EPROTO;
		}
	}
	return kmsgr_submit(self->ti.k, 0, 0) < 0 ? -EIO : 0;
}

/*
 * The command that sends the mon commands @cmds (JSON, shell-quoted) and
 * prints the last one's output, then @redir: selftests/kmsgr/rados_check.py,
 * one librados process (the `ceph` CLI, run three times per variant here
 * before, takes 4 s or more to start under TCG).
 */
static void mon_cmdline(char *buf, size_t len, const char *dir,
			const char *cmds, const char *redir)
{
	snprintf(buf, len,
		 "timeout 60 /usr/bin/python3 %s/selftests/kmsgr/rados_check.py "
		 "%s/ceph.conf - mon %s %s",
		 top_dir(), dir, cmds, redir);
}

/*
 * The epoch of `osd dump`, or -1.  With @bump, new osdmap epochs first (a
 * flag set and cleared, in the same process), so that the version the mon
 * reports must follow the map, not match it by chance.
 */
static long osdmap_epoch(const char *dir, bool bump)
{
	char cmd[1024], out[65536], *p;
	size_t n;
	FILE *f;

	mon_cmdline(cmd, sizeof(cmd), dir,
		    bump ? "'{\"prefix\":\"osd set\",\"key\":\"noout\"}' "
			   "'{\"prefix\":\"osd unset\",\"key\":\"noout\"}' "
			   "'{\"prefix\":\"osd dump\",\"format\":\"json\"}'" :
			   "'{\"prefix\":\"osd dump\",\"format\":\"json\"}'",
		    "2>/dev/null");
	f = popen(cmd, "r");
	if (!f)
		return -1;
	n = fread(out, 1, sizeof(out) - 1, f);
	if (pclose(f))
		return -1;
	out[n] = 0;
	p = strstr(out, "\"epoch\":");
	return p ? strtol(p + 8, NULL, 10) : -1;
}

/* "xxxxxxxx-xxxx-..." from 16 bytes */
static void fmt_uuid(const uint8_t *u, char *s)
{
	int i, o = 0;

	for (i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			s[o++] = '-';
		o += sprintf(s + o, "%02x", u[i]);
	}
}

TEST_F_TIMEOUT(ceph, ping_version_map, 300)
{
	uint8_t front[64];
	char fsid[64], got[40];
	uint64_t handle = 0x6b6d736772000001ULL;
	long epoch, epoch_after;
	int ret;

	if (self->why)
		SKIP(return, "%s", self->why);

	/* MPing: the mon answers with a JSON report */
	ret = mon_call(_metadata, self, MSG_PING, 1, 0, 0, NULL, 0, 0, MSG_PING);
	ASSERT_EQ(0, ret) TH_LOG("MPing: %s", kmsgr_strerror(ret));
	ASSERT_LE(4, self->reply_len);
	EXPECT_EQ(self->reply_len - 4, get_le32(self->reply));
	EXPECT_TRUE(strstr((char *)self->reply + 4, "\"health\""))
		TH_LOG("MPing reply: %.200s", self->reply + 4);

	/*
	 * The same with a data segment of 64 KiB, then 3 MiB (the mon
	 * ignores it but must verify it): in secure mode the tail is sealed
	 * in a scratch grown to the message and a scatterlist of hundreds
	 * of vmalloc pages, then checked by the mon's own crypto.
	 */
	ret = mon_call(_metadata, self, MSG_PING, 1, 0, 0, NULL, 0, 64 << 10,
		       MSG_PING);
	ASSERT_EQ(0, ret) TH_LOG("MPing + 64 KiB: %s", kmsgr_strerror(ret));
	ret = mon_call(_metadata, self, MSG_PING, 1, 0, 0, NULL, 0, DATA_MAX,
		       MSG_PING);
	ASSERT_EQ(0, ret) TH_LOG("MPing + 3 MiB: %s", kmsgr_strerror(ret));
	EXPECT_TRUE(strstr((char *)self->reply + 4, "\"health\""));

	/*
	 * MMonGetVersion(osdmap): handle echoed, version = the osdmap epoch
	 * `osd dump` gave just before, after a bump (so the mon's current
	 * one, not an old one it held), or a later one: the OSDs may change
	 * the map meanwhile (a heartbeat missed on a loaded guest)
	 */
	epoch = osdmap_epoch(self->dir, true);
	ASSERT_LT(0, epoch) TH_LOG("cannot bump the osdmap epoch and read it from `osd dump`");
	put_le64(front, handle);
	put_le32(front + 8, 6);
	memcpy(front + 12, "osdmap", 6);
	ret = mon_call(_metadata, self, MSG_MON_GET_VERSION, 1, 0, handle,
		       front, 18, 0, MSG_MON_GET_VERSION_REPLY);
	ASSERT_EQ(0, ret) TH_LOG("MMonGetVersion: %s", kmsgr_strerror(ret));
	ASSERT_LE(24, self->reply_len);
	EXPECT_EQ(handle, get_le64(self->reply));
	EXPECT_EQ(handle, self->reply_tid);
	epoch_after = osdmap_epoch(self->dir, false);
	ASSERT_LE(epoch, epoch_after);
	EXPECT_LE((uint64_t)epoch, get_le64(self->reply + 8));
	EXPECT_GE((uint64_t)epoch_after, get_le64(self->reply + 8));
	TH_LOG("osdmap version %llu (osd dump: epoch %ld before, %ld after)",
	       (unsigned long long)get_le64(self->reply + 8), epoch,
	       epoch_after);

	/* MMonGetMap: the monmap's fsid is the cluster's */
	ret = mon_call(_metadata, self, MSG_MON_GET_MAP, 1, 1, 0, NULL, 0, 0,
		       MSG_MON_MAP);
	ASSERT_EQ(0, ret) TH_LOG("MMonGetMap: %s", kmsgr_strerror(ret));
	ASSERT_LE(30, self->reply_len);
	fmt_uuid(self->reply + 10, got);
	ASSERT_EQ(0, read_cluster_file(self->dir, "fsid", fsid,
				       sizeof(fsid)));
	EXPECT_STREQ(fsid, got);
}

TEST_HARNESS_MAIN
