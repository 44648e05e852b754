import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { originOf, summariseProfile } from './cpu-profile.js';

describe('originOf', () => {
  it('names the innermost npm package, a workspace package, node internals, or the V8 pseudo-frame', () => {
    expect(originOf('file:///w/node_modules/.pnpm/pg@8.16.3/node_modules/pg/lib/client.js', 'query')).toBe('pg');
    expect(originOf('file:///w/node_modules/.pnpm/@hono+node-server@1/node_modules/@hono/node-server/dist/index.mjs', 'x')).toBe(
      '@hono/node-server',
    );
    expect(originOf('file:///work/main/packages/dispatcher/src/handler.ts', 'x')).toBe('packages/dispatcher');
    expect(originOf('node:net', 'x')).toBe('node internals');
    expect(originOf('', '(garbage collector)')).toBe('(garbage collector)');
    expect(originOf('', 'writev')).toBe('(native)');
  });
});

describe('summariseProfile', () => {
  it('splits samples into self and inclusive time, counts a recursive frame once, and reports idle', () => {
    const frame = (functionName: string, url = '') => ({ functionName, url, lineNumber: 0 });
    const profile = {
      startTime: 0,
      endTime: 1_000_000, // 1 s in microseconds
      nodes: [
        { id: 1, callFrame: frame('(root)'), children: [2, 3] },
        { id: 2, callFrame: frame('(idle)'), children: [] },
        { id: 3, callFrame: frame('handle', 'file:///work/main/packages/dispatcher/src/handler.ts'), children: [4] },
        { id: 4, callFrame: frame('handle', 'file:///work/main/packages/dispatcher/src/handler.ts'), children: [5] },
        { id: 5, callFrame: frame('query', 'file:///w/node_modules/pg/lib/client.js'), children: [] },
      ],
      samples: [2, 2, 5, 5, 5, 4, 3, 2, 2, 2],
    };
    const dir = mkdtempSync(path.join(tmpdir(), 'bench-prof-'));
    const file = path.join(dir, 'p.cpuprofile');
    writeFileSync(file, JSON.stringify(profile));
    const s = summariseProfile(file, 5);
    expect(s.busyPct).toBe(50);
    expect(s.byOrigin.find((r) => r.name === 'pg')).toMatchObject({ pct: 30, ms: 300 });
    expect(s.byOrigin.find((r) => r.name === 'packages/dispatcher')).toMatchObject({ pct: 20 });
    // handle is on the stack of 5 samples (3 under query, 1 recursive, 1 itself): counted once each.
    expect(s.topInclusive.find((r) => r.name.startsWith('handle '))).toMatchObject({ pct: 50 });
  });
});
