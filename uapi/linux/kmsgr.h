/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * kmsgr - Ceph msgr2 sessions as a kernel service: user API of /dev/kmsgr.
 *
 * Every open() of /dev/kmsgr creates an independent instance; closing the
 * last reference to the file destroys it.  Control is by ioctl on that file
 * descriptor; data moves through mmap'd rings and a shared buffer area.
 *
 * ABI rules
 *
 *  - All structures have fixed-width fields, natural alignment and explicit
 *    reserved space.  Reserved fields and undefined flag bits must be zero on
 *    input, else the ioctl fails with EINVAL; the kernel returns them as zero.
 *    New fields are carved out of reserved space, new behaviour is announced
 *    by a bit in kmsgr_info.features and requested by a flag bit.
 *  - KMSGR_ABI_VERSION changes only on an incompatible change (none is
 *    planned); a user of this header must check it first.
 *  - A command never changes meaning: a different argument size or semantic
 *    gets a new command number.
 *  - Unknown commands fail with ENOTTY.
 *  - Every command but INFO needs a file opened for writing (O_RDWR); on a
 *    read-only one it fails with EBADF.  The rings are mapped read-write,
 *    so a file opened O_WRONLY can SETUP but not mmap them (EACCES).
 *  - Before SETUP, ENTER, LISTEN, CONNECT and ATTACH_BDEV fail with
 *    EINVAL (so does mmap); CLOSE fails with ENOENT and DETACH_BDEV with
 *    ENODEV (there is no such session or handle yet).
 *  - Sockets are created in the network namespace of the process that
 *    opened the file, held for the life of the instance.
 *  - User pointers are passed as __u64.
 *
 * ioctl namespace
 *
 *  Type character KMSGR_IOC_MAGIC (0xC5, unassigned in
 *  Documentation/userspace-api/ioctl/ioctl-number.rst as of Linux 6.1),
 *  command numbers 0x00-0x3f are kmsgr's:
 *
 *   0x00  KMSGR_IOC_INFO        module ABI version, features, limits
 *   0x01  KMSGR_IOC_SETUP       size the SQ, the CQ and the buffer area;
 *                               return the mmap lengths, io_uring style
 *   0x02  KMSGR_IOC_ENTER       submit SQEs, optionally wait for CQEs
 *   0x03  KMSGR_IOC_LISTEN      listen on an address (tcp or rdma)
 *   0x04  KMSGR_IOC_CONNECT     open a session to a peer
 *   0x05  KMSGR_IOC_CLOSE       close a session or a listener
 *   0x06  KMSGR_IOC_ATTACH_BDEV attach a block device by fd
 *   0x07  KMSGR_IOC_DETACH_BDEV detach it
 *   0x08-0x3f                   reserved for later kmsgr commands
 *
 * Data path
 *
 *  After SETUP, three regions are mmap'd (MAP_SHARED) at the fixed offsets
 *  KMSGR_OFF_*: the SQ ring, the CQ ring and the buffer area.  The
 *  application writes SQEs (send a message whose front, middle and data are
 *  slices of the buffer area; release a received slice) and advances the SQ
 *  tail, then calls ENTER.  The kernel writes CQEs (a send finished, a
 *  message arrived with its segments as slices of the receive pool, a
 *  session event) and advances the CQ tail; poll() reports POLLIN while the
 *  CQ is not empty.  The receive pool is the end of the buffer area: the
 *  kernel allocates inbound payloads there and the application gives each
 *  slice back with KMSGR_OP_RELEASE.  One inbound message may take at most
 *  half the pool (its segments rounded up to 512 bytes each): a larger one
 *  fails its connection (reason BUSY, logged).  When the pool or the CQ is full, the
 *  kernel stops reading from the affected connections (backpressure): no
 *  message is ever dropped, nor a session's event (a listener's REFUSED
 *  notes are bounded, see KMSGR_EV_REFUSED).
 *
 *  Every SQE field is read once and checked; an invalid SQE (a bad opcode,
 *  flag, reserved field or slice) completes with a KMSGR_CQE_OP entry whose
 *  res is -EINVAL, a SEND too, with one exception: the SEND right after a
 *  BDEV op with KMSGR_SQE_F_LINK completes with a KMSGR_CQE_SEND entry,
 *  res -EINVAL (-ECANCELED when the op itself was refused; see struct
 *  kmsgr_sqe).  A well-formed SEND always completes with its
 *  KMSGR_CQE_SEND, an error included (ENOENT for an unknown session).
 *
 * Copyright (C) 2025 The kmsgr authors
 */
#ifndef _UAPI_LINUX_KMSGR_H
#define _UAPI_LINUX_KMSGR_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

/* Name of the misc device: the node is /dev/KMSGR_DEV_NAME. */
#define KMSGR_DEV_NAME		"kmsgr"
#define KMSGR_DEV_PATH		"/dev/" KMSGR_DEV_NAME

/* Version of the ABI below; changes only on an incompatible change. */
#define KMSGR_ABI_VERSION	1

/* ioctl type character of every kmsgr command. */
#define KMSGR_IOC_MAGIC		0xC5

/* Length of kmsgr_info.version, including the terminating NUL. */
#define KMSGR_VERSION_LEN	32

/*
 * kmsgr_info.features: what this module implements.
 *
 * Bits 0-17 are defined below (rings, transports, cephx, secure mode,
 * the block-device path, ...); bits 18-63 are reserved for later
 * features.  A module never sets a bit it does not implement; user space
 * must ignore bits it does not know.
 */
#define KMSGR_FEAT_INFO		_BITULL(0)	/* KMSGR_IOC_INFO, struct kmsgr_info */
#define KMSGR_FEAT_RINGS	_BITULL(1)	/* SETUP, ENTER, mmap, SQEs/CQEs */
#define KMSGR_FEAT_TCP		_BITULL(2)	/* KMSGR_XPRT_TCP sessions */
#define KMSGR_FEAT_CEPHX	_BITULL(3)	/* KMSGR_AUTH_CEPHX, client role */
#define KMSGR_FEAT_SECURE	_BITULL(4)	/* KMSGR_SESS_F_SECURE */
#define KMSGR_FEAT_RELEASE_TOKEN _BITULL(5)	/* RECV res = release token,
						 * KMSGR_SQE_F_TOKEN
						 */
