#!/usr/bin/env python3
"""Attributes the slowest rows of an end-to-end latency window to causes.

usage: attribute.py RELAY_TRACE.jsonl ROWS-<rate>.jsonl [pct=1] [--verbose]
RELAY_TRACE is the service's NOTIFY_RELAY_TRACE file, ROWS the bench's BENCH_TRACE_DIR dump.
"""
import json, sys, bisect, collections

trace_path, rows_path = sys.argv[1], sys.argv[2]
pct = float(sys.argv[3]) if len(sys.argv) > 3 and not sys.argv[3].startswith('-') else 1.0
verbose = '--verbose' in sys.argv

ev = [json.loads(l) for l in open(trace_path) if l.strip()]
ev.sort(key=lambda e: e['t'])
rows = [json.loads(l) for l in open(rows_path) if l.strip()]
rows = [r for r in rows if r['p'] is not None and r['commit'] is not None]
for r in rows:
    for f in ('c', 'p', 's'):
        r[f] = float(r[f]) if r[f] is not None else None

# Outbox ids restart in each round's fresh database: keep the events of this window's service only.
lo = min(r['c'] for r in rows) - 5_000
hi = max(r['p'] for r in rows) + 5_000
ev = [e for e in ev if lo <= e['t'] <= hi]
claims = {}      # r -> claim event
pubs = {}
commits = {}
holders = {}
row_round = {}
for e in ev:
    k = e['e']
    if k == 'claim':
        claims[e['r']] = e
        for i in e['ids']:
            row_round.setdefault(i, e['r'])
    elif k == 'pub': pubs[e['r']] = e
    elif k == 'commit': commits[e['r']] = e
    elif k == 'holders': holders[e['r']] = e
claim_list = sorted(claims.values(), key=lambda c: c['start'])
claim_starts = [c['start'] for c in claim_list]
gcs = [e for e in ev if e['e'] == 'gc']
waits = [e for e in ev if e['e'] in ('wait', 'woke', 'wake', 'round', 'sleeping')]
wait_ts = [e['t'] for e in waits]

for r in rows:
    r['relay'] = r['p'] - r['c']
rows.sort(key=lambda r: r['relay'])
n = len(rows)
def q(xs, f): return xs[min(len(xs) - 1, int(f * len(xs)))]
rel = [r['relay'] for r in rows]
print(f"rows {n}: relay stage p50 {q(rel,.5):.1f} p99 {q(rel,.99):.1f} max {rel[-1]:.1f} ms")
k = max(1, round(n * pct / 100))
slow = rows[-k:]
causes = collections.Counter()
holder_apps = collections.Counter()
comp_sum = collections.defaultdict(float)
for r in slow:
    rr = row_round.get(r['oid'])
    if rr is None:
        causes['not in trace'] += 1
        continue
    cl = claims[rr]
    pub = pubs.get(rr)
    enq = r['commit'] - r['c']
    gap = cl['start'] - r['commit']
    claim = cl['t'] - cl['start']
    pubd = (pub['t'] - cl['t']) if pub else 0
    pubms = pub['ms'] if pub else 0
    mark = r['p'] - (pub['t'] if pub else cl['t'])
    gc = sum(min(g['t'] + g['ms'], r['p']) - max(g['t'], r['c']) for g in gcs if g['t'] < r['p'] and g['t'] + g['ms'] > r['c'])
    # rounds whose claim started after the commit and before the round that took the row
    i0 = bisect.bisect_right(claim_starts, r['commit'])
    missed = [c for c in claim_list[i0:] if c['start'] < cl['start']]
    held_missed = [c for c in missed if c['heldBack'] or c['n'] > 0]
    # what the loop did in the gap
    j = bisect.bisect_right(wait_ts, r['commit'])
    before = waits[j - 1] if j else None
    comps = {'enqueue tx (created->commit)': enq, 'gap commit->claim start': gap, 'claim': claim, 'publish(+setSleeping)': pubd, 'mark+commit': mark}
    top = max(comps, key=comps.get)
    if top == 'gap commit->claim start':
        if held_missed:
            label = f'held back ({len(held_missed)} rounds missed it)'
            for c in held_missed:
                h = holders.get(c['r'])
                if h and h['holders']:
                    ho = h['holders'][0]
                    holder_apps[f"{ho['app']} | {ho['db']} | {(ho['q'] or '')[:60]}"] += 1
            label = 'held back by snapshot rule'
        else:
            # was a round in progress at commit time?
            busy = [c for c in claim_list if c['start'] <= r['commit'] and commits.get(c['r'], {'t': 0})['t'] >= r['commit'] and c['n'] > 0]
            if busy:
                label = 'relay busy with a previous batch (claim/publish/mark)'
            elif before and before['e'] == 'wait':
                label = f"idle wait ({'held-back re-poll' if before['heldBack'] else 'poll/notify'} {before['ms']} ms, sleeping={before['sleeping']})"
            else:
                label = f"gap, loop last did {before['e'] if before else None}"
    else:
        label = top
    causes[label] += 1
    for kk, v in comps.items(): comp_sum[kk] += v
    comp_sum['gc overlap'] += gc
    comp_sum['publish: kafka ms'] += pubms
    if verbose:
        print(f"{r['relay']:7.1f} enq {enq:6.1f} gap {gap:6.1f} claim {claim:5.1f} pub {pubd:6.1f} (kafka {pubms:5.1f}) mark {mark:5.1f} gc {gc:5.1f} missed {len(missed)} held {len(held_missed)} n {cl['n']} -> {label}")
print(f"slowest {k} rows ({pct} %): causes")
for c, v in causes.most_common(): print(f"  {v:4d}  {c}")
print("  mean components (ms):", {kk: round(v / k, 1) for kk, v in comp_sum.items()})
if holder_apps:
    print("  oldest open xid holder seen in missed held-back rounds:")
    for c, v in holder_apps.most_common(10): print(f"  {v:4d}  {c}")
