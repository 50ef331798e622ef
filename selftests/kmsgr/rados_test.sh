#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rados_test.sh - object data to and from real Ceph OSDs over kmsgr:
# "kmsgrctl rados" against librados and the rados tool, on an auth none
# cluster with three memstore OSDs and a pool "kmsgr" of size 2: the one in
# directory $KMSGR_RADOS_CEPH (run_guest.sh's, started by
# selftests/msgr2/ceph_cluster.sh start + osds), else one of its own
# (run_guest.sh runs this with kmsgr.ko loaded):
#
#   - KMSGR_RADOS_OBJS objects (default 1000) of 0 B to 9 MiB (more than
#     one 4 MiB op) put by kmsgrctl read back identically by librados,
#     stat sizes agree, and each lands where `ceph osd map` says (pgid,
#     raw hash, primary); objects put by librados and by the rados tool
#     read back identically by kmsgrctl rados get; stat agrees; rm removes;
#   - rados bench write (--no-cleanup), seq and rand with 8 requests in
#     flight: the rados tool sees what write wrote, reads check every
#     byte, a changed object fails seq, write cleans up after itself;
#   - a pool that does not exist, an object that does not exist and OSDs
#     that stop answering (SIGSTOP) give clear errors within the timeout;
#     a batch put to them dials each OSD once, not once per object;
#   - an OSD killed (SIGKILL) under a bench write: every request finishes
#     on the new map, and all objects read back intact.
#
# Prints TAP; exit status 0 when all passed.

set -u

TOP=$(cd "$(dirname "$0")/../.." && pwd)
K=$TOP/tools/kmsgrctl/kmsgrctl
CLUSTER=$TOP/selftests/msgr2/ceph_cluster.sh
CHECK="/usr/bin/python3 $TOP/selftests/kmsgr/rados_check.py"
N=${KMSGR_RADOS_OBJS:-1000}

