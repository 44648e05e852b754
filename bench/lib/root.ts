import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: the nearest directory above this file holding pnpm-workspace.yaml (bench/lib or bench/dist/lib). */
function findRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'pnpm-workspace.yaml'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error('bench: no pnpm-workspace.yaml above the harness');
    dir = up;
  }
  return dir;
}

export const ROOT = findRoot();
