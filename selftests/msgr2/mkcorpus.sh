#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Write the seed corpora of the fuzzers from the reference byte vectors:
# the captured CRC/AUTH_NONE exchange (msgr2-verified.md section 7.1), the
# captured SECURE/CephX exchange (section 7.2, pre-auth frames and two
# encrypted MESSAGE frames) and the MPing example of msgr2.md section 11.
#
#   mkcorpus.sh [DIR]     (default: the corpus/ next to this script)
#
# The input formats are described at the top of fuzz_frame.c and
# fuzz_handshake.c.  Frames built here with zero CRCs are used with the
# "fix CRCs" selector bit.

set -eu

OUT=${1:-$(cd "$(dirname "$0")" && pwd)/corpus}

# captured CRC mode, AUTH_NONE (C = client to mon, S = mon to client)
CRC1=636570682076320a100001000000000000000100000000000000
CRC2=636570682076320a100001000000000000000000000000000000
CRC3=010124000000080000000000000000000000000000000000000000003fbd6b06080101011c00000002000000000000001000000002000d3e7f00000100000000000000007f9a13a6
CRC4=010124000000080000000000000000000000000000000000000000003fbd6b06010101011c000000020000000000000010000000020098887f0000010000000000000000e17e7a78
CRC5=020126000000080000000000000000000000000000000000000000008c5ee4be010000000100000001000000160000000a080000000500000061646d696e0000000000000000d8ede50c
CRC6=060110000000080000000000000000000000000000000000000000005b0630a62710000000000000010000000000000062638569
CRC7=07012000000008000000000000000000000000000000000000000000a80c9872000000000000000000000000000000000000000000000000000000000000000055c96e75
CRC8=07012000000008000000000000000000000000000000000000000000a80c9872000000000000000000000000000000000000000000000000000000000000000055c96e75
CRC9=08017b00000008000000000000000000000000000000000000000000738a989502010000000101011c0000000300000024a8432310000000020000007f00000100000000000000000101011c00000002000000000000001000000002000d3e7f000001000000000000000027100000000000000100000000000000feaaa47ab88e012f00000000000000000000000000000000b42acb67931423e5a6754ec7
CRC10=0901580000000800000000000000000000000000000000000000000083a1f3e602010000000101011c00000002000000000000001000000002000d3e7f000001000000000000000000000000000000001900000000000000fffffdffbdcf013f000004020002010c01000000000000000000000000000000e5a1235f
CRC11=11022900000008001200000008000000000000000000000000000000d1012e8f0100000000000000070000000000000013007f000100000000000000000000000000000000000000000b6bfe5a9555bdb84caafe7a060000006f73646d61700e898b7aaf0000000000000000
CRC12=11022900000008001800000008000000000000000000000000000000b2255a5e010000000000000007000000000000001400c400020000000000000001000000000000000302000000c70cf39d9555bdb84caafe7a010000000000000001000000000000000e2239955d0000000000000000