# shellcheck source=selftests/kmsgr/tap.sh
. "$TOP/selftests/kmsgr/tap.sh"
tmp=$(mktemp -d) || exit 1
dir=${KMSGR_RADOS_CEPH:-}
own=
[ -n "$dir" ] || { dir=$tmp/c; own=1; }
cleanup() {
	for p in "$dir"/osd-*/osd.pid; do
		[ -f "$p" ] && kill -CONT "$(cat "$p")" 2>/dev/null
	done
	[ -n "$own" ] && "$CLUSTER" stop "$dir" >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT

t0=$(date +%s)
if [ -n "$own" ]; then
	if ! "$CLUSTER" start none "$dir" >"$tmp/cluster.log" 2>&1 ||
		! "$CLUSTER" osds "$dir" 3 kmsgr 2 >>"$tmp/cluster.log" 2>&1; then
		comment "$tmp/cluster.log"
		tap 1 "a mon and 3 memstore OSDs with pool kmsgr (size 2) start"
		echo "1..$n"
		exit 1
	fi
fi
ls "$dir"/osd-*/osd.pid >/dev/null 2>&1 && [ -f "$dir/ceph.conf" ]
tap $? "a mon and $(ls -d "$dir"/osd-* | wc -l) memstore OSDs with pool kmsgr (size 2) ($(($(date +%s) - t0)) s to start)"
export CEPH_CONF=$dir/ceph.conf

# Sizes: the edges (empty, one byte, around a page, one op, above one op),
# then a spread that keeps the total moderate under TCG.
sizes="0 1 4095 4096 4097 65536 1048576 4194304 4194305 9437184"
mkdir -p "$tmp/obj"
i=0
: >"$tmp/list"
for s in $sizes; do
	head -c "$s" /dev/urandom >"$tmp/obj/k$i"
	echo "k$i $tmp/obj/k$i" >>"$tmp/list"
	i=$((i + 1))
done
# the rest mostly small, every tenth up to 256 KiB (one process: a fork
# per object costs minutes under TCG)
/usr/bin/python3 - "$tmp/obj" "$i" "$N" >>"$tmp/list" <<'EOF'
import os
import random
import sys

top, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(first, count):
    path = f'{top}/k{i}'
    with open(path, 'wb') as f:
        f.write(os.urandom(random.randrange(262144 if i % 10 == 0 else 8192)))
    print(f'k{i} {path}')
EOF

# --- kmsgrctl puts, librados reads ------------------------------------------------
# The ten edge sizes one process each (the single-object command line);
# the rest in one process, 8 objects in flight (OBJECT FILE pairs).
t0=$(date +%s)
bad=0
: >"$tmp/placed"
head -n 10 "$tmp/list" >"$tmp/single"
tail -n +11 "$tmp/list" >"$tmp/batch"
while read -r oid path; do
	if ! j=$("$K" -j rados put kmsgr "$oid" "$path" 2>"$tmp/err"); then
		bad=$((bad + 1))
		[ "$bad" -le 3 ] && comment "$tmp/err"
		continue
	fi
	echo "$oid $path $j" >>"$tmp/placed"
done <"$tmp/single"
if [ -s "$tmp/batch" ]; then
	# shellcheck disable=SC2046 # OBJECT FILE pairs, no spaces in them
	"$K" -j rados put kmsgr $(cat "$tmp/batch") -t 8 >"$tmp/bput" 2>"$tmp/err" ||
		comment "$tmp/err"
	# one JSON object per line: "OBJECT FILE JSON" for the checker
	sed -n 's/^\(.*"object":"\([^"]*\)","file":"\([^"]*\)".*\)$/\2 \3 \1/p' \
		"$tmp/bput" >>"$tmp/placed"
fi
done_n=$(wc -l <"$tmp/placed")
bad=$((N - done_n))
dt=$(($(date +%s) - t0))
tap "$bad" "kmsgrctl rados put of $N objects (0 B to 9 MiB; 10 one process each, the rest in one, 8 in flight): all succeed ($bad failed, $dt s)"
t0=$(date +%s)
$CHECK "$CEPH_CONF" kmsgr verify "$tmp/placed" >"$tmp/out" 2>&1
rc=$?
[ $rc -ne 0 ] && comment "$tmp/out"
tap $rc "librados reads every object kmsgrctl put identically, stat sizes agree, and placement (pgid, raw hash, primary) agrees with ceph osd map (the first 20, every tenth after): $(tail -n 1 "$tmp/out") ($(($(date +%s) - t0)) s)"

# --- librados and the rados tool put, kmsgrctl reads --------------------------------
head -n 60 "$tmp/list" | sed 's/^k/r/' >"$tmp/rlist"
$CHECK "$CEPH_CONF" kmsgr put "$tmp/rlist" >"$tmp/out" 2>&1
rc=$?
[ $rc -ne 0 ] && comment "$tmp/out"
tap $rc "librados puts 60 objects"
head -c 5000000 /dev/urandom >"$tmp/obj/tool"
rados -p kmsgr put tool "$tmp/obj/tool" 2>"$tmp/err" || comment "$tmp/err"
echo "tool $tmp/obj/tool" >>"$tmp/rlist"
bad=0
# five one process each, the rest in one batch get (8 in flight)
head -n 5 "$tmp/rlist" >"$tmp/rsingle"
tail -n +6 "$tmp/rlist" >"$tmp/rbatch"
while read -r oid path; do
	if ! "$K" rados get kmsgr "$oid" "$tmp/got" 2>"$tmp/err" ||
		! cmp -s "$tmp/got" "$path"; then
		bad=$((bad + 1))
		[ "$bad" -le 3 ] && { echo "# $oid:"; comment "$tmp/err"; }
	fi
done <"$tmp/rsingle"
mkdir -p "$tmp/got.d"
# shellcheck disable=SC2046 # OBJECT FILE pairs, no spaces in them
"$K" rados get kmsgr $(awk -v d="$tmp/got.d" '{ print $1, d "/" $1 }' "$tmp/rbatch") \
	-t 8 2>"$tmp/err" || comment "$tmp/err"
while read -r oid path; do
	cmp -s "$tmp/got.d/$oid" "$path" || {
		bad=$((bad + 1))
		echo "# $oid: differs or missing"
	}
done <"$tmp/rbatch"
tap "$bad" "kmsgrctl rados get of 61 objects put by librados and the rados tool (5 one process each, 56 in one): identical bytes ($bad differ)"

# stat: kmsgrctl against the rados tool, and the shape of its line
want=$(stat -c %s "$tmp/obj/tool")
out=$("$K" rados stat kmsgr tool 2>&1)
theirs=$(rados -p kmsgr stat tool 2>&1)
case $out in
"kmsgr/tool mtime "*", size $want")
	case $theirs in
	*", size $want") rc=0 ;;
	*) rc=1 ;;
	esac ;;
