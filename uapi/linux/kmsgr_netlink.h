/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR MIT) */
/*
 * kmsgr - the generic netlink family "kmsgr": what the module is doing,
 * for operators (kmsgrctl session/listener/instance show, stats, monitor).
 *
 * The family is described by uapi/netlink/kmsgr.yaml in the kernel's
 * netlink-spec style; the constants here follow it (make check compares
 * them, tools/check-nlspec).
 *
 * Commands (all but the notifications are GET requests, do or dump):
 *
 *   SESSION_GET   do: KMSGR_A_SESSION_INSTANCE and _ID name one session;
 *                 dump: every session, or an instance's (_INSTANCE given)
 *   LISTENER_GET  the same for listeners (KMSGR_A_LISTENER_*)
 *   INSTANCE_GET  do: KMSGR_A_INSTANCE_ID; dump: every instance (no
 *                 attributes)
 *   STATS_GET     do: module-wide counters (KMSGR_A_STATS_*), of every
 *                 user and network namespace: needs CAP_NET_ADMIN in the
 *                 initial user namespace (EPERM)
 *   SESSION_NTF   multicast on "monitor": a session event (its attributes
 *                 plus _EVENT, _REASON, _RES)
 *   LISTENER_NTF  multicast on "monitor": a listener event (_REFUSED)
 *   DEV_GET       dump: the devices the transports use (RDMA devices and
 *                 their ports; KMSGR_A_DEV_*) that the caller's network
 *                 namespace may use (all of them unless RDMA's netns mode
 *                 is exclusive), visible to every caller there
 *   BDEV_GET      do: KMSGR_A_BDEV_INSTANCE and _ID (the handle
 *                 ATTACH_BDEV gave) name one attached block device;
 *                 dump: every attached device, or an instance's
 *                 (_INSTANCE given)
 *
 * Visibility: a caller sees the objects of the instances opened in its
 * network namespace by its own effective uid; with CAP_NET_ADMIN (in the
 * namespace's user namespace) it sees every instance of the namespace.
 * Joining "monitor" needs CAP_NET_ADMIN; a kernel that cannot keep a group
 * to CAP_NET_ADMIN (before 6.1.64, and 6.2 to 6.6.2) has no "monitor"
 * group.  A do request for an object the
 * caller may not see fails with ENOENT, like one that does not exist.
 *
 * Attribute types: u64 counters are padded (KMSGR_A_*_PAD); addresses are
 * struct kmsgr_addr (<linux/kmsgr.h>); strings are NUL-terminated.
 * Unknown attributes in a request are rejected (strict validation).  A
 * dump takes its instance filter and nothing else: an object id in a
 * dump request (and any attribute in an INSTANCE_GET dump) fails with
 * EINVAL; an instance filter of 0 lists nothing.
 *
 * PIDs and uids in replies are numbered in the namespaces of the task
 * that sent the request, a dump's later replies too (netlink builds them
 * in whichever task reads the socket).
 */
#ifndef _UAPI_LINUX_KMSGR_NETLINK_H
#define _UAPI_LINUX_KMSGR_NETLINK_H

#define KMSGR_GENL_NAME		"kmsgr"
#define KMSGR_GENL_VERSION	1
#define KMSGR_MCGRP_MONITOR	"monitor"

/* KMSGR_A_SESSION_STATE */
enum kmsgr_session_state {
	KMSGR_STATE_CONNECTING = 1,	/* transport connect in progress */
	KMSGR_STATE_HANDSHAKE,		/* msgr2 banner .. READY */
	KMSGR_STATE_UP,			/* READY: messages flow */
	KMSGR_STATE_BACKOFF,		/* lossless client: waits to redial */
	KMSGR_STATE_WAITING,		/* lossless server: the client may
					 * resume it until resume_timeout
					 */
	KMSGR_STATE_DEAD,		/* CLOSED posted, waiting for CLOSE */
	KMSGR_STATE_CLOSED,		/* torn down */
};

/* KMSGR_A_SESSION_MODE */
enum kmsgr_session_mode {
	KMSGR_MODE_NONE = 0,		/* no connection mode yet */
	KMSGR_MODE_CRC = 1,
	KMSGR_MODE_SECURE = 2,
};