# captured SECURE mode, CephX: pre-auth frames and frames 13, 14
SEC3=010124000000080000000000000000000000000000000000000000003fbd6b06080101011c00000002000000000000001000000002000d3f7f00000100000000000000001aa2c196
SEC4=010124000000080000000000000000000000000000000000000000003fbd6b06010101011c0000000200000000000000100000000200aa927f0000010000000000000000c207c3c7
SEC5=020126000000080000000000000000000000000000000000000000008c5ee4be020000000100000002000000160000000a080000000500000061646d696e0000000000000000a3ceb8f6
SEC6=04010d000000080000000000000000000000000000000000000000006a094bc509000000015162537ea08df8478221a909
SEC7=05012800000008000000000000000000000000000000000000000000b83ac75b24000000000103015d808291233bd03ca863422dd29b460100000000000000000000000017000000e81bf840
SEC8=060103040000080000000000000000000000000000000000000000002c0920b91a1000000000000002000000f3030000000100000000010100000020000000013000000007f19016edf0c386b758692b79903fbffce6ffb0f983d054604969126bcb4d0d8f24adc4b5c63ae9f725863103751dbd006d00000001020000000000000060000000a741e5a9bdbe8be603b9f16f702f69a8b835816348817215771efbe84370fd28df8b2c75d3d3e079c3b382962764b03f27b9f304e8f967f24e75c393400ce6e64fefddaa7704754958ccc3c3f478aeb621c5662ff5f0a0d31426182a75b735145400000050000000c6f5829f54f59606f73438c364a4b4c3d042929687c66022b32b650f4f415859d937e3566f35dc7f39ff7d770f557fa981b3d4a6bb85e6241ed38ec91b258edd3db06f6e7b40850a3ee91b99a3665fb6e102000001040000000100000001300000007a331592568ff598ea43b41c3593bf55787943bfcd8366bff7dafa5606826a0ca767a0bdb8370b7203b81b85d9539718006d000000010200000000000000600000004b97ec4a50ad77a9d55a112f2533dc7dd6b714f44657a5ad72fdf3cbeb35d3340eb72d71611d82a5819f9ef96a26dc2ea1f35688b7ee92aed101ff9fb0012909f81ef3bac7ab9c1168ec4e566c065408dbbbb49ddab2ec6d008b24fbe30027a10200000001300000007a331592568ff598ea43b41c3593bf558c08bd7ca80e893ddad00a621756e7e82799643dde3ee90ee67302d601778621007d00000001020000000000000070000000d516967d712aa9ab9917d62c78743307c4344e45663d631e27da53c061c3443f0f65fb84c5c2a6ff98563ce87b0b8461275215fa4f87c1cc3ae12df274fbc7596d70d4856fe0a2bc123c6bedab2e198a7723c690e6bf29d17c496a7b52a750c0c743efe6cb8de9ee690db56ac57194530400000001300000007a331592568ff598ea43b41c3593bf55662b1fda5e691f2bd5466f7ed665c2e89cdae6e848525e5667d30fa51edcefd4007d000000010200000000000000700000001dd58d3d0cedd545af48d04e199a1922b377ddf60aae39a5917891ed391b4c6d97ac96c21f055a0909415cf1c967ce8f757e2ca6dfe06cad79d66170e696fe54ad32aa28f57a0059f8988b0ed5c2ed92eb23d1e57bee7bb3c4ddab239cf7a1066dd104bee718e7e144aa3ee9efd40bcc1000000001300000007a331592568ff598ea43b41c3593bf55427fe270f8c02491dec80f021f2753349c56f9f172474c791bf7180db9d562c6007d000000010200000000000000700000002ecbf4b9d5fd69a08197c49df51d2580f3ad8e6e12f52878e71795db1f981f6f757a73ffded5181f839ddb4470d049f03eeb20dc98e4ff943f3157408f7e35a9685818f4b2735647b3ac4b94a6cd1d65e78326ec5010d42b9aa662eefef93d10924189b21fcdabe27897783bed20925ac0972fcb
SEC13=8b7b21100bdce6a7b71554c4beb88ad089d7b67ed4172d6bb45f654934f8519a487b28ccaacde1d9450ea5846c3afd184e525aba377469d49a52f6ca60d4e83b445c73fda35b77f94209da8349024f7619f9b7d3a34b658f1262572aca36dd967dda05229b219f165c288dcc188201ba825600dbf964783b8647e9d97193fafc6f07501e447535d52334db6fffe12cbf84a036cd790e9c59f365f09130eb3b71
SEC14=d18d2371e415816770e8ddfef1e91595daa4475f1f3d38a20e87dcc453f0eb4b501bdf2c7b6cb8c6b6e016d128b178136b10f506fb1a3822db076432ecc608f70eb5330cd661c62dd7b53e01935603463d8cb8ee94de89586ebfdb0be5ac1ef630602b40650161e20baa89be1cd6e8f75c2fe84ab529a632c56dbe6584fb0ed140885962aa14f6de8bacc2cc895c876c62e3fd87aaee4c79ee0d117ed0fc2128

# msgr2.md section 11: MPing, seq 2
MPING=11012900000008000000000000000000000000000000000000000000af9604f00200000000000000000000000000000002007f00010000000000000000000000000000000000000000790bcbd0

# hex string(s) -> binary on stdout
bin() {
	local h

	for h in "$@"; do
		printf '%b' "$(echo "$h" | sed 's/../\\x&/g')"
	done
}

# hex byte for a selector/control value
hx() {
	printf '%02x' "$1"
}

zeros() {
	printf '%0*d' $(($1 * 2)) 0
}

