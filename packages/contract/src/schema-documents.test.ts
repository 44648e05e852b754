import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script of the repository, without types
import { schemaModuleText } from '../../../scripts/write-schema-module.mjs';
import { readFileSync } from 'node:fs';

describe('schema-documents.ts', () => {
  it('is what scripts/write-schema-module.mjs makes of schemas/*.json (run pnpm build after editing a schema)', () => {
    const current = readFileSync(new URL('./schema-documents.ts', import.meta.url), 'utf8');
    expect(current).toBe((schemaModuleText as () => string)());
  });
});
