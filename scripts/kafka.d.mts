/** The Apache Kafka version the script runs. */
export const KAFKA_VERSION: string;
/** Starts (or reuses a warm) single-node broker; honours KAFKA_BROKERS (then only checks it answers). */
export function ensureKafka(options?: { log?: (line: string) => void; timeoutMs?: number }): Promise<{ brokers: string; startedHere: boolean }>;
/** Starts a fresh broker: stops ours if one runs, then starts anew. */
export function startKafka(options?: { log?: (line: string) => void; timeoutMs?: number }): Promise<{ brokers: string; startedHere: boolean }>;
/** Stops the broker this script started (never one named by KAFKA_BROKERS). */
export function stopKafka(options?: { log?: (line: string) => void }): Promise<{ stopped: boolean; pid?: number }>;
/** Whether our broker runs and answers. */
export function kafkaStatus(): Promise<unknown>;
