// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr - the module parameters (/sys/module/kmsgr/parameters/): limits of
 * SETUP, CONNECT and LISTEN, timeouts and fast-path switches, with their
 * bounds.  Every other file reads them (READ_ONCE(): root may change them
 * at any time); this file calls nothing.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#include <linux/bits.h>
#include <linux/delay.h>
#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/sizes.h>

#include "kmsgr.h"

/*
 * Hard bounds of the module parameters.  Entries are 64 bytes: 2 MiB of
 * SQ, 4 MiB of CQ.  Slice offsets are 32-bit: at most 4 GiB of area.
 */
#define KMSGR_SQ_ENTRIES_LIMIT	32768U
#define KMSGR_CQ_ENTRIES_LIMIT	65536U
#define KMSGR_BUF_SIZE_LIMIT	SZ_4G
#define KMSGR_SESSIONS_LIMIT	65536U

/* Limits of SETUP and CONNECT/LISTEN; READ_ONCE() them, they may change. */
unsigned int kmsgr_max_sq_entries = 4096;
unsigned int kmsgr_max_cq_entries = 8192;
unsigned long kmsgr_max_buf_size = SZ_256M;
unsigned int kmsgr_max_sessions = 256;
unsigned int kmsgr_max_half_open = 64;
/* Session timeouts (session.c, xprt_tcp.c), seconds. */
unsigned int kmsgr_keepalive_timeout = 30;
unsigned int kmsgr_idle_timeout = 900;
unsigned int kmsgr_resume_timeout = 60;
unsigned int kmsgr_msg_timeout = 30;
unsigned int kmsgr_handshake_timeout = 10;
#define KMSGR_TIMEOUT_LIMIT	86400U
/* Lossless receive spill per session (session.c), bytes. */
unsigned int kmsgr_rx_spill_max = SZ_1M;
bool kmsgr_enter_runs = true;
/* Zero-copy transmit of lossless payloads (session.c, xprt_tcp.c), bytes. */
unsigned int kmsgr_tx_zerocopy_min = SZ_16K;
/*
 * Pages by reference over TCP: only for trusted peers, so off by default.
 * A lossless SEND completes at the peer's msgr2 ack, but nothing makes the
 * peer's socket let go of the pages first: a peer that acks what it has not
 * read (its window shut, or on loopback and veth, where the skbs that
 * reference the pages sit in its receive queue) reads whatever the
 * application put in those slices after the CQE.  A connection that sent
 * pages so is reset when it closes (xprt_tcp.c), which drops what its
 * socket still queues; skbs already in a local peer's receive queue keep
 * theirs.  kmsgr_rdma checks this itself (its PULLs).
 */
bool kmsgr_tcp_zerocopy;
#define KMSGR_SPILL_LIMIT	SZ_256M

/*
 * Setters of the limit parameters: a value outside the bounds fails the
 * write (or insmod) with -EINVAL.  Sizes take effect at the next SETUP.
 */
static int kmsgr_param_set_entries(const char *val,
				   const struct kernel_param *kp,
				   unsigned int min, unsigned int limit)
{
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 0, &n);
	if (ret)
		return ret;
	if (n < min || n > limit || !is_power_of_2(n))
		return -EINVAL;
	WRITE_ONCE(*(unsigned int *)kp->arg, n);
	return 0;
}

static int kmsgr_param_set_sq(const char *val, const struct kernel_param *kp)
{
	return kmsgr_param_set_entries(val, kp, 1, KMSGR_SQ_ENTRIES_LIMIT);
}

static int kmsgr_param_set_cq(const char *val, const struct kernel_param *kp)
{
	return kmsgr_param_set_entries(val, kp, KMSGR_CQ_MIN_ENTRIES,
				       KMSGR_CQ_ENTRIES_LIMIT);
}

static int kmsgr_param_set_buf(const char *val, const struct kernel_param *kp)
{
	unsigned long n;
	int ret;

	ret = kstrtoul(val, 0, &n);
	if (ret)
		return ret;
	if (n < PAGE_ALIGN(KMSGR_POOL_MIN) || n > KMSGR_BUF_SIZE_LIMIT ||
	    !PAGE_ALIGNED(n))
		return -EINVAL;
	WRITE_ONCE(*(unsigned long *)kp->arg, n);
	return 0;
}

/* An unsigned int in [@min, @max]. */
static int kmsgr_param_set_range(const char *val,
				 const struct kernel_param *kp,
				 unsigned int min, unsigned int max)
{
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 0, &n);
	if (ret)
		return ret;
	if (n < min || n > max)
		return -EINVAL;
	WRITE_ONCE(*(unsigned int *)kp->arg, n);
	return 0;
}

