// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr selftests - bad input from the network and from the rings.
 *
 * Every test has a "victim" instance with a healthy lossless session to a
 * second instance; small messages flow both ways on it all the time, and
 * must keep flowing (once, in order, hashes equal) whatever else happens.
 *
 *  rogue.bad_peer   kmsgr_rogue (a user-space msgr2 peer built on the
 *                   engine in kmod/msgr2/) either accepts a CONNECT of the
 *                   victim (server_*) or connects to a listener of the
 *                   victim (client_*), then sends a bad banner, garbage
 *                   after the banner, an oversize HELLO, or - after a
 *                   complete handshake - a MESSAGE with a bad preamble crc,
 *                   a bad segment crc, or an oversize length.  kmsgr must
 *                   close that connection and say why: the session's
 *                   CLOSED (or DOWN) event carries the matching
 *                   KMSGR_REASON_*.  A listener connection that fails before
 *                   its handshake completes may end without any event; the
 *                   rogue must still see it closed.
 *  fuzz.random_sqes KMSGR_FUZZ_SQES (10^4) random SQEs (seed KMSGR_FUZZ_SEED):
 *                   random opcodes, flags, reserved fields, session ids,
 *                   slice offsets and lengths.  Each one that is invalid
 *                   completes with an error, a NOP with 0, nothing hangs.
 *
 * After each test the kernel log must show no warning.  run_guest.sh runs
 * this program between a slab snapshot and an rmmod (leak check).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmsgr_selftest.h"
#include "kmsgr_ring_util.h"

#define ROGUE_MS	30000
#define UD_FUZZ		(3ULL << 56)

/* the victim, its healthy peer, and the healthy traffic; the kernel log */
struct bed {
	struct kt_bed h;
	int kmsg;
};

/* The bed, and the kernel log watched from here on (-errno if it cannot be) */
static int bed_init(struct bed *b)
{
	b->kmsg = kt_kmsg_open();
	if (b->kmsg < 0)
		return b->kmsg;
	return kt_bed_open(&b->h);
}

static void bed_fini(struct __test_metadata *_metadata, struct bed *b)
{
	char line[512];

	/* the healthy traffic never failed */
	EXPECT_EQ(0, b->h.out.failed) TH_LOG("victim->peer: %s", b->h.out.why);
	EXPECT_EQ(0, b->h.in.failed) TH_LOG("peer->victim: %s", b->h.in.why);
	TH_LOG("healthy session: %u messages out, %u in",
	       b->h.out.received, b->h.in.received);
	kt_bed_close(&b->h);
	usleep(200000);
	EXPECT_EQ(0, kt_kmsg_check(b->kmsg, line, sizeof(line)))
		TH_LOG("kernel log: %s", line);
	close(b->kmsg);
}

/* ---- rogue peers ---------------------------------------------------------- */

FIXTURE(rogue) {
	const char *why;
	struct bed b;
	pid_t pid;
	int out;		/* the rogue's stdout */
};

FIXTURE_VARIANT(rogue) {
	bool server;		/* the rogue accepts the victim's CONNECT */
	const char *fault;
	uint16_t reason;	/* expected KMSGR_REASON_* */
	bool after_handshake;	/* a listener session exists by then */
};

#define ROGUE(_name, _server, _fault, _reason, _after)		\
	FIXTURE_VARIANT_ADD(rogue, _name) {			\
		.server = _server, .fault = _fault,		\
		.reason = _reason, .after_handshake = _after,	\
	}

ROGUE(server_banner, true, "banner", KMSGR_REASON_BANNER, false);
ROGUE(server_garbage, true, "garbage", KMSGR_REASON_PREAMBLE_CRC, false);
ROGUE(server_hello_oversize, true, "hello-oversize",
	KMSGR_REASON_OVERSIZE, false);
ROGUE(server_preamble_crc, true, "preamble-crc",
	KMSGR_REASON_PREAMBLE_CRC, true);
ROGUE(server_segment_crc, true, "segment-crc",
	KMSGR_REASON_SEGMENT_CRC, true);
