/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr_rdma - tracepoints of kmsgr_rdma.ko, TRACE_SYSTEM kmsgr_rdma
 * (docs/tracing.md): the RDMA READs that pull what a peer's PULL offers.
 *
 *   kmsgr_rdma_read_post   a READ posted (or its post failed: @res)
 *   kmsgr_rdma_read_done   its completion (softirq): @status
 *   kmsgr_rdma_offer       a PULL and its registration posted (sender)
 *
 * A connection is named by its device, QP number and the peer's address.
 * The module has tracepoints of its own rather than kmsgr.ko's: they come
 * and go with it, and kmsgr.ko exports nothing for them.  The callers pass
 * the QP and the address: the connection's structure is private to
 * xprt_rdma.c.  @len is the READ's, which may be a part of its PULL.
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kmsgr_rdma

#if !defined(KMSGR_RDMA_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define KMSGR_RDMA_TRACE_H

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/socket.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>

/* the completion statuses a READ is likely to end with */
TRACE_DEFINE_ENUM(IB_WC_SUCCESS);
TRACE_DEFINE_ENUM(IB_WC_LOC_LEN_ERR);
TRACE_DEFINE_ENUM(IB_WC_LOC_QP_OP_ERR);
TRACE_DEFINE_ENUM(IB_WC_LOC_PROT_ERR);
TRACE_DEFINE_ENUM(IB_WC_WR_FLUSH_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_INV_REQ_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_ACCESS_ERR);
TRACE_DEFINE_ENUM(IB_WC_REM_OP_ERR);
TRACE_DEFINE_ENUM(IB_WC_RETRY_EXC_ERR);
TRACE_DEFINE_ENUM(IB_WC_GENERAL_ERR);

#define show_kmsgr_wc_status(st)					\
	__print_symbolic(st,						\
			 { IB_WC_SUCCESS, "SUCCESS" },			\
			 { IB_WC_LOC_LEN_ERR, "LOC_LEN_ERR" },		\
			 { IB_WC_LOC_QP_OP_ERR, "LOC_QP_OP_ERR" },	\
			 { IB_WC_LOC_PROT_ERR, "LOC_PROT_ERR" },	\
			 { IB_WC_WR_FLUSH_ERR, "WR_FLUSH_ERR" },	\
			 { IB_WC_REM_INV_REQ_ERR, "REM_INV_REQ_ERR" },	\
			 { IB_WC_REM_ACCESS_ERR, "REM_ACCESS_ERR" },	\
			 { IB_WC_REM_OP_ERR, "REM_OP_ERR" },		\
			 { IB_WC_RETRY_EXC_ERR, "RETRY_EXC_ERR" },	\
			 { IB_WC_GENERAL_ERR, "GENERAL_ERR" })

#ifndef KMSGR_RDMA_TRACE_HELPERS
#define KMSGR_RDMA_TRACE_HELPERS
/* the peer (AF_INET or AF_INET6) into @dst, zero-padded, for %pISpc */
static inline void kmsgr_rdma_trace_peer(u8 *dst,
					 const struct sockaddr_storage *ss)
{
	size_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
						 sizeof(struct sockaddr_in);

	memset(dst, 0, sizeof(struct sockaddr_in6));
	memcpy(dst, ss, len);
}
#endif

/*
 * kmsgr_rdma_offer - a PULL of @len bytes under @rkey and the fast
 * registration before it were posted (@staged: of a staging copy).
 * @ahead: the work requests of the connection still outstanding on its
 * send queue then (SENDs, a READ, invalidations); on soft-RoCE kmsgr
 * registers only when there are none (docs/rdma-wire.md).
 */
TRACE_EVENT(kmsgr_rdma_offer,
	TP_PROTO(const struct ib_qp *qp, const struct sockaddr_storage *peer,
		 u32 len, u32 rkey, bool staged, u32 ahead),

	TP_ARGS(qp, peer, len, rkey, staged, ahead),

	TP_STRUCT__entry(
		__string(dev, dev_name(&qp->device->dev))
		__array(u8, peer, sizeof(struct sockaddr_in6))
		__field(u32, qpn)
		__field(u32, len)
		__field(u32, rkey)
		__field(u32, ahead)
		__field(bool, staged)
	),

	TP_fast_assign(
		kmsgr_assign_str(dev, dev_name(&qp->device->dev));
		kmsgr_rdma_trace_peer(__entry->peer, peer);
		__entry->qpn = qp->qp_num;
		__entry->len = len;
		__entry->rkey = rkey;
		__entry->ahead = ahead;
		__entry->staged = staged;
	),

	TP_printk("dev=%s qpn=%u peer=%pISpc len=%u rkey=0x%x staged=%d ahead=%u",
		  __get_str(dev), __entry->qpn, __entry->peer, __entry->len,
		  __entry->rkey, __entry->staged, __entry->ahead)
);

/*
 * kmsgr_rdma_read_post - the READ of @len bytes at the peer's @addr (what
 * its PULL offered, plus what was read of it) under @rkey was posted on
 * the QP, @res 0, or could not be (@res the errno: the connection fails).
 */
TRACE_EVENT(kmsgr_rdma_read_post,
	TP_PROTO(const struct ib_qp *qp, const struct sockaddr_storage *peer,
		 u64 addr, u32 len, u32 rkey, int res),

	TP_ARGS(qp, peer, addr, len, rkey, res),

	TP_STRUCT__entry(
		__string(dev, dev_name(&qp->device->dev))
		__array(u8, peer, sizeof(struct sockaddr_in6))
		__field(u64, addr)
		__field(u32, qpn)
		__field(u32, len)
		__field(u32, rkey)
		__field(int, res)
	),

	TP_fast_assign(
		kmsgr_assign_str(dev, dev_name(&qp->device->dev));
		kmsgr_rdma_trace_peer(__entry->peer, peer);
		__entry->addr = addr;
		__entry->qpn = qp->qp_num;
		__entry->len = len;
		__entry->rkey = rkey;
		__entry->res = res;
	),

	TP_printk("dev=%s qpn=%u peer=%pISpc addr=0x%llx len=%u rkey=0x%x res=%d",
		  __get_str(dev), __entry->qpn, __entry->peer, __entry->addr,
		  __entry->len, __entry->rkey, __entry->res)
);

/*
 * kmsgr_rdma_read_done - the READ completed with @status (anything but
 * SUCCESS fails the connection; WR_FLUSH_ERR: it was being torn down).
 */
TRACE_EVENT(kmsgr_rdma_read_done,
	TP_PROTO(const struct ib_qp *qp, const struct sockaddr_storage *peer,
		 u32 len, enum ib_wc_status status),

	TP_ARGS(qp, peer, len, status),

	TP_STRUCT__entry(
		__string(dev, dev_name(&qp->device->dev))
		__array(u8, peer, sizeof(struct sockaddr_in6))
		__field(u32, qpn)
		__field(u32, len)
		__field(unsigned int, status)
	),

	TP_fast_assign(
		kmsgr_assign_str(dev, dev_name(&qp->device->dev));
		kmsgr_rdma_trace_peer(__entry->peer, peer);
		__entry->qpn = qp->qp_num;
		__entry->len = len;
		__entry->status = status;
	),

	TP_printk("dev=%s qpn=%u peer=%pISpc len=%u status=%s",
		  __get_str(dev), __entry->qpn, __entry->peer, __entry->len,
		  show_kmsgr_wc_status(__entry->status))
);

#endif /* KMSGR_RDMA_TRACE_H */

/* Out of tree: the directory of this file, from kmod/ (-I$(src)). */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH trace
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE kmsgr_rdma_trace

#include <trace/define_trace.h>