static int kmsgr_param_set_sessions(const char *val,
				    const struct kernel_param *kp)
{
	return kmsgr_param_set_range(val, kp, 1, KMSGR_SESSIONS_LIMIT);
}

/* A timeout in seconds, 0 (off) to a day. */
static int kmsgr_param_set_secs(const char *val, const struct kernel_param *kp)
{
	return kmsgr_param_set_range(val, kp, 0, KMSGR_TIMEOUT_LIMIT);
}

/*
 * keepalive_timeout: 0 (off), or 3 s to a day: three keepalives (at
 * least a second apart) fit in it, and a tick late is no timeout.
 */
static int kmsgr_param_set_keepalive(const char *val,
				     const struct kernel_param *kp)
{
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 0, &n);
	if (ret)
		return ret;
	if (n && (n < 3 || n > KMSGR_TIMEOUT_LIMIT))
		return -EINVAL;
	WRITE_ONCE(*(unsigned int *)kp->arg, n);
	return 0;
}

/* resume_timeout: 1 s to a day (0 would end each one at once). */
static int kmsgr_param_set_resume(const char *val,
				  const struct kernel_param *kp)
{
	return kmsgr_param_set_range(val, kp, 1, KMSGR_TIMEOUT_LIMIT);
}

static const struct kernel_param_ops kmsgr_param_keepalive_ops = {
	.set = kmsgr_param_set_keepalive,
	.get = param_get_uint,
};

static const struct kernel_param_ops kmsgr_param_resume_ops = {
	.set = kmsgr_param_set_resume,
	.get = param_get_uint,
};

/* Spill bytes per session, 0 (off) to 256 MiB. */
static int kmsgr_param_set_spill(const char *val, const struct kernel_param *kp)
{
	return kmsgr_param_set_range(val, kp, 0, KMSGR_SPILL_LIMIT);
}

static const struct kernel_param_ops kmsgr_param_spill_ops = {
	.set = kmsgr_param_set_spill,
	.get = param_get_uint,
};

static const struct kernel_param_ops kmsgr_param_secs_ops = {
	.set = kmsgr_param_set_secs,
	.get = param_get_uint,
};

static const struct kernel_param_ops kmsgr_param_sq_ops = {
	.set = kmsgr_param_set_sq,
	.get = param_get_uint,
};

static const struct kernel_param_ops kmsgr_param_cq_ops = {
	.set = kmsgr_param_set_cq,
	.get = param_get_uint,
};

static const struct kernel_param_ops kmsgr_param_buf_ops = {
	.set = kmsgr_param_set_buf,
	.get = param_get_ulong,
};

static const struct kernel_param_ops kmsgr_param_sessions_ops = {
	.set = kmsgr_param_set_sessions,
	.get = param_get_uint,
};

module_param_cb(max_sq_entries, &kmsgr_param_sq_ops, &kmsgr_max_sq_entries,
		0644);
MODULE_PARM_DESC(max_sq_entries,
		 "Largest SQ of an instance, entries (power of two, 1-32768; default 4096)");
module_param_cb(max_cq_entries, &kmsgr_param_cq_ops, &kmsgr_max_cq_entries,
		0644);
MODULE_PARM_DESC(max_cq_entries,
		 "Largest CQ of an instance, entries (power of two, 2-65536; default 8192)");
module_param_cb(max_buf_size, &kmsgr_param_buf_ops, &kmsgr_max_buf_size,
		0644);
MODULE_PARM_DESC(max_buf_size,
		 "Largest buffer area of an instance, bytes (page multiple, 64 KiB-4 GiB; default 256 MiB)");
module_param_cb(max_sessions, &kmsgr_param_sessions_ops, &kmsgr_max_sessions,
		0644);
MODULE_PARM_DESC(max_sessions,
		 "Most sessions per instance (1-65536; default 256)");
module_param_cb(max_half_open, &kmsgr_param_sessions_ops,
		&kmsgr_max_half_open, 0644);
module_param_cb(keepalive_timeout, &kmsgr_param_keepalive_ops,
		&kmsgr_keepalive_timeout, 0644);
MODULE_PARM_DESC(keepalive_timeout,
		 "Seconds a READY connection may stay silent (keepalives go out every 10 s, or every third of this when shorter) before it is closed with reason TIMEOUT. A session keeps the value it was made with (0: off, else 3-86400; default 30)");
