#!/usr/bin/env node
// Package checks of every publishable package, on the tarball users would install: `pnpm pack`
// (which applies publishConfig and rewrites workspace: ranges), then publint (package.json and
// files agree with what Node and bundlers expect) and Are the Types Wrong (types resolve for
// ESM and CommonJS callers under every moduleResolution, profile "strict"). Exits 1 on any
// finding. Run `pnpm build` first.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name) => path.join(root, 'node_modules/.bin', name);
const publishable = ['packages', 'migrations']
  .flatMap((d) => (d === 'migrations' ? ['migrations'] : readdirSync(path.join(root, d)).map((n) => path.join(d, n))))
  .filter((dir) => {
    try {
      return JSON.parse(readFileSync(path.join(root, dir, 'package.json'), 'utf8')).private !== true;
    } catch {
      return false;
    }
  });

const out = mkdtempSync(path.join(tmpdir(), 'notify-pack-'));
let failed = 0;
try {
  for (const dir of publishable) {
    const before = new Set(readdirSync(out));
    execFileSync('pnpm', ['pack', '--pack-destination', out], { cwd: path.join(root, dir), stdio: ['ignore', 'ignore', 'inherit'] });
    const tarball = path.join(
      out,
      readdirSync(out).find((f) => !before.has(f)),
    );
    for (const [tool, args] of [
      ['publint', ['run', tarball, '--strict', '--pack', 'false']],
      // Data files exported beside the code (the AsyncAPI document) have no types to check.
      ['attw', [tarball, '--profile', 'strict', '--format', 'table-flipped', '--exclude-entrypoints', './asyncapi.yaml']],
    ]) {
      process.stdout.write(`\n== ${tool} ${path.basename(tarball)}\n`);
      try {
        execFileSync(bin(tool), args, { stdio: 'inherit' });
      } catch {
        failed++;
      }
    }
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}
process.stdout.write(
  `\n${publishable.length} packages checked (${publishable.join(', ')}): ${failed === 0 ? 'no findings' : `${failed} check(s) failed`}\n`,
);
process.exit(failed === 0 ? 0 : 1);
