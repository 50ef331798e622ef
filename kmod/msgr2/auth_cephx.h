/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr msgr2 engine - CephX authentication (method 2): the client role
 * against a monitor (GET_AUTH_SESSION_KEY), the server role of a mon for
 * that exchange, and the client's authorizer towards an OSD (or another
 * service) with a ticket from the mon.
 *
 * Usage: zero a struct msgr2_auth_cephx (in kmalloc/vmalloc memory), fill
 * entity_type, name and key (msgr2_cephx_parse_key()), optionally
 * global_id and want_keys, and pass &msgr2_auth_cephx_ops with it as the
 * auth_priv of a msgr2_config.  After AUTH_DONE the results are in the
 * msgr2_auth_result the engine passed to done(), and the AUTH ticket and
 * the service tickets stay in this object for authorizers (below).
 */
#ifndef KMSGR_MSGR2_AUTH_CEPHX_H
#define KMSGR_MSGR2_AUTH_CEPHX_H

#include "msgr2.h"

#define MSGR2_CEPHX_KEY_LEN		16	/* AES-128 */
#define MSGR2_CEPHX_NAME_MAX		64	/* incl. the NUL */
/*
 * The largest ticket blob kept.  A blob grows with the entity's name and
 * its caps for the service; an authorizer carrying one must still fit a
 * control segment (MSGR2_CTRL_MAX).
 */
#define MSGR2_CEPHX_TICKET_MAX		4096
/* service tickets asked for by default: MON | MDS | OSD | MGR */
#define MSGR2_CEPHX_WANT_KEYS_DEFAULT	0x17

/* CephX request opcodes (le16 at the start of a request / reply) */
#define MSGR2_CEPHX_GET_AUTH_SESSION_KEY	0x0100

/*
 * A ticket the mon issued for one service: the session key shared with
 * that service and the ticket blob (CephXTicketBlob: secret_id + blob
 * sealed with the service's rotating secret, opaque to the client).
 */
struct msgr2_cephx_ticket {
	u32 service;			/* MSGR2_ENTITY_*; 0: none kept */
	u8 session_key[MSGR2_CEPHX_KEY_LEN];
	u64 secret_id;
	u32 blob_len;
	/* the size of a blob issued but too large to keep (blob_len 0) */
	u32 too_big;
	u8 blob[MSGR2_CEPHX_TICKET_MAX];
};

/* service tickets kept from AUTH_DONE: MON, MDS, OSD and MGR */
#define MSGR2_CEPHX_N_SVC		4

struct msgr2_auth_cephx {
	/* ---- configuration, set by the caller ---- */
	u8 entity_type;			/* MSGR2_ENTITY_CLIENT, ... */
	char name[MSGR2_CEPHX_NAME_MAX]; /* without the type: "admin" */
	u8 key[MSGR2_CEPHX_KEY_LEN];	/* long-term secret */
	/*
	 * The global id of the last done() (for authorizers), or 0.  Never
	 * sent back: each connection asks for a new one (no old ticket is
	 * kept to reclaim it with).
	 */
	u64 global_id;
	/*
	 * Service tickets wanted (entity-type bitmask, CephXAuthenticate
	 * other_keys).  0 selects MSGR2_CEPHX_WANT_KEYS_DEFAULT: other_keys is
	 * never sent as 0, since a mon then issues no connection secret and a
	 * 16.2 mon aborts if it still picks SECURE.
	 */
	u32 want_keys;

	/* ---- per-connection state (engine-private, cleared by reset) ---- */
	u32 state;
	u64 server_challenge;
	u64 client_challenge;

	/*
	 * ---- results of the last successful done(), wiped by reset ----
	 * The AUTH ticket (its session key is the connection's), and the
	 * service tickets of the AUTH_DONE's extra ticket reply, for
	 * msgr2_cephx_authorizer_init().  A blob larger than
	 * MSGR2_CEPHX_TICKET_MAX is not kept: its size is in too_big, and
	 * an authorizer for that service fails with -EMSGSIZE.
	 */
	struct msgr2_cephx_ticket auth;
	struct msgr2_cephx_ticket svc[MSGR2_CEPHX_N_SVC];
};

extern const struct msgr2_auth_ops msgr2_auth_cephx_ops;

/*
 * CephX, server role: what a mon does with a client's AUTH_REQUEST
 * (GET_AUTH_SESSION_KEY): a challenge, the client's proof checked against
 * the entity's secret, then an AUTH ticket with a fresh session key and a
 * 64-byte connection secret (crc or secure mode).  The ticket blob is
 * opaque and random: this server issues no service tickets.
 *
 * Usage: one struct msgr2_auth_cephx_server per connection (zeroed, in
 * kmalloc/vmalloc memory) with @keys pointing at the entities accepted
 * (read only; must outlive the connection), passed with
 * &msgr2_auth_cephx_server_ops as the auth_priv of a server msgr2_config.
 */
