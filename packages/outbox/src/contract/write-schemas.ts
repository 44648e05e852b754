// Writes contract/schemas/*.json from the zod schemas: `pnpm contract:schemas`.
import { writeFileSync } from 'node:fs';
import { contractJsonSchemas } from './json-schemas.js';

for (const [name, schema] of Object.entries(contractJsonSchemas())) {
  const file = new URL(`./schemas/${name}.json`, import.meta.url);
  writeFileSync(file, `${JSON.stringify(schema, null, 2)}\n`);
  console.log(`wrote ${file.pathname}`);
}
