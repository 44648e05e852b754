#!/usr/bin/env python3
"""Per-round phase durations of the relay trace within [from, to] (wall ms): usage phases.py TRACE ROWS.jsonl"""
import json, sys, statistics as st
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
lo = min(float(r['c']) for r in rows); hi = max(float(r['p']) for r in rows if r['p'])
ev = [e for e in ev if lo <= e['t'] <= hi]
rounds = {}
last = None
ph = {'flag_on (UPDATE)': [], 'flag_off (UPDATE)': [], 'claim': [], 'claim->pub start(+flag off)': [], 'kafka': [], 'pub->commit': [], 'commit->next claim start': [], 'wait timer': [], 'wait woken': []}
prev = None
counts = {'rounds': 0, 'heldBack claims': 0, 'empty claims': 0, 'waits heldBack': 0, 'waits poll': 0, 'woken': 0, 'timeouts': 0, 'flag on': 0, 'flag off': 0}
for e in ev:
    k = e['e']
    if k == 'claim':
        counts['rounds'] += 1
        counts['heldBack claims'] += e['heldBack']
        counts['empty claims'] += e['n'] == 0
        ph['claim'].append(e['t'] - e['start'])
        rounds[e['r']] = {'claim': e}
    elif k == 'pub':
        ph['kafka'].append(e['ms'])
        c = rounds.get(e['r'], {}).get('claim')
        if c: ph['claim->pub start(+flag off)'].append(e['t'] - e['ms'] - c['t'])
        rounds.setdefault(e['r'], {})['pub'] = e
    elif k == 'commit':
        p = rounds.get(e['r'], {}).get('pub')
        if p: ph['pub->commit'].append(e['t'] - p['t'])
    elif k == 'sleeping':
        counts['flag on' if e['v'] else 'flag off'] += 1
    elif k == 'wait':
        counts['waits heldBack' if e['heldBack'] else 'waits poll'] += 1
        prev = e
    elif k == 'woke' and prev:
        counts['woken' if e['woken'] else 'timeouts'] += 1
        ph['wait woken' if e['woken'] else 'wait timer'].append(e['t'] - prev['t'])
span = (hi - lo) / 1000
print(f"window {span:.1f} s; counts:", counts)
for k, xs in ph.items():
    if xs:
        xs.sort()
        print(f"  {k:32s} n {len(xs):5d} sum {sum(xs):8.0f} ms  p50 {xs[len(xs)//2]:6.1f}  p90 {xs[int(len(xs)*.9)]:6.1f}  max {xs[-1]:6.1f}")