#define KMSGR_FEAT_LISTEN_CEPHX	_BITULL(6)	/* LISTEN with auth CEPHX (and
						 * SECURE): server-side cephx
						 */
#define KMSGR_FEAT_SKIP_SUCCESS	_BITULL(7)	/* KMSGR_SQE_F_SKIP_SUCCESS */
#define KMSGR_FEAT_INFO_POOL	_BITULL(8)	/* kmsgr_info.pool_bytes */
#define KMSGR_FEAT_RING_LINES	_BITULL(9)	/* KMSGR_SETUP_F_RING_LINES,
						 * kmsgr_ring.head_off/tail_off
						 */
#define KMSGR_FEAT_RDMA		_BITULL(10)	/* KMSGR_XPRT_RDMA sessions: set
						 * while the kmsgr_rdma module
						 * is loaded
						 */
#define KMSGR_FEAT_LOGON_KEYS	_BITULL(11)	/* cephx secrets from "logon"
						 * keys: kmsgr_connect.key_desc,
						 * KMSGR_LISTEN_KEY_F_LOGON
						 */
#define KMSGR_FEAT_CEPHX_TICKETS _BITULL(12)	/* cephx to OSDs, MGRs and
						 * MDSs with a mon session's
						 * ticket: kmsgr_connect.
						 * ticket_from
						 */
#define KMSGR_FEAT_BDEV		_BITULL(13)	/* ATTACH_BDEV, DETACH_BDEV,
						 * KMSGR_OP_BDEV_* SQEs
						 */
#define KMSGR_FEAT_BDEV_LINK	_BITULL(14)	/* KMSGR_SQE_F_LINK (a BDEV op
						 * then its SEND) and
						 * SKIP_SUCCESS on BDEV SQEs
						 */
#define KMSGR_FEAT_BDEV_POLL	_BITULL(15)	/* KMSGR_BDEV_F_POLL: polled
						 * completion of BDEV ops
						 */
#define KMSGR_FEAT_BUSY_POLL	_BITULL(16)	/* kmsgr_enter.busy_poll_us:
						 * ENTER spins in the kernel
						 */
#define KMSGR_FEAT_PEER_KEY	_BITULL(17)	/* ACCEPTED and UP events of
						 * a cephx listener's
						 * sessions name the key
						 * (kmsgr_cqe.tid)
						 */

/*
 * struct kmsgr_info - argument of KMSGR_IOC_INFO.
 *
 * Passed in with @flags and @reserved zero; copied back with the module's
 * answer.  Output fields are ignored on input.  A limit that belongs to a
 * feature the module does not advertise reads as 0.
 */
struct kmsgr_info {
	__u32 flags;		/* in: KMSGR_INFO_F_* (none defined yet), must be 0 */
	__u32 abi_version;	/* out: KMSGR_ABI_VERSION of the module */
	__u64 features;		/* out: KMSGR_FEAT_* bits the module implements */
	__u32 max_sq_entries;	/* out: largest SQ that SETUP accepts, entries */
	__u32 max_cq_entries;	/* out: largest CQ that SETUP accepts, entries */
	__u64 max_buf_size;	/* out: largest buffer area SETUP accepts, bytes */
	__u32 max_sessions;	/* out: most sessions per instance, listeners
				 * counted (CONNECT and LISTEN beyond it:
				 * ENOSPC)
				 */
	__u32 reserved0;	/* in: must be 0; out: 0 */
	char version[KMSGR_VERSION_LEN]; /* out: module version, NUL-terminated */
	__u64 pool_bytes;	/* out: receive-pool bytes of this instance in
				 * use now (allocated to messages being
				 * received, delivered and not yet released,
				 * or kept for spilled ones); 0 before SETUP
				 * (KMSGR_FEAT_INFO_POOL)
				 */
	__u64 pinned_bytes;	/* out: module-wide, bytes the transports keep
				 * DMA-mapped now (RDMA connection buffers);
				 * 0 without KMSGR_FEAT_RDMA
				 */
	__u64 registered_bytes;	/* out: module-wide, bytes of buffer areas
				 * registered for peers to RDMA READ now
				 * (offered, not yet invalidated)
				 */
	__u64 reserved[4];	/* in: must be 0; out: 0 */
};

/* kmsgr_info.flags: none defined; every bit must be zero. */
#define KMSGR_INFO_F_ALL	0U

/* ------------------------------------------------------------------------ */
/* Instances: SETUP, mmap regions, rings                                    */
/* ------------------------------------------------------------------------ */

/*
 * mmap() offsets (the page offset selects a region, as in io_uring).  A
 * region is mapped MAP_SHARED from its start, at offset exactly the
 * constant, at most its size (EINVAL beyond); map it whole: a shorter
 * mapping is taken, but the ring or area it cuts short is still used by
 * the kernel to its end.
 */
#define KMSGR_OFF_SQ_RING	0x00000000ULL	/* struct kmsgr_ring + SQEs */
#define KMSGR_OFF_CQ_RING	0x10000000ULL	/* struct kmsgr_ring + CQEs */
#define KMSGR_OFF_BUF		0x20000000ULL	/* the buffer area */

/*
 * struct kmsgr_ring - the head of the SQ and of the CQ region; the entries
 * follow at @entries_off.  Producer: user for the SQ, kernel for the CQ.
 * The consumer owns the head, the producer the tail; both free-running
 * __u32 counters (index = counter & mask), read with acquire and written
 * with release semantics.
 *
 * Where the two counters live: a module with KMSGR_FEAT_RING_LINES says it
 * in @head_off and @tail_off, the byte offsets of the head and of the tail
 * counter in the region.  Without KMSGR_SETUP_F_RING_LINES they are the
 * @head and @tail fields below (offsets 0 and 4, as in ABI 1).  With it,
 * the head and the tail sit on cache lines of their own, after this
 * structure, so the consumer's and the producer's writes do not share a
 * line; @head and @tail then read as 0 and are not used.  A module
 * without the feature leaves @head_off and @tail_off 0: use @head and
 * @tail.
 */
