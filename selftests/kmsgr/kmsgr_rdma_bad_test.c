// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - rogue RDMA peers against a kmsgr RDMA listener.
 *
 * The fixture: a server instance listening over RDMA on 0.0.0.0 (a free
 * port), a client instance with one good lossy msgr2 session to it through
 * KMSGR_VM_IP (tools/vm/run --rxe; SKIP without it; FAIL without
 * KMSGR_FEAT_RDMA in the guest).  Each test runs kmsgr_rdma_rogue (built
 * next to this program) against the same listener for one case, then
 * proves: the rogue saw what it had to (exit 0), the kernel log has the
 * kmsgr_rdma line that says why (where kmsgr has one), kmsgr released the
 * rogue's connection (kmsgr_rdma pinned_bytes back where it was), the good
 * session still carries 50 messages each way and saw no DOWN or CLOSED,
 * and the kernel log shows no warning.
 *
 *  reject_no_private    connect request without private data: rejected,
 *                       reason PARAMS (2) in the reject's private data
 *  reject_bad_magic     wrong magic: rejected, reason PARAMS
 *  reject_bad_version   wire version 2: rejected, reason VERSION (1), and
 *                       the reject names version 1
 *  reject_few_credits   1 credit announced: rejected, reason PARAMS
 *  reject_small_buffer  4-byte buffers announced: rejected, reason PARAMS
 *  legal_peer           the control: valid private data, a CREDIT and an
 *                       empty DATA message; kmsgr keeps the connection and
 *                       logs no kmsgr_rdma connection error (so the hang-
 *                       ups below are the misbehaviour's doing)
 *  credit_overrun       the rogue returns exactly the credits kmsgr has
 *                       out (kept), then one more: kmsgr hangs up, "credit
 *                       overrun (1 granted, 0 outstanding)"
 *  oversize_send        a SEND one byte over the buffer size kmsgr
 *                       announced: "receive failed: ..." (the status is
 *                       the device's: rxe says local QP operation error
 *                       where the IB spec has local length error), kmsgr
 *                       hangs up
 *  unknown_type         a message of type 9: "unknown message type 9"
 *  bad_flags            flags 0x80: "malformed message (4 bytes)"
 *  short_message        3 bytes: "malformed message (3 bytes)"
 *  empty_message        0 bytes: "malformed message (0 bytes)"
 *  recv_overrun         twice kmsgr's credits in SENDs at once: the rogue's
 *                       SEND fails with RNR retry exceeded (kmsgr accepts
 *                       with rnr_retry 0) or kmsgr hangs up; the
 *                       connection ends, kmsgr frees it
 *  read_bad_rkey        an RDMA READ of kmsgr's memory under a made-up
 *                       key: kmsgr's QP goes to error with no disconnect
 *                       and no event (rxe); within 5 s kmsgr logs "queue
 *                       pair in error without a disconnect" and hangs up
 *  read_bad_rkey_before_established
 *                       the same while kmsgr's CM handler still holds the
 *                       RTU (fault_est_ms, test builds): the QP goes to
 *                       error and flushes before the connection counts as
 *                       connected; kmsgr hangs up all the same
 *
 * The PULL cases grant kmsgr RDMA READs, and their first message is a PULL
 * (the stream's first bytes, the banner, in the rogue's memory).  Besides
 * the above, kmsgr_rdma pulled_bytes must grow by exactly what kmsgr could
 * read of it (the good session is idle meanwhile):
 *
 *  pull_legal           the control: a valid PULL of a 26-byte banner from a
 *                       peer that grants responder resources and asks no
 *                       initiator depth (it reads nothing, and announces
 *                       no KMSGR_RDMA_F_PULL): kmsgr reads the 26 bytes,
 *                       answers with a DONE naming the key, keeps the
 *                       connection and logs no kmsgr_rdma connection error
 *
 * The misbehaving ones ask an initiator depth too, as kmsgr's own client
 * does, so that they test what kmsgr makes of the PULL alone:
 *
 *  pull_bad_rkey        a wrong key: "RDMA READ failed: remote access
 *                       error" (the IBA's status of an R_Key violation),
 *                       kmsgr hangs up; nothing read
 *  pull_beyond_mr       64 KiB offered, 4 KiB registered: the READ of the
 *                       banner's 10-byte prefix succeeds, the READ of its
 *                       4096-byte payload crosses the end and fails the
 *                       same way; 10 bytes read (kmsgr_rdma read_size at
 *                       its default)
 *  pull_outside_mr      the 4 KiB below the registration under its key:
 *                       the READ fails the same way; nothing read
 *  pull_invalidated     a key deregistered before the PULL was sent: the
 *                       READ fails the same way; nothing read
 *  pull_len_0           a PULL of 0 bytes: "bad PULL descriptor", kmsgr
 *                       hangs up without reading
 *  pull_len_huge        16 MiB + 1 bytes (over KMSGR_RDMA_PULL_MAX): the
 *                       same
 *  pull_short           a 19-byte PULL message: the same
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <arpa/inet.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmsgr_selftest.h"
#include "kmsgr_ring_util.h"

#define TX_AREA		(1ULL << 20)
#define RX_POOL		(8ULL << 20)
#define SQ_ENTRIES	128
#define SETUP_MS	20000
#define ROGUE		"kmsgr_rdma_rogue"
#define ROGUE_TIMEOUT	"10000"	/* ms, the rogue's own limit */
#define ROGUE_MS	20000	/* ours */
#define RELEASE_MS	5000	/* kmsgr frees a dead connection */
#define GOOD_MSGS	50	/* each way, after each case */
#define PINNED		"/sys/module/kmsgr_rdma/parameters/pinned_bytes"

/* the instances, the listener and the good session */
struct bed {
	const char *why;	/* set: SKIP with this reason */
	const char *ip;
	struct kt_inst cli, srv;
	struct kt_loop lp;
	struct kmsgr_listen l;
	struct kmsgr_addr dial;
	uint32_t cli_id, srv_id;
	char target[80];	/* IP:PORT of the listener */
	long long pinned;	/* with the good session only */
	int kmsg;
};

FIXTURE(rdma_bad) {
	struct bed bed;
};

static long long pinned_bytes(void)
{
	return kt_rdma_counter("pinned_bytes");
}

/* Wait up to @ms for pinned_bytes to be @want; return the last value. */
static long long pinned_wait(long long want, int ms)
{
	uint64_t end = kt_now_ms() + (uint64_t)ms;
	long long v;

	for (;;) {
		v = pinned_bytes();
		if (v == want || kt_now_ms() >= end)
			return v;
		usleep(50000);
	}
}

/* test builds: a listener's connection sleeps on ESTABLISHED (ms) */
#define EST_DELAY	"/sys/module/kmsgr_rdma/parameters/fault_est_ms"

FIXTURE_SETUP(rdma_bad)
{
	struct bed *bed = &self->bed;

	bed->kmsg = -1;
	bed->ip = getenv("KMSGR_VM_IP");
	if (!bed->ip || !*bed->ip) {
		bed->why = "KMSGR_VM_IP not set (run in the guest with --rxe)";
		return;
	}
	/* in the guest everything must be there: no SKIP from here */
	ASSERT_EQ(NULL, kmsgr_missing(1));

	bed->kmsg = kt_kmsg_open();
	kt_loop_init(&bed->lp);
	ASSERT_EQ(0, kt_inst_open(&bed->srv, "server", SQ_ENTRIES, TX_AREA,
				  RX_POOL, 31));
	ASSERT_EQ(0, kt_inst_open(&bed->cli, "client", SQ_ENTRIES, TX_AREA,
				  RX_POOL, 32));
	kt_loop_add(&bed->lp, &bed->srv);
	kt_loop_add(&bed->lp, &bed->cli);
	ASSERT_EQ(0, kt_rdma_pair(&bed->lp, &bed->srv, &bed->cli, bed->ip, 0,
				  &bed->l, &bed->dial, &bed->srv_id,
				  &bed->cli_id));
	snprintf(bed->target, sizeof(bed->target), "%s:%u", bed->ip,
		 ntohs(bed->l.bound.port));
	bed->pinned = pinned_bytes();
	ASSERT_LT(0, bed->pinned) TH_LOG("%s: %lld", PINNED, bed->pinned);
}

FIXTURE_TEARDOWN(rdma_bad)
{
	struct bed *bed = &self->bed;
	char line[512];
	long long pinned;

	if (!access(EST_DELAY, W_OK))
		kmsgr_write_line(EST_DELAY, "0");
	if (bed->cli.k)
		kt_inst_close(&bed->cli);
	if (bed->srv.k)
		kt_inst_close(&bed->srv);
	if (bed->kmsg < 0)
		return;
	/* every connection, good or rogue, is gone: nothing stays mapped */
	pinned = pinned_wait(0, RELEASE_MS);
	EXPECT_EQ(0, pinned) TH_LOG("%s after close: %lld", PINNED, pinned);
	usleep(200000);
	EXPECT_EQ(0, kt_kmsg_check(bed->kmsg, line, sizeof(line)))
		TH_LOG("kernel log: %s", line);
	close(bed->kmsg);
}

/* Start the rogue (next to this program); its stdout+stderr go to *@out. */
static pid_t rogue_spawn(const char *target, const char *rcase, int *out)
{
	char exe[PATH_MAX], *slash;
	ssize_t n;
	int p[2];
	pid_t pid;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - sizeof(ROGUE));
	if (n < 0)
		return -1;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	strcpy(slash ? slash + 1 : exe, ROGUE);
	if (access(exe, X_OK)) {
		fprintf(stderr, "# %s: %s\n", exe, strerror(errno));
		return -1;
	}
	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		execl(exe, exe, "--timeout-ms", ROGUE_TIMEOUT, target, rcase,
		      NULL);
		fprintf(stderr, "exec %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	close(p[1]);
	*out = p[0];
	return pid;
}

/* Log what is in @fd (the rogue's output, it exited) line by line. */
static void rogue_output(struct __test_metadata *_metadata, int fd)
{
	char buf[4096], *line, *save = NULL;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	ssize_t n;

	while (got + 1 < sizeof(buf) && poll(&p, 1, 500) > 0) {
		n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		TH_LOG("%s", line);
}

/* what kmsgr_rdma logs when it fails a connection (xprt_rdma.c) */
static const char *const conn_errors[] = {
	"malformed message", "credit overrun", "unknown message type",
	"receive failed", "send failed", "bad PULL descriptor", "bad DONE",
	"RDMA READ failed", "registration failed",
};

/*
 * The text of the next kernel log record in @fd that comes from
 * kmsgr_rdma, or NULL when there is none now.
 */
static const char *kmsg_rdma_next(int fd, char *rec, size_t len)
{
	static const char prefix[] = "kmsgr_rdma: ";
	char *msg;
	ssize_t n;

	for (;;) {
		n = read(fd, rec, len - 1);
		if (n < 0 && errno == EPIPE)
			continue;		/* overwritten records */
		if (n <= 0)
			return NULL;
		rec[n] = '\0';
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		msg[strcspn(msg, "\n")] = '\0';
		if (!strncmp(msg, prefix, sizeof(prefix) - 1))
			return msg;
	}
}

/* 1 when a kmsgr_rdma record in @fd holds @text within @wait_ms, else 0 */
static int kmsg_find(int fd, const char *text, int wait_ms)
{
	uint64_t end = kt_now_ms() + (uint64_t)wait_ms;
	const char *msg;
	char rec[8192];

	for (;;) {
		msg = kmsg_rdma_next(fd, rec, sizeof(rec));
		if (msg && strstr(msg, text))
			return 1;
		if (msg)
			continue;
		if (kt_now_ms() >= end)
			return 0;
		usleep(50000);
	}
}

/* The first kmsgr_rdma record in @fd that fails a connection, or NULL. */
static const char *kmsg_conn_error(int fd, char *rec, size_t len)
{
	const char *msg;
	size_t i;

	while ((msg = kmsg_rdma_next(fd, rec, len)))
		for (i = 0; i < ARRAY_SIZE(conn_errors); i++)
			if (strstr(msg, conn_errors[i]))
				return msg;
	return NULL;
}

/* Run the good session: GOOD_MSGS messages each way, all intact. */
static void good_stream(struct __test_metadata *_metadata,
			struct bed *bed)
{
	struct kt_plan fwd = {
		.count = GOOD_MSGS,
		.max_log2 = 16,
		.small_log2 = 12,
		.big_one_in = 8,
		.seed = 0x900d0001,
	};
	struct kt_plan back = fwd;
	struct kt_stream a, b;
	int ret;

	back.seed++;
	ASSERT_EQ(0, kt_stream_init(&a, &bed->cli, bed->cli_id, &bed->srv,
				    bed->srv_id, &fwd, 16));
	ASSERT_EQ(0, kt_stream_init(&b, &bed->srv, bed->srv_id, &bed->cli,
				    bed->cli_id, &back, 16));
	bed->lp.nr_streams = 0;
	kt_loop_add_stream(&bed->lp, &a);
	kt_loop_add_stream(&bed->lp, &b);
	ret = kt_loop_run(&bed->lp, kt_loop_streams_finished, 30000);
	bed->lp.nr_streams = 0;
	EXPECT_EQ(0, ret) TH_LOG("good session loop: %s", kmsgr_strerror(ret));
	EXPECT_EQ(0, a.failed) TH_LOG("client->server: %s", a.why);
	EXPECT_EQ(0, b.failed) TH_LOG("server->client: %s", b.why);
	EXPECT_EQ(a.total, a.received);
	EXPECT_EQ(a.total, a.completed);
	EXPECT_EQ(b.total, b.received);
	EXPECT_EQ(b.total, b.completed);
	EXPECT_EQ(0, bed->lp.stray) TH_LOG("%s", bed->lp.stray_why);
	kt_stream_free(&a);
	kt_stream_free(&b);
}

/*
 * Run the rogue with @rcase against the listener while the instances are
 * served; then check what the header comment says.  @log: text of the
 * kmsgr_rdma line the case must produce, or NULL; @legal: no kmsgr_rdma
 * line may say that a connection failed; @pulled: the bytes kmsgr must
 * have read from the rogue with RDMA READ, or -1 when not checked.
 */
static void rogue_case_read(struct __test_metadata *_metadata,
			    struct bed *bed, const char *rcase,
			    const char *log, bool legal, long long pulled)
{
	const char *msg;
	char line[8192];
	uint64_t end;
	long long pinned, pulled0 = 0;
	int watch, check, out = -1, status = 0;
	bool exited = false;
	pid_t pid;

	if (bed->why)
		SKIP(return, "%s", bed->why);
	watch = kt_kmsg_open();
	check = kt_kmsg_open();
	ASSERT_LE(0, watch);
	ASSERT_LE(0, check);
	if (pulled >= 0) {
		pulled0 = kt_rdma_counter("pulled_bytes");
		ASSERT_LE(0, pulled0);
	}

	pid = rogue_spawn(bed->target, rcase, &out);
	ASSERT_LT(0, pid) TH_LOG("cannot start %s", ROGUE);
	end = kt_now_ms() + ROGUE_MS;
	while (kt_now_ms() < end) {
		ASSERT_EQ(0, kt_loop_run_once(&bed->lp, 50));
		if (waitpid(pid, &status, WNOHANG) == pid) {
			exited = true;
			break;
		}
	}
	if (!exited) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	rogue_output(_metadata, out);
	close(out);
	ASSERT_TRUE(exited) TH_LOG("%s %s still running after %d ms", ROGUE,
				   rcase, ROGUE_MS);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("%s %s: kmsgr did not react as it must (status %#x)",
		       ROGUE, rcase, status);

	if (log) {
		EXPECT_EQ(1, kmsg_find(watch, log, 2000))
			TH_LOG("no \"kmsgr_rdma: ...%s\" in the kernel log",
			       log);
	}
	if (legal) {
		msg = kmsg_conn_error(watch, line, sizeof(line));
		EXPECT_EQ(NULL, msg)
			TH_LOG("a connection that broke no rule failed: %s",
			       msg);
	}
	close(watch);
	/* before the good session streams: it pulls too */
	if (pulled >= 0) {
		EXPECT_EQ(pulled, kt_rdma_counter("pulled_bytes") - pulled0)
			TH_LOG("bytes kmsgr read from %s %s (pulled_bytes)",
			       ROGUE, rcase);
	}

	/* kmsgr freed the rogue's connection, and only that */
	pinned = pinned_wait(bed->pinned, RELEASE_MS);
	EXPECT_EQ(bed->pinned, pinned)
		TH_LOG("%s: %lld, %lld with the good session alone", PINNED,
		       pinned, bed->pinned);

	/* the good session did not notice */
	good_stream(_metadata, bed);
	EXPECT_EQ(NULL, kt_find_event(&bed->lp, &bed->cli, bed->cli_id,
				      KMSGR_EV_DOWN, 0));
	EXPECT_EQ(NULL, kt_find_event(&bed->lp, &bed->cli, bed->cli_id,
				      KMSGR_EV_CLOSED, 0));
	EXPECT_EQ(NULL, kt_find_event(&bed->lp, &bed->srv, bed->srv_id,
				      KMSGR_EV_DOWN, 0));
	EXPECT_EQ(NULL, kt_find_event(&bed->lp, &bed->srv, bed->srv_id,
				      KMSGR_EV_CLOSED, 0));

	usleep(100000);
	EXPECT_EQ(0, kt_kmsg_check(check, line, sizeof(line)))
		TH_LOG("kernel log: %s", line);
	close(check);
}

/* rogue_case_read() for a case that offers kmsgr nothing to read */
static void rogue_case(struct __test_metadata *_metadata,
		       struct bed *bed, const char *rcase,
		       const char *log, bool legal)
{
	rogue_case_read(_metadata, bed, rcase, log, legal, -1);
}

#define PARAMS_REFUSED	"refused: bad private data (reason 2)"

TEST_F_TIMEOUT(rdma_bad, reject_no_private, 60)
{
	rogue_case(_metadata, &self->bed, "no-private", PARAMS_REFUSED,
		   false);
}

TEST_F_TIMEOUT(rdma_bad, reject_bad_magic, 60)
{
	rogue_case(_metadata, &self->bed, "bad-magic", PARAMS_REFUSED, false);
}

TEST_F_TIMEOUT(rdma_bad, reject_bad_version, 60)
{
	rogue_case(_metadata, &self->bed, "bad-version",
		   "refused: bad private data (reason 1)", false);
}

TEST_F_TIMEOUT(rdma_bad, reject_few_credits, 60)
{
	rogue_case(_metadata, &self->bed, "few-credits", PARAMS_REFUSED,
		   false);
}

TEST_F_TIMEOUT(rdma_bad, reject_small_buffer, 60)
{
	rogue_case(_metadata, &self->bed, "small-buffer", PARAMS_REFUSED,
		   false);
}

TEST_F_TIMEOUT(rdma_bad, legal_peer, 60)
{
	rogue_case(_metadata, &self->bed, "legal", NULL, true);
}

TEST_F_TIMEOUT(rdma_bad, credit_overrun, 60)
{
	rogue_case(_metadata, &self->bed, "credit-overrun",
		   "credit overrun (1 granted, 0 outstanding)", false);
}

TEST_F_TIMEOUT(rdma_bad, oversize_send, 60)
{
	rogue_case(_metadata, &self->bed, "oversize", "receive failed: ",
		   false);
}

TEST_F_TIMEOUT(rdma_bad, unknown_type, 60)
{
	rogue_case(_metadata, &self->bed, "bad-type",
		   "unknown message type 9", false);
}

TEST_F_TIMEOUT(rdma_bad, bad_flags, 60)
{
	rogue_case(_metadata, &self->bed, "bad-flags",
		   "malformed message (4 bytes)", false);
}

TEST_F_TIMEOUT(rdma_bad, short_message, 60)
{
	rogue_case(_metadata, &self->bed, "short",
		   "malformed message (3 bytes)", false);
}

TEST_F_TIMEOUT(rdma_bad, empty_message, 60)
{
	rogue_case(_metadata, &self->bed, "empty",
		   "malformed message (0 bytes)", false);
}

/*
 * DONEs that name nothing kmsgr offered, or are malformed: the peer must
 * not be able to make kmsgr invalidate (or count as read) what it chooses.
 */
TEST_F_TIMEOUT(rdma_bad, done_unknown_key, 60)
{
	rogue_case(_metadata, &self->bed, "done-unknown", "bad DONE", false);
}

TEST_F_TIMEOUT(rdma_bad, done_reserved_set, 60)
{
	rogue_case(_metadata, &self->bed, "done-reserved", "bad DONE", false);
}

TEST_F_TIMEOUT(rdma_bad, done_short, 60)
{
	rogue_case(_metadata, &self->bed, "done-short", "bad DONE", false);
}

TEST_F_TIMEOUT(rdma_bad, recv_overrun, 60)
{
	rogue_case(_metadata, &self->bed, "recv-overrun", NULL, false);
}

/* an R_Key violation at the responder (IBA: a remote access error NAK) */
#define READ_REFUSED	"RDMA READ failed: remote access error"
#define PULL_REFUSED	"bad PULL descriptor"

/*
 * A READ of kmsgr's memory under a made-up key: kmsgr's QP goes to error
 * and the CM tells of no disconnect (rxe raises no event either); kmsgr
 * ends the connection a second later, not when msgr2's keepalive timeout
 * (30 s) notices the silence.
 */
TEST_F_TIMEOUT(rdma_bad, read_bad_rkey, 60)
{
	rogue_case(_metadata, &self->bed, "read-bad-rkey",
		   "queue pair in error without a disconnect", false);
}

/*
 * The same READ while kmsgr's side is still connecting: its CM handler
 * sleeps 500 ms on ESTABLISHED (the RTU came; the rogue's READ, sent as
 * soon as its own side was established, gets there first).  The QP goes
 * to error and flushes before the connection counts as connected, as it
 * may when a peer's first packet overtakes the RTU.
 */
TEST_F_TIMEOUT(rdma_bad, read_bad_rkey_before_established, 60)
{
	if (self->bed.why)
		SKIP(return, "%s", self->bed.why);
	if (access(EST_DELAY, W_OK))
		SKIP(return, "kmsgr_rdma.ko built without KMSGR_FAULT=y");
	ASSERT_EQ(0, kmsgr_write_line(EST_DELAY, "500"));
	rogue_case(_metadata, &self->bed, "read-bad-rkey",
		   "queue pair in error without a disconnect", false);
}

TEST_F_TIMEOUT(rdma_bad, pull_legal, 60)
{
	/* the banner: 10-byte prefix, 16-byte payload */
	rogue_case_read(_metadata, &self->bed, "pull-legal", NULL, true, 26);
}

TEST_F_TIMEOUT(rdma_bad, pull_bad_rkey, 60)
{
	rogue_case_read(_metadata, &self->bed, "pull-bad-rkey", READ_REFUSED,
			false, 0);
}

TEST_F_TIMEOUT(rdma_bad, pull_beyond_mr, 60)
{
	/* the banner prefix, inside the registration */
	rogue_case_read(_metadata, &self->bed, "pull-beyond-mr",
			READ_REFUSED, false, 10);
}

TEST_F_TIMEOUT(rdma_bad, pull_outside_mr, 60)
{
	rogue_case_read(_metadata, &self->bed, "pull-outside-mr",
			READ_REFUSED, false, 0);
}

TEST_F_TIMEOUT(rdma_bad, pull_invalidated, 60)
{
	rogue_case_read(_metadata, &self->bed, "pull-invalidated",
			READ_REFUSED, false, 0);
}

TEST_F_TIMEOUT(rdma_bad, pull_len_0, 60)
{
	rogue_case_read(_metadata, &self->bed, "pull-len-0", PULL_REFUSED,
			false, 0);
}

TEST_F_TIMEOUT(rdma_bad, pull_len_huge, 60)
{
	rogue_case_read(_metadata, &self->bed, "pull-len-huge", PULL_REFUSED,
			false, 0);
}

TEST_F_TIMEOUT(rdma_bad, pull_short, 60)
{
	rogue_case_read(_metadata, &self->bed, "pull-short", PULL_REFUSED,
			false, 0);
}

TEST_HARNESS_MAIN