*) rc=1 ;;
esac
[ $rc -ne 0 ] && echo "# kmsgrctl: $out" && echo "# rados: $theirs"
tap $rc "kmsgrctl rados stat prints rados' line with the same size ($want)"
jsize=$("$K" -j rados stat kmsgr k8 | sed -n 's/.*"size":\([0-9]*\).*/\1/p')
tap "$([ "$jsize" = 4194305 ] && echo 0 || echo 1)" "kmsgrctl -j rados stat: size 4194305 (got ${jsize:-nothing})"

# rm
rc=0
for oid in k0 k5 k9 tool; do
	"$K" rados rm kmsgr "$oid" 2>"$tmp/err" || { rc=1; comment "$tmp/err"; }
done
$CHECK "$CEPH_CONF" kmsgr absent k0 k5 k9 tool >"$tmp/out" 2>&1 || rc=1
[ $rc -ne 0 ] && comment "$tmp/out"
tap $rc "kmsgrctl rados rm removes objects (librados: ENOENT after)"

# --- rados bench: several requests in flight -----------------------------------------
# write leaves its objects (--no-cleanup) and the metadata object; the
# rados tool sees them all with the header bench puts first; seq and rand
# read them back and check every byte; an object changed behind its back
# fails seq; without --no-cleanup write removes what it wrote.
out=$("$K" rados bench kmsgr 2 write -b 4096 -t 8 --no-cleanup 2>&1)
rc=$?
wrote=$(echo "$out" | sed -n 's/^Total writes made: *\([0-9]*\)$/\1/p')
prefix=$(echo "$out" | sed -n 's/^Object prefix: //p')
echo "$out" | grep -E "^ +[0-9]+ |^Total|^Bandwidth|^Average|^CPU" | sed 's/^/# /'
[ $rc -eq 0 ] && [ "${wrote:-0}" -gt 0 ] && [ -n "$prefix" ]
tap $? "kmsgrctl rados bench 2 s write -b 4096 -t 8 --no-cleanup: rados' report, ${wrote:-no} writes"
rados -p kmsgr ls >"$tmp/ls" 2>"$tmp/err" || comment "$tmp/err"
have=$(grep -c "^${prefix:-none}_object" "$tmp/ls")
rados -p kmsgr get "${prefix:-none}_object0" "$tmp/o0" 2>"$tmp/err" || comment "$tmp/err"
rados -p kmsgr get kmsgr_bench_last_metadata "$tmp/meta" 2>"$tmp/err" || comment "$tmp/err"
hdr=$(head -c 15 "$tmp/o0" 2>/dev/null)
meta=$(cat "$tmp/meta" 2>/dev/null)
echo "# $have objects, object0 starts \"$hdr\", metadata \"$meta\""
[ "$have" = "${wrote:-x}" ] && [ "$(stat -c %s "$tmp/o0" 2>/dev/null)" = 4096 ] &&
	[ "$hdr" = "000000000000000" ] && [ "$meta" = "$wrote 4096 $prefix" ]
tap $? "the rados tool lists all $have bench objects (4096 bytes, bench's header) and the metadata object"
out=$("$K" rados bench kmsgr 3 seq -b 4096 -t 8 2>&1)
rc=$?
got=$(echo "$out" | sed -n 's/^Total reads made: *\([0-9]*\)$/\1/p')
echo "$out" | grep -E "^Total|^Bandwidth|^Average|rror" | sed 's/^/# /'
[ $rc -eq 0 ] && [ "${got:-0}" -gt 0 ]
tap $? "kmsgrctl rados bench 3 s seq: ${got:-no} reads, every byte checked"
out=$("$K" -j rados bench kmsgr 2 rand -b 4096 -t 4 2>&1)
rc=$?
echo "# $out"
case $out in *'"mode":"rand"'*'"total_reads_made":'[1-9]*) [ $rc -eq 0 ] ;; *) false ;; esac
tap $? "kmsgrctl -j rados bench 2 s rand: JSON with its reads"
printf 'not what bench wrote' | rados -p kmsgr put "${prefix:-none}_object0" - 2>"$tmp/err" ||
	comment "$tmp/err"
