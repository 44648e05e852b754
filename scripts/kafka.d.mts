/** The Apache Kafka version the script runs. */
export const KAFKA_VERSION: string;
/** Starts (or reuses a warm) single-node broker; honours KAFKA_BROKERS (then only checks it answers). */
export function ensureKafka(options?: {
  log?: (line: string) => void;
  timeoutMs?: number;
}): Promise<{ brokers: string; startedHere: boolean }>;
/** Starts a fresh broker: stops ours if one runs, then starts anew. */
export function startKafka(options?: {
  log?: (line: string) => void;
  timeoutMs?: number;
}): Promise<{ brokers: string; startedHere: boolean }>;
/** Stops the broker this script started (never one named by KAFKA_BROKERS). */
export function stopKafka(options?: { log?: (line: string) => void }): Promise<{ stopped: boolean; pid?: number }>;
/** Whether our broker runs and answers. */
export function kafkaStatus(): Promise<unknown>;
/**
 * A private broker in .cache/kafka-<name>/ on free ports, for tests that stop and start a broker
 * (never the shared one). keepData: restart the broker a `stopPrivateKafka({ keepData: true })`
 * stopped, on its data and ports.
 */
export function startPrivateKafka(options: {
  name: string;
  log?: (line: string) => void;
  timeoutMs?: number;
  keepData?: boolean;
}): Promise<{ brokers: string; port: number; pid: number; dir: string }>;
/** Stops a private broker; keepData keeps its data and ports for a restart, else its directory is removed. */
export function stopPrivateKafka(options: {
  name: string;
  log?: (line: string) => void;
  keepData?: boolean;
}): Promise<{ stopped: boolean; pid?: number }>;
