import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './root.js';

/** scripts/kafka.mjs, loaded by path so the compiled harness (bench/dist) finds it as the sources do. */
// eslint-disable-next-line @typescript-eslint/consistent-type-imports -- a type-only view of a script loaded by path at run time
export type KafkaScript = typeof import('../../scripts/kafka.mjs');

let loaded: Promise<KafkaScript> | undefined;

/** The repository's Kafka script (ensureKafka, KAFKA_VERSION, …). */
export function kafkaScript(): Promise<KafkaScript> {
  loaded ??= import(pathToFileURL(path.join(ROOT, 'scripts', 'kafka.mjs')).href) as Promise<KafkaScript>;
  return loaded;
}
