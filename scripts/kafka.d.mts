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

/** One node of a local cluster. */
export interface KafkaClusterNode {
  id: number;
  port: number;
  controllerPort: number;
  /** `127.0.0.1:<port>` */
  brokers: string;
  /** Its java pid while it runs, else null. */
  pid: number | null;
}
/** A local cluster, as `startKafkaCluster` and `ensureKafkaCluster` return it. */
export interface KafkaCluster {
  name: string;
  /** The bootstrap list of every node, `a,b,c` (what KAFKA_BROKERS takes). */
  brokers: string;
  clusterId: string;
  dir: string;
  nodes: KafkaClusterNode[];
}
/**
 * A fresh local KRaft cluster of `brokers` combined broker+controller nodes (default 3) on one
 * static quorum, in .cache/kafka-cluster/<name>/ (default name "local") on free ports (never
 * 19092); internal topics replicated min(3, brokers) times. KAFKA_BROKERS is not consulted.
 */
export function startKafkaCluster(options?: {
  name?: string;
  brokers?: number;
  log?: (line: string) => void;
  timeoutMs?: number;
}): Promise<KafkaCluster>;
/** Reuses the running cluster of that name and size when every node answers, else starts it fresh. */
export function ensureKafkaCluster(options?: {
  name?: string;
  brokers?: number;
  log?: (line: string) => void;
  timeoutMs?: number;
}): Promise<KafkaCluster>;
/** Stops every node: SIGKILL and remove the directory, or (keepData) SIGTERM one by one and keep data and ports. */
export function stopKafkaCluster(options?: {
  name?: string;
  keepData?: boolean;
  log?: (line: string) => void;
}): Promise<{ stopped: number }>;
/** Stops one node, keeping its data and ports: SIGTERM (controlled shutdown) or SIGKILL (a crash). */
export function stopKafkaNode(options: {
  name?: string;
  nodeId: number;
  signal?: 'SIGTERM' | 'SIGKILL';
  log?: (line: string) => void;
}): Promise<{ stopped: boolean; pid?: number }>;
/** Starts a stopped node again on its data and ports; resolves once it answers and lists itself. */
export function startKafkaNode(options: {
  name?: string;
  nodeId: number;
  log?: (line: string) => void;
  timeoutMs?: number;
}): Promise<{ pid: number; port: number; brokers: string }>;
/** Which nodes run, and whether the running ones answer. */
export function kafkaClusterStatus(options?: {
  name?: string;
}): Promise<{ running: boolean; answering?: boolean; brokers?: string; nodes?: KafkaClusterNode[] }>;