enum {
	KMSGR_A_SESSION_PAD = 1,
	KMSGR_A_SESSION_INSTANCE,	/* u64: instance id */
	KMSGR_A_SESSION_ID,		/* u32: session id in the instance */
	KMSGR_A_SESSION_PID,		/* u32: tgid that opened the instance,
					 * in the requester's PID namespace
					 * (0: not visible there); in monitor
					 * events, in the initial one
					 */
	KMSGR_A_SESSION_COMM,		/* string: its comm */
	KMSGR_A_SESSION_USER_DATA,	/* u64: CONNECT / LISTEN user_data */
	KMSGR_A_SESSION_TRANSPORT,	/* u32: KMSGR_XPRT_* */
	KMSGR_A_SESSION_SERVER,		/* flag: accepted by a listener */
	KMSGR_A_SESSION_LISTENER,	/* u32: that listener's id */
	KMSGR_A_SESSION_LOCAL,		/* binary: struct kmsgr_addr */
	KMSGR_A_SESSION_PEER,		/* binary: struct kmsgr_addr */
	KMSGR_A_SESSION_PEER_TYPE,	/* u8: CEPH_ENTITY_TYPE_* */
	KMSGR_A_SESSION_PEER_GID,	/* u64: peer's global id (signed) */
	KMSGR_A_SESSION_STATE,		/* u8: enum kmsgr_session_state */
	KMSGR_A_SESSION_MODE,		/* u8: enum kmsgr_session_mode */
	KMSGR_A_SESSION_LOSSLESS,	/* flag */
	KMSGR_A_SESSION_AUTH,		/* u32: KMSGR_AUTH_* */
	KMSGR_A_SESSION_MSGS_OUT,	/* u64: messages sent (completed) */
	KMSGR_A_SESSION_BYTES_OUT,	/* u64: their payload bytes */
	KMSGR_A_SESSION_MSGS_IN,	/* u64: messages delivered */
	KMSGR_A_SESSION_BYTES_IN,	/* u64: their payload bytes */
	KMSGR_A_SESSION_IN_FLIGHT,	/* u32: SENDs not completed yet */
	KMSGR_A_SESSION_RECONNECTS,	/* u32: connections after the first */
	KMSGR_A_SESSION_LAST_ERROR,	/* s32: -errno of the last fault */
	KMSGR_A_SESSION_LAST_REASON,	/* u32: KMSGR_REASON_* of it */
	KMSGR_A_SESSION_EVENT,		/* u8: KMSGR_EV_* (SESSION_NTF) */
	KMSGR_A_SESSION_REASON,		/* u32: KMSGR_REASON_* (SESSION_NTF) */
	KMSGR_A_SESSION_RES,		/* s32: -errno (SESSION_NTF) */

	__KMSGR_A_SESSION_MAX,
	KMSGR_A_SESSION_MAX = (__KMSGR_A_SESSION_MAX - 1)
};

enum {
	KMSGR_A_LISTENER_PAD = 1,
	KMSGR_A_LISTENER_INSTANCE,	/* u64 */
	KMSGR_A_LISTENER_ID,		/* u32 */
	KMSGR_A_LISTENER_PID,		/* u32: as KMSGR_A_SESSION_PID */
	KMSGR_A_LISTENER_COMM,		/* string */
	KMSGR_A_LISTENER_USER_DATA,	/* u64 */
	KMSGR_A_LISTENER_TRANSPORT,	/* u32: KMSGR_XPRT_* */
	KMSGR_A_LISTENER_LOCAL,		/* binary: struct kmsgr_addr, bound */
	KMSGR_A_LISTENER_AUTH,		/* u32: KMSGR_AUTH_* clients use */
	KMSGR_A_LISTENER_FLAGS,		/* u32: KMSGR_SESS_F_* of sessions */
	KMSGR_A_LISTENER_MY_TYPE,	/* u8: entity type presented */
	KMSGR_A_LISTENER_HALF_OPEN,	/* u32: handshakes in progress */
	KMSGR_A_LISTENER_ACCEPTED,	/* u64: sessions announced */
	KMSGR_A_LISTENER_REFUSED,	/* u64: connections refused */
	KMSGR_A_LISTENER_EVENT,		/* u8: KMSGR_EV_* (LISTENER_NTF) */
	KMSGR_A_LISTENER_REASON,	/* u32 (LISTENER_NTF) */
	KMSGR_A_LISTENER_RES,		/* s32 (LISTENER_NTF) */