struct kmsgr_ring {
	__u32 head;		/* consumer position (see above) */
	__u32 tail;		/* producer position (see above) */
	__u32 mask;		/* entries - 1 */
	__u32 entries;		/* power of two */
	__u32 flags;		/* KMSGR_RING_F_* (kernel-written) */
	__u32 dropped;		/* SQ: 0 (every SQE is answered, an invalid
				 * one with an error CQE); CQ: events lost
				 * because the overflow list was full
				 * (kernel-written, wraps)
				 */
	__u32 entries_off;	/* byte offset of entry 0 in the region */
	__u32 head_off;		/* byte offset of the head counter */
	__u32 tail_off;		/* byte offset of the tail counter */
	__u32 reserved[7];
};

/*
 * kmsgr_ring.flags
 *
 * KMSGR_RING_F_CQ_PAUSED (CQ): an inbound message or event found no room
 * and waits.  KMSGR_IOC_ENTER or poll() resumes delivery once there is room
 * again (paused sessions also look again by themselves every 20 ms).  The
 * kernel sets the flag, then reads the CQ head again, so an application
 * that does not sleep in ENTER must, after advancing the head, issue a full
 * barrier, read this flag and call ENTER (to_submit 0) when it is set
 * (libkmsgr's kmsgr_peek_cqe() does this when it finds the CQ empty).
 */
#define KMSGR_RING_F_CQ_PAUSED	_BITUL(0)	/* CQ: delivery paused */

/*
 * struct kmsgr_setup - argument of KMSGR_IOC_SETUP, once per instance
 * (EBUSY the second time).
 *
 * In: ring sizes (rounded up to a power of two), buffer-area size (rounded
 * up to pages) and the part of it, at its end, that the kernel may
 * allocate inbound payloads from (the receive pool; at least
 * KMSGR_POOL_MIN bytes).  Sizes above the module's limits (kmsgr_info
 * max_*) fail with EINVAL; a cq_entries of 0 asks for twice sq_entries,
 * capped at max_cq_entries; a CQ has at least 2 entries (of 1, consumed
 * SQEs could hold the only slot, and a lossless SEND would wait for an
 * acknowledgment inside a message there is no room to receive).  The
 * rings and the area are charged to RLIMIT_MEMLOCK (ENOMEM over it,
 * unless CAP_IPC_LOCK).
 * Out: the sizes granted and the length of each region to mmap.
 */
struct kmsgr_setup {
	__u32 sq_entries;	/* in/out */
	__u32 cq_entries;	/* in/out: 0 = 2 * sq_entries, capped */
	__u64 buf_size;		/* in/out: bytes */
	__u64 rx_pool_size;	/* in/out: bytes at the end of the area */
	__u32 flags;		/* in: KMSGR_SETUP_F_* */
	__u32 reserved0;	/* in: 0 */
	__u64 sq_ring_size;	/* out: length to mmap at KMSGR_OFF_SQ_RING */
	__u64 cq_ring_size;	/* out: length to mmap at KMSGR_OFF_CQ_RING */
	__u64 reserved[6];	/* in: 0 */
};

#define KMSGR_POOL_MIN		(64U * 1024)

/*
 * kmsgr_setup.flags
 *
 * KMSGR_SETUP_F_RING_LINES (KMSGR_FEAT_RING_LINES): put each ring's head
 * and tail counters on cache lines of their own (struct kmsgr_ring).
 */
#define KMSGR_SETUP_F_RING_LINES	_BITUL(0)
#define KMSGR_SETUP_F_ALL		KMSGR_SETUP_F_RING_LINES

/* ------------------------------------------------------------------------ */
/* Sessions: LISTEN, CONNECT, CLOSE                                         */
/* ------------------------------------------------------------------------ */

/* transports */
#define KMSGR_XPRT_TCP		1
#define KMSGR_XPRT_RDMA		2	/* kernel verbs, rdma_cm (kmsgr_rdma.ko) */

/* struct kmsgr_addr - an IPv4 or IPv6 address and port, network order */
struct kmsgr_addr {
	__u16 family;		/* AF_INET or AF_INET6 */
	__be16 port;
	__u32 scope_id;		/* IPv6 scope, else 0 */
	__u8 addr[16];		/* IPv4: first 4 bytes, rest 0 */
	__u32 nonce;		/* peer's entity_addr_t nonce (0 for mons) */
	__u32 reserved;		/* must be 0 */
};

/* struct kmsgr_listen - argument of KMSGR_IOC_LISTEN */
struct kmsgr_listen {
	struct kmsgr_addr addr;	/* in: address to bind (port 0: any) */
	__u32 transport;	/* in: KMSGR_XPRT_* */
	__u32 flags;		/* in: KMSGR_SESS_F_* for accepted sessions */
	__u64 user_data;	/* in: copied into ACCEPTED events */
	__u32 id;		/* out: listener id (for CLOSE) */
	__u8 my_type;		/* in: entity type the listener presents in
				 * HELLO (CEPH_ENTITY_TYPE_*: 1 mon, 4 osd,
				 * ...); 0 = 8 (client), what ABI 1 always
				 * sent.  A Ceph client checks it against the
				 * type it dialled (mon for `ceph -s`).
				 */
	__u8 reserved1[3];	/* must be 0 */
	struct kmsgr_addr bound; /* out: the address actually bound */
	/*
	 * in: how clients authenticate.  KMSGR_AUTH_NONE (or 0, what ABI 1
	 * sent): anyone, crc mode.  KMSGR_AUTH_CEPHX (KMSGR_FEAT_LISTEN_CEPHX):
	 * the listener authenticates clients as a mon does, from @keys, an
	 * array of @n_keys (1 to KMSGR_LISTEN_KEYS_MAX) struct
	 * kmsgr_listen_key, copied in at LISTEN (never logged, wiped when
	 * the listener goes away); it offers crc and secure mode, or only
	 * secure with KMSGR_SESS_F_SECURE.
	 */
	__u64 keys;		/* in: user pointer */
	__u32 n_keys;		/* in */
	__u16 auth;		/* in: KMSGR_AUTH_* or 0 */
	__u16 reserved2;	/* must be 0 */
	__u64 reserved[2];	/* must be 0 */
};

#define KMSGR_LISTEN_KEYS_MAX	64

