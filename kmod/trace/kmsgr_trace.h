/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr - tracepoints of kmsgr.ko, TRACE_SYSTEM kmsgr (docs/tracing.md):
 *
 *   kmsgr_event          an event of a session or a listener, as posted
 *                        to its owner's CQ (UP, DOWN, CLOSED, ...)
 *   kmsgr_msg_send       a SEND queued on its session (its seq assigned)
 *   kmsgr_msg_send_done  a SEND completed (written, or acked: lossless)
 *   kmsgr_msg_recv       a message received, handed to the application
 *   kmsgr_cq_pause       delivery paused: the CQ had no room
 *   kmsgr_cq_resume      room again: paused delivery goes on
 *
 * Every event names its instance (the open file of /dev/kmsgr) and, where
 * there is one, the session or listener by the id the application knows.
 * The callers pass their objects; only trace.c (CREATE_TRACE_POINTS), which
 * sees every structure, looks inside them.  Nothing here sleeps.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kmsgr

#if !defined(KMSGR_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define KMSGR_TRACE_H

#include <linux/sched.h>
#include <linux/tracepoint.h>
#include <linux/types.h>

#include <linux/kmsgr.h>

struct kmsgr_instance;
struct kmsgr_obj;
struct kmsgr_sess;
struct msgr2_msg;
struct msgr2_msg_hdr;

/* enum kmsgr_obj_kind (session.h): the tools need the values */
TRACE_DEFINE_ENUM(KMSGR_OBJ_SESS);
TRACE_DEFINE_ENUM(KMSGR_OBJ_LISTENER);

#define show_kmsgr_obj_kind(kind)					\
	__print_symbolic(kind,						\
			 { KMSGR_OBJ_SESS, "session" },			\
			 { KMSGR_OBJ_LISTENER, "listener" })

#define show_kmsgr_event(ev)						\
	__print_symbolic(ev,						\
			 { KMSGR_EV_ACCEPTED, "ACCEPTED" },		\
			 { KMSGR_EV_UP, "UP" },				\
			 { KMSGR_EV_DOWN, "DOWN" },			\
			 { KMSGR_EV_RESET, "RESET" },			\
			 { KMSGR_EV_CLOSED, "CLOSED" },			\
			 { KMSGR_EV_REFUSED, "REFUSED" })

#define show_kmsgr_reason(r)						\
	__print_symbolic(r,						\
			 { KMSGR_REASON_NONE, "NONE" },			\
			 { KMSGR_REASON_BANNER, "BANNER" },		\
			 { KMSGR_REASON_BANNER_FEATURES, "BANNER_FEATURES" }, \
			 { KMSGR_REASON_PREAMBLE_CRC, "PREAMBLE_CRC" },	\
			 { KMSGR_REASON_SEGMENT_CRC, "SEGMENT_CRC" },	\
			 { KMSGR_REASON_GCM_TAG, "GCM_TAG" },		\
			 { KMSGR_REASON_UNKNOWN_TAG, "UNKNOWN_TAG" },	\
			 { KMSGR_REASON_ORDER, "ORDER" },		\
			 { KMSGR_REASON_OVERSIZE, "OVERSIZE" },		\
			 { KMSGR_REASON_MALFORMED, "MALFORMED" },	\
			 { KMSGR_REASON_LATE_STATUS, "LATE_STATUS" },	\
			 { KMSGR_REASON_SIGNATURE, "SIGNATURE" },	\
			 { KMSGR_REASON_AUTH, "AUTH" },			\
			 { KMSGR_REASON_MISSING_FEATURES, "MISSING_FEATURES" }, \
			 { KMSGR_REASON_PEER, "PEER" },			\
			 { KMSGR_REASON_SEQ, "SEQ" },			\
			 { KMSGR_REASON_WAIT, "WAIT" },			\
			 { KMSGR_REASON_TIMEOUT, "TIMEOUT" },		\
			 { KMSGR_REASON_EOF, "EOF" },			\
			 { KMSGR_REASON_LOCAL, "LOCAL" },		\
			 { KMSGR_REASON_NOMEM, "NOMEM" },		\
			 { KMSGR_REASON_NONCE, "NONCE" },		\
			 { KMSGR_REASON_BUSY, "BUSY" },			\
			 { KMSGR_REASON_CONNECT, "CONNECT" },		\
			 { KMSGR_REASON_HALF_OPEN, "HALF_OPEN" },	\
			 { KMSGR_REASON_SESSIONS, "SESSIONS" },		\
			 { KMSGR_REASON_MODE, "MODE" },			\
			 { KMSGR_REASON_DEVICE, "DEVICE" })

/*
 * kmsgr_event - an event of a session or listener, at kmsgr_obj_post():
 * the same as its KMSGR_CQE_EVENT (before the CQ takes it: also when the
 * CQE has to wait on the overflow list).  @pid and @comm are the opener's
 * of /dev/kmsgr; the task that traces it is often a kworker.
 */
