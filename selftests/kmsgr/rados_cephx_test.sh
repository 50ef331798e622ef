#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rados_cephx_test.sh - object data to and from a real OSD that requires
# cephx, over kmsgr, in crc and in secure mode: the cluster in directory
# $KMSGR_RADOS_CEPH (run_guest.sh's cephx cluster with one memstore OSD
# and pool "kmsgr", started by selftests/msgr2/ceph_cluster.sh start cephx
# + osds), else one of its own (run_guest.sh runs this with kmsgr.ko
# loaded).  kmsgrctl authenticates to the mon with the keyring of the
# conf and shows the OSD the ticket the mon issued (a cephx authorizer):
#
#   - per mode: objects of 0 B to 5 MiB (more than one 4 MiB op) put by
#     kmsgrctl read back identically by librados (rados_check.py, one
#     process), an object put by the rados tool read back identically by
#     kmsgrctl, stat agrees, rm removes; a short bench write; while it
#     runs the kernel reports the bench's OSD session as cephx in that
#     mode;
#   - a wrong key is refused with a clear error, within the timeout;
#   - a nearfull pool (the flag "nearfull") still takes writes;
#   - a full pool (tiny full ratios): the mon flags the pool full (the
#     flag "full" itself), a bench write under way stops with ENOSPC, a
#     put fails at once with ENOSPC and a clear message; get and rm still
#     work.
#
# Prints TAP; exit status 0 when all passed.

set -u

TOP=$(cd "$(dirname "$0")/../.." && pwd)
K=$TOP/tools/kmsgrctl/kmsgrctl
CLUSTER=$TOP/selftests/msgr2/ceph_cluster.sh
CHECK="/usr/bin/python3 $TOP/selftests/kmsgr/rados_check.py"