struct msgr2_cephx_entity {
	u8 entity_type;			/* MSGR2_ENTITY_CLIENT, ... */
	char name[MSGR2_CEPHX_NAME_MAX]; /* without the type: "admin" */
	u8 key[MSGR2_CEPHX_KEY_LEN];
};

struct msgr2_auth_cephx_server {
	const struct msgr2_cephx_entity *keys;
	u32 n_keys;
	u64 give_global_id;		/* to this connection's client; 0: 4096 */

	/* ---- per-connection state (engine-private, cleared by reset) ---- */
	u32 state;
	const struct msgr2_cephx_entity *who;
	u64 global_id;
	u64 server_challenge;
};

extern const struct msgr2_auth_ops msgr2_auth_cephx_server_ops;

/*
 * The index in @sv->keys of the entity the connection authenticated as,
 * once it has (the peer proved it holds that key); else -1.
 */
int msgr2_auth_cephx_server_who(const struct msgr2_auth_cephx_server *sv);

/*
 * CephX authorizer, client role towards a service (OSD, MGR, MDS): what
 * a librados client presents instead of a key.  It carries the mon
 * session's global id and the service ticket the mon issued for the
 * peer's type, proves the ticket's session key by encrypting a nonce and
 * then the server's challenge + 1 (CephXAuthorize v2), and checks the
 * service's reply (nonce + 1, the connection secret in secure mode).
 *
 *   C>S AUTH_REQUEST       u8 1 (authorizer), le64 global_id, le32
 *                          service, CephXTicketBlob, {CephXAuthorize}
 *   S>C AUTH_REPLY_MORE    {CephXAuthorizeChallenge}, no length prefix
 *   C>S AUTH_REQUEST_MORE  the same with have_challenge and challenge + 1
 *   S>C AUTH_DONE          {CephXAuthorizeReply}
 *
 * ({} = ceph_x_encrypt with the ticket's session key.)  Usage: zero a
 * struct msgr2_cephx_authorizer (kmalloc/vmalloc memory), fill it with
 * msgr2_cephx_authorizer_init() from an authenticated mon session, and
 * pass &msgr2_auth_cephx_authorizer_ops with it as the auth_priv.  The
 * ticket is valid for the mon's auth_service_ticket_ttl (1 h by default).
 */
struct msgr2_cephx_authorizer {
	u64 global_id;
	struct msgr2_cephx_ticket ticket;

	/* ---- per-connection state (engine-private, cleared by reset) ---- */
	u32 state;
	u64 nonce;
};

extern const struct msgr2_auth_ops msgr2_auth_cephx_authorizer_ops;

/*
 * Take @cx's global id and its ticket for @service (MSGR2_ENTITY_OSD,
 * ...) into @az.  -ENOKEY when @cx has not authenticated (yet) or holds
 * no ticket for @service, -EMSGSIZE when the mon issued one larger than
 * MSGR2_CEPHX_TICKET_MAX, -EINVAL for a service without tickets.
 */
int msgr2_cephx_authorizer_init(struct msgr2_cephx_authorizer *az,
				const struct msgr2_auth_cephx *cx,
				u32 service);

/*
 * Decode a keyring "key = ..." value: base64 of a CryptoKey (le16 type =
 * 1 (AES), utime created, le16 len = 16, 16 key bytes).  The string must
 * be exactly that encoding, with '=' padding and no whitespace.
 * Returns 0 or -EINVAL.
 */
int msgr2_cephx_parse_key(const char *base64, u8 key[16]);

/*
 * ceph_x_encrypt: le32 ciphertext length + AES-128-CBC(@key, IV
 * "cephsageyudagreg") of [u8 1][le64 magic][@in] with PKCS#7 padding.
 * Returns the bytes written to @out (4 + pad16(9 + @len)) or -errno.
 */
int msgr2_cephx_encrypt(const u8 key[16], const u8 *in, u32 len,
			u8 *out, u32 cap);

/*
 * ceph_x_decrypt: consume le32 length + ciphertext from @in (@avail bytes
 * there), decrypt into @out (@cap bytes), verify the header and padding.
 * On success *@used is the number of input bytes consumed and the
 * plaintext is @out[9 .. 9 + return value).  Returns -EBADMSG on any
 * malformed input; @out is wiped on failure.
 */
int msgr2_cephx_decrypt(const u8 key[16], const u8 *in, u32 avail,
			u32 *used, u8 *out, u32 cap);

#endif /* KMSGR_MSGR2_AUTH_CEPHX_H */