/* struct kmsgr_listen_key - one entity a cephx listener accepts */
struct kmsgr_listen_key {
	char name[64];		/* entity id without the type, e.g. "admin",
				 * NUL-terminated
				 */
	__u8 entity_type;	/* CEPH_ENTITY_TYPE_*: 8 client, ... */
	__u8 flags;		/* KMSGR_LISTEN_KEY_F_* */
	__u8 reserved[6];	/* must be 0 */
	__u8 key[16];		/* the raw cephx secret (AES-128); all 0
				 * with KMSGR_LISTEN_KEY_F_LOGON
				 */
};

/*
 * KMSGR_LISTEN_KEY_F_LOGON (KMSGR_FEAT_LOGON_KEYS): the secret is not in
 * @key but in the LISTEN caller's "logon" key "kmsgr:TYPE.ID" (e.g.
 * "kmsgr:client.admin"; add_key(2), keyctl padd logon), whose payload is
 * the 16 raw bytes.  It is read once, at LISTEN.
 */
#define KMSGR_LISTEN_KEY_F_LOGON	_BITUL(0)

/* auth methods */
#define KMSGR_AUTH_NONE		1
#define KMSGR_AUTH_CEPHX	2

/* kmsgr_connect.flags / kmsgr_listen.flags */
#define KMSGR_SESS_F_LOSSLESS	_BITUL(0)	/* resend after reconnect */
#define KMSGR_SESS_F_SECURE	_BITUL(1)	/* secure mode (needs cephx) */

#define KMSGR_NAME_LEN		64

/* struct kmsgr_connect - argument of KMSGR_IOC_CONNECT */
struct kmsgr_connect {
	struct kmsgr_addr addr;	/* in: the peer (its msgr2 address) */
	__u32 transport;	/* in: KMSGR_XPRT_* */
	__u32 flags;		/* in: KMSGR_SESS_F_* */
	__u8 peer_type;		/* in: CEPH_ENTITY_TYPE_* (1 mon, 4 osd, ...) */
	__u8 my_type;		/* in: our entity type (8 client) */
	__u16 auth;		/* in: KMSGR_AUTH_* */
	__u32 key_len;		/* in: 16 for cephx, else 0 */
	__u64 key;		/* in: user pointer to the raw cephx key */
	char name[KMSGR_NAME_LEN]; /* in: entity id, e.g. "admin" */
	__u64 user_data;	/* in: copied into this session's events */
	__u32 id;		/* out: session id */
	/*
	 * in: KMSGR_AUTH_CEPHX towards an OSD, MGR or MDS (@peer_type) the
	 * way a Ceph client does it (KMSGR_FEAT_CEPHX_TICKETS): the id of a
	 * cephx session of this instance to a mon that has authenticated;
	 * the ticket the mon issued it for @peer_type, its session key and
	 * its global id are presented (a cephx authorizer), and @key,
	 * @key_len, @key_desc and @name stay 0.  The ticket is taken at
	 * CONNECT (the mon's auth_service_ticket_ttl, 1 h by default).
	 * ENOKEY when the mon session is not up (it has not authenticated
	 * and checked the mon's signature, or it is reconnecting) or holds
	 * no ticket for @peer_type, EMSGSIZE when the mon issued one larger
	 * than kmsgr keeps (4096 bytes, which an entity with very long caps
	 * may exceed); ENOENT when @ticket_from is no session,
	 * EINVAL when it is not a cephx client session to a mon.  0: none.
	 */
	__u32 ticket_from;
	/*
	 * in: user pointer to the description of a "logon" key holding the
	 * 16-byte cephx secret (KMSGR_FEAT_LOGON_KEYS), instead of @key and
	 * @key_len (both 0 then); looked up in the caller's keyrings at
	 * CONNECT, never read back by user space.  It must start with
	 * KMSGR_KEY_DESC_PREFIX (EINVAL otherwise: another service's logon
	 * key is never used as a cephx secret), and be at most 255 bytes
	 * (ENAMETOOLONG).  0: none.
	 */
	__u64 key_desc;
	__u64 reserved[3];	/* must be 0 */
};

/* what the description of every logon key kmsgr reads starts with */
#define KMSGR_KEY_DESC_PREFIX	"kmsgr:"

/*
 * struct kmsgr_close - argument of KMSGR_IOC_CLOSE.  An id names its
 * session or listener from when CONNECT or LISTEN returned it: a SEND
 * naming it earlier (from another thread) fails with ENOENT, a CLOSE
 * waits for the CONNECT or LISTEN, and one that fails leaves nothing
 * under the id.  ENOENT: no session or listener has the id.
 */
struct kmsgr_close {
	__u32 id;		/* in: session or listener id */
	__u32 flags;		/* in: must be 0 */
	__u64 reserved[2];	/* must be 0 */
};

/*
 * struct kmsgr_enter - argument of KMSGR_IOC_ENTER.  With
 * KMSGR_ENTER_F_GETEVENTS the caller sleeps until min_complete CQEs are
 * ready (it is not woken for fewer), the timeout passes, or, when SQEs
 * were left unconsumed for want of a CQ slot, a slot is given back
 * without a CQE (KMSGR_SQE_F_SKIP_SUCCESS): it returns then, and the
 * caller submits again.  It also returns with fewer CQEs ready when
 * delivery is paused for want of CQ room (KMSGR_RING_F_CQ_PAUSED) or of
 * receive-pool room (a message waits for slices to be RELEASEd): what
 * waits behind the paused delivery (a peer's ack of a lossless SEND, the
 * next message) can only come once the caller reaps what is there.
 * While ops on a polled block device (KMSGR_BDEV_F_POLL) are out, it
 * polls the device and spins instead of sleeping, until 20 ms pass
 * without a CQE (then it sleeps, and a kernel worker polls every tick);
 * with min_complete 0 it polls once.
 * @timeout_ns bounds the whole wait (spins, sleeps, and the sessions it
 * runs meanwhile), counted from when it first finds too few CQEs: it
 * never ends earlier, and later only by a tick or two of the kernel's
 * clock (and by the scheduler).
 * @min_complete above cq_entries counts as cq_entries.
 * Returns the number of SQEs consumed, or -1 with errno: ETIME when the
 * timeout passed with fewer than @min_complete CQEs ready and no SQE was
 * consumed (with SQEs consumed, their count); a signal during
 * the wait gives EINTR even when SQEs were consumed (@submitted tells how
 * many, as does the SQ head).  A signal also ends an ENTER with
 * @to_submit that waits for another thread's ENTER to finish submitting
 * (which may sleep in the block layer): EINTR, @submitted 0.
 *
 * With @busy_poll_us (KMSGR_FEAT_BUSY_POLL) the wait spins for up to that
 * long before it sleeps: it watches the CQ and, waiting for one CQE, runs
 * the sessions whose transports have data itself, as soon as they have
 * it, with no wake-up and no context switch (NAPI busy polling's idea,
 * for the rings).  The spin counts toward @timeout_ns.  Worth it for
 * request-reply traffic on a machine with a CPU to spare; the price is
 * that CPU, busy for up to @busy_poll_us per wait.
 */