out=$("$K" rados bench kmsgr 2 seq -b 4096 -t 4 2>&1)
rc=$?
echo "$out" | grep -i "object0" | sed 's/^/# /'
case $out in *"${prefix:-none}_object0"*) [ $rc -eq 1 ] ;; *) false ;; esac
tap $? "an object changed behind bench's back: seq fails naming it (exit $rc)"
out=$("$K" rados bench kmsgr 2 seq -b 8192 2>&1)
rc=$?
echo "# $out"
case $out in *"not 8192"*) [ $rc -eq 1 ] ;; *) false ;; esac
tap $? "seq with another -b than write's: a clear error"
rados -p kmsgr cleanup --prefix kmsgr_bench_data >/dev/null 2>&1
rados -p kmsgr rm kmsgr_bench_last_metadata >/dev/null 2>&1
out=$("$K" rados bench kmsgr 2 write -b 4M -t 4 2>&1)
rc=$?
prefix=$(echo "$out" | sed -n 's/^Object prefix: //p')
wrote=$(echo "$out" | sed -n 's/^Total writes made: *\([0-9]*\)$/\1/p')
echo "$out" | grep -E "^Total|^Bandwidth|^Removed|^Clean" | sed 's/^/# /'
# the listing from a cluster that answered, and the prefix bench named
if listing=$(rados -p kmsgr ls 2>&1); then
	left=$(printf '%s\n' "$listing" | grep -c "^${prefix}_object")
else
	echo "# rados ls: $listing"
	left="unknown (rados ls failed)"
fi
[ $rc -eq 0 ] && [ -n "$prefix" ] && [ "${wrote:-0}" -gt 0 ] && [ "$left" = 0 ]
tap $? "kmsgrctl rados bench 2 s write -b 4M -t 4: ${wrote:-no} writes, all removed after ($left left)"

# --- errors ---------------------------------------------------------------------------
out=$("$K" rados stat kmsgr k0 2>&1)
rc=$?
echo "# $out"
case $out in *"No such file or directory"*) [ $rc -eq 1 ] ;; *) false ;; esac
tap $? "stat of a removed object: exit 1, \"No such file or directory\""
out=$("$K" rados get nosuchpool k1 "$tmp/x" 2>&1)
rc=$?
echo "# $out"
case $out in *'pool "nosuchpool" does not exist'*) [ $rc -eq 1 ] ;; *) false ;; esac
tap $? "a pool that does not exist: exit 1, says so"
# an erasure-coded pool: refused by name, before any OSD is asked
if ceph osd erasure-code-profile set kmsgr-ec k=2 m=1 \
	crush-failure-domain=osd >"$tmp/err" 2>&1 &&
	ceph osd pool create kmsgr-ec 1 1 erasure kmsgr-ec >>"$tmp/err" 2>&1; then
	out=$("$K" rados put kmsgr-ec x "$tmp/obj/tool" 2>&1)
	rc=$?
	echo "# $out"
	case $out in *'pool "kmsgr-ec": it is erasure-coded'*) [ $rc -eq 1 ] ;; *) false ;; esac
else
	comment "$tmp/err"
	false
fi
tap $? "an erasure-coded pool: exit 1, says why it cannot be used"
out=$("$K" rados put kmsgr x "$tmp/nosuchfile" 2>&1)
rc=$?
case $out in *"cannot open"*"nosuchfile"*) [ $rc -eq 1 ] ;; *) false ;; esac
tap $? "put of a missing file: exit 1, says so"
out=$("$K" rados put kmsgr 2>&1)
tap "$([ $? -eq 2 ] && echo 0 || echo 1)" "put without OBJECT: usage error, exit 2"
# max_sessions 1: the mon session is the instance's one, an OSD's CONNECT
# fails with ENOSPC, and kmsgrctl names the limit
maxs=/sys/module/kmsgr/parameters/max_sessions
old_maxs=$(cat "$maxs")
echo 1 >"$maxs"
out=$("$K" rados put kmsgr maxs-obj "$tmp/obj/tool" 2>&1)
rc=$?
echo "$old_maxs" >"$maxs"
echo "# $out"
case $out in *"max_sessions sessions and listeners"*) [ $rc -eq 1 ] ;; *) false ;; esac &&
	[ "$(echo "$out" | grep -c 'connecting to')" -eq 1 ]