ROGUE(server_oversize, true, "oversize", KMSGR_REASON_OVERSIZE, true);
ROGUE(client_banner, false, "banner", KMSGR_REASON_BANNER, false);
ROGUE(client_garbage, false, "garbage", KMSGR_REASON_PREAMBLE_CRC, false);
ROGUE(client_hello_oversize, false, "hello-oversize",
	KMSGR_REASON_OVERSIZE, false);
ROGUE(client_preamble_crc, false, "preamble-crc",
	KMSGR_REASON_PREAMBLE_CRC, true);
ROGUE(client_segment_crc, false, "segment-crc",
	KMSGR_REASON_SEGMENT_CRC, true);
ROGUE(client_oversize, false, "oversize", KMSGR_REASON_OVERSIZE, true);

FIXTURE_SETUP(rogue)
{
	self->pid = -1;
	self->out = -1;
	self->b.kmsg = -1;
	self->why = kt_bed_missing();
	if (self->why)
		return;
	ASSERT_EQ(0, bed_init(&self->b));
}

FIXTURE_TEARDOWN(rogue)
{
	if (self->pid > 0) {
		kill(self->pid, SIGKILL);
		waitpid(self->pid, NULL, 0);
	}
	if (self->out >= 0)
		close(self->out);
	if (!self->why)
		bed_fini(_metadata, &self->b);
}

/* Start kmsgr_rogue (next to this program) with @role and @fault. */
static pid_t spawn_rogue(const char *role, const char *fault, int *out)
{
	char exe[PATH_MAX], *slash;
	ssize_t n;
	int p[2];
	pid_t pid;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 32);
	if (n < 0)
		return -1;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	strcpy(slash ? slash + 1 : exe, "kmsgr_rogue");
	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(p[1], 1);
		execl(exe, exe, "--life-ms", "25000", role, fault, NULL);
		fprintf(stderr, "# exec %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	close(p[1]);
	*out = p[0];
	return pid;
}

/* Read a line from the rogue within @ms (its port); 0 or -errno. */
static int read_line(int fd, char *buf, size_t len, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t got = 0;
	ssize_t n;

	while (got + 1 < len) {
		if (poll(&p, 1, ms) <= 0)
			return -ETIME;
		n = read(fd, buf + got, 1);
		if (n <= 0)
			return -EIO;
		if (buf[got] == '\n')
			break;
		got++;
	}
	buf[got] = 0;
	return 0;
}

/* the session's ending event: CLOSED, or DOWN for a lossless one */
static const struct kt_event *end_event(const struct kt_loop *lp,
					const struct kt_inst *ti,
					uint32_t session)
{
	const struct kt_event *e;

	e = kt_find_event(lp, ti, session, KMSGR_EV_DOWN, 0);
	if (!e)
		e = kt_find_event(lp, ti, session, KMSGR_EV_CLOSED, 0);
	return e;
}

