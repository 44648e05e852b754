#!/usr/bin/env python3
"""Per-row counts in a latency window: flag writes, NOTIFYs received (= enqueue commits that took
the notify lock), claims. usage: counts.py TRACE ROWS.jsonl"""
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
lo = min(float(r['c']) for r in rows); hi = max(float(r['p']) for r in rows if r['p'])
ev = [e for e in ev if lo <= e['t'] <= hi]
n = len(rows)
c = lambda f: sum(1 for e in ev if f(e))
print(f"{n} rows: per row flag writes {c(lambda e: e['e'] == 'sleeping') / n:.3f}, NOTIFYs {c(lambda e: e['e'] == 'wake') / n:.3f}, "
      f"claims {c(lambda e: e['e'] == 'claim') / n:.3f}, held-back claims {c(lambda e: e['e'] == 'claim' and e['heldBack']) / n:.3f}, "
      f"Kafka sends {c(lambda e: e['e'] == 'pub') / n:.3f}")