# a rev1 crc control frame with zero CRCs: tag, payload hex
ctrl() {
	local tag=$1 pl=$2 len=$((${#2} / 2))

	echo "$(hx "$tag")01$(printf '%02x%02x%02x%02x' $((len & 255)) \
		$((len >> 8 & 255)) $((len >> 16 & 255)) $((len >> 24)))0800$(zeros 20)00000000${pl}00000000"
}

F=$OUT/fuzz_frame
H=$OUT/fuzz_handshake
X=$OUT/fuzz_cephx_srv
mkdir -p "$F" "$H" "$X"

# ---- fuzz_frame: control byte, then the peer's bytes after its banner ----
S2C="$CRC4 $CRC6 $CRC8 $CRC10 $CRC12"
C2S="$CRC3 $CRC5 $CRC7 $CRC9 $CRC11 $MPING"
# shellcheck disable=SC2086
{
	bin 00 $S2C >"$F/client-crc-none"
	bin 14 $S2C >"$F/client-crc-none-pieces5"
	bin 01 $C2S >"$F/server-crc-none"
	bin 0d $C2S >"$F/server-crc-none-pieces3"
	bin 00 "$SEC4" "$SEC6" "$SEC8" >"$F/client-cephx-preauth"
	bin 01 "$SEC3" "$SEC5" "$SEC7" >"$F/server-cephx-preauth"
	bin 02 "$CRC4" "$(ctrl 16 '')" >"$F/client-wait"
	bin 03 "$CRC3" "$(ctrl 20 "$(zeros 8)")" >"$F/server-ack-too-early"
}

# ---- fuzz_handshake: selector, then what replaces the peer's bytes -------
KA=$(ctrl 18 0102030405060708)
ACK=$(ctrl 20 0100000000000000)
RECONNECT_OK=$(ctrl 15 0100000000000000)
# SESSION_RECONNECT: the captured CLIENT_IDENT addrvec + 5 x le64
RECONNECT=$(ctrl 11 "${CRC9:64:80}$(zeros 40)")
bin 00 "$CRC2" >"$H/banner-client"
bin 10 "$CRC1" >"$H/banner-server"
bin 21 "$CRC4" >"$H/hello-client"
bin 31 "$CRC3" >"$H/hello-server"
bin 22 "$CRC6" "$CRC8" >"$H/auth-client"
bin 32 "$CRC5" >"$H/auth-server"
bin 23 "$SEC6" "$SEC8" >"$H/auth-more-client"
bin 33 "$SEC7" >"$H/auth-more-server"
bin 24 "$CRC8" "$CRC10" >"$H/sign-client"
bin 34 "$CRC7" "$CRC9" >"$H/sign-server"
bin 25 "$CRC10" "$CRC12" >"$H/ident-client"
bin 35 "$CRC9" "$CRC11" >"$H/ident-server"
bin 26 "$RECONNECT_OK" >"$H/reconnect-client"
bin 36 "$RECONNECT" >"$H/reconnect-server"
bin 27 00 "$CRC12" "$KA" "$ACK" >"$H/ready-crc-client"
bin 37 00 "$CRC11" "$MPING" >"$H/ready-crc-server"
bin 28 01 1000 "$SEC14" >"$H/ready-secure-client"
bin 38 03 0000 1100 0001 "$SEC13" >"$H/ready-secure-server"
bin 67 00 "$CRC12" >"$H/ready-crc-client-bytewise"

# ---- fuzz_cephx_srv: control byte, le16 length of the first request, ---
# ---- the first request, the second ---------------------------------------
# GET_AUTH_SESSION_KEY's first part: u8 10 (mon mode), le32 entity type,
# le32 + name, le64 global_id 0
GET_ADMIN=0a080000000500000061646d696e0000000000000000
GET_OSD0=0a0400000001000000300000000000000000
# CephXAuthenticate v3: le16 0x0100, u8 3, le64 client challenge, le64
# proof (written by the fuzzer with control bit 1), u8 1, le64 secret_id,
# le32 0 (no old ticket), le32 other_keys; then v1 (no other_keys)
AUTH_V3=0001038877665544332211000000000000000001000000000000000000000000ff000000
AUTH_V1=0001018877665544332211000000000000000001000000000000000000000000
bin 3a 1600 "$GET_ADMIN" "$AUTH_V3" >"$X/admin-crc"
bin 3b 1600 "$GET_ADMIN" "$AUTH_V1" >"$X/admin-secure-v1"
bin 3a 1200 "$GET_OSD0" "$AUTH_V3" >"$X/osd0-crc"
bin 1a 1600 "$GET_ADMIN" "$AUTH_V3" >"$X/admin-cap16"
bin 22 1600 "$GET_ADMIN" "$AUTH_V3" >"$X/admin-cap64"
bin 3e 0000 "$AUTH_V3" >"$X/second-first"

# ---- fuzz_cephx_cli: control byte, then records ----------------------------
# Record tags: 00 RAW, 01 SEAL with the client's key, 09 with K_AUTH, 39
# bare with the ticket's session key, 59 with it and nonce + 1 written in,
# 02 END of a message, 03 OPEN and 04 CLOSE a le32-length blob (the
# harness fills in the lengths and does the encryption).
C=$OUT/fuzz_cephx_cli
mkdir -p "$C"

le16() {
	printf '%02x%02x' $(($1 & 255)) $(($1 >> 8))
}

# a record: tag, then le16 length + bytes (hex)
rec() {
	echo "$1$(le16 $((${#2} / 2)))$2"
}

# the session keys the harness seals with (K_AUTH, K_SVC)
K_AUTH=a0a1a2a3a4a5a6a7a8a9aaabacadaeaf
K_SVC=b0b1b2b3b4b5b6b7b8b9babbbcbdbebf
# a client part: u8 1, CryptoKey (AES, created 0, le16 16, key), validity
part() {
	echo "01010000000000000000001000${1}100e000000000000"
}

# records of a ticket in clear: u8 enc 0, then a blob of u8 1, le64
# secret_id 2, le32 + the (opaque) blob of $1 bytes
ticket() {
	echo "$(rec 00 00)03$(rec 00 "010200000000000000$(le16 "$1")0000$(
		printf '%0*d' $(($1 * 2)) 0 | tr 0 c)")04"
}

# an entry of the extra ticket reply: le32 service $1, u8 1, the client
# part sealed with K_AUTH (session key K_SVC), the ticket ($2-byte blob)
svc() {
	echo "$(rec 00 "$(hx "$1")00000001")$(rec 09 "$(part "$K_SVC")")$(
		ticket "$2")"
}

# the mon's challenge {u8 1, le64}; AUTH_DONE up to the end of the AUTH
# ticket: le16 op, s32 result 0, u8 1, le32 1 entry, le32 AUTH, u8 1,
# client part sealed with the client's key (session key K_AUTH), ticket
CHAL=$(rec 00 018877665544332211)02
DONE_AUTH=$(rec 00 00010000000001010000002000000001)$(rec 01 \
	"$(part "$K_AUTH")")$(ticket 32)
# connection secret: a blob of {le32 64 + 64 bytes} sealed with K_AUTH
SECRET=03$(rec 09 "40000000$(printf '%0*d' 128 0 | tr 0 5)")04
# extra ticket replies (a blob): n = $1 entries, then the entries
extra() {
	local n=$1 IFS=

	shift
	echo "03$(rec 00 "01$(hx "$n")000000")$*04"
}
ONE_OSD=$(extra 1 "$(svc 4 32)")
ALL_FOUR=$(extra 4 "$(svc 1 32)" "$(svc 2 48)" "$(svc 4 64)" \
	"$(svc 16 96)")
# the service's challenge {u8 1, le64} (bare) and its reply {u8 2, nonce
# + 1 (written by the harness), le32 64 + secret}, with the ticket's key
AZ_CHAL=$(rec 39 01efcdab8967452301)02
AZ_DONE=$(rec 59 "020000000000000000$(hx 64)000000$(printf '%0*d' 128 0 |
	tr 0 7)")02
AZ_DONE_V1=$(rec 59 010000000000000000)02

bin 0a "$CHAL" "$DONE_AUTH" 02 >"$C/mon-crc-noextra"
bin 0b "$CHAL" "$DONE_AUTH" "$SECRET" "$(extra 0)" 02 >"$C/mon-secure"
bin 0b "$CHAL" "$DONE_AUTH" 02 >"$C/mon-secure-nosecret"
bin 0a "$CHAL" "$(rec 00 0001f3ffffff)" 02 >"$C/mon-denied"
bin 04 "$CHAL" >"$C/mon-cap35"
bin 1a "$CHAL" "$DONE_AUTH" "$SECRET" "$ONE_OSD" 02 "$AZ_CHAL" "$AZ_DONE" \
	>"$C/osd-crc"
bin 3b "$CHAL" "$DONE_AUTH" "$SECRET" "$ONE_OSD" 02 "$AZ_DONE" \
	>"$C/osd-secure-nochallenge"
bin 1a "$CHAL" "$DONE_AUTH" "$SECRET" "$ONE_OSD" 02 "$AZ_CHAL" \
	"$AZ_DONE_V1" >"$C/osd-crc-v1"
bin 5c "$CHAL" "$DONE_AUTH" "$SECRET" "$ALL_FOUR" 02 "$AZ_CHAL" \
	"$AZ_DONE" >"$C/mgr-four-tickets"
bin 1e "$CHAL" "$DONE_AUTH" "$SECRET" "$(extra 1 "$(svc 4 4096)")" 02 \
	"$AZ_CHAL" "$AZ_DONE" >"$C/osd-blob4096-cap4158"
bin 1e "$CHAL" "$DONE_AUTH" "$SECRET" "$(extra 1 "$(svc 4 4097)")" 02 \
	>"$C/osd-blob4097-too-big"

# ---- fuzz_secure: direction byte, then plaintext frame records -----------
# (format at the top of fuzz_secure.c; the harness seals each record with
# the sender's GCM state, so these get through the receiver's tag check)

S=$OUT/fuzz_secure
mkdir -p "$S"

# engine-built KEEPALIVE2 with an 8-byte stamp: op 00 (+ pieces bits)
KA=12$(printf '%02x%02x' 8 0)0100000000000000
# engine-built MESSAGE, type 0x0100: front "hello"; all three segments
M_FRONT=0001050000000000$(echo -n hello | od -An -tx1 | tr -d ' \n')
M_ALL=000105000300100068656c6c6f6d6964$(printf '%0*d' 32 0 | tr 0 d)
# raw MESSAGE (op bit 5: the receiver's next seq), front 5 bytes: tag 11,
# 2 segments, lengths 41/5/0/0, late status 0e, 48 inline bytes, then the
# padded front and the 16-byte epilogue
R_FRONT=1102290000000500000000000000000000000e$(zeros 48)
R_FRONT=${R_FRONT}68656c6c6f$(zeros 11)$(zeros 16)

bin 00 00 "$KA" >"$S/keepalive"
bin 00 01 "$M_FRONT" >"$S/msg-front"
bin 00 01 "$M_ALL" >"$S/msg-all-segs"
bin 00 05 "$M_ALL" >"$S/msg-all-bytewise"
bin 00 11 0a00 "$M_FRONT" >"$S/msg-flip-head"
bin 00 11 7000 "$M_ALL" >"$S/msg-flip-tail"
bin 01 00 "$KA" 09 "$M_ALL" >"$S/srv-keepalive-msg-7"
bin 00 22 "$R_FRONT" >"$S/raw-msg-front"
bin 00 00 "$KA" 01 "$M_FRONT" 2e "$R_FRONT" 0d "$M_ALL" >"$S/mixed"
# raw frames with lengths near the limits (op 03: table indexes)
bin 00 03 130109000000 >"$S/raw-ctrl-8191"
bin 00 03 13010a000000 >"$S/raw-ctrl-8192"
bin 00 03 13010b000000 >"$S/raw-ctrl-8193"
bin 00 23 1104040102030e >"$S/raw-msg-small-segs"
bin 00 23 1102040d00000e >"$S/raw-msg-front-seg-max"
# the receiver's rx_alloc() refuses 3 / 7 times (op bit 6, u8 count),
# then a raw MESSAGE whose preamble crc is corrupted (op bit 7)
bin 00 41 03 "$M_ALL" 01 "$M_FRONT" >"$S/msg-eagain3"
bin 01 4d 07 "$M_ALL" >"$S/srv-msg-eagain7-61"
bin 00 a2 "$R_FRONT" >"$S/raw-msg-bad-preamble-crc"

echo "mkcorpus: $(find "$F" -type f | wc -l) + $(find "$H" -type f | wc -l)" \
	"+ $(find "$X" -type f | wc -l) + $(find "$C" -type f | wc -l)" \
	"+ $(find "$S" -type f | wc -l) seeds," \
	"$(cat "$F"/* "$H"/* "$X"/* "$C"/* "$S"/* | wc -c) bytes in $OUT"
