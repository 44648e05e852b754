import type { SqlExecutor } from '@notify/outbox';

/** Per channel and state: how many endpoints are not ok (their circuit is open, or they are disabled). */
export interface EndpointCountNotOk {
  readonly channel: string;
  readonly state: 'open' | 'disabled';
  readonly count: number;
}

/** Reads only the endpoints that are not ok (the partial index endpoints_not_ok_idx). */
export async function endpointCountNotOk(db: SqlExecutor): Promise<EndpointCountNotOk[]> {
  const { rows } = await db.query<EndpointCountNotOk>(
    `SELECT channel, state, count(*)::int AS count FROM endpoints WHERE state <> 'ok' GROUP BY channel, state`,
    [],
  );
  return rows;
}
