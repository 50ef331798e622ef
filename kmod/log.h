/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr - kernel log lines about an instance or a session: they name the
 * process that opened /dev/kmsgr (pid and comm, taken at open()) and, for
 * a session, its peer, so that a line in dmesg leads to the application
 * and the remote end without a trace:
 *
 *   kmsgr: instance 3 pid 812 (ceph-osd): CQ overflow list full, ...
 *   kmsgr: instance 3 pid 812 (ceph-osd) session 2 peer 10.0.0.7:6801: ...
 *
 * kmsgr_inst_*(inst, fmt, ...) and kmsgr_sess_*(s, fmt, ...), one per
 * printk level used; _ratelimited: anything a peer or an application can
 * repeat (the names are what checkpatch takes for logging functions).  A
 * session's peer is the address it dials (client) or the one its
 * connection came from (server).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef KMSGR_LOG_H
#define KMSGR_LOG_H

#include <linux/pid.h>
#include <linux/printk.h>

/* @pr: a pr_*() macro; @inst and @s are evaluated once */
#define kmsgr_inst_log(pr, inst, fmt, ...)				\
	do {								\
		const struct kmsgr_instance *inst_ = (inst);		\
									\
		pr("instance %llu pid %d (%s): " fmt, inst_->id,	\
		   pid_nr(inst_->tgid), inst_->comm, ##__VA_ARGS__);	\
	} while (0)

#define kmsgr_sess_log(pr, s, fmt, ...)					\
	do {								\
		const struct kmsgr_sess *s_ = (s);			\
									\
		pr("instance %llu pid %d (%s) session %u peer %pISpc: " fmt, \
		   s_->obj.inst->id, pid_nr(s_->obj.inst->tgid),	\
		   s_->obj.inst->comm, s_->obj.id, &s_->peer,		\
		   ##__VA_ARGS__);					\
	} while (0)

#define kmsgr_inst_warn(inst, fmt, ...)					\
	kmsgr_inst_log(pr_warn, inst, fmt, ##__VA_ARGS__)
#define kmsgr_inst_warn_ratelimited(inst, fmt, ...)			\
	kmsgr_inst_log(pr_warn_ratelimited, inst, fmt, ##__VA_ARGS__)
#define kmsgr_inst_info_ratelimited(inst, fmt, ...)			\
	kmsgr_inst_log(pr_info_ratelimited, inst, fmt, ##__VA_ARGS__)
#define kmsgr_inst_dbg(inst, fmt, ...)					\
	kmsgr_inst_log(pr_debug, inst, fmt, ##__VA_ARGS__)
#define kmsgr_inst_dbg_ratelimited(inst, fmt, ...)			\
	kmsgr_inst_log(pr_debug_ratelimited, inst, fmt, ##__VA_ARGS__)

#define kmsgr_sess_warn_ratelimited(s, fmt, ...)			\
	kmsgr_sess_log(pr_warn_ratelimited, s, fmt, ##__VA_ARGS__)
#define kmsgr_sess_info_ratelimited(s, fmt, ...)			\
	kmsgr_sess_log(pr_info_ratelimited, s, fmt, ##__VA_ARGS__)
#define kmsgr_sess_dbg(s, fmt, ...)					\
	kmsgr_sess_log(pr_debug, s, fmt, ##__VA_ARGS__)

#endif /* KMSGR_LOG_H */