struct kmsgr_enter {
	__u32 to_submit;	/* in: SQEs to consume (up to the SQ tail) */
	__u32 min_complete;	/* in: wait until this many CQEs are ready */
	__u32 flags;		/* in: KMSGR_ENTER_F_* */
	__u32 submitted;	/* out: SQEs consumed */
	__u64 timeout_ns;	/* in: with GETEVENTS; 0 = no timeout;
				 * more than 100 years counts as 100 years
				 */
	__u32 busy_poll_us;	/* in: with GETEVENTS, spin this long before
				 * sleeping; 0 = no spin; at most
				 * KMSGR_BUSY_POLL_MAX_US (else EINVAL, as
				 * without GETEVENTS)
				 */
	__u32 reserved32;	/* must be 0 */
	__u64 reserved;		/* must be 0 */
};

#define KMSGR_ENTER_F_GETEVENTS	_BITUL(0)	/* wait for min_complete CQEs */

/* Upper bound of kmsgr_enter.busy_poll_us (and of libkmsgr's busy-poll). */
#define KMSGR_BUSY_POLL_MAX_US	10000U

/* ------------------------------------------------------------------------ */
/* SQEs and CQEs (64 bytes each)                                            */
/* ------------------------------------------------------------------------ */

/* struct kmsgr_slice - a piece of the buffer area */
struct kmsgr_slice {
	__u32 off;		/* byte offset in the buffer area */
	__u32 len;		/* bytes */
};

/* kmsgr_sqe.opcode */
#define KMSGR_OP_NOP		0	/* completes at once (KMSGR_CQE_OP) */
#define KMSGR_OP_SEND		1	/* send a message: one KMSGR_CQE_SEND
					 * (malformed: KMSGR_CQE_OP, but
					 * KMSGR_CQE_SEND after a LINK)
					 */
#define KMSGR_OP_RELEASE	2	/* give back receive-pool slices */
#define KMSGR_OP_BDEV_WRITE	3	/* slices to a block device */
#define KMSGR_OP_BDEV_READ	4	/* a block device range into slices */
#define KMSGR_OP_BDEV_FLUSH	5	/* flush the device's write cache */

/* kmsgr_sqe.flags */
#define KMSGR_SQE_F_TOKEN	_BITUL(0)	/* RELEASE: @tid is the token */
#define KMSGR_SQE_F_SKIP_SUCCESS _BITUL(1)	/* SEND, BDEV_*: no CQE if ok */
#define KMSGR_SQE_F_FUA		_BITUL(2)	/* BDEV_WRITE: forced unit access */
#define KMSGR_SQE_F_PREFLUSH	_BITUL(3)	/* BDEV_WRITE: flush the cache
						 * first
						 */
#define KMSGR_SQE_F_RELEASE	_BITUL(4)	/* BDEV_WRITE: the slices are a
						 * RECV's (@token), given back
						 * when the write is done
						 */
#define KMSGR_SQE_F_LINK	_BITUL(5)	/* BDEV_*: then the SEND after */
/* Largest message (all three segments) a secure-mode session sends. */
#define KMSGR_SECURE_MSG_MAX	((4U << 20) + (64U << 10))
/* Largest release token; tokens are 1 .. KMSGR_RELEASE_TOKEN_MAX. */
#define KMSGR_RELEASE_TOKEN_MAX	0x7fffffffU