module_param_cb(idle_timeout, &kmsgr_param_secs_ops, &kmsgr_idle_timeout,
		0644);
MODULE_PARM_DESC(idle_timeout,
		 "Seconds a server session may carry no message before it is closed with reason TIMEOUT (0: never; default 900)");
module_param_cb(resume_timeout, &kmsgr_param_resume_ops,
		&kmsgr_resume_timeout, 0644);
MODULE_PARM_DESC(resume_timeout,
		 "Seconds a lossless server session waits for its client to resume it before it is closed (reason TIMEOUT); 1-86400, default 60");
module_param_cb(msg_timeout, &kmsgr_param_secs_ops, &kmsgr_msg_timeout,
		0644);
MODULE_PARM_DESC(msg_timeout,
		 "Seconds an inbound message may hold receive-pool space before it is complete; then the connection is closed (reason TIMEOUT). 0: off; default 30");
module_param_cb(handshake_timeout, &kmsgr_param_secs_ops,
		&kmsgr_handshake_timeout, 0644);
MODULE_PARM_DESC(handshake_timeout,
		 "Seconds a connection may take from its banner to READY (msgr2 handshake, auth included) before it is closed; bounds half-open connections on listeners (0: 10; default 10)");
module_param_cb(rx_spill_max, &kmsgr_param_spill_ops, &kmsgr_rx_spill_max,
		0644);
MODULE_PARM_DESC(rx_spill_max,
		 "Bytes of inbound messages a lossless session may hold in kernel memory while the receive pool is full, so that it keeps reading the acks behind them (0: off, up to 256 MiB; default 1 MiB)");
module_param_named(tx_zerocopy_min, kmsgr_tx_zerocopy_min, uint, 0644);
MODULE_PARM_DESC(tx_zerocopy_min,
		 "Lossless sessions send buffer-area payload pieces of at least this many bytes by page reference instead of by copy: over TCP with tcp_zerocopy, over RDMA as PULLs read in place (0: never; default 16384)");
module_param_named(tcp_zerocopy, kmsgr_tcp_zerocopy, bool, 0644);
MODULE_PARM_DESC(tcp_zerocopy,
		 "Lossless sessions over TCP send buffer-area pieces of at least tx_zerocopy_min bytes by page reference (sendpage) instead of by copy: only with trusted peers, which could otherwise read what a slice holds after the SEND's CQE (default N)");
module_param_named(enter_runs_sessions, kmsgr_enter_runs, bool, 0644);
MODULE_PARM_DESC(enter_runs_sessions,
		 "An ENTER waiting for one completion receives for the sessions of its instance in its own context, instead of waking a worker (default Y)");
MODULE_PARM_DESC(max_half_open,
		 "Most connections per listener still in their handshake; more are refused (1-65536; default 64)");

#ifdef KMSGR_FAULT
/*
 * Fault injection (a module built with KMSGR_FAULT=y, as make check
 * builds it): delays at the points of fault_points, to widen the race
 * windows around them.  Never in a module built for use.
 */
static unsigned int kmsgr_fault_points;
static unsigned int kmsgr_fault_delay_us = 200;

module_param_named(fault_points, kmsgr_fault_points, uint, 0644);
MODULE_PARM_DESC(fault_points,
		 "Test builds only: bit mask of KMSGR_FAULT_* points that delay, or that change behaviour (KMSGR_FAULT_TX_MORE) (0: none)");
module_param_named(fault_delay_us, kmsgr_fault_delay_us, uint, 0644);
MODULE_PARM_DESC(fault_delay_us,
		 "Test builds only: microseconds each fault point waits (up to 10000000, 500 in atomic context; default 200)");

bool kmsgr_fault_set(unsigned int point)
{
	return READ_ONCE(kmsgr_fault_points) & BIT(point);
}

bool kmsgr_fault_take(unsigned int point)
{
	unsigned int old = READ_ONCE(kmsgr_fault_points);

	do {
		if (!(old & BIT(point)))
			return false;
	} while (!try_cmpxchg(&kmsgr_fault_points, &old, old & ~BIT(point)));
	return true;
}

void kmsgr_fault(unsigned int point, bool atomic)
{
	unsigned int us = min(READ_ONCE(kmsgr_fault_delay_us), 10000000U);

	if (!(READ_ONCE(kmsgr_fault_points) & BIT(point)) || !us)
		return;
	if (atomic)
		udelay(min(us, 500U));	/* softirq: keep it short */
	else
		usleep_range(us, us + us / 4);
}
#endif
