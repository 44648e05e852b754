import type { Channel, SqlExecutor } from '@notify/outbox';

/** The first key of the template writers' advisory locks (ASCII "TMPL"); the second hashes tenant and name. Per database. */
const TEMPLATE_LOCK_NAMESPACE = 0x544d504c;

/** Parameters of `templateChannelLock`. */
export interface TemplateChannelLockParams {
  readonly tenantId: string;
  readonly name: string;
}

/**
 * Takes the transaction-level advisory lock of one template of a tenant, then returns the channel
 * of its newest version (undefined for a name without versions). A writer of a new version takes
 * it first, so two writers of one template run one after the other and the second sees what the
 * first committed: two concurrent first versions with different channels cannot both be stored,
 * and two with the same channel get versions 1 and 2 instead of one failing on the primary key.
 * An advisory lock because a name without versions has no row to lock. Two statements: under
 * READ COMMITTED each has its own snapshot, and only one taken after the lock was granted sees
 * the other writer's version. So: inside the writer's READ COMMITTED transaction, which the lock
 * lasts as long as. Different templates whose keys collide (a 32-bit hash) only wait for each other.
 */
export async function templateChannelLock(db: SqlExecutor, params: TemplateChannelLockParams): Promise<Channel | undefined> {
  await db.query('SELECT pg_advisory_xact_lock($1, hashtext($2::text || chr(1) || $3::text))', [
    TEMPLATE_LOCK_NAMESPACE,
    params.tenantId,
    params.name,
  ]);
  const { rows } = await db.query<{ channel: Channel }>(
    'SELECT channel FROM templates WHERE tenant_id = $1 AND name = $2 ORDER BY version DESC LIMIT 1',
    [params.tenantId, params.name],
  );
  return rows[0]?.channel;
}