/*
 * struct kmsgr_sqe - one submission (64 bytes).
 *
 * SEND: @session, @type, @version, @compat_version, @priority, @tid and the
 * front, middle and data slices (len 0: absent) of the buffer area.  The
 * slices must stay untouched until the KMSGR_CQE_SEND for this SQE, which
 * reports res 0 when the message was sent (lossy) or acknowledged by the
 * peer (lossless), or -errno when it was dropped: among others -EPIPE
 * when the session had already ended (DEAD), -ECONNRESET when it was
 * closed with the SEND queued or while the SEND was being submitted.
 * Every SEND gets its CQE: one submitted while another thread closes the
 * session (or while a server session retires) may get it after the
 * session's CLOSED event.  (Lossless sessions hand
 * large slices to the network stack by page reference, zero copy, so this
 * rule is what keeps their bytes right on the wire.)  A session in secure
 * mode seals each message in a buffer of its own: there the three slices
 * together may hold at most KMSGR_SECURE_MSG_MAX bytes (a 4 MiB data
 * segment, Ceph's usual object op, with its front and middle), else the
 * SEND completes with -EMSGSIZE.
 * With KMSGR_SQE_F_SKIP_SUCCESS (KMSGR_FEAT_SKIP_SUCCESS) a SEND that
 * succeeds posts no CQE at all (io_uring's IOSQE_CQE_SKIP_SUCCESS); one
 * that fails still posts its KMSGR_CQE_SEND with -errno.  The application
 * then learns of no moment at which the slices are free again: use it
 * for slices that do not change (a constant payload), or that a later
 * completion of the same session covers.  It still counts against the
 * in-flight bound below until it is done.
 * RELEASE: up to three receive-pool slices as a RECV CQE gave them (len 0:
 * unused).  A slice is matched by its offset and the 512-byte grains its
 * length covers (the pool's unit): a length that covers the same grains
 * names the same slice.  Completes silently; a bad or double release completes
 * with a KMSGR_CQE_OP entry, res -EINVAL, and frees none of its slices
 * (nor does one that names a slice twice).  With KMSGR_SQE_F_TOKEN in
 * @flags, @tid carries the RECV's release token (its res) and every slice
 * must belong to that message: a stale or double RELEASE can then never
 * free space that a later message reuses (tokens are handed out in turn,
 * so that one comes back only after 2^31 messages of the instance).  Without the flag (ABI 1 form,
 * still accepted, not safe against that) any slice of a delivered message
 * is taken.  Slices still being received into are never released.
 * The kernel consumes an SQE only when the CQ has room for its completion
 * and fewer than cq_entries - cq_entries / 2 completions of consumed SQEs
 * are outstanding: the other half of the CQ stays free for inbound
 * messages and events, so SENDs in flight can never block the reading
 * that completes them.  ENTER fails with EBUSY when it could consume none
 * and does not wait (no GETEVENTS, or min_complete 0).
 *
 * BDEV_WRITE, BDEV_READ, BDEV_FLUSH (KMSGR_FEAT_BDEV): @session is the
 * handle of an attached block device (struct kmsgr_bdev), @tid the byte
 * offset on it, and the non-empty slices of @seg, in order, the memory
 * (vectored: up to three pieces).  Every offset and length, on the device
 * and in the buffer area, is a multiple of the device's logical block
 * size (its size now: a device formatted anew may change it) and of its
 * DMA alignment where that is larger (a few host controllers); the range
 * lies within the capacity and is at most max_io bytes.
 * The bytes move between the device and the buffer area's own pages,
 * never through a copy.  READ's slices lie before the receive pool (the
 * kernel owns the pool).  WRITE's slices stay untouched until its CQE;
 * with KMSGR_SQE_F_RELEASE they must be the receive-pool slices of one
 * RECV whose release token is in @token: a write that starts takes them
 * from the application (a RELEASE of them fails from then on) and gives
 * them back when it is done, whatever its result; one refused before it
 * starts (its error CQE comes from ENTER: bad fields, EROFS, ENOSPC, a
 * linked SEND refused, ...) leaves them with the application.  After an
 * error CQE, a RELEASE with KMSGR_SQE_F_TOKEN of the slices is always
 * right: it gives them back, or fails with EINVAL when the write had
 * them already (the token keeps it off any later message).  A received
 * data segment whose length is a multiple of 4096 starts 4096-aligned in
 * the area, so it can go to a device of 4 KiB blocks.  FUA and PREFLUSH
 * go to the device as REQ_FUA and REQ_PREFLUSH.  FLUSH has no slices (every
 * offset and length 0) and @tid 0.  Each completes with one KMSGR_CQE_OP entry: @session the
 * handle, @tid the offset, @res 0 or -errno: EINVAL (misaligned, a slice
 * in the wrong place, a bad token), ENODEV (no such handle, or detached),
 * EROFS (a write to a read-only attachment, or to a device set read-only
 * since), ETXTBSY (a write to a device that is active swap), ENOSPC (beyond the
 * capacity), EMSGSIZE (above max_io), ENXIO (the device is gone: hot
 * unplug), or the block layer's status (EIO, ENOLINK, ...).
 * With KMSGR_SQE_F_SKIP_SUCCESS (KMSGR_FEAT_BDEV_LINK) a BDEV op that
 * succeeds posts no CQE, as a SEND with it.
 *
 * Op and send (KMSGR_FEAT_BDEV_LINK): a BDEV op with KMSGR_SQE_F_LINK is
 * linked to the SQE after it, which must be a SEND (without LINK) in the
 * same ENTER: the two are consumed together, and the SEND is made (by the
 * ENTER waiting for CQEs, the poller, or else a kernel work item) only once
 * the op succeeded.  So a reply whose data segment is the slice a BDEV_READ
 * just filled, or the acknowledgment of a BDEV_WRITE or FLUSH, goes out
 * without the application waking in between.  Each SEND goes when its op is
 * done: pairs in flight together reach the peer in the order their ops
 * complete, not in the order submitted.  Each keeps its CQE: the op's (skip
 * it on success with KMSGR_SQE_F_SKIP_SUCCESS), then the SEND's, which is
 * -ECANCELED when the op failed or was refused, and the op's -ECANCELED
 * when the SEND was refused at once (bad fields, or a slice that shares
 * bytes with those of a WRITE with KMSGR_SQE_F_RELEASE, which are freed
 * before the SEND is made: it then gets its own error, -EINVAL, in its
 * KMSGR_CQE_SEND).  A LINK with no SQE after it in this ENTER (@to_submit
 * ends there) or in an instance whose CQ has fewer than 4 entries (the
 * pair's two slots never fit), or before one that is not a SEND, fails with
 * -EINVAL, and the SQE after it, whenever it is consumed (in this ENTER or
 * a later one), with -ECANCELED: a SEND meant to carry what the op read
 * never goes out alone.  LINK on any other opcode is a bad flag of that SQE
 * alone (-EINVAL); the SQE after it is not affected.
 *
 * Fields an opcode does not use must be 0, else its CQE has -EINVAL:
 * @type, @version, @compat_version and @priority for all but SEND; for
 * NOP also @session, @tid and @seg; @tid for a RELEASE without
 * KMSGR_SQE_F_TOKEN.  (A RELEASE's @session is ignored: libkmsgr puts the
 * RECV's there.)
 */
struct kmsgr_sqe {
	__u8 opcode;		/* KMSGR_OP_* */
	__u8 flags;		/* KMSGR_SQE_F_*; 0 unless stated */
	__u16 type;		/* SEND: message type */
	__u16 version;		/* SEND: header version */
	__u16 compat_version;	/* SEND: header compat version */
	__u32 session;		/* SEND: session id */
	__u16 priority;		/* SEND: 0 = 127 */
	__u16 reserved0;	/* must be 0 */
	__u64 user_data;	/* copied into the CQE */
	__u64 tid;		/* SEND: transaction id */
	struct kmsgr_slice seg[3]; /* SEND: front, middle, data */
	__u32 token;		/* BDEV_WRITE with KMSGR_SQE_F_RELEASE: the
				 * RECV's release token; else 0
				 */
	__u32 reserved1;	/* must be 0 */
};

