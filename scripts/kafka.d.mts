/** Starts (or reuses) the project's single-node Kafka broker; honours KAFKA_BROKERS. */
export function ensureKafka(options?: { log?: (line: string) => void }): Promise<{ brokers: string; startedHere: boolean }>;
/** Stops the broker that `ensureKafka` started (no-op when none runs). */
export function stopKafka(): Promise<void>;
