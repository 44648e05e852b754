import { z } from 'zod';
import { DeliveryRequestV1, StatusEventV1 } from './messages.js';

/**
 * The JSON Schemas of the Kafka contract, generated from the zod schemas that parse messages, so
 * the published schema and the parser cannot drift. `contract/schemas/*.json` holds them on disk
 * for other teams (written by `pnpm contract:schemas`, checked by a test).
 */
export function contractJsonSchemas(): Record<string, unknown> {
  const withId = (name: string, schema: z.ZodType) => ({
    $id: `https://notify.dev/schemas/${name}.json`,
    ...z.toJSONSchema(schema, { target: 'draft-2020-12' }),
  });
  return {
    'delivery-request.v1': withId('delivery-request.v1', DeliveryRequestV1),
    'status-event.v1': withId('status-event.v1', StatusEventV1),
  };
}