TEST_F_TIMEOUT(rogue, bad_peer, 120)
{
	struct bed *b = &self->b;
	struct kmsgr_listen rl;
	const struct kt_event *e = NULL;
	uint32_t sess = 0;
	bool have_sess = false, exited = false;
	char line[128], role[96], addr[64];
	uint64_t end;
	unsigned int i;
	int status = 0, ret;
	struct kmsgr_addr a;

	if (self->why)
		SKIP(return, "%s", self->why);
	ASSERT_EQ(0, kt_bed_progress(&b->h, 10, 20000));

	if (variant->server) {
		self->pid = spawn_rogue("server", variant->fault, &self->out);
		ASSERT_LT(0, self->pid);
		ASSERT_EQ(0, read_line(self->out, line, sizeof(line), 10000));
		ASSERT_EQ(0, kt_addr(&a, "127.0.0.1", (uint16_t)atoi(line)));
		/* lossy: the failure ends the session with CLOSED */
		ASSERT_EQ(0, kt_connect(&b->h.victim, &a, 0, KT_ENTITY_OSD,
					0xbad, &sess));
		have_sess = true;
	} else {
		ASSERT_EQ(0, kt_listen(&b->h.victim, "127.0.0.1", 0, 0xbad1,
				       &rl));
		snprintf(role, sizeof(role), "client:%s:%u",
			 kmsgr_addr_format(&rl.bound, addr, sizeof(addr)),
			 rl.bound.nonce);
		/* "IP:PORT" from kmsgr_addr_format, then ":NONCE" */
		self->pid = spawn_rogue(role, variant->fault, &self->out);
		ASSERT_LT(0, self->pid);
	}

	/* until the rogue is done and the session (if any) ended */
	end = kt_now_ms() + ROGUE_MS;
	while (kt_now_ms() < end) {
		ASSERT_EQ(0, kt_loop_run_once(&b->h.lp, 50));
		if (!have_sess) {
			for (i = 0; i < b->h.lp.nr_ev; i++) {
				if (b->h.lp.ev[i].inst == &b->h.victim &&
				    b->h.lp.ev[i].event == KMSGR_EV_ACCEPTED &&
				    b->h.lp.ev[i].user_data == 0xbad1) {
					sess = b->h.lp.ev[i].session;
					have_sess = true;
				}
			}
		}
		if (have_sess)
			e = end_event(&b->h.lp, &b->h.victim, sess);
		if (!exited && waitpid(self->pid, &status, WNOHANG) ==
		    self->pid) {
			exited = true;
			self->pid = -1;
		}
		if (exited && (e || !have_sess)) {
			/* a late ACCEPTED: give the events a moment */
			if (!have_sess && variant->after_handshake)
				continue;
			break;
		}
	}
	ret = read_line(self->out, line, sizeof(line), 1000);
	TH_LOG("rogue %s %s: %s", variant->server ? "server" : "client",
	       variant->fault, ret ? "(no output)" : line);
	ASSERT_TRUE(exited) TH_LOG("the rogue did not finish in %d ms",
				   ROGUE_MS);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("kmsgr did not close the connection (rogue status %#x)",
		       status);
	if (variant->server || variant->after_handshake)
		ASSERT_TRUE(have_sess) TH_LOG("no session for the rogue");
	if (have_sess) {
		ASSERT_TRUE(e) TH_LOG("session %u: no CLOSED/DOWN event",
					      sess);
		EXPECT_EQ(variant->reason, e->reason)
			TH_LOG("session %u %s with reason %s (%u), expected %s (%u)",
			       sess, kmsgr_event_str(e->event),
			       kmsgr_reason_str(e->reason), e->reason,
			       kmsgr_reason_str(variant->reason),
			       variant->reason);
		if (variant->server)
			kmsgr_close_id(b->h.victim.k, sess);
	}
	/* the healthy session did not notice */
	EXPECT_EQ(0, kt_bed_progress(&b->h, 20, 20000));
	EXPECT_FALSE(end_event(&b->h.lp, &b->h.victim, b->h.v_id));
	EXPECT_EQ(0, b->h.lp.stray) TH_LOG("%s", b->h.lp.stray_why);
}

/* ---- random SQEs ---------------------------------------------------------- */

enum expect { FX_ERR, FX_EINVAL, FX_OK, FX_ANY };

struct fuzz {
	uint8_t *expect;	/* per SQE: enum expect */
	uint8_t *seen;		/* per SQE: completions */
	unsigned int total, made, wrong, dup;
	char why[256];
};

FIXTURE(fuzz) {
	const char *why;
	struct bed b;
	struct fuzz f;
};

FIXTURE_SETUP(fuzz)
{
	self->b.kmsg = -1;
	self->why = kt_bed_missing();
	if (self->why)
		return;
	ASSERT_EQ(0, bed_init(&self->b));
}

FIXTURE_TEARDOWN(fuzz)
{
	free(self->f.expect);
	free(self->f.seen);
	if (!self->why)
		bed_fini(_metadata, &self->b);
}