# shellcheck source=selftests/kmsgr/tap.sh
. "$TOP/selftests/kmsgr/tap.sh"
tmp=$(mktemp -d) || exit 1
dir=${KMSGR_RADOS_CEPH:-}
# KMSGR_RADOS_BENCH_SECS: the short bench write's seconds (make
# check-debug: longer than a session sample takes on a debug kernel)
BENCH_SECS=${KMSGR_RADOS_BENCH_SECS:-2}
own=
[ -n "$dir" ] || { dir=$tmp/c; own=1; }
cleanup() {
	[ -n "$own" ] && "$CLUSTER" stop "$dir" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

t0=$(date +%s)
if [ -n "$own" ]; then
	if ! "$CLUSTER" start cephx "$dir" >"$tmp/cluster.log" 2>&1 ||
		! "$CLUSTER" osds "$dir" 1 kmsgr 1 >>"$tmp/cluster.log" 2>&1; then
		comment "$tmp/cluster.log"
		tap 1 "a cephx mon and a memstore OSD with pool kmsgr start"
		echo "1..$n"
		exit 1
	fi
fi
ls "$dir"/osd-*/osd.pid >/dev/null 2>&1 &&
	grep -q '^auth cluster required = cephx' "$dir/ceph.conf"
tap $? "a cephx mon and $(ls -d "$dir"/osd-* 2>/dev/null | wc -l) memstore OSD with pool kmsgr ($(($(date +%s) - t0)) s to start)"
export CEPH_CONF=$dir/ceph.conf

# osd_up PID FILE: sample the sessions (every 0.2 s, for up to 30 s; a
# sample costs a second when the guest is busy) until process PID has a
# session to an OSD that is up, or has exited; FILE gets the JSON object
# of each such session, one a line (nothing when none came up).  FILE.log
# keeps every sample's OSD sessions, of any process and in any state,
# and the errors of the samples that failed: the story when none came up.
osd_up() {
	local end=$(($(date +%s) + 30)) n=0

	: >"$2.log"
	while [ "$(date +%s)" -lt "$end" ]; do
		n=$((n + 1))
		"$K" -j session show 2>"$2.err" | sed 's/},{/}\n{/g' |
			grep '"peer_type":"osd"' >"$2.all"
		sed "s/^/sample $n: /" "$2.all" "$2.err" >>"$2.log"
		grep "\"pid\":$1," "$2.all" | grep '"state":"up"' >"$2"
		[ -s "$2" ] && return 0
		if ! kill -0 "$1" 2>/dev/null; then
			echo "sample $n: process $1 has exited" >>"$2.log"
			return 1
		fi
		sleep 0.2
	done
	echo "sample $n: 30 s passed" >>"$2.log"
	return 1
}

sizes="0 1 4097 1048576 5242880"
mkdir -p "$tmp/obj"
i=0
for s in $sizes; do
	head -c "$s" /dev/urandom >"$tmp/obj/o$i"
	i=$((i + 1))
done
head -c 300000 /dev/urandom >"$tmp/obj/tool"

for mode in crc secure; do
	opt=
	[ "$mode" = secure ] && opt=--secure
	# --- kmsgrctl puts (one process, all in flight), librados reads (one
	# process for all: a rados tool run per object cost a second each)
	pairs=
	: >"$tmp/list"
	i=0
	for s in $sizes; do
		pairs="$pairs $mode-o$i $tmp/obj/o$i"
		echo "$mode-o$i $tmp/obj/o$i" >>"$tmp/list"
		i=$((i + 1))
	done
	bad=0
	# shellcheck disable=SC2086 # OBJECT FILE pairs, no spaces in them
	if ! "$K" rados put kmsgr $pairs $opt >"$tmp/out" 2>"$tmp/err"; then
		comment "$tmp/err"
		bad=1
	fi
	if ! $CHECK "$CEPH_CONF" kmsgr verify "$tmp/list" >"$tmp/out" 2>&1; then
		comment "$tmp/out"
		bad=$((bad + 1))
	fi
	tap "$bad" "cephx $mode: kmsgrctl rados put of objects of $sizes bytes; librados (the rados tool's library) reads each back identically, stat sizes agree"

	# --- the rados tool puts, kmsgrctl reads, stats and removes
	rc=1
	if rados -p kmsgr put "$mode-tool" "$tmp/obj/tool" 2>"$tmp/err" &&
		"$K" rados get kmsgr "$mode-tool" "$tmp/back" $opt 2>"$tmp/err" &&
		cmp -s "$tmp/obj/tool" "$tmp/back"; then
		rc=0
	fi
	[ $rc -ne 0 ] && comment "$tmp/err"
	tap $rc "cephx $mode: an object put by the rados tool reads back identically with kmsgrctl rados get"
	out=$("$K" rados stat kmsgr "$mode-tool" $opt 2>"$tmp/err")
	rc=$?
	case $out in
	*"size 300000") ;;
	*) rc=1; echo "# stat: $out"; comment "$tmp/err" ;;
	esac
	# gone: ENOENT from a cluster that answered, not any failure
	if [ $rc -eq 0 ] && "$K" rados rm kmsgr "$mode-tool" $opt 2>"$tmp/err" &&
		$CHECK "$CEPH_CONF" kmsgr absent "$mode-tool" >>"$tmp/err" 2>&1; then
		rc=0
	else
		rc=1
		comment "$tmp/err"
	fi
	tap $rc "cephx $mode: kmsgrctl rados stat reports its size, rm removes it (librados: ENOENT after)"

	# --- a bench write; the kernel's view of its OSD sessions meanwhile
	"$K" rados bench kmsgr "$BENCH_SECS" write -b 4096 -t 8 $opt \
		>"$tmp/bench" 2>"$tmp/berr" &
	bpid=$!
	osd_up "$bpid" "$tmp/seen"
	seen=$(cat "$tmp/seen")
	wait "$bpid"
	rc=$?
	[ $rc -ne 0 ] && comment "$tmp/berr"
	grep -q '^Total writes made:' "$tmp/bench" || rc=1
	tap $rc "cephx $mode: kmsgrctl rados bench write (4 KiB, 8 in flight) runs: $(grep -E '^(Total writes made|Bandwidth)' "$tmp/bench" | tr '\n' ' ')"
	rc=1
	case $seen in
	*'"mode":"'"$mode"'"'*'"auth":"cephx"'*) rc=0 ;;
	esac
	if [ $rc -ne 0 ]; then
		echo "# the bench's OSD sessions seen up: ${seen:-none}; the samples (the bench is process $bpid):"
		comment "$tmp/seen.log"
	fi
	tap $rc "cephx $mode: the kernel reports the OSD session up with auth cephx and mode $mode"
done

# --- a wrong key: the mon refuses it, clearly, within the timeout
sed 's/\(key = \).*/\1AQBtB29pAAAAABAAYnpmzL5JkCG4Ad1W6y3R3A==/' \
	"$dir/keyring" >"$tmp/wrong.keyring"
t0=$(date +%s)
"$K" rados put kmsgr wrong "$tmp/obj/o1" --keyring "$tmp/wrong.keyring" \
	--timeout 5 >"$tmp/out" 2>"$tmp/err"
rc=$?
dt=$(($(date +%s) - t0))
if [ $rc -ne 0 ] && [ "$dt" -le 15 ] && grep -qi 'auth' "$tmp/err"; then
	tap 0 "a wrong key: refused in $dt s: $(head -n 1 "$tmp/err")"
