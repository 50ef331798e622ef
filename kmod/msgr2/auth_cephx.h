/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmsgr msgr2 engine - CephX authentication (method 2): the client role
 * against a monitor (GET_AUTH_SESSION_KEY), and the server role of a mon
 * for that exchange.
 *
 * Usage: zero a struct msgr2_auth_cephx (in kmalloc/vmalloc memory), fill
 * entity_type, name and key (msgr2_cephx_parse_key()), optionally
 * global_id and want_keys, and pass &msgr2_auth_cephx_ops with it as the
 * auth_priv of a msgr2_config.  After AUTH_DONE the results are in the
 * msgr2_auth_result the engine passed to done(), and the AUTH ticket and
 * session key stay in this object for later use (service tickets).
 */
#ifndef KMSGR_MSGR2_AUTH_CEPHX_H
#define KMSGR_MSGR2_AUTH_CEPHX_H

#include "msgr2.h"

#define MSGR2_CEPHX_KEY_LEN		16	/* AES-128 */
#define MSGR2_CEPHX_NAME_MAX		64	/* incl. the NUL */
#define MSGR2_CEPHX_TICKET_MAX		512	/* AUTH ticket blob kept */
/* service tickets asked for by default: MON | MDS | OSD | MGR */
#define MSGR2_CEPHX_WANT_KEYS_DEFAULT	0x17

/* CephX request opcodes (le16 at the start of a request / reply) */
#define MSGR2_CEPHX_GET_AUTH_SESSION_KEY	0x0100

struct msgr2_auth_cephx {
	/* ---- configuration, set by the caller ---- */
	u8 entity_type;			/* MSGR2_ENTITY_CLIENT, ... */
	char name[MSGR2_CEPHX_NAME_MAX]; /* without the type: "admin" */
	u8 key[MSGR2_CEPHX_KEY_LEN];	/* long-term secret */
	u64 global_id;			/* last one (updated by done()), or 0 */
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

	/* ---- results of the last successful done() ---- */
	u8 session_key[MSGR2_CEPHX_KEY_LEN];	/* AUTH service session key */
	bool have_ticket;
	u64 ticket_secret_id;
	u32 ticket_len;				/* 0: blob too large to keep */
	u8 ticket[MSGR2_CEPHX_TICKET_MAX];	/* AUTH ticket blob, opaque */
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
	u64 next_global_id;		/* for clients that send 0; 0: 4096 */

	/* ---- per-connection state (engine-private, cleared by reset) ---- */
	u32 state;
	const struct msgr2_cephx_entity *who;
	u64 global_id;
	u64 server_challenge;
};

extern const struct msgr2_auth_ops msgr2_auth_cephx_server_ops;

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