static uint32_t pick_u32(uint64_t *rng, uint64_t area)
{
	switch (kt_rand(rng) % 6) {
	case 0:
		return 0;
	case 1:
		return (uint32_t)(kt_rand(rng) % (area + 1));
	case 2:
		return (uint32_t)area;
	case 3:
		return UINT32_MAX - (uint32_t)(kt_rand(rng) % 16);
	case 4:
		return (uint32_t)(kt_rand(rng) % 4096);
	default:
		return (uint32_t)kt_rand(rng);
	}
}

/* Fill @sqe at random; return what its completion must say. */
static enum expect fuzz_sqe(struct kmsgr_sqe *sqe, uint64_t *rng,
			    const struct bed *b)
{
	uint64_t area = b->h.victim.buf_size, end;
	bool live, slices_ok = true, any = false;
	uint8_t raw[sizeof(*sqe)];
	unsigned int i;

	for (i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)kt_rand(rng);
	memcpy(sqe, raw, sizeof(raw));

	/* mostly plausible headers, so the deeper checks get exercised */
	if (kt_rand(rng) % 4)
		sqe->opcode = kt_rand(rng) % 3;
	if (kt_rand(rng) % 4)
		sqe->flags = 0;
	/* a linked BDEV op takes the next SQE along (kmsgr_bdev_test's) */
	if (sqe->opcode >= KMSGR_OP_BDEV_WRITE &&
	    sqe->opcode <= KMSGR_OP_BDEV_FLUSH)
		sqe->flags &= ~KMSGR_SQE_F_LINK;
	if (kt_rand(rng) % 8)
		sqe->reserved0 = 0;
	if (kt_rand(rng) % 8)
		sqe->reserved1 = 0;
	if (kt_rand(rng) % 8)
		sqe->token = 0;
	if (kt_rand(rng) % 2) {	/* what a NOP or a RELEASE leaves 0 */
		sqe->type = 0;
		sqe->version = 0;
		sqe->compat_version = 0;
		sqe->priority = 0;
		sqe->tid = 0;
	}
	switch (kt_rand(rng) % 3) {
	case 0:
		sqe->session = b->h.v_id;
		break;
	case 1:
		sqe->session = kt_rand(rng) % 8;
		break;
	}
	for (i = 0; i < KT_NSEG; i++) {
		sqe->seg[i].off = pick_u32(rng, area);
		sqe->seg[i].len = kt_rand(rng) % 3 ? pick_u32(rng, area) : 0;
	}
	live = sqe->session == b->h.v_id;
	/* never a valid SEND on the healthy session: one slice too far */
	if (sqe->opcode == KMSGR_OP_SEND && live) {
		sqe->seg[2].off = (uint32_t)area;
		sqe->seg[2].len = 1 + kt_rand(rng) % 4096;
	}
	for (i = 0; i < KT_NSEG; i++) {
		end = (uint64_t)sqe->seg[i].off + sqe->seg[i].len;
		if (sqe->seg[i].len && end > area)
			slices_ok = false;
		if (sqe->seg[i].len)
			any = true;
	}

	/* no device is attached: EINVAL or ENODEV, whichever is first */
	if (sqe->opcode >= KMSGR_OP_BDEV_WRITE &&
	    sqe->opcode <= KMSGR_OP_BDEV_FLUSH)
		return FX_ERR;
	if (sqe->opcode > KMSGR_OP_RELEASE || sqe->flags ||
	    sqe->reserved0 || sqe->reserved1 || sqe->token)
		return FX_EINVAL;
	/* what the opcode does not use must be 0 (flags are 0 here) */
	if (sqe->opcode != KMSGR_OP_SEND &&
	    (sqe->type || sqe->version || sqe->compat_version ||
	     sqe->priority || sqe->tid))
		return FX_EINVAL;
	switch (sqe->opcode) {
	case KMSGR_OP_NOP:
		return sqe->session || any || sqe->seg[0].off ||
		       sqe->seg[1].off || sqe->seg[2].off ? FX_EINVAL : FX_OK;
	case KMSGR_OP_SEND:
		if (live)
			return FX_EINVAL;
		/* unknown session or bad slice, whichever is checked first */
		return FX_ERR;
	default:
		/*
		 * RELEASE of random slices: never a live allocation (the
		 * healthy traffic's slices are given back at once), so an
		 * error - but an all-empty RELEASE may complete silently.
		 */
		(void)slices_ok;
		return any ? FX_EINVAL : FX_ANY;
	}
}

