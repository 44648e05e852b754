#!/usr/bin/env node
// The published libraries (@notify/outbox, @notify/contract) ship CommonJS beside ESM, so a
// `require()` caller gets code and types without relying on Node's require(esm): tsc compiles
// each once more into dist/cjs with a {"type":"commonjs"} marker. `pnpm build` runs it after
// `tsc -b`; their `exports` send `require` there.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const tsc = path.join(root, 'node_modules/.bin/tsc');
for (const name of ['outbox', 'contract']) {
  const dir = path.join(root, 'packages', name);
  execFileSync(tsc, ['-p', path.join(dir, 'tsconfig.cjs.json')], { stdio: 'inherit' });
  writeFileSync(path.join(dir, 'dist/cjs/package.json'), '{ "type": "commonjs" }\n');
}