TRACE_EVENT(kmsgr_event,
	TP_PROTO(const struct kmsgr_obj *obj, u8 ev, u16 reason, int res),

	TP_ARGS(obj, ev, reason, res),

	TP_STRUCT__entry(
		__field(u64, inst)
		__field(u64, user_data)
		__field(u32, id)
		__field(int, res)
		__field(pid_t, pid)
		__field(u16, reason)
		__field(u8, kind)
		__field(u8, event)
		__array(char, comm, TASK_COMM_LEN)
	),

	TP_fast_assign(
		__entry->inst = obj->inst->id;
		__entry->user_data = obj->user_data;
		__entry->id = obj->id;
		__entry->res = res;
		__entry->pid = pid_nr(obj->inst->tgid);
		__entry->reason = reason;
		__entry->kind = obj->kind;
		__entry->event = ev;
		memcpy(__entry->comm, obj->inst->comm, TASK_COMM_LEN);
	),

	TP_printk("instance=%llu pid=%d comm=%s %s=%u event=%s reason=%s res=%d user_data=0x%llx",
		  __entry->inst, __entry->pid, __entry->comm,
		  show_kmsgr_obj_kind(__entry->kind), __entry->id,
		  show_kmsgr_event(__entry->event),
		  show_kmsgr_reason(__entry->reason), __entry->res,
		  __entry->user_data)
);

/*
 * A SEND on its way: queued (kmsgr_msg_send: @res 0, or the error SEND
 * completes with at once) and completed (kmsgr_msg_send_done: @res is the
 * CQE's; a lossless message completes when the peer acknowledged it).
 */
DECLARE_EVENT_CLASS(kmsgr_msg_tx,
	TP_PROTO(const struct kmsgr_sess *s, const struct msgr2_msg *m,
		 int res),

	TP_ARGS(s, m, res),

	TP_STRUCT__entry(
		__field(u64, inst)
		__field(u64, seq)
		__field(u32, sess)
		__field(u32, front)
		__field(u32, middle)
		__field(u32, data)
		__field(int, res)
		__field(u16, type)
	),

	TP_fast_assign(
		__entry->inst = s->obj.inst->id;
		__entry->seq = m->hdr.seq;
		__entry->sess = s->obj.id;
		__entry->front = m->seg[0].len;
		__entry->middle = m->seg[1].len;
		__entry->data = m->seg[2].len;
		__entry->res = res;
		__entry->type = m->hdr.type;
	),

	TP_printk("instance=%llu session=%u seq=%llu type=%u front=%u middle=%u data=%u res=%d",
		  __entry->inst, __entry->sess, __entry->seq, __entry->type,
		  __entry->front, __entry->middle, __entry->data,
		  __entry->res)
);

DEFINE_EVENT(kmsgr_msg_tx, kmsgr_msg_send,
	TP_PROTO(const struct kmsgr_sess *s, const struct msgr2_msg *m,
		 int res),
	TP_ARGS(s, m, res)
);

DEFINE_EVENT(kmsgr_msg_tx, kmsgr_msg_send_done,
	TP_PROTO(const struct kmsgr_sess *s, const struct msgr2_msg *m,
		 int res),
	TP_ARGS(s, m, res)
);

/* A message received, as its RECV CQE will carry it (@len: the segments). */
TRACE_EVENT(kmsgr_msg_recv,
	TP_PROTO(const struct kmsgr_sess *s, const struct msgr2_msg_hdr *hdr,
		 const u32 *len),

	TP_ARGS(s, hdr, len),

	TP_STRUCT__entry(
		__field(u64, inst)
		__field(u64, seq)
		__field(u32, sess)
		__field(u32, front)
		__field(u32, middle)
		__field(u32, data)
		__field(u16, type)
	),

	TP_fast_assign(
		__entry->inst = s->obj.inst->id;
		__entry->seq = hdr->seq;
		__entry->sess = s->obj.id;
		__entry->front = len[0];
		__entry->middle = len[1];
		__entry->data = len[2];
		__entry->type = hdr->type;
	),

	TP_printk("instance=%llu session=%u seq=%llu type=%u front=%u middle=%u data=%u",
		  __entry->inst, __entry->sess, __entry->seq, __entry->type,
		  __entry->front, __entry->middle, __entry->data)
);

/*
 * The CQ of an instance: delivery paused (a post found no room; sessions
 * stop reading) or resumed (ENTER or poll() found room again).  @head and
 * @tail are the kernel's copies, @reserved the slots promised to SENDs in
 * flight, @overflow the events waiting for room.  Under inst->cq_lock.
 */
DECLARE_EVENT_CLASS(kmsgr_cq,
	TP_PROTO(const struct kmsgr_instance *inst),

	TP_ARGS(inst),

	TP_STRUCT__entry(
		__field(u64, inst)
		__field(u32, head)
		__field(u32, tail)
		__field(u32, entries)
		__field(u32, reserved)
		__field(u32, overflow)
	),

	TP_fast_assign(
		__entry->inst = inst->id;
		__entry->head = inst->cq_head;
		__entry->tail = inst->cq_tail;
		__entry->entries = inst->cq_entries;
		__entry->reserved = inst->cq_reserved;
		__entry->overflow = inst->cq_overflow_nr;
	),

	TP_printk("instance=%llu head=%u tail=%u ready=%u entries=%u reserved=%u overflow=%u",
		  __entry->inst, __entry->head, __entry->tail,
		  __entry->tail - __entry->head, __entry->entries,
		  __entry->reserved, __entry->overflow)
);

DEFINE_EVENT(kmsgr_cq, kmsgr_cq_pause,
	TP_PROTO(const struct kmsgr_instance *inst),
	TP_ARGS(inst)
);

DEFINE_EVENT(kmsgr_cq, kmsgr_cq_resume,
	TP_PROTO(const struct kmsgr_instance *inst),
	TP_ARGS(inst)
);

#endif /* KMSGR_TRACE_H */

/* Out of tree: the directory of this file, from kmod/ (-I$(src)). */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH trace
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kmsgr_trace

#include <trace/define_trace.h>