tap $? "max_sessions 1: put fails at once at the OSD's CONNECT, exit 1, naming the module's max_sessions (not once per retry)"
# SIGINT while a put still reads its standard input: it stops there, and
# the object keeps what it had (not the input read so far)
echo before >"$tmp/before"
"$K" rados put kmsgr sigint-obj "$tmp/before"
mkfifo "$tmp/fifo"
"$K" rados put kmsgr sigint-obj - <"$tmp/fifo" 2>"$tmp/int.err" &
ipid=$!
exec 3>"$tmp/fifo"
echo part >&3
sleep 3
t0=${EPOCHREALTIME/./}
kill -INT "$ipid"
# its end, up to 5 s; then the end of its input (else it reads on)
for _ in $(seq 50); do
	kill -0 "$ipid" 2>/dev/null || break
	sleep 0.1
done
# in ms, by the shell's own clock: no process start in what is timed
dt=$(((${EPOCHREALTIME/./} - t0) / 1000))
exec 3>&-
wait "$ipid"
rc=$?
got=$("$K" rados get kmsgr sigint-obj - 2>&1)
echo "# exit $rc after $dt ms: $(cat "$tmp/int.err"); the object holds: $got"
# a put that went on reading would end only with its input, after 5 s
[ $rc -eq 1 ] && [ $dt -le 3500 ] && [ "$got" = before ] &&
	grep -qi 'interrupted' "$tmp/int.err"
tap $? "SIGINT during a put from a pipe: exit 1 at once, says so, the object unchanged"
"$K" rados rm kmsgr sigint-obj

# OSDs that stop answering: a clear error within the timeout, no hang
for p in "$dir"/osd-*/osd.pid; do
	kill -STOP "$(cat "$p")"
done
t0=$(date +%s)
out=$(timeout 60 "$K" rados stat kmsgr k1 --timeout 6 2>&1)
rc=$?
dt=$(($(date +%s) - t0))
echo "# $out"
case $out in *"did not answer"* | *"cannot reach"*) [ $rc -eq 1 ] && [ $dt -le 20 ] ;; *) false ;; esac
tap $? "OSDs stopped (SIGSTOP): kmsgrctl rados stat fails with a clear error after its 6 s timeout (took $dt s, exit $rc)"
# A stopped OSD takes the TCP connection (its kernel does) and never
# answers: an open waits until its request's deadline.  Twelve objects in
# flight over three such OSDs: each OSD is dialled once per map (about
# 3 x 4 s in the first pass, then the last requests' time left), not
# once per object (12 x 4 s).
pairs=
for i in $(seq 1 12); do
	pairs="$pairs stopped-$i $tmp/obj/k1"
done
t0=$(date +%s)
# shellcheck disable=SC2086 # OBJECT FILE pairs, no spaces in them
out=$(timeout 120 "$K" rados put kmsgr $pairs -t 12 --timeout 4 2>&1)
rc=$?
dt=$(($(date +%s) - t0))
for p in "$dir"/osd-*/osd.pid; do
	kill -CONT "$(cat "$p")"
done
echo "$out" | sort | uniq -c | sort -rn | head -n 4 | sed 's/^/# /'
case $out in *"cannot reach"* | *"did not answer"*) [ $rc -eq 1 ] && [ $dt -le 32 ] ;; *) false ;; esac
tap $? "OSDs stopped: a put of 12 objects with --timeout 4 fails clearly in $dt s (at most 32: each OSD dialled once, not each object; exit $rc)"
out=$(timeout 60 "$K" rados stat kmsgr k1 2>&1)
tap $? "after SIGCONT the same stat works: $out"