	__KMSGR_A_LISTENER_MAX,
	KMSGR_A_LISTENER_MAX = (__KMSGR_A_LISTENER_MAX - 1)
};

enum {
	KMSGR_A_INSTANCE_PAD = 1,
	KMSGR_A_INSTANCE_ID,		/* u64 */
	KMSGR_A_INSTANCE_PID,		/* u32: opener's tgid, in the
					 * requester's PID namespace (0: not
					 * visible there)
					 */
	KMSGR_A_INSTANCE_COMM,		/* string */
	KMSGR_A_INSTANCE_UID,		/* u32: opener's euid, in the requester's userns */
	KMSGR_A_INSTANCE_SQ_ENTRIES,	/* u32: 0 before SETUP */
	KMSGR_A_INSTANCE_CQ_ENTRIES,	/* u32 */
	KMSGR_A_INSTANCE_BUF_SIZE,	/* u64: buffer area bytes */
	KMSGR_A_INSTANCE_POOL_SIZE,	/* u64: receive pool bytes */
	KMSGR_A_INSTANCE_POOL_USED,	/* u64: of which allocated now */
	KMSGR_A_INSTANCE_LOCKED,	/* u64: bytes charged to memlock */
	KMSGR_A_INSTANCE_SESSIONS,	/* u32: sessions and listeners */
	KMSGR_A_INSTANCE_SQES,		/* u64: SQEs consumed */
	KMSGR_A_INSTANCE_SQE_ERRORS,	/* u64: of which completed with an
					 * error: refused at ENTER, a SEND
					 * that failed later (its session
					 * reset or closed), a block I/O
					 * error
					 */
	KMSGR_A_INSTANCE_CQES,		/* u64: CQEs posted */
	KMSGR_A_INSTANCE_CQ_FULL,	/* u64: posts that found the CQ full */
	KMSGR_A_INSTANCE_CQ_OVERFLOW,	/* u64: events queued for later */
	KMSGR_A_INSTANCE_CQ_LOST,	/* u64: events lost */
	KMSGR_A_INSTANCE_POOL_FULL,	/* u64: pool allocations refused */
	KMSGR_A_INSTANCE_CQ_PAUSED,	/* flag: delivery paused (CQ full) */
	KMSGR_A_INSTANCE_PINNED,	/* u64: bytes DMA-mapped now (rdma) */
	KMSGR_A_INSTANCE_REGISTERED,	/* u64: bytes registered for peers */
	KMSGR_A_INSTANCE_BDEVS,		/* u32: block devices attached now */
	KMSGR_A_INSTANCE_BDEV_OPS,	/* u64: BDEV SQEs submitted (every
					 * device, detached ones included)
					 */
	KMSGR_A_INSTANCE_BDEV_READ_BYTES,	/* u64: ... bytes of READs */
	KMSGR_A_INSTANCE_BDEV_WRITE_BYTES,	/* u64: ... of WRITEs */

	__KMSGR_A_INSTANCE_MAX,
	KMSGR_A_INSTANCE_MAX = (__KMSGR_A_INSTANCE_MAX - 1)
};

enum {
	KMSGR_A_STATS_PAD = 1,
	KMSGR_A_STATS_INSTANCES,	/* u32: open instances */
	KMSGR_A_STATS_SESSIONS,		/* u32: live sessions and listeners */
	KMSGR_A_STATS_CONNECTS,		/* u64: CONNECTs that succeeded */
	KMSGR_A_STATS_ACCEPTS,		/* u64: server sessions announced */
	KMSGR_A_STATS_REFUSED,		/* u64: connections refused */
	KMSGR_A_STATS_RECONNECTS,	/* u64: connections after the first */
	KMSGR_A_STATS_FAULTS,		/* u64: connections lost */
	KMSGR_A_STATS_MSGS_OUT,		/* u64: messages sent */
	KMSGR_A_STATS_BYTES_OUT,	/* u64 */
	KMSGR_A_STATS_MSGS_IN,		/* u64: messages delivered */
	KMSGR_A_STATS_BYTES_IN,		/* u64 */
	KMSGR_A_STATS_PINNED,		/* u64: bytes DMA-mapped now (rdma) */
	KMSGR_A_STATS_REGISTERED,	/* u64: bytes registered for peers */

