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
 * printk level used; _rl: ratelimited (anything a peer or an application
 * can repeat).  A session's peer is the address it dials (client) or the
 * one its connection came from (server).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef KMSGR_LOG_H
#define KMSGR_LOG_H

#include <linux/printk.h>

#define kmsgr_inst_log(pr, inst, fmt, ...)				\
	pr("instance %llu pid %d (%s): " fmt, (inst)->id, (inst)->pid,	\
	   (inst)->comm, ##__VA_ARGS__)

#define kmsgr_sess_log(pr, s, fmt, ...)					\
	pr("instance %llu pid %d (%s) session %u peer %pISpc: " fmt,		\
	   (s)->obj.inst->id, (s)->obj.inst->pid, (s)->obj.inst->comm,	\
	   (s)->obj.id, &(s)->peer, ##__VA_ARGS__)

#define kmsgr_inst_warn(inst, fmt, ...)					\
	kmsgr_inst_log(pr_warn, inst, fmt, ##__VA_ARGS__)
#define kmsgr_inst_warn_rl(inst, fmt, ...)				\
	kmsgr_inst_log(pr_warn_ratelimited, inst, fmt, ##__VA_ARGS__)
#define kmsgr_inst_info_rl(inst, fmt, ...)				\
	kmsgr_inst_log(pr_info_ratelimited, inst, fmt, ##__VA_ARGS__)
#define kmsgr_inst_dbg(inst, fmt, ...)					\
	kmsgr_inst_log(pr_debug, inst, fmt, ##__VA_ARGS__)
#define kmsgr_inst_dbg_rl(inst, fmt, ...)				\
	kmsgr_inst_log(pr_debug_ratelimited, inst, fmt, ##__VA_ARGS__)

#define kmsgr_sess_warn_rl(s, fmt, ...)					\
	kmsgr_sess_log(pr_warn_ratelimited, s, fmt, ##__VA_ARGS__)
#define kmsgr_sess_info_rl(s, fmt, ...)					\
	kmsgr_sess_log(pr_info_ratelimited, s, fmt, ##__VA_ARGS__)
#define kmsgr_sess_dbg(s, fmt, ...)					\
	kmsgr_sess_log(pr_debug, s, fmt, ##__VA_ARGS__)

#endif /* KMSGR_LOG_H */