# --- an OSD killed mid-run ----------------------------------------------------------
# Three OSDs, pool size 2: a bench write with 8 requests in flight; an OSD
# is killed (SIGKILL) after 3 s; the mon marks it down (its peers see the
# connection refused), the PGs move, and every request still in flight or
# sent to it is sent again on the new map: the run ends with no failed
# write, and a seq read over what it wrote checks every byte.  The write
# runs 7 s: the new map comes 1 to 2 s after the kill (the mon proposes
# every 0.1 s, ceph_cluster.sh), and requests still out when the time is
# up are waited for all the same.
osds=$(ls -d "$dir"/osd-* 2>/dev/null | wc -l)
if [ "$osds" -lt 3 ]; then
	tap 1 "an OSD killed mid-run: the cluster has $osds OSDs, not 3"
else
	victim=$(cat "$dir/osd-1/osd.pid")
	"$K" rados bench kmsgr 7 write -b 65536 -t 8 --no-cleanup \
		--run-name killrun --timeout 60 >"$tmp/kill.out" 2>"$tmp/kill.err" &
	bpid=$!
	sleep 3
	kill -KILL "$victim"
	t0=$(date +%s)
	# the bench instance's sessions, as the module counts them, while it
	# dials the dead OSD again and again: each refused dial must be closed
	# (a dead session keeps its slot until CLOSE)
	: >"$tmp/kill.sessions"
	while kill -0 "$bpid" 2>/dev/null; do
		"$K" instance show 2>/dev/null | awk -v p="$bpid" '{
			for (i = 1; i < NF; i++) {
				if ($i == "pid") pid = $(i + 1)
				if ($i == "sessions") n = $(i + 1)
			}
			if (pid == p) print n }' >>"$tmp/kill.sessions"
		sleep 0.1
	done
	timeout 200 tail --pid="$bpid" -f /dev/null
	wait "$bpid"
	rc=$?
	most=$(sort -n "$tmp/kill.sessions" | tail -n 1)
	echo "# the bench's sessions, count x looks: $(sort -n "$tmp/kill.sessions" | uniq -c | awk '{ printf "%s x %s, ", $2, $1 }')"
	# the mon's and the three OSDs' sessions, and one dial under way
	[ -n "$most" ] && [ "$most" -le 5 ]
	tap $? "osd.1 killed under a bench write: the bench holds at most 5 sessions at any time (the mon, 3 OSDs, a dial), none left by refused dials: most seen ${most:-none} in $(wc -l <"$tmp/kill.sessions") looks"
	wrote=$(sed -n 's/^Total writes made: *\([0-9]*\)$/\1/p' "$tmp/kill.out")
	resent=$(sed -n 's/^Resends: *\([0-9]*\)$/\1/p' "$tmp/kill.out")
	grep -E "^ +[0-9]+ |^Total|^Resends" "$tmp/kill.out" | sed 's/^/# /'
	sort "$tmp/kill.err" | uniq -c | sort -rn | head -n 5 | sed 's/^/# stderr: /'
	[ $rc -eq 0 ] && [ "${wrote:-0}" -gt 0 ] && [ "${resent:-0}" -gt 0 ] &&
		[ ! -s "$tmp/kill.err" ]
	tap $? "osd.1 killed 3 s into a bench write (-t 8): the write finishes quietly, ${wrote:-no} writes, ${resent:-no} requests resent on a new map ($(($(date +%s) - t0)) s after the kill)"
	out=$("$K" rados bench kmsgr 120 seq -b 65536 -t 8 --run-name killrun \
		--timeout 60 2>&1)
	rc=$?
	got=$(echo "$out" | sed -n 's/^Total reads made: *\([0-9]*\)$/\1/p')
	echo "$out" | grep -E "^Total|^Resends|rror|kmsgr:" | head -n 5 | sed 's/^/# /'
	[ $rc -eq 0 ] && [ "${got:-0}" = "${wrote:-x}" ]
	tap $? "after the kill, seq reads all ${wrote:-no} objects back on two OSDs, every byte checked (${got:-no} read)"
fi

echo "1..$n"
[ "$failed" -eq 0 ]
