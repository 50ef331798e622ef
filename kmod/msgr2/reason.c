// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgr msgr2 engine - human-readable connection end reasons.
 */
#include "msgr2_int.h"

static const char *const m2_reason_names[MSGR2_R__MAX] = {
	[MSGR2_R_NONE] = "none",
	[MSGR2_R_BANNER] = "bad banner",
	[MSGR2_R_BANNER_FEATURES] = "banner features incompatible",
	[MSGR2_R_PREAMBLE_CRC] = "bad preamble crc",
	[MSGR2_R_SEGMENT_CRC] = "bad segment crc",
	[MSGR2_R_GCM_TAG] = "bad auth tag",
	[MSGR2_R_UNKNOWN_TAG] = "unknown frame tag",
	[MSGR2_R_ORDER] = "frame out of order",
	[MSGR2_R_OVERSIZE] = "length above limit",
	[MSGR2_R_MALFORMED] = "malformed frame",
	[MSGR2_R_LATE_STATUS] = "bad late status",
	[MSGR2_R_SIGNATURE] = "pre-auth signature mismatch",
	[MSGR2_R_AUTH] = "authentication failed",
	[MSGR2_R_MISSING_FEATURES] = "missing required features",
	[MSGR2_R_PEER] = "unexpected peer",
	[MSGR2_R_SEQ] = "message sequence gap",
	[MSGR2_R_WAIT] = "peer asked to wait",
	[MSGR2_R_TIMEOUT] = "timed out",
	[MSGR2_R_EOF] = "connection closed by peer",
	[MSGR2_R_LOCAL] = "closed locally",
	[MSGR2_R_NOMEM] = "out of memory",
	[MSGR2_R_NONCE] = "out of nonces",
	[MSGR2_R_BUSY] = "receive buffer allocation failed",
	[MSGR2_R_MODE] = "connection mode refused by the peer",
};

const char *msgr2_reason_str(enum msgr2_reason r)
{
	if ((unsigned int)r >= MSGR2_R__MAX || !m2_reason_names[r])
		return "unknown";
	return m2_reason_names[r];
}
