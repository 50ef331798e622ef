#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Write the seed corpus of fuzz_osdc (the input format is described at
# the top of ../fuzz_osdc.c): replies shaped as a Ceph cluster sends them,
# built from the layouts osdc.c and mon.c decode, and the `osd dump` /
# `pg map` shapes of test_osdc.c.
#
#   mkcorpus.sh [DIR]     (default: the fuzz_osdc/ next to this script)

set -eu

OUT=${1:-$(cd "$(dirname "$0")" && pwd)/fuzz_osdc}
mkdir -p "$OUT"

# little-endian fields as hex text
u8() { printf '%02x' $(($1 & 0xff)); }
le16() { u8 "$1"; u8 $(($1 >> 8)); }
le32() { le16 $(($1 & 0xffff)); le16 $((($1 >> 16) & 0xffff)); }
le64() { le32 $(($1 & 0xffffffff)); le32 $((($1 >> 32) & 0xffffffff)); }
zeros() { printf '%0*d' $(($1 * 2)) 0; }
txt() { printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n'; }
lstr() { le32 ${#1}; txt "$1"; }	# ASCII: characters are bytes
# seed NAME HEX
seed() { printf '%b' "$(printf '%s' "$2" | sed 's/../\\x&/g')" >"$OUT/$1"; }

# ---- 0: MOSDOpReply ---------------------------------------------------------

# struct ceph_osd_op (38 bytes): op, flags, extent (offset, length,
# truncate size and seq), payload_len
osd_op() { le16 "$1"; le32 0; le64 "$2"; le64 "$3"; zeros 12; le32 "$4"; }

# reply_front OID RESULT OPS_HEX NUM_OPS RVALS_HEX
reply_front() {
	lstr "$1"
	u8 1; le64 1; le32 7; le32 -1		# pg_t v1: pool 1, seed 7
	le64 $((0x14))				# flags: ONDISK | READ
	le32 "$2"				# result
	zeros 12; le32 8			# bad_replay_version, epoch
	le32 "$4"; printf '%s' "$3"		# ops
	le32 0; printf '%s' "$5"		# retry_attempt, rvals
	zeros 12; le64 0; u8 0			# replay/user version, redirect
}

# opreply NAME N MASK DSTLEN FRONT_HEX DATA_HEX
opreply() {
	seed "$1" "$(u8 0; u8 "$2"; le16 "$3"; le16 "$4"; \
		le16 $((${#5} / 2)); printf '%s%s' "$5" "$6")"
}

data16=$(txt "0123456789abcdef")
f=$(reply_front obj1 0 "$(osd_op $((0x1201)) 0 16 16)" 1 "$(le32 0)")
opreply opreply-read "$((1))" 0 0 "$f" "$data16"
opreply opreply-read-dst 1 1 4096 "$f" "$data16"
f=$(reply_front "a longer object name 1234" 0 \
	"$(osd_op $((0x1201)) 4096 16 16)$(osd_op $((0x1202)) 0 0 16)" 2 \
	"$(le32 0; le32 0)")
opreply opreply-read-stat 2 1 16 "$f" "$data16$(le64 4096; le32 1700000000; le32 0)"
f=$(reply_front big 0 "$(osd_op $((0x2201)) 0 65536 0)" 1 "$(le32 0)")
opreply opreply-write 1 0 0 "$f" ""
f=$(reply_front o1 -2 "$(osd_op $((0x1202)) 0 0 0)" 1 "$(le32 -2)")
opreply opreply-enoent 1 0 0 "$f" ""
f=$(reply_front o1 -11 "" 0 "")
opreply opreply-eagain 0 0 0 "$f" ""

# ---- 1: osd dump --------------------------------------------------------------

dump='{"epoch":8,"fsid":"x","pools":[{"pool":1,"pool_name":"kmsgr","flags_names":"hashpspool","type":1,"size":2,"object_hash":2,"pg_num":8,"last_pg_merge_meta":{"source_pgid":"0.0"},"pool_snaps":[],"options":{}},{"pool":3,"pool_name":"full one","flags_names":"hashpspool,full","size":1,"object_hash":2,"pg_num":12}],"osds":[{"osd":0,"up":1,"public_addrs":{"addrvec":[{"type":"v1","addr":"127.0.0.1:6789","nonce":1},{"type":"v2","addr":"127.0.0.1:6800","nonce":331}]}},{"osd":1, "up" : 0 }]}'
seed osd-dump "$(u8 1; txt "$dump")"
# pretty-printed, more members per pool and OSD
pretty='{
    "epoch": 31,
    "fsid": "8e2a7c1e-5b4d-4f0a-9c3e-2d6b1f0e7a11",
    "flags_set": [
        "sortbitwise",
        "recovery_deletes"
    ],
    "full_ratio": 0.95,
    "pools": [
        {
            "pool": 1,
            "pool_name": ".mgr",
            "flags": 1,
            "flags_names": "hashpspool",
            "type": 1,
            "size": 3,
            "min_size": 2,
            "crush_rule": 0,
            "object_hash": 2,
            "pg_autoscale_mode": "on",
            "pg_num": 1,
            "pg_placement_num": 1,
            "quota_max_bytes": 0,
            "tiers": [],
            "application_metadata": {
                "mgr": {}
            }
        },
        {
            "pool": 2,
            "pool_name": "rbd \"quoted\"",
            "flags_names": "hashpspool,nearfull",
            "type": 1,
            "size": 3,
            "object_hash": 2,
            "pg_num": 32,
            "pool_snaps": [],
            "options": {
                "pg_num_min": 16
            }
        },
        {
            "pool": 5,
            "pool_name": "ec",
            "type": 3,
            "size": 6,
            "object_hash": 2,
            "pg_num": 2147483648
        }
    ],
    "osds": [
        {
            "osd": 0,
            "uuid": "1d2c3b4a-0000-4000-8000-000000000000",
            "up": 1,
            "in": 1,
            "weight": 1,
            "public_addrs": {
                "addrvec": [
                    {
                        "type": "v2",
                        "addr": "10.0.0.1:6802",
                        "nonce": 4021
                    },
                    {
                        "type": "v1",
                        "addr": "10.0.0.1:6803",
                        "nonce": 4021
                    }
                ]
            },
            "public_addr": "10.0.0.1:6803/4021"
        },
        {
            "osd": 7,
            "up": 0,
            "in": 0,
            "public_addrs": {
                "addrvec": []
            }
        }
    ],
    "pg_upmap_items": [],
    "blocklist": {}
}'
seed osd-dump-pretty "$(u8 1; txt "$pretty")"

# ---- 2: MMonCommandAck -------------------------------------------------------

# ack_front R RS CMD
ack_front() {
	le64 12; le16 -1; le64 0		# paxos: version, mon, mon tid
	le32 "$1"; lstr "$2"; le32 1; lstr "$3"
}
cmd='{"prefix":"osd dump","format":"json"}'
f=$(ack_front 0 "" "$cmd")
seed cmd-ack "$(u8 2; u8 64; le16 $((${#f} / 2)); printf '%s' "$f"; txt "$dump")"
f=$(ack_front -2 "unrecognized pool 'nope'" '{"prefix":"osd pool get"}')
seed cmd-ack-enoent "$(u8 2; u8 16; le16 $((${#f} / 2)); printf '%s' "$f")"

# ---- 3: pg map ---------------------------------------------------------------

seed pg-map "$(u8 3; le16 8; \
	txt '{"epoch":8,"raw_pgid":"1.7","pgid":"1.7","up":[1,0],"acting":[1,0]}')"
seed pg-map-none "$(u8 3; le16 12; \
	txt '{"epoch":9,"pgid":"3.5","up":[],"acting":[]}')"

# ---- 4: MPing ----------------------------------------------------------------

ping='{"health":{"status":"HEALTH_WARN","checks":{"MON_DISK_LOW":{"severity":"HEALTH_WARN","summary":{"message":"mon a is low on available space","count":1},"muted":false},"POOL_NO_REDUNDANCY":{"severity":"HEALTH_WARN"}},"mutes":[]},"mon_status":{"name":"a","rank":0,"state":"leader","election_epoch":5,"quorum":[0],"features":{"required_con":"2449958747317026820"}}}'
seed ping "$(u8 4; u8 0; lstr "$ping")"
seed ping-json "$(u8 4; u8 1; \
	lstr '{"health": {"status": "HEALTH_OK", "checks": {}}, "mon_status": {"name": "b", "state": "peon"}}')"

# ---- 5: MMonGetVersionReply --------------------------------------------------

seed version "$(u8 5; u8 1; le64 0; le64 31; le64 1)"

# ---- 6: MMonMap --------------------------------------------------------------

mm=$(u8 9; u8 6; le32 56; \
	printf '%s' 8e2a7c1e5b4d4f0a9c3e2d6b1f0e7a11; \
	le32 3; zeros 36)
seed monmap "$(u8 6; le32 $((${#mm} / 2)); printf '%s' "$mm")"

# ---- 7: json.c ---------------------------------------------------------------

seed json-pools "$(u8 7; txt pools; u8 0; txt "$dump")"
seed json-checks "$(u8 7; txt checks; u8 0; txt "$ping")"
seed json-array "$(u8 7; txt acting; u8 0; \
	txt '[{"acting":[3,"x\"y",{"a":[]}],"n":-12}, "s\\", 7 ,[]]')"
