import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

// The architecture rules (.dependency-cruiser.cjs) run against a small workspace built here, with
// the same package names, `exports` and workspace links as ours: a clean one passes, and each
// deliberate violation is reported under the rule that forbids it.
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CONFIG = path.join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = path.join(ROOT, 'node_modules/.bin/depcruise');
const PACKAGES = ['outbox', 'contract', 'runtime', 'providers', 'relay', 'dispatcher', 'api', 'cli'];
const dirs: string[] = [];

function workspace(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'notify-arch-'));
  dirs.push(dir);
  const write = (file: string, text: string) => {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  };
  write('tsconfig.json', JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }));
  mkdirSync(path.join(dir, 'node_modules/@notify'), { recursive: true });
  for (const name of PACKAGES) {
    write(
      `packages/${name}/package.json`,
      JSON.stringify({ name: `@notify/${name}`, type: 'module', exports: { '.': { '@notify/source': './src/index.ts' } } }),
    );
    write(`packages/${name}/src/index.ts`, `export const ${name} = 1;\n`);
    write(`packages/${name}/src/internal.ts`, `export const hidden = 1;\n`);
    symlinkSync(path.join(dir, 'packages', name), path.join(dir, 'node_modules/@notify', name), 'dir');
  }
  for (const [file, text] of Object.entries(files)) write(file, text);
  return dir;
}

interface Violation {
  rule: string;
  from: string;
  to: string;
}

async function cruise(dir: string): Promise<Violation[]> {
  // depcruise exits non-zero when it finds violations; the JSON report is on stdout either way.
  const { stdout } = await promisify(execFile)(DEPCRUISE, ['--config', CONFIG, '--output-type', 'json', 'packages'], {
    cwd: dir,
    maxBuffer: 64 << 20,
  }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  const report = JSON.parse(stdout) as { summary: { violations: { rule: { name: string }; from: string; to: string }[] } };
  return report.summary.violations.map((v) => ({ rule: v.rule.name, from: v.from, to: v.to }));
}

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('architecture rules (.dependency-cruiser.cjs)', () => {
  it('pass a workspace that keeps the layering', async () => {
    const dir = workspace({
      'packages/outbox/src/enqueue.ts': `import { hidden } from './internal.js';\nexport const e = hidden;\n`,
      'packages/runtime/src/uses.ts': `import { outbox } from '@notify/outbox';\nexport const u = outbox;\n`,
      'packages/dispatcher/src/uses.ts': `import { providers } from '@notify/providers';\nimport { runtime } from '@notify/runtime';\nexport const u = providers + runtime;\n`,
      'packages/cli/src/wire.ts': `import { relay } from '@notify/relay';\nimport { api } from '@notify/api';\nimport { dispatcher } from '@notify/dispatcher';\nexport const w = relay + api + dispatcher;\n`,
    });
    expect(await cruise(dir)).toEqual([]);
  });

  it('catch each deliberate violation under the rule that forbids it', async () => {
    const dir = workspace({
      'packages/outbox/src/bad.ts': `import { relay } from '@notify/relay';\nexport const b = relay;\n`,
      'packages/providers/src/bad.ts': `import { dispatcher } from '@notify/dispatcher';\nexport const b = dispatcher;\n`,
      'packages/api/src/bad.ts': `import { relay } from '@notify/relay';\nexport const b = relay;\n`,
      'packages/runtime/src/bad.ts': `import { cli } from '@notify/cli';\nexport const b = cli;\n`,
      'packages/relay/src/a.ts': `import { b } from './b.js';\nexport const a = () => b;\n`,
      'packages/relay/src/b.ts': `import { a } from './a.js';\nexport const b = () => a;\n`,
      'packages/dispatcher/src/deep.ts': `import { hidden } from '@notify/runtime/src/internal.js';\nexport const d = hidden;\n`,
      'packages/dispatcher/src/relative.ts': `import { hidden } from '../../runtime/src/internal.js';\nexport const r = hidden;\n`,
    });
    const found = (await cruise(dir)).map((v) => `${v.rule}: ${v.from} -> ${v.to}`);
    expect(found).toEqual(
      expect.arrayContaining([
        'libraries-import-nothing-of-ours: packages/outbox/src/bad.ts -> packages/relay/src/index.ts',
        'providers-never-import-dispatcher: packages/providers/src/bad.ts -> packages/dispatcher/src/index.ts',
        'only-cli-wires-roles: packages/api/src/bad.ts -> packages/relay/src/index.ts',
        'no-upward-imports: packages/runtime/src/bad.ts -> packages/cli/src/index.ts',
        'not-to-unresolvable: packages/dispatcher/src/deep.ts -> @notify/runtime/src/internal.js',
        'no-relative-import-across-packages: packages/dispatcher/src/relative.ts -> packages/runtime/src/internal.ts',
      ]),
    );
    expect(
      found.some((v) => v.startsWith('no-circular: packages/relay/src/a.ts') || v.startsWith('no-circular: packages/relay/src/b.ts')),
    ).toBe(true);
  });
});
