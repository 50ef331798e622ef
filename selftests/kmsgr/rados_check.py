#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# The Ceph side of rados_test.sh, through librados (python3-rados, what
# the `rados` and `ceph` tools use), in one process:
#
#   rados_check.py CONF POOL verify LIST   LIST lines "OBJECT FILE [JSON]":
#       each object's bytes equal FILE's, its stat size too, and where
#       JSON (kmsgrctl -j rados put's line) is given, its pgid, raw_pgid
#       and primary agree with the mon's `osd map` (the first 20 lines and
#       every tenth after them: a mon command each)
#   rados_check.py CONF POOL put LIST      write each FILE as OBJECT
#   rados_check.py CONF POOL absent OBJECT...  each is gone (ENOENT)
#
# Prints one line per problem and "N checked" at the end; exit 1 on any.
#
# And for the tests that change the cluster (one Python process in place of
# a `ceph` CLI run per command: the CLI takes 4 s or more to start under
# TCG):
#
#   rados_check.py CONF POOL mon JSON...   send each mon command in turn,
#       print the last one's output; exit 1 at the first that fails
#   rados_check.py CONF POOL ratios NEAR BACKFILL FULL [SECS [FLAG]]
#       set the OSD nearfull, backfillfull and full ratios (lowering them:
#       nearfull first, else full first, so that they stay ordered); with
#       SECS, then poll `osd dump` until POOL has the flag FLAG (default
#       "full": that flag itself, not nearfull or backfillfull), for up to
#       SECS seconds, and print how long it took

import concurrent.futures
import json
import sys
import time

import rados


def mon(cluster, cmd):
    ret, out, rs = cluster.mon_command(json.dumps(cmd), b'')
    if ret:
        raise RuntimeError(f'{cmd["prefix"]}: {rs} ({ret})')
    return out


def pool_flags(cluster, pool):
    dump = json.loads(mon(cluster, {'prefix': 'osd dump', 'format': 'json'}))
    for p in dump['pools']:
        if p['pool_name'] == pool:
            return p['flags_names'].split(',')
    raise RuntimeError(f'no pool {pool} in the OSD map')


def ratios(cluster, pool, args):
    names = ('nearfull', 'backfillfull', 'full')
    want = [float(a) for a in args[:3]]
    now = json.loads(mon(cluster, {'prefix': 'osd dump', 'format': 'json'}))
    order = list(zip(names, want))
    if want[0] >= now['nearfull_ratio']:
        order.reverse()
    for name, ratio in order:
        mon(cluster, {'prefix': f'osd set-{name}-ratio', 'ratio': ratio})
    print('ratios ' + ', '.join(f'{k} {v}' for k, v in order))
    if len(args) < 4:
        return 0
    flag = args[4] if len(args) > 4 else 'full'
    t0 = time.monotonic()
    end = t0 + float(args[3])
    while flag not in pool_flags(cluster, pool):
        if time.monotonic() >= end:
            print(f'pool {pool} not {flag} after {args[3]} s: flags'
                  f' {",".join(pool_flags(cluster, pool))}')
            return 1
        time.sleep(0.2)
    print(f'pool {pool} {flag} after {time.monotonic() - t0:.1f} s:'
          f' flags {",".join(pool_flags(cluster, pool))}')
    return 0


def put(ioctx, oid, path, *_):
    with open(path, 'rb') as f:
        ioctx.write_full(oid, f.read())


def verify(cluster, ioctx, pool, idx, parts):
    """The problems with object parts[0] (verify, above), as lines."""
    oid, path = parts[0], parts[1]
    problems = []
    with open(path, 'rb') as f:
        want = f.read()
    size, _ = ioctx.stat(oid)
    got = ioctx.read(oid, length=max(len(want), 1) + 1) if size else b''
    if size != len(want) or got != want:
        problems.append(f'{oid}: librados reads {len(got)} bytes'
                        f' (stat {size}), want {len(want)} from {path}'
                        f'{"" if len(got) != len(want) else ", content differs"}')
    if len(parts) < 3 or (idx >= 20 and idx % 10):
        return problems
    mine = json.loads(parts[2])
    ret, out, rs = cluster.mon_command(json.dumps({
        'prefix': 'osd map', 'pool': pool, 'object': oid,
        'format': 'json'}), b'')
    if ret:
        return problems + [f'{oid}: osd map failed: {rs}']
    theirs = json.loads(out)
    for mk, tk in (('pgid', 'pgid'), ('raw_pgid', 'raw_pgid'),
                   ('primary', 'acting_primary')):
        if str(mine[mk]) != str(theirs[tk]):
            problems.append(f'{oid}: kmsgrctl says {mk} {mine[mk]},'
                            f' ceph osd map says {theirs[tk]}')
    return problems


def main():
    conf, pool, cmd = sys.argv[1:4]
    args = sys.argv[4:]
    cluster = rados.Rados(conffile=conf)
    cluster.connect(timeout=60)
    if cmd in ('mon', 'ratios'):
        try:
            if cmd == 'ratios':
                return ratios(cluster, pool, args)
            out = b''
            for a in args:
                out = mon(cluster, json.loads(a))
            sys.stdout.write(out.decode())
            return 0
        except RuntimeError as e:
            print(e)
            return 1
        finally:
            cluster.shutdown()
    ioctx = cluster.open_ioctx(pool)
    bad = 0
    n = 0
    if cmd == 'absent':
        for oid in args:
            n += 1
            try:
                ioctx.stat(oid)
                print(f'{oid}: still there')
                bad += 1
            except rados.ObjectNotFound:
                pass
    else:
        with open(args[0]) as f:
            lines = [ln.split(' ', 2) for ln in f.read().splitlines() if ln]
        n = len(lines)
        # eight objects at a time (librados lets go of the GIL while it
        # waits): one at a time left the guest's CPUs mostly idle
        with concurrent.futures.ThreadPoolExecutor(8) as workers:
            if cmd == 'put':
                list(workers.map(lambda a: put(ioctx, *a), lines))
            else:
                for problems in workers.map(
                        lambda a: verify(cluster, ioctx, pool, *a),
                        enumerate(lines)):
                    for p in problems:
                        print(p)
                    bad += len(problems)
    ioctx.close()
    cluster.shutdown()
    print(f'{n} checked, {bad} bad')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