else
	comment "$tmp/err"
	tap 1 "a wrong key: refused within the timeout with an auth error (rc $rc, $dt s)"
fi
# absent means ENOENT from a cluster that answered, not any failure
$CHECK "$CEPH_CONF" kmsgr absent wrong >"$tmp/absent" 2>&1
rc=$?
comment "$tmp/absent"
tap $rc "nothing was written with the wrong key (librados: ENOENT)"

# --- a nearfull pool is not full: the OSD past its nearfull ratio only,
# the mon flags the pool "nearfull" and writes go on (kmsgrctl read any
# flag name containing "full" as full and refused every write).
$CHECK "$CEPH_CONF" kmsgr ratios 0.0006 0.9 0.95 60 nearfull \
	>"$tmp/near" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
	"$K" rados put kmsgr near-obj "$tmp/obj/tool" --timeout 20 \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc -ne 0 ] && comment "$tmp/err"
fi
comment "$tmp/near"
tap $rc "a nearfull pool ($(sed -n 's/.* flags //p' "$tmp/near")): kmsgrctl rados put still writes"

# --- a full pool.  The OSD already holds more than 1 MB (the objects put
# above): with ordered, tiny full ratios it reports itself full and the mon
# marks the pool full (no mgr needed).  Writes then fail at once with a
# clear ENOSPC (librados would hold them); reads and deletes still work.
# A bench writing meanwhile learns it from the OSD (its map said "not full"
# when it sent): it must stop with ENOSPC soon, not wait out its 60 s.
# The ratios are set, and the pool's flag polled, by one librados process
# (rados_check.py ratios): a `ceph` CLI run per command took 4 to 12 s each
# here with the bench running.
"$K" rados bench kmsgr 60 write -b 4096 -t 4 >"$tmp/bench" 2>"$tmp/berr" &
bpid=$!
# under way: its session to the OSD is up (it writes from then on)
osd_up "$bpid" "$tmp/bench-osd"
$CHECK "$CEPH_CONF" kmsgr ratios 0.0005 0.0008 0.001 60 >"$tmp/full" 2>&1
rc=$?
[ $rc -ne 0 ] && comment "$tmp/full"
tap $rc "the OSD past its full ratio: the mon marks pool kmsgr full ($(sed -n 's/^pool kmsgr full after \([0-9.]*\) s.*/\1/p' "$tmp/full") s)"
t1=$(date +%s)
for _ in $(seq 1 150); do
	kill -0 "$bpid" 2>/dev/null || break
	sleep 0.2
done
if kill -0 "$bpid" 2>/dev/null; then
	kill "$bpid"
	wait "$bpid"
	tap 1 "a full pool: a rados bench write under way stops with ENOSPC (still running 30 s after)"
else
	wait "$bpid"
	rc=$?
	if [ $rc -ne 0 ] && grep -q 'No space left on device' "$tmp/berr"; then
		tap 0 "a full pool: a rados bench write under way stops $(($(date +%s) - t1)) s after: $(grep -m 1 'No space' "$tmp/berr")"
	else
		comment "$tmp/berr"
		tap 1 "a full pool: a rados bench write under way stops with ENOSPC (rc $rc)"
	fi
fi
t0=$(date +%s)
"$K" rados put kmsgr full-obj "$tmp/obj/tool" --timeout 20 \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
dt=$(($(date +%s) - t0))
if [ $rc -ne 0 ] && [ "$dt" -le 10 ] &&
	grep -q 'No space left on device (the pool or its OSDs are full)' \
		"$tmp/err"; then
	tap 0 "a full pool: kmsgrctl rados put refused in $dt s: $(head -n 1 "$tmp/err")"
else
	comment "$tmp/err"
	tap 1 "a full pool: kmsgrctl rados put refused at once with ENOSPC (rc $rc, $dt s)"
fi
rc=1
if "$K" rados get kmsgr crc-o3 "$tmp/back" 2>"$tmp/err" &&
	cmp -s "$tmp/obj/o3" "$tmp/back" &&
	"$K" rados rm kmsgr crc-o4 2>>"$tmp/err" &&
	$CHECK "$CEPH_CONF" kmsgr absent crc-o4 >>"$tmp/err" 2>&1; then
	rc=0
fi
[ $rc -ne 0 ] && comment "$tmp/err"
tap $rc "a full pool: kmsgrctl rados get still reads, rm still removes (it frees space)"
$CHECK "$CEPH_CONF" kmsgr ratios 0.85 0.9 0.95 >/dev/null 2>&1

echo "1..$n"
[ "$failed" -eq 0 ]