/* kmsgr_cqe.kind */
#define KMSGR_CQE_SEND		1	/* a SEND finished: res 0 or -errno */
#define KMSGR_CQE_RECV		2	/* an inbound message */
#define KMSGR_CQE_EVENT		3	/* a session event (event field) */
#define KMSGR_CQE_OP		4	/* NOP, a block-device op, or a
					 * rejected SQE (res < 0)
					 */

/* kmsgr_cqe.event */
#define KMSGR_EV_ACCEPTED	1	/* new session from a listener */
#define KMSGR_EV_UP		2	/* session READY (again) */
#define KMSGR_EV_DOWN		3	/* connection lost; lossless: retrying */
#define KMSGR_EV_RESET		4	/* peer reset the session */
#define KMSGR_EV_CLOSED		5	/* session gone; reason in @reason;
					 * no RECV of the session follows it
					 */
/*
 * A listener refused a connection: @session is the listener's id,
 * @user_data its LISTEN user_data, @reason KMSGR_REASON_HALF_OPEN (too many
 * handshakes in progress, module parameter max_half_open),
 * KMSGR_REASON_SESSIONS (max_sessions reached when the handshake ended),
 * KMSGR_REASON_BUSY (@res -EBUSY: over 2048 events wait for CQ room, the
 * application has not read its CQ for long) or KMSGR_REASON_NOMEM; @res
 * the errno.  The peer's address is logged.  Reason KMSGR_REASON_DEVICE,
 * @res -ENODEV: the RDMA device of the address the listener is bound to
 * went away; it accepts nothing more (CLOSE it), and this one is never
 * left out.
 * Remote peers can cause these as fast as they connect: while the CQ is
 * full, only the first 1024 wait for room (behind the sessions' events,
 * which are kept up to 4096), the rest post nothing; the listener's
 * refused count (netlink) has every one.
 */
#define KMSGR_EV_REFUSED	6

/*
 * struct kmsgr_cqe - one completion (64 bytes).  @user_data is the SQE's
 * for SEND and OP entries, the session's (CONNECT, or the listener's for
 * accepted sessions) for RECV and EVENT entries.
 *
 * KMSGR_EV_ACCEPTED and KMSGR_EV_UP of a session accepted by a cephx
 * listener (KMSGR_FEAT_PEER_KEY): @tid is 1 + the index, in the LISTEN's
 * @keys, of the entity the peer proved it holds the key of; 0 for other
 * sessions and other events.  A lossless session is resumed only by a
 * connection that authenticated with the same key; any other one gets a
 * new session (the client sees KMSGR_EV_RESET).
 */
struct kmsgr_cqe {
	__u64 user_data;	/* SQE's, or the session's for RECV/EVENT */
	__s32 res;		/* 0 or -errno; RECV: the release token */
	__u8 kind;		/* KMSGR_CQE_* */
	__u8 event;		/* EVENT: KMSGR_EV_* */
	__u16 reason;		/* EVENT: KMSGR_REASON_* */
	__u32 session;		/* session id */
	__u16 type;		/* RECV: message type */
	__u16 version;		/* RECV: header version */
	__u64 seq;		/* RECV: message seq */
	__u64 tid;		/* RECV: transaction id; ACCEPTED, UP:
				 * see above
				 */
	struct kmsgr_slice seg[3]; /* RECV: front, middle, data (pool slices) */
};

/*
 * kmsgr_cqe.reason of KMSGR_EV_DOWN / KMSGR_EV_CLOSED: why the connection
 * (or the session) ended.  Mirrors the msgr2 engine's reasons.
 */
#define KMSGR_REASON_NONE		0	/* closed by the application */
#define KMSGR_REASON_BANNER		1	/* bad banner magic or length */
#define KMSGR_REASON_BANNER_FEATURES	2	/* banner features incompatible */
#define KMSGR_REASON_PREAMBLE_CRC	3	/* bad preamble crc */
#define KMSGR_REASON_SEGMENT_CRC	4	/* bad segment or epilogue crc */
#define KMSGR_REASON_GCM_TAG		5	/* secure mode: bad auth tag */
#define KMSGR_REASON_UNKNOWN_TAG	6	/* unknown frame tag */
#define KMSGR_REASON_ORDER		7	/* frame not valid in this state */
#define KMSGR_REASON_OVERSIZE		8	/* a length above the limits */
#define KMSGR_REASON_MALFORMED		9	/* malformed frame or payload */
#define KMSGR_REASON_LATE_STATUS	10	/* bad epilogue late status */
#define KMSGR_REASON_SIGNATURE		11	/* AUTH_SIGNATURE mismatch */
#define KMSGR_REASON_AUTH		12	/* authentication refused */
#define KMSGR_REASON_MISSING_FEATURES	13	/* required features missing */
#define KMSGR_REASON_PEER		14	/* wrong peer type or address */
#define KMSGR_REASON_SEQ		15	/* no longer given: a gap in a
						 * peer's message seqs is taken,
						 * as Ceph takes it
						 */
#define KMSGR_REASON_WAIT		16	/* peer said WAIT */
#define KMSGR_REASON_TIMEOUT		17	/* handshake, keepalive, msg,
						 * idle or resume timeout
						 */
#define KMSGR_REASON_EOF		18	/* connection closed by the peer */
#define KMSGR_REASON_LOCAL		19	/* closed locally */
#define KMSGR_REASON_NOMEM		20	/* out of memory */
#define KMSGR_REASON_NONCE		21	/* secure mode: out of nonces */
#define KMSGR_REASON_BUSY		22	/* no receive space */
#define KMSGR_REASON_CONNECT		23	/* connect() failed (res: errno) */
#define KMSGR_REASON_HALF_OPEN		24	/* listener: too many handshakes */
#define KMSGR_REASON_SESSIONS		25	/* max_sessions reached */
#define KMSGR_REASON_MODE		26	/* the peer refused our connection
						 * modes (e.g. a secure-only mon
						 * and a crc client)
						 */
#define KMSGR_REASON_DEVICE		27	/* the transport's device went away
						 * (RDMA device removed: res
						 * -ENODEV) or its port is down
						 * (-ENETDOWN)
						 */

/* ------------------------------------------------------------------------ */
/* Block devices: ATTACH_BDEV, DETACH_BDEV                                  */
/* ------------------------------------------------------------------------ */