static int fuzz_hook(struct kt_loop *lp, struct kt_inst *ti,
		     const struct kmsgr_cqe *cqe)
{
	struct fuzz *f = lp->priv;
	unsigned int i;
	bool bad = false;

	(void)ti;
	if ((cqe->kind != KMSGR_CQE_OP && cqe->kind != KMSGR_CQE_SEND) ||
	    (cqe->user_data >> 56) != (UD_FUZZ >> 56))
		return 0;
	i = (uint32_t)cqe->user_data;
	if (i >= f->made) {
		bad = true;
	} else {
		if (f->seen[i]++)
			f->dup++;
		switch (f->expect[i]) {
		case FX_EINVAL:
			bad = cqe->res != -EINVAL;
			break;
		case FX_ERR:
			bad = cqe->res >= 0;
			break;
		case FX_OK:
			bad = cqe->res != 0;
			break;
		default:
			break;
		}
	}
	if (bad && !f->wrong++)
		snprintf(f->why, sizeof(f->why),
			 "SQE %u (expect %u): CQE kind %u res %d", i,
			 i < f->made ? f->expect[i] : 99, cqe->kind, cqe->res);
	return 1;
}

TEST_F_TIMEOUT(fuzz, random_sqes, 300)
{
	struct bed *b = &self->b;
	struct fuzz *f = &self->f;
	uint64_t rng = kt_env_long("KMSGR_FUZZ_SEED", 1);
	struct kmsgr_sqe *sqe;
	unsigned int i, batch, missing_cqe = 0, expected = 0, got = 0;
	uint64_t end;

	if (self->why)
		SKIP(return, "%s", self->why);
	f->total = kt_env_long("KMSGR_FUZZ_SQES", 10000);
	f->expect = calloc(f->total, 1);
	f->seen = calloc(f->total, 1);
	ASSERT_TRUE(f->expect && f->seen);
	b->h.lp.hook = fuzz_hook;
	b->h.lp.priv = f;
	TH_LOG("seed %llu, %u SQEs", (unsigned long long)rng, f->total);

	end = kt_now_ms() + 240000;
	while (f->made < f->total && kt_now_ms() < end) {
		for (batch = 0; batch < 32 && f->made < f->total; batch++) {
			sqe = kmsgr_get_sqe(b->h.victim.k);
			if (!sqe)
				break;
			f->expect[f->made] = fuzz_sqe(sqe, &rng, b);
			sqe->user_data = UD_FUZZ | f->made;
			f->made++;
		}
		ASSERT_EQ(0, kt_loop_run_once(&b->h.lp, 10));
	}
	/* let the last completions arrive, with the healthy traffic */
	EXPECT_EQ(0, kt_bed_progress(&b->h, 20, 30000));
	for (i = 0; i < f->made; i++) {
		if (f->expect[i] == FX_ANY)
			continue;
		expected++;
		if (f->seen[i])
			got++;
		else if (!missing_cqe++)
			TH_LOG("SQE %u (expect %u) never completed", i,
			       f->expect[i]);
	}
	TH_LOG("%u SQEs made, %u needed an error CQE, %u got one; victim: %u CQEs",
	       f->made, expected, got, b->h.victim.nr_cqes);
	EXPECT_EQ(f->total, f->made);
	EXPECT_EQ(0, missing_cqe);
	EXPECT_EQ(0, f->dup);
	EXPECT_EQ(0, f->wrong) TH_LOG("%s", f->why);
	EXPECT_EQ(0, b->h.lp.stray) TH_LOG("%s", b->h.lp.stray_why);
	EXPECT_FALSE(end_event(&b->h.lp, &b->h.victim, b->h.v_id));
}

TEST_HARNESS_MAIN
