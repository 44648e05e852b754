import type { Kysely } from 'kysely';
import type { Clock } from '@notify/runtime';
import type { Database } from '@notify/migrations';
import type { Config } from './config.js';
import { fromKysely } from '@notify/outbox';
import { apiKeyInsert, apiKeyList, apiKeyRevoke, generateApiKey, hashApiKey, tenantEnsure } from '@notify/api';
import { CliError, type CliIo } from './cli-error.js';
import { withMigratedDb } from './preflight.js';

const TENANT = /^[\w.:-]{1,200}$/;
const TENANT_TEXT = '1–200 letters, digits, "_", ".", ":" or "-"';

/** What is wrong with a tenant id TENANT refuses. */
function tenantProblem(tenant: string): string {
  const bad = [...new Set(tenant.match(/[^\w.:-]/gu))];
  if (bad.length > 0) return `${JSON.stringify(tenant)} contains ${bad.map((c) => JSON.stringify(c)).join(', ')}`;
  return `${JSON.stringify(tenant.slice(0, 20))}… is ${tenant.length} characters long`;
}

function withDb<T>(config: Pick<Config, 'databaseUrl'>, fn: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  return withMigratedDb(config.databaseUrl, 'notify-api-keys', fn);
}

/** `notify api-keys create --tenant T [--name N] [--json]`: stores the hash of a new key and prints the key, once. */
export async function runApiKeysCreate(
  config: Pick<Config, 'databaseUrl'>,
  args: { readonly tenant: string | undefined; readonly name: string | undefined; readonly json: boolean },
  deps: { readonly io: CliIo; readonly clock: Clock },
): Promise<void> {
  if (!args.tenant) throw new CliError(`api-keys create: --tenant is required (${TENANT_TEXT})`, 2);
  if (!TENANT.test(args.tenant))
    throw new CliError(`api-keys create: --tenant ${tenantProblem(args.tenant)}; a tenant id is ${TENANT_TEXT}`, 2);
  const tenant = args.tenant;
  const { id, key } = generateApiKey();
  await withDb(config, async (db) => {
    const now = deps.clock.now();
    await db.transaction().execute(async (trx) => {
      const tx = fromKysely(trx);
      await tenantEnsure(tx, { tenantId: tenant, now });
      await apiKeyInsert(tx, { id, tenantId: tenant, keyHash: hashApiKey(key), name: args.name ?? null, now });
    });
  });
  if (args.json) {
    deps.io.out(JSON.stringify({ id, tenant_id: tenant, name: args.name ?? null, key }));
  } else {
    deps.io.err(`Created API key ${id} for tenant ${tenant}. It is shown once; only its hash is stored:`);
    deps.io.out(key);
  }
}

/** `notify api-keys revoke <id>`: API processes refuse the key within NOTIFY_API_KEY_CACHE_MS (their key cache). */
export async function runApiKeysRevoke(
  config: Pick<Config, 'databaseUrl'>,
  id: string | undefined,
  deps: { readonly io: CliIo; readonly clock: Clock },
): Promise<void> {
  if (!id) throw new CliError('api-keys revoke: give the key id (key_…), e.g. `notify api-keys revoke key_abc`', 2);
  const revoked = await withDb(config, (db) => apiKeyRevoke(fromKysely(db), { id, now: deps.clock.now() }));
  if (!revoked) throw new CliError(`api-keys revoke: no key ${id}`);
  deps.io.out(
    `Revoked ${id} (tenant ${revoked.tenant_id}) at ${revoked.revoked_at.toISOString()}; running API processes refuse it within NOTIFY_API_KEY_CACHE_MS (5 s by default)`,
  );
}

/** `notify api-keys list [--tenant T]`: ids, tenants, names and states; never keys or hashes. */
export async function runApiKeysList(config: Pick<Config, 'databaseUrl'>, tenant: string | undefined, io: CliIo): Promise<void> {
  const keys = await withDb(config, (db) => apiKeyList(fromKysely(db), { tenantId: tenant }));
  for (const k of keys) {
    io.out([k.id, k.tenant_id, k.revoked_at ? `revoked ${new Date(k.revoked_at).toISOString()}` : 'active', k.name ?? ''].join('\t'));
  }
  if (keys.length === 0) io.err('no API keys');
}