/*
 * struct kmsgr_bdev - argument of KMSGR_IOC_ATTACH_BDEV (KMSGR_FEAT_BDEV).
 *
 * In: @fd, an open block device (the whole device or a partition),
 * opened for reading and writing, or for reading with
 * KMSGR_BDEV_F_RDONLY; @flags.  Out: the handle for the BDEV SQEs and
 * DETACH_BDEV, and what the device is.  The instance holds the device
 * open until DETACH_BDEV or its end; @fd may be closed after the call.
 * ENOTBLK (not a block device), EBADF (not open for what @flags ask),
 * ENXIO (the device the fd was opened on is gone: another has its number),
 * EBUSY (KMSGR_BDEV_F_EXCL and someone else holds it exclusively, or a
 * mounted file system), EMFILE (KMSGR_BDEV_MAX attached), EINVAL, EINTR
 * (a fatal signal while another thread's ENTER was submitting).
 * A device that goes away (hot unplug) stays attached: the ops under way
 * complete with the block layer's error (EIO), later ones with ENXIO.
 * The ops go past the device's page cache: ATTACH writes back what is
 * dirty there (its error, EIO say, fails the ATTACH) and drops the rest.
 * Unlike O_DIRECT, an op does not do that again: a device shared with
 * buffered readers or writers while attached is theirs to keep in step
 * (fsync, BLKFLSBUF), or they see and write stale data.
 *
 * KMSGR_BDEV_F_POLL (KMSGR_FEAT_BDEV_POLL): the device's READs and WRITEs
 * go to its poll queues (REQ_POLLED; NVMe: the nvme.poll_queues module
 * parameter), with no interrupt: an ENTER with KMSGR_ENTER_F_GETEVENTS
 * reaps them by polling the device while it waits (it spins instead of
 * sleeping while polled ops are in flight and complete), and completes an
 * op's linked SEND in its own context.  When no ENTER waits, a kernel
 * worker polls them every tick, so an op never waits for the device's
 * timeout.  FLUSH, PREFLUSH, FUA where the device does not do it itself
 * (no KMSGR_BDEV_A_FUA), and an op the block layer has to split still
 * complete by interrupt.  EOPNOTSUPP: the device has no poll queues, it
 * is a device-mapper device (which may submit a polled bio again from its
 * own workers: see docs/block.md), or the module was built for a 6.1
 * kernel older than 6.1.78, whose polling could hang on a freezing queue
 * (no KMSGR_FEAT_BDEV_POLL there).
 */
struct kmsgr_bdev {
	__s32 fd;		/* in */
	__u32 flags;		/* in: KMSGR_BDEV_F_* */
	__u32 id;		/* out: handle (kmsgr_sqe.session) */
	__u32 attrs;		/* out: KMSGR_BDEV_A_* */
	__u64 capacity;		/* out: bytes */
	__u32 lbs;		/* out: logical block size, bytes */
	__u32 pbs;		/* out: physical block size, bytes */
	__u32 max_io;		/* out: largest READ or WRITE, bytes */
	__u32 reserved0;	/* must be 0 */
	__u64 reserved[4];	/* must be 0 */
};

/* kmsgr_bdev.flags */
#define KMSGR_BDEV_F_EXCL	_BITUL(0)	/* claim it exclusively */
#define KMSGR_BDEV_F_RDONLY	_BITUL(1)	/* read only: writes fail EROFS */
#define KMSGR_BDEV_F_POLL	_BITUL(2)	/* polled completion (above) */
#define KMSGR_BDEV_F_ALL	(KMSGR_BDEV_F_EXCL | KMSGR_BDEV_F_RDONLY | \
				 KMSGR_BDEV_F_POLL)

/* kmsgr_bdev.attrs */
#define KMSGR_BDEV_A_RDONLY	_BITUL(0)	/* writes refused (the device is
						 * read-only, or F_RDONLY)
						 */
#define KMSGR_BDEV_A_WCACHE	_BITUL(1)	/* volatile write cache: FLUSH
						 * and FUA make data durable
						 */
#define KMSGR_BDEV_A_FUA	_BITUL(2)	/* the device does FUA itself
						 * (else the kernel emulates
						 * it with a flush)
						 */
#define KMSGR_BDEV_A_POLL	_BITUL(3)	/* ops are polled (F_POLL) */

/* Most block devices attached to one instance at once. */
#define KMSGR_BDEV_MAX		64

/*
 * struct kmsgr_bdev_detach - argument of KMSGR_IOC_DETACH_BDEV.  Later
 * SQEs naming @id fail ENODEV; the call waits until the ops already
 * submitted on it have completed (their CQEs are posted), then lets the
 * device go.  ENODEV: no such handle.  While another thread's ENTER is
 * submitting (it may sleep in the block layer), the call waits for it; a
 * fatal signal ends that wait, with nothing detached.
 */
struct kmsgr_bdev_detach {
	__u32 id;		/* in: the handle */
	__u32 flags;		/* in: must be 0 */
	__u64 reserved[2];	/* must be 0 */
};

/* Commands; see "ioctl namespace" above for the reserved numbers. */
#define KMSGR_IOC_INFO		_IOWR(KMSGR_IOC_MAGIC, 0x00, struct kmsgr_info)
#define KMSGR_IOC_SETUP		_IOWR(KMSGR_IOC_MAGIC, 0x01, struct kmsgr_setup)
#define KMSGR_IOC_ENTER		_IOWR(KMSGR_IOC_MAGIC, 0x02, struct kmsgr_enter)
#define KMSGR_IOC_LISTEN	_IOWR(KMSGR_IOC_MAGIC, 0x03, struct kmsgr_listen)
#define KMSGR_IOC_CONNECT	_IOWR(KMSGR_IOC_MAGIC, 0x04, struct kmsgr_connect)
#define KMSGR_IOC_CLOSE		_IOW(KMSGR_IOC_MAGIC, 0x05, struct kmsgr_close)
#define KMSGR_IOC_ATTACH_BDEV	_IOWR(KMSGR_IOC_MAGIC, 0x06, struct kmsgr_bdev)
#define KMSGR_IOC_DETACH_BDEV	_IOW(KMSGR_IOC_MAGIC, 0x07, \
				     struct kmsgr_bdev_detach)

#endif /* _UAPI_LINUX_KMSGR_H */