	__KMSGR_A_STATS_MAX,
	KMSGR_A_STATS_MAX = (__KMSGR_A_STATS_MAX - 1)
};

enum {
	KMSGR_A_DEV_PAD = 1,
	KMSGR_A_DEV_TRANSPORT,		/* u32: KMSGR_XPRT_* using it */
	KMSGR_A_DEV_NAME,		/* string: e.g. "rxe0" */
	KMSGR_A_DEV_PORTS,		/* u32: ports 1 .. N */
	KMSGR_A_DEV_PORTS_DOWN,		/* u64: bit N set: port N is down */
	KMSGR_A_DEV_CONNS,		/* u32: connections on it made in the
					 * asker's network namespace
					 */
	KMSGR_A_DEV_PARKED,		/* u32: closed while their port was
					 * down, waiting for it (also the
					 * asker's namespace's alone)
					 */
	KMSGR_A_DEV_DYING,		/* flag: being removed */

	__KMSGR_A_DEV_MAX,
	KMSGR_A_DEV_MAX = (__KMSGR_A_DEV_MAX - 1)
};

/*
 * An attached block device (KMSGR_IOC_ATTACH_BDEV).  The op counters
 * count the BDEV SQEs the module submitted to the device (not those it
 * refused: they count only among the instance's SQE errors); _ERRORS
 * those of them that completed with an error (the instance's SQE errors
 * count them too).
 */
enum {
	KMSGR_A_BDEV_PAD = 1,
	KMSGR_A_BDEV_INSTANCE,		/* u64: instance id */
	KMSGR_A_BDEV_ID,		/* u32: the handle (kmsgr_sqe.session) */
	KMSGR_A_BDEV_PID,		/* u32: as KMSGR_A_INSTANCE_PID */
	KMSGR_A_BDEV_COMM,		/* string: its comm */
	KMSGR_A_BDEV_NAME,		/* string: the kernel's name ("nvme0n1") */
	KMSGR_A_BDEV_MAJOR,		/* u32: its dev_t */
	KMSGR_A_BDEV_MINOR,		/* u32 */
	KMSGR_A_BDEV_LBS,		/* u32: logical block size, bytes */
	KMSGR_A_BDEV_PBS,		/* u32: physical block size, bytes */
	KMSGR_A_BDEV_CAPACITY,		/* u64: bytes, now */
	KMSGR_A_BDEV_FLAGS,		/* u32: the KMSGR_BDEV_F_ flags it was
					 * attached with (EXCL, RDONLY, POLL)
					 */
	KMSGR_A_BDEV_ATTRS,		/* u32: KMSGR_BDEV_A_*, now */
	KMSGR_A_BDEV_IN_FLIGHT,		/* u32: ops not completed yet */
	KMSGR_A_BDEV_OPS,		/* u64: ops submitted */
	KMSGR_A_BDEV_READ_OPS,		/* u64: of which READs */
	KMSGR_A_BDEV_WRITE_OPS,		/* u64: WRITEs */
	KMSGR_A_BDEV_FLUSH_OPS,		/* u64: FLUSHes */
	KMSGR_A_BDEV_READ_BYTES,	/* u64: bytes of the READs */
	KMSGR_A_BDEV_WRITE_BYTES,	/* u64: bytes of the WRITEs */
	KMSGR_A_BDEV_ERRORS,		/* u64: ops completed with an error */
	KMSGR_A_BDEV_GONE,		/* flag: the device went away (hot
					 * unplug): later ops fail ENXIO
					 */

	__KMSGR_A_BDEV_MAX,
	KMSGR_A_BDEV_MAX = (__KMSGR_A_BDEV_MAX - 1)
};

enum {
	KMSGR_CMD_SESSION_GET = 1,
	KMSGR_CMD_LISTENER_GET,
	KMSGR_CMD_INSTANCE_GET,
	KMSGR_CMD_STATS_GET,
	KMSGR_CMD_SESSION_NTF,
	KMSGR_CMD_LISTENER_NTF,
	KMSGR_CMD_DEV_GET,
	KMSGR_CMD_BDEV_GET,

	__KMSGR_CMD_MAX,
	KMSGR_CMD_MAX = (__KMSGR_CMD_MAX - 1)
};

#endif /* _UAPI_LINUX_KMSGR_NETLINK_H */
