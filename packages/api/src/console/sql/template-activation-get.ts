import type { SqlExecutor } from '@notify/outbox';

/**
 * When the tenant's template was last activated (any version), or undefined when it never was
 * (the newest version renders). With the active version it says whether an activation the
 * console confirmed is still the state it was confirmed against, even after A → B → A.
 */
export async function templateActivationGet(
  db: SqlExecutor,
  params: { readonly tenantId: string; readonly name: string },
): Promise<Date | undefined> {
  const { rows } = await db.query<{ activated_at: Date }>(
    'SELECT activated_at FROM template_activations WHERE tenant_id = $1 AND name = $2',
    [params.tenantId, params.name],
  );
  return rows[0]?.activated_at;
}
