#!/usr/bin/env node
// Local single-node Apache Kafka broker (KRaft, combined broker+controller) for tests and CI.
// No Docker: jars come from Maven Central through `mvn` (scripts/kafka/pom.xml) into
// .cache/kafka/libs, and the broker runs on the machine's Java 17+.
//
// CLI:    node scripts/kafka.mjs start|ensure|status|stop
//         node scripts/kafka.mjs private-start|private-stop <name> [--keep-data]   (a second broker)
//         (start/ensure print `KAFKA_BROKERS=127.0.0.1:<port>` as their last stdout line;
//          progress goes to stderr, so `eval "$(node scripts/kafka.mjs ensure)"` works)
// Module: import { ensureKafka, stopKafka } from './scripts/kafka.mjs'
//         import { startPrivateKafka, stopPrivateKafka } from './scripts/kafka.mjs'  (tests that stop a broker)
//
// Env: KAFKA_BROKERS (use that cluster, start nothing), KAFKA_PORT, KAFKA_HEAP_OPTS,
//      KAFKA_JVM_PERFORMANCE_OPTS, KAFKA_CDS=0, KAFKA_START_TIMEOUT_MS, JAVA_HOME.
// See scripts/kafka/README.md.

import { spawn, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const KAFKA_VERSION = '4.1.1';

const SCRIPT_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(SCRIPT_DIR, '..');
const POM = path.join(SCRIPT_DIR, 'kafka', 'pom.xml');
const LOG4J_CONF = path.join(SCRIPT_DIR, 'kafka', 'log4j2.xml');
const CACHE = path.join(ROOT, '.cache', 'kafka');
const LIBS = path.join(CACHE, 'libs');
const LIBS_MARKER = path.join(LIBS, '.fetched');

// Where one broker keeps its state. The shared broker lives in .cache/kafka/; a private one
// (startPrivateKafka) in .cache/kafka-<name>/, with its own ports, and the same jars.
function layoutFor(name, dir = name ? path.join(ROOT, '.cache', `kafka-${name}`) : CACHE) {
  return {
    name,
    dir,
    data: path.join(dir, 'data'),
    props: path.join(dir, 'server.properties'),
    pidFile: path.join(dir, 'broker.pid'),
    stateFile: path.join(dir, 'broker.json'),
    // A private broker's ports and cluster id, kept across a stop with keepData so it can come back as the same broker.
    instanceFile: path.join(dir, 'instance.json'),
    logFile: path.join(dir, 'broker.log'),
    outFile: path.join(dir, 'broker.stdout.log'),
    lockDir: path.join(dir, 'lock'),
  };
}
const SHARED = layoutFor(null);
const PRIVATE_NAME = /^[a-z0-9][a-z0-9-]{0,39}$/;
const CDS_PREFIX = `kafka-${KAFKA_VERSION}-`; // + <key>.jsa: AppCDS archive of the broker's classes

const DEFAULT_PORT = 19092;
const STOP_GRACE_MS = 20_000;
const EXTERNAL_CHECK_MS = 15_000;
const DEFAULT_START_TIMEOUT_MS = 60_000;
// A private broker is started (and restarted on its kept data) by chaos scenarios while their
// stack runs on a loaded machine: the Kafka-down-5-minutes scenario's broker did not answer within
// 60 s there (load average 17-21 on 2 cores, issue 13). It waits longer unless told otherwise.
const PRIVATE_START_TIMEOUT_MS = 180_000;
// Measured on the 2-core CI machine (see README): these start the broker faster than
// Kafka's own G1 defaults and are plenty for a test broker.
const DEFAULT_JVM_PERF_OPTS = ['-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xshare:auto', '-Djava.awt.headless=true'];
const DEFAULT_HEAP_OPTS = ['-Xms256m', '-Xmx512m'];

class KafkaScriptError extends Error {}
const fail = (msg) => {
  throw new KafkaScriptError(msg);
};

const defaultLog = (msg) => process.stderr.write(`[kafka] ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;
const splitOpts = (s) => s.split(/\s+/).filter(Boolean);

// ---------------------------------------------------------------------------------------------
// Public API

/**
 * Make sure a Kafka broker answers and return its bootstrap address.
 * - KAFKA_BROKERS set: start nothing, check it answers (error within ~15 s) and return it.
 * - a broker started earlier by this script is running and answers: reuse it.
 * - otherwise: fetch the jars if needed, format a fresh data dir and start a detached broker.
 * @param {{ log?: (msg: string) => void, timeoutMs?: number }} [opts]
 * @returns {Promise<{ brokers: string, startedHere: boolean }>}
 */
export async function ensureKafka({ log = defaultLog, timeoutMs } = {}) {
  const external = process.env.KAFKA_BROKERS?.trim();
  if (external) return { brokers: await checkExternal(external, log), startedHere: false };

  return withLock(log, async () => {
    const running = await runningBroker(log);
    if (running) {
      log(`reusing broker pid ${running.pid} at ${running.brokers}`);
      return { brokers: running.brokers, startedHere: false };
    }
    const brokers = await startBroker({ log, timeoutMs });
    return { brokers, startedHere: true };
  });
}

/**
 * Stop the broker started by this script (SIGTERM, up to 20 s, then SIGKILL) and remove its
 * pid/state files. Never touches a cluster given through KAFKA_BROKERS.
 * @param {{ log?: (msg: string) => void }} [opts]
 * @returns {Promise<{ stopped: boolean, pid?: number }>}
 */
export async function stopKafka({ log = defaultLog } = {}) {
  return withLock(log, () => stopBroker(log));
}

/**
 * Fresh start: stops a broker this script started earlier (if any), then starts a new one.
 * @returns {Promise<{ brokers: string, startedHere: boolean }>}
 */
export async function startKafka({ log = defaultLog, timeoutMs } = {}) {
  const external = process.env.KAFKA_BROKERS?.trim();
  if (external) return { brokers: await checkExternal(external, log), startedHere: false };
  return withLock(log, async () => {
    await stopBroker(log);
    return { brokers: await startBroker({ log, timeoutMs }), startedHere: true };
  });
}

/**
 * @returns {Promise<{ running: boolean, answering?: boolean, pid?: number, port?: number,
 *   brokers?: string, version?: string, external?: boolean }>}
 */
export async function kafkaStatus() {
  const external = process.env.KAFKA_BROKERS?.trim();
  if (external) {
    const answering = await probe(external, 3000).then(
      () => true,
      () => false,
    );
    return { running: answering, answering, brokers: external, external: true };
  }
  const state = readState();
  const pid = state?.pid ?? readPid();
  if (!pid || !isOurBroker(pid)) return { running: false };
  const answering = state?.brokers
    ? await probe(state.brokers, 3000).then(
        () => true,
        () => false,
      )
    : false;
  return { running: true, answering, ...state, pid };
}

/**
 * A private broker, for tests that stop and start a broker on purpose (the shared one is used by
 * every other test and must never be stopped). It lives in .cache/kafka-<name>/ with its own
 * free ports (never 19092) and the shared jars; KAFKA_BROKERS is ignored.
 * - keepData false (default): a fresh, formatted broker (a running one of that name is stopped first).
 * - keepData true: start the broker that `stopPrivateKafka({ name, keepData: true })` stopped,
 *   on its kept data and the same ports, so clients reconnect to the same address and find their
 *   topics, offsets and producer state again. Without kept data it starts fresh.
 * @param {{ name: string, log?: (msg: string) => void, timeoutMs?: number, keepData?: boolean }} opts
 * @returns {Promise<{ brokers: string, port: number, pid: number, dir: string }>}
 */
export async function startPrivateKafka({ name, log = defaultLog, timeoutMs, keepData = false }) {
  const L = privateLayout(name);
  return withLock(
    log,
    async () => {
      await stopBroker(log, L);
      let reuse = null;
      if (keepData) {
        try {
          reuse = JSON.parse(fs.readFileSync(L.instanceFile, 'utf8'));
        } catch {
          reuse = null;
        }
        if (reuse && !fs.existsSync(path.join(L.data, 'meta.properties'))) reuse = null;
      }
      const deadline = timeoutMs ?? (Number(process.env.KAFKA_START_TIMEOUT_MS) || PRIVATE_START_TIMEOUT_MS);
      const brokers = await startBroker({ log, timeoutMs: deadline, L, reuse });
      const state = readState(L);
      return { brokers, port: state.port, pid: state.pid, dir: L.dir };
    },
    L,
  );
}

/**
 * Stops a private broker (SIGTERM, SIGKILL after 20 s). keepData true keeps its data and ports
 * for `startPrivateKafka({ name, keepData: true })`; otherwise its whole directory is removed.
 * @param {{ name: string, log?: (msg: string) => void, keepData?: boolean }} opts
 * @returns {Promise<{ stopped: boolean, pid?: number }>}
 */
export async function stopPrivateKafka({ name, log = defaultLog, keepData = false }) {
  const L = privateLayout(name);
  const result = await withLock(log, () => stopBroker(log, L), L);
  if (!keepData) fs.rmSync(L.dir, { recursive: true, force: true });
  return result;
}

function privateLayout(name) {
  if (typeof name !== 'string' || !PRIVATE_NAME.test(name)) {
    fail(`private broker name must match ${PRIVATE_NAME} (got ${JSON.stringify(name)})`);
  }
  return layoutFor(name);
}

// ---------------------------------------------------------------------------------------------
// A local cluster: `size` combined broker+controller nodes on one static quorum
// (controller.quorum.voters lists every node), each in .cache/kafka-cluster/<name>/node-<id>/
// with its own free ports (never 19092) and data, on the shared jars. cluster.json keeps the
// cluster id and every node's ports, so a stopped node comes back as the same broker.

const CLUSTER_ROOT = path.join(ROOT, '.cache', 'kafka-cluster');
const DEFAULT_CLUSTER = 'local';
// Per node: three of them share 2 cores and the machine's memory with everything else.
const CLUSTER_HEAP_OPTS = ['-Xms96m', '-Xmx320m'];
const MAX_CLUSTER_SIZE = 9;

function clusterLayout(name = DEFAULT_CLUSTER) {
  if (typeof name !== 'string' || !PRIVATE_NAME.test(name)) {
    fail(`cluster name must match ${PRIVATE_NAME} (got ${JSON.stringify(name)})`);
  }
  const dir = path.join(CLUSTER_ROOT, name);
  return {
    name,
    dir,
    file: path.join(dir, 'cluster.json'),
    lockDir: path.join(dir, 'lock'),
    node: (id) => layoutFor(`${name}-node-${id}`, path.join(dir, `node-${id}`)),
  };
}

function readCluster(C) {
  try {
    const c = JSON.parse(fs.readFileSync(C.file, 'utf8'));
    return Array.isArray(c?.nodes) && typeof c.clusterId === 'string' ? c : null;
  } catch {
    return null;
  }
}

const addressOf = (n) => `127.0.0.1:${n.port}`;
const bootstrapOf = (cluster) => cluster.nodes.map(addressOf).join(',');

function nodeOf(cluster, nodeId) {
  const n = cluster.nodes.find((x) => x.id === nodeId);
  if (!n) fail(`the cluster has no node ${nodeId} (nodes: ${cluster.nodes.map((x) => x.id).join(', ')})`);
  return n;
}

function nodePid(C, n) {
  const L = C.node(n.id);
  const pid = readState(L)?.pid ?? readPid(L);
  return pid && isOurBroker(pid, L) ? pid : null;
}

function clusterView(C, cluster) {
  const nodes = cluster.nodes.map((n) => ({ ...n, brokers: addressOf(n), pid: nodePid(C, n) }));
  return { name: C.name, brokers: bootstrapOf(cluster), clusterId: cluster.clusterId, dir: C.dir, nodes };
}

/**
 * Starts a fresh local cluster of `brokers` nodes (default 3; a running one of that name is
 * stopped and its data removed first) and waits until every node lists every node.
 * @param {{ name?: string, brokers?: number, log?: (msg: string) => void, timeoutMs?: number }} [opts]
 * @returns {Promise<{ name: string, brokers: string, clusterId: string, dir: string,
 *   nodes: { id: number, port: number, controllerPort: number, brokers: string, pid: number | null }[] }>}
 */
export async function startKafkaCluster({ name, brokers: size = 3, log = defaultLog, timeoutMs } = {}) {
  const C = clusterLayout(name);
  return withLock(log, () => startClusterLocked(C, size, log, timeoutMs), C);
}

/**
 * Reuses the running cluster of that name when it has `brokers` nodes, all alive and answering;
 * otherwise starts a fresh one.
 * @param {{ name?: string, brokers?: number, log?: (msg: string) => void, timeoutMs?: number }} [opts]
 */
export async function ensureKafkaCluster({ name, brokers: size = 3, log = defaultLog, timeoutMs } = {}) {
  const C = clusterLayout(name);
  return withLock(
    log,
    async () => {
      const cluster = readCluster(C);
      if (cluster?.version === KAFKA_VERSION && cluster.nodes.length === size && libsReady()) {
        const view = clusterView(C, cluster);
        if (view.nodes.every((n) => n.pid)) {
          try {
            await waitForNodes(
              C,
              cluster,
              cluster.nodes.map((n) => n.id),
              Date.now() + 5_000,
            );
            log(`reusing cluster ${C.name} at ${view.brokers}`);
            return view;
          } catch (err) {
            log(`cluster ${C.name} does not answer (${err.message}); restarting it`);
          }
        }
      }
      return startClusterLocked(C, size, log, timeoutMs);
    },
    C,
  );
}

/**
 * Stops every node of the cluster. keepData false (default): SIGKILL (the data is removed
 * anyway) and the cluster's directory goes; keepData true: SIGTERM, one node after the other,
 * and the data and ports stay for `startKafkaNode`.
 * @param {{ name?: string, keepData?: boolean, log?: (msg: string) => void }} [opts]
 * @returns {Promise<{ stopped: number }>}
 */
export async function stopKafkaCluster({ name, keepData = false, log = defaultLog } = {}) {
  const C = clusterLayout(name);
  const stopped = await withLock(log, () => stopClusterNodes(C, log, keepData ? 'SIGTERM' : 'SIGKILL'), C);
  if (!keepData) fs.rmSync(C.dir, { recursive: true, force: true });
  return { stopped };
}

/**
 * Stops one node of the cluster, keeping its data and ports: SIGTERM (a controlled shutdown:
 * its partitions get new leaders first) or SIGKILL (a crash).
 * @param {{ name?: string, nodeId: number, signal?: 'SIGTERM' | 'SIGKILL', log?: (msg: string) => void }} opts
 * @returns {Promise<{ stopped: boolean, pid?: number }>}
 */
export async function stopKafkaNode({ name, nodeId, signal: sig = 'SIGTERM', log = defaultLog }) {
  if (sig !== 'SIGTERM' && sig !== 'SIGKILL') fail(`signal must be SIGTERM or SIGKILL (got ${sig})`);
  const C = clusterLayout(name);
  return withLock(
    log,
    async () => {
      const cluster = readCluster(C) ?? fail(`no cluster ${C.name} in ${path.relative(ROOT, C.dir)}`);
      return stopNode(C, nodeOf(cluster, nodeId), log, sig);
    },
    C,
  );
}

/**
 * Starts a stopped node again on its kept data and ports (the same broker to clients and to the
 * quorum), and waits until it answers and lists itself (it is unfenced). A running node is left alone.
 * @param {{ name?: string, nodeId: number, log?: (msg: string) => void, timeoutMs?: number }} opts
 * @returns {Promise<{ pid: number, port: number, brokers: string }>}
 */
export async function startKafkaNode({ name, nodeId, log = defaultLog, timeoutMs }) {
  const C = clusterLayout(name);
  return withLock(
    log,
    async () => {
      const cluster = readCluster(C) ?? fail(`no cluster ${C.name} in ${path.relative(ROOT, C.dir)}`);
      const n = nodeOf(cluster, nodeId);
      const running = nodePid(C, n);
      if (running) return { pid: running, port: n.port, brokers: addressOf(n) };
      await reusePort(n.port);
      await reusePort(n.controllerPort);
      const t0 = Date.now();
      const pid = spawnNode(C, cluster, n, log);
      await waitForNodes(C, cluster, [n.id], t0 + startTimeout(timeoutMs), [n.id]);
      log(`node ${n.id} ready in ${secs(Date.now() - t0)} (start on kept data)`);
      return { pid, port: n.port, brokers: addressOf(n) };
    },
    C,
  );
}

/**
 * @param {{ name?: string }} [opts]
 * @returns {Promise<{ running: boolean, answering?: boolean, brokers?: string,
 *   nodes?: { id: number, port: number, pid: number | null }[] }>}
 */
export async function kafkaClusterStatus({ name } = {}) {
  const C = clusterLayout(name);
  const cluster = readCluster(C);
  if (!cluster) return { running: false };
  const view = clusterView(C, cluster);
  const alive = view.nodes.filter((n) => n.pid);
  if (alive.length === 0) return { running: false, ...view };
  const answering = await waitForNodes(
    C,
    cluster,
    alive.map((n) => n.id),
    Date.now() + 3_000,
  ).then(
    () => true,
    () => false,
  );
  return { running: true, answering, ...view };
}

const startTimeout = (timeoutMs) => timeoutMs ?? (Number(process.env.KAFKA_START_TIMEOUT_MS) || DEFAULT_START_TIMEOUT_MS);

async function startClusterLocked(C, size, log, timeoutMs) {
  if (!Number.isInteger(size) || size < 1 || size > MAX_CLUSTER_SIZE) fail(`--brokers must be 1–${MAX_CLUSTER_SIZE} (got ${size})`);
  await stopClusterNodes(C, log, 'SIGKILL');
  for (const f of fs.readdirSync(C.dir)) if (f !== 'lock') fs.rmSync(path.join(C.dir, f), { recursive: true, force: true });
  const { java } = findJava();
  await fetchLibs(log);
  const ports = [];
  while (ports.length < 2 * size) {
    const p = await freePort(DEFAULT_PORT);
    if (!ports.includes(p)) ports.push(p);
  }
  const nodes = Array.from({ length: size }, (_, i) => ({ id: i + 1, port: ports[2 * i], controllerPort: ports[2 * i + 1] }));
  const cluster = { clusterId: randomClusterId(), version: KAFKA_VERSION, nodes };
  const t0 = Date.now();
  await Promise.all(nodes.map((n) => formatNode(C, cluster, n, java)));
  fs.writeFileSync(C.file, `${JSON.stringify(cluster, null, 2)}\n`);
  for (const n of nodes) spawnNode(C, cluster, n, log);
  const ids = nodes.map((n) => n.id);
  await waitForNodes(C, cluster, ids, t0 + startTimeout(timeoutMs), ids);
  log(`cluster ${C.name} of ${size} ready in ${secs(Date.now() - t0)} (format + start) at ${bootstrapOf(cluster)}`);
  return clusterView(C, cluster);
}

function nodeProperties(C, cluster, n) {
  const L = C.node(n.id);
  fs.mkdirSync(L.data, { recursive: true });
  fs.writeFileSync(
    L.props,
    serverProperties({ port: n.port, controllerPort: n.controllerPort, dataDir: L.data, cluster: { nodeId: n.id, nodes: cluster.nodes } }),
  );
  return L;
}

async function formatNode(C, cluster, n, java) {
  const L = nodeProperties(C, cluster, n);
  const res = await new Promise((resolve) => {
    const p = spawn(java, [...jvmArgs(L, CLUSTER_HEAP_OPTS), 'kafka.tools.StorageTool', 'format', '-t', cluster.clusterId, '-c', L.props], {
      cwd: L.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    p.stdout.on('data', (d) => (output += d));
    p.stderr.on('data', (d) => (output += d));
    p.on('error', (err) => resolve({ code: -1, output: `${output}\n${err.message}` }));
    p.on('close', (code) => resolve({ code, output }));
  });
  if (res.code !== 0) fail(`kafka storage format of node ${n.id} failed (exit ${res.code}):\n${lastLines(res.output, 25)}`);
}

// Spawns one node detached (as startBroker does) and records its pid; readiness is waitForNodes' job.
function spawnNode(C, cluster, n, log) {
  const { java, versionText } = findJava();
  const L = nodeProperties(C, cluster, n);
  // Nodes only read the shared class-data archive (recording one is the shared broker's job).
  const cds = cdsOptions({ versionText, record: false, prune: false });
  for (const f of [L.logFile, L.outFile]) if (fs.existsSync(f)) fs.renameSync(f, `${f}.1`);
  const out = fs.openSync(L.outFile, 'a');
  const child = spawn(java, [...jvmArgs(L, CLUSTER_HEAP_OPTS), ...cds.use, 'kafka.Kafka', L.props], {
    cwd: L.dir,
    detached: true,
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  child.on('error', () => {});
  child.unref();
  if (!child.pid) fail(`could not start java for node ${n.id}`);
  fs.writeFileSync(L.pidFile, `${child.pid}\n`);
  const state = {
    pid: child.pid,
    port: n.port,
    brokers: addressOf(n),
    version: KAFKA_VERSION,
    controllerPort: n.controllerPort,
    nodeId: n.id,
  };
  fs.writeFileSync(L.stateFile, `${JSON.stringify(state, null, 2)}\n`);
  log(`starting node ${n.id} of cluster ${C.name} (pid ${child.pid}) on ${addressOf(n)}, logs in ${path.relative(ROOT, L.logFile)}`);
  return child.pid;
}

// Waits until each node in `askIds` answers on its own address and its metadata lists every node
// in `wantIds` (a node lists only unfenced brokers); fails at once when a node died.
async function waitForNodes(C, cluster, wantIds, deadline, askIds = null) {
  const ask = (askIds ?? wantIds).map((id) => nodeOf(cluster, id));
  let lastErr;
  while (Date.now() < deadline) {
    for (const n of ask) {
      if (!nodePid(C, n)) {
        const L = C.node(n.id);
        const cause = firstError(L.logFile) ?? firstError(L.outFile);
        cleanupFiles(L);
        fail(`node ${n.id} of cluster ${C.name} is not running${cause ? `: ${cause}` : ''}${tailOf(L.logFile)}${tailOf(L.outFile)}`);
      }
    }
    try {
      await Promise.all(
        ask.map(async (n) => {
          const got = await probe(addressOf(n), Math.min(3000, Math.max(500, deadline - Date.now())));
          const listed = Array.isArray(got?.brokers) ? got.brokers.map((b) => b.nodeId) : null;
          const missing = listed ? wantIds.filter((id) => !listed.includes(id)) : got.brokers >= wantIds.length ? [] : wantIds;
          if (missing.length > 0) throw new Error(`node ${n.id} does not list node(s) ${missing.join(', ')} yet`);
        }),
      );
      return;
    } catch (err) {
      lastErr = err;
    }
    await sleep(200);
  }
  fail(`cluster ${C.name} not ready within the deadline (last error: ${lastErr?.message})`);
}

async function stopNode(C, n, log, sig) {
  const L = C.node(n.id);
  if (sig === 'SIGTERM') return stopBroker(log, L);
  const pid = nodePid(C, n);
  if (!pid) {
    cleanupFiles(L);
    return { stopped: false };
  }
  signal(pid, 'SIGKILL');
  const t0 = Date.now();
  while (isAlive(pid) && Date.now() - t0 < 5000) await sleep(50);
  if (isAlive(pid)) fail(`node ${n.id} (pid ${pid}) survived SIGKILL`);
  cleanupFiles(L);
  log(`killed node ${n.id} of cluster ${C.name} (pid ${pid})`);
  return { stopped: true, pid };
}

async function stopClusterNodes(C, log, sig) {
  const cluster = readCluster(C);
  if (!cluster) return 0;
  let stopped = 0;
  if (sig === 'SIGKILL') {
    const results = await Promise.all(cluster.nodes.map((n) => stopNode(C, n, log, sig)));
    stopped = results.filter((r) => r.stopped).length;
  } else {
    for (const n of cluster.nodes) if ((await stopNode(C, n, log, sig)).stopped) stopped++;
  }
  return stopped;
}

// The port a restarted private broker had before: it must come back on it (clients know that address).
async function reusePort(port) {
  if ((await tryListen(port)) === null) fail(`cannot restart the private broker on port ${port}: it is in use now`);
  return port;
}

// ---------------------------------------------------------------------------------------------
// Start

async function startBroker({ log, timeoutMs, L = SHARED, reuse = null }) {
  const deadlineMs = timeoutMs ?? (Number(process.env.KAFKA_START_TIMEOUT_MS) || DEFAULT_START_TIMEOUT_MS);
  const { java, versionText } = findJava();
  const hadLibs = libsReady();
  await fetchLibs(log);
  // A private broker only reads the shared class-data archive: recording one is the shared broker's job.
  const cds = cdsOptions({ versionText, record: hadLibs && L === SHARED, prune: L === SHARED });

  fs.mkdirSync(L.dir, { recursive: true });
  // reuse: a private broker restarted on its kept data, as the same broker (same ports, same cluster).
  const port = reuse ? await reusePort(reuse.port) : L === SHARED ? await choosePort() : await freePort();
  const controllerPort = reuse ? await reusePort(reuse.controllerPort) : await freePort(port);
  const brokers = `127.0.0.1:${port}`;

  if (!reuse) {
    fs.rmSync(L.data, { recursive: true, force: true });
    fs.mkdirSync(L.data, { recursive: true });
  }
  fs.writeFileSync(L.props, serverProperties({ port, controllerPort, dataDir: L.data }));
  for (const f of [L.logFile, L.outFile]) if (fs.existsSync(f)) fs.renameSync(f, `${f}.1`);

  const t0 = Date.now();
  const jvm = jvmArgs(L);
  const clusterId = reuse?.clusterId ?? randomClusterId();
  if (!reuse) {
    const fmt = spawnSync(java, [...jvm, ...cds.use, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', L.props], {
      cwd: L.dir,
      encoding: 'utf8',
    });
    if (fmt.error || fmt.status !== 0) {
      fail(
        `kafka storage format failed (exit ${fmt.status ?? fmt.error?.message}):\n` +
          lastLines(`${fmt.error?.message ?? ''}\n${fmt.stdout ?? ''}${fmt.stderr ?? ''}`, 25) +
          tailOf(L.logFile),
      );
    }
  }
  if (L !== SHARED) fs.writeFileSync(L.instanceFile, `${JSON.stringify({ port, controllerPort, clusterId }, null, 2)}\n`);

  const out = fs.openSync(L.outFile, 'a');
  const child = spawn(java, [...jvm, ...cds.use, ...cds.record, 'kafka.Kafka', L.props], {
    cwd: L.dir,
    detached: true,
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  let exited = null;
  child.on('exit', (code, signal) => {
    exited = { code, signal };
  });
  child.on('error', (err) => {
    exited = { error: err };
  });
  child.unref();
  if (!child.pid) {
    await sleep(50);
    fail(`could not start java: ${exited?.error?.message ?? 'unknown error'}`);
  }
  const state = { pid: child.pid, port, brokers, version: KAFKA_VERSION, controllerPort, clusterId };
  if (cds.dump) state.cdsDump = cds.dump;
  fs.writeFileSync(L.pidFile, `${child.pid}\n`);
  fs.writeFileSync(L.stateFile, `${JSON.stringify(state, null, 2)}\n`);
  log(`starting Kafka ${KAFKA_VERSION} (pid ${child.pid}) on ${brokers}, logs in ${path.relative(ROOT, L.logFile)}`);

  const deadline = t0 + deadlineMs;
  let lastErr;
  while (Date.now() < deadline) {
    if (exited || !isAlive(child.pid)) {
      cleanupFiles(L);
      const how = exited?.error
        ? exited.error.message
        : exited
          ? `exit code ${exited.code ?? '-'}${exited.signal ? `, signal ${exited.signal}` : ''}`
          : 'exited';
      const cause = firstError(L.logFile) ?? firstError(L.outFile);
      fail(`kafka broker exited during start-up (${how})${cause ? `: ${cause}` : ''}` + `${tailOf(L.logFile)}${tailOf(L.outFile)}`);
    }
    try {
      await probe(brokers, Math.min(3000, Math.max(500, deadline - Date.now())));
      log(`broker ready in ${secs(Date.now() - t0)} (${reuse ? 'start on kept data' : 'format + start'})`);
      return brokers;
    } catch (err) {
      lastErr = err;
    }
    await sleep(200);
  }
  await stopBroker(() => {}, L);
  fail(
    `kafka broker did not answer on ${brokers} within ${secs(deadlineMs)} (last error: ${lastErr?.message})` +
      `${tailOf(L.logFile)}${tailOf(L.outFile)}`,
  );
}

// One node (nodeId 1, its own quorum) unless `cluster` says which node of which quorum this is:
// then internal topics are replicated min(3, size) times, with min.insync.replicas one less.
function serverProperties({ port, controllerPort, dataDir, cluster = null }) {
  const size = cluster?.nodes.length ?? 1;
  const rf = Math.min(3, size);
  const minIsr = Math.max(1, rf - 1);
  const props = {
    'process.roles': 'broker,controller',
    'node.id': cluster?.nodeId ?? 1,
    'controller.quorum.voters': cluster
      ? cluster.nodes.map((n) => `${n.id}@127.0.0.1:${n.controllerPort}`).join(',')
      : `1@127.0.0.1:${controllerPort}`,
    listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    'advertised.listeners': `PLAINTEXT://127.0.0.1:${port}`,
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'log.dirs': dataDir,
    // one node: every internal topic must fit on one replica; a cluster: min(3, size) replicas
    'offsets.topic.replication.factor': rf,
    'offsets.topic.num.partitions': 1,
    'transaction.state.log.replication.factor': rf,
    'transaction.state.log.min.isr': minIsr,
    'transaction.state.log.num.partitions': 1,
    'share.coordinator.state.topic.replication.factor': rf,
    'share.coordinator.state.topic.min.isr': minIsr,
    'default.replication.factor': rf,
    'min.insync.replicas': minIsr,
    'num.partitions': 1,
    // tests: fast joins, explicit topics, fast create/delete, small memory
    'group.initial.rebalance.delay.ms': 0,
    'group.min.session.timeout.ms': 1000,
    'auto.create.topics.enable': false,
    'delete.topic.enable': true,
    'log.cleaner.dedupe.buffer.size': 16777216,
    'num.network.threads': 2,
    'num.io.threads': 4,
    'num.recovery.threads.per.data.dir': 1,
    'auto.leader.rebalance.enable': false,
  };
  return `# written by scripts/kafka.mjs at each start\n${Object.entries(props)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n')}\n`;
}

function jvmArgs(L, defaultHeap = DEFAULT_HEAP_OPTS) {
  const heap = process.env.KAFKA_HEAP_OPTS ? splitOpts(process.env.KAFKA_HEAP_OPTS) : defaultHeap;
  const perf = process.env.KAFKA_JVM_PERFORMANCE_OPTS ? splitOpts(process.env.KAFKA_JVM_PERFORMANCE_OPTS) : DEFAULT_JVM_PERF_OPTS;
  return [...heap, ...perf, `-Dlog4j2.configurationFile=${LOG4J_CONF}`, `-Dkafka.logs.dir=${L.dir}`, '-cp', `${LIBS}${path.sep}*`];
}

// AppCDS (class-data sharing for the ~45 jars): measured warm start 3.5 s -> 1.9 s.
// A JDK 17 dynamic archive is written when the JVM exits, so the broker of one run records it
// (-XX:ArchiveClassesAtExit, to a .tmp file that stopBroker renames after a clean stop) and later
// runs use it. Recording costs ~2 s more start-up and ~4 s more stop, so it is skipped when the
// jars were fetched in this same call (a fresh CI clone would pay and never benefit).
// The archive's name is keyed on the JDK and the jar set; with -Xshare:auto a stale or broken
// archive is ignored by the JVM. KAFKA_CDS=0 turns all of this off.
function cdsOptions({ versionText, record, prune }) {
  const none = { use: [], record: [], dump: null };
  if (process.env.KAFKA_CDS === '0') return none;
  const key = crypto.createHash('sha256').update(versionText).update(libsKey()).digest('hex').slice(0, 12);
  const jsa = path.join(CACHE, `${CDS_PREFIX}${key}.jsa`);
  const tmp = `${jsa}.tmp`;
  if (prune) {
    for (const f of fs.readdirSync(CACHE)) {
      const full = path.join(CACHE, f);
      if (f.startsWith('kafka-') && f.includes('.jsa') && full !== jsa) fs.rmSync(full, { force: true });
    }
  }
  const quiet = ['-Xlog:cds=off', '-Xlog:cds+dynamic=off'];
  if (fs.existsSync(jsa)) return { use: [`-XX:SharedArchiveFile=${jsa}`, ...quiet], record: [], dump: null };
  if (!record) return none;
  return { use: [], record: [`-XX:ArchiveClassesAtExit=${tmp}`, ...quiet], dump: { tmp, jsa } };
}

// Same form as `kafka-storage.sh random-uuid`: a v4 UUID, base64url without padding (22 chars),
// never starting with '-'.
function randomClusterId() {
  for (;;) {
    const id = Buffer.from(crypto.randomUUID().replaceAll('-', ''), 'hex').toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

// ---------------------------------------------------------------------------------------------
// Jars

function libsKey() {
  const pom = fs.readFileSync(POM);
  return `kafka_2.13 ${KAFKA_VERSION}\npom-sha256 ${crypto.createHash('sha256').update(pom).digest('hex')}\n`;
}

function libsReady() {
  try {
    return fs.readFileSync(LIBS_MARKER, 'utf8') === libsKey();
  } catch {
    return false;
  }
}

async function fetchLibs(log) {
  if (libsReady()) return;
  const mvn = process.platform === 'win32' ? 'mvn.cmd' : 'mvn';
  if (!onPath(mvn)) {
    fail(`'mvn' not found on PATH: Maven is needed once to fetch Kafka ${KAFKA_VERSION} from Maven Central (e.g. apt-get install maven)`);
  }
  fs.mkdirSync(CACHE, { recursive: true });
  const tmp = `${LIBS}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  log(`fetching Kafka ${KAFKA_VERSION} jars with mvn into ${path.relative(ROOT, LIBS)} ...`);
  const t0 = Date.now();
  const res = await run(mvn, [
    '-B',
    '-q',
    '-Dstyle.color=never',
    '-f',
    POM,
    'dependency:copy-dependencies',
    '-DincludeScope=runtime',
    `-DoutputDirectory=${tmp}`,
  ]);
  if (res.code !== 0) {
    fs.rmSync(tmp, { recursive: true, force: true });
    fail(`mvn failed to fetch Kafka jars (exit ${res.code}):\n${lastLines(res.output, 30)}`);
  }
  if (!fs.existsSync(path.join(tmp, `kafka_2.13-${KAFKA_VERSION}.jar`))) {
    fail(`mvn finished but ${tmp} holds no kafka_2.13-${KAFKA_VERSION}.jar:\n${lastLines(res.output, 30)}`);
  }
  fs.writeFileSync(path.join(tmp, '.fetched'), libsKey());
  fs.rmSync(LIBS, { recursive: true, force: true });
  fs.renameSync(tmp, LIBS);
  for (const f of fs.readdirSync(CACHE)) if (f.includes('.jsa')) fs.rmSync(path.join(CACHE, f), { force: true });
  log(`fetched ${fs.readdirSync(LIBS).filter((f) => f.endsWith('.jar')).length} jars in ${secs(Date.now() - t0)}`);
}

function run(cmd, args) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { cwd: path.dirname(POM), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    p.stdout.on('data', (d) => (output += d));
    p.stderr.on('data', (d) => (output += d));
    p.on('error', (err) => resolve({ code: -1, output: `${output}\n${err.message}` }));
    p.on('close', (code) => resolve({ code, output }));
  });
}

// ---------------------------------------------------------------------------------------------
// Java

let javaChecked;
function findJava() {
  if (javaChecked) return javaChecked;
  const exe = process.platform === 'win32' ? 'java.exe' : 'java';
  const fromHome = process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', exe) : null;
  const java = fromHome && fs.existsSync(fromHome) ? fromHome : exe;
  const res = spawnSync(java, ['-Xshare:auto', '-version'], { encoding: 'utf8' });
  if (res.error?.code === 'ENOENT') {
    fail(`'java' not found (PATH or JAVA_HOME): Kafka ${KAFKA_VERSION} needs Java 17+ (e.g. apt-get install openjdk-17-jre-headless)`);
  }
  if (res.error || res.status !== 0) fail(`'${java} -version' failed: ${res.error?.message ?? res.stderr}`);
  const m = /version "(\d+)(?:\.(\d+))?/.exec(res.stderr + res.stdout);
  const major = m ? (m[1] === '1' ? Number(m[2]) : Number(m[1])) : NaN;
  if (!(major >= 17)) {
    fail(`Kafka ${KAFKA_VERSION} needs Java 17+, but '${java}' is version ${m ? major : 'unknown'} (set JAVA_HOME or PATH)`);
  }
  javaChecked = { java, versionText: `${res.stderr}${res.stdout}` };
  return javaChecked;
}

function onPath(cmd) {
  return (process.env.PATH ?? '')
    .split(path.delimiter)
    .filter(Boolean)
    .some((dir) => {
      try {
        fs.accessSync(path.join(dir, cmd), fs.constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
}

// ---------------------------------------------------------------------------------------------
// Running broker: pid/state, liveness, stop

function readState(L = SHARED) {
  try {
    const s = JSON.parse(fs.readFileSync(L.stateFile, 'utf8'));
    return Number.isInteger(s?.pid) && typeof s.brokers === 'string' ? s : null;
  } catch {
    return null;
  }
}

function readPid(L = SHARED) {
  try {
    const pid = Number.parseInt(fs.readFileSync(L.pidFile, 'utf8'), 10);
    return pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function cleanupFiles(L = SHARED) {
  for (const f of [L.pidFile, L.stateFile]) fs.rmSync(f, { force: true });
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if (err.code !== 'EPERM') return false;
  }
  try {
    // a zombie (exited, not yet reaped) answers kill(0) but is dead
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return !fs.existsSync('/proc/self/stat'); // no procfs (macOS): trust kill(0)
  }
}

// The pid is alive and (where /proc exists) is the java process we started for this checkout,
// not an unrelated process that reused the pid.
function isOurBroker(pid, L = SHARED) {
  if (!isAlive(pid)) return false;
  try {
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes('kafka.Kafka') && cmdline.includes(L.props);
  } catch {
    return true;
  }
}

async function runningBroker(log) {
  const state = readState();
  const pid = state?.pid ?? readPid();
  if (!pid) return null;
  if (!isOurBroker(pid)) {
    cleanupFiles();
    return null;
  }
  const wantPort = process.env.KAFKA_PORT?.trim();
  if (wantPort && Number(wantPort) !== state?.port) {
    log(`broker pid ${pid} listens on ${state?.port ?? '?'}, KAFKA_PORT=${wantPort}; restarting it`);
  } else if (state?.version === KAFKA_VERSION && libsReady()) {
    try {
      await probe(state.brokers, 5000);
      return state;
    } catch (err) {
      log(`broker pid ${pid} does not answer (${err.message}); restarting it`);
    }
  } else {
    log(`broker pid ${pid} runs another version/jar set (${state?.version ?? 'unknown'}); restarting it`);
  }
  await stopBroker(log);
  return null;
}

async function stopBroker(log, L = SHARED) {
  const state = readState(L);
  const pid = state?.pid ?? readPid(L);
  if (!pid) {
    cleanupFiles(L);
    return { stopped: false };
  }
  if (!isOurBroker(pid, L)) {
    cleanupFiles(L);
    return { stopped: false };
  }
  log(`stopping broker pid ${pid} ...${state?.cdsDump ? ' (writing its class-data archive first)' : ''}`);
  const t0 = Date.now();
  signal(pid, 'SIGTERM');
  while (isAlive(pid) && Date.now() - t0 < STOP_GRACE_MS) await sleep(100);
  const clean = !isAlive(pid);
  if (!clean) {
    log(`broker pid ${pid} still alive after ${secs(STOP_GRACE_MS)}; sending SIGKILL`);
    signal(pid, 'SIGKILL');
    const t1 = Date.now();
    while (isAlive(pid) && Date.now() - t1 < 5000) await sleep(50);
    if (isAlive(pid)) fail(`broker pid ${pid} survived SIGKILL`);
  }
  cleanupFiles(L);
  const dump = state?.cdsDump;
  if (dump?.tmp) {
    try {
      if (clean && fs.statSync(dump.tmp).size > 0) {
        fs.renameSync(dump.tmp, dump.jsa);
        log(`saved class-data archive ${path.relative(ROOT, dump.jsa)} (faster next start)`);
      }
    } catch {
      /* no archive written */
    } finally {
      fs.rmSync(dump.tmp, { force: true });
    }
  }
  log(`stopped broker pid ${pid} in ${secs(Date.now() - t0)}`);
  return { stopped: true, pid };
}

// The broker is started detached (its own process group, led by the java pid): signal the
// group, so nothing it might have spawned is left behind; fall back to the pid alone.
function signal(pid, sig) {
  try {
    process.kill(-pid, sig);
  } catch {
    try {
      process.kill(pid, sig);
    } catch {
      /* already gone */
    }
  }
}

// A lock directory serialises start/stop between processes (e.g. two test runners).
async function withLock(log, fn, L = SHARED) {
  const LOCK_DIR = L.lockDir;
  fs.mkdirSync(L.dir, { recursive: true });
  const t0 = Date.now();
  let warned = false;
  for (;;) {
    try {
      fs.mkdirSync(LOCK_DIR);
      fs.writeFileSync(path.join(LOCK_DIR, 'pid'), `${process.pid}\n`);
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      let owner = NaN;
      try {
        owner = Number.parseInt(fs.readFileSync(path.join(LOCK_DIR, 'pid'), 'utf8'), 10);
      } catch {
        /* being written or removed */
      }
      const ageMs = (() => {
        try {
          return Date.now() - fs.statSync(LOCK_DIR).mtimeMs;
        } catch {
          return 0;
        }
      })();
      if ((Number.isInteger(owner) && !isAlive(owner)) || (!Number.isInteger(owner) && ageMs > 5000)) {
        fs.rmSync(LOCK_DIR, { recursive: true, force: true });
        continue;
      }
      if (Date.now() - t0 > 10 * 60_000) fail(`timed out waiting for ${LOCK_DIR} (held by pid ${owner})`);
      if (!warned) {
        log(`waiting for another kafka.mjs (pid ${owner}) to finish ...`);
        warned = true;
      }
      await sleep(250);
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(LOCK_DIR, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Ports

function tryListen(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(null));
    srv.listen({ host: '127.0.0.1', port, exclusive: true }, () => {
      const got = srv.address().port;
      srv.close(() => resolve(got));
    });
  });
}

async function choosePort() {
  const env = process.env.KAFKA_PORT?.trim();
  if (env) {
    const port = Number(env);
    if (!Number.isInteger(port) || port <= 0 || port > 65535) fail(`KAFKA_PORT=${env} is not a port number`);
    if ((await tryListen(port)) === null) fail(`KAFKA_PORT=${port} is already in use on 127.0.0.1`);
    return port;
  }
  return (await tryListen(DEFAULT_PORT)) ?? freePort();
}

async function freePort(not) {
  for (let i = 0; i < 20; i++) {
    const port = await tryListen(0);
    if (port && port !== not) return port;
  }
  fail('could not find a free TCP port on 127.0.0.1');
}

// ---------------------------------------------------------------------------------------------
// Readiness: kafkajs admin.describeCluster() if kafkajs is installed, else a raw Metadata
// request over TCP. Both succeed only once the broker lists itself (i.e. it is unfenced).

let kafkajsModule;
async function loadKafkajs() {
  if (kafkajsModule !== undefined) return kafkajsModule;
  try {
    kafkajsModule = await import('kafkajs');
  } catch {
    try {
      // not resolvable from scripts/: try from the current directory (e.g. a package using us)
      const req = createRequire(path.join(process.cwd(), 'noop.js'));
      kafkajsModule = await import(pathToFileURL(req.resolve('kafkajs')).href);
    } catch {
      kafkajsModule = null;
    }
  }
  kafkajsModule = kafkajsModule?.Kafka ? kafkajsModule : (kafkajsModule?.default ?? null);
  return kafkajsModule;
}

async function probe(brokers, timeoutMs) {
  const kafkajs = await loadKafkajs();
  const list = brokers
    .split(',')
    .map((b) => b.trim())
    .filter(Boolean);
  if (!list.length) fail(`no broker address in '${brokers}'`);
  return kafkajs ? probeKafkajs(kafkajs, list, timeoutMs) : probeTcp(list, timeoutMs);
}

async function probeKafkajs({ Kafka, logLevel }, list, timeoutMs) {
  const kafka = new Kafka({
    clientId: 'kafka-mjs-probe',
    brokers: list,
    logLevel: logLevel.NOTHING,
    connectionTimeout: Math.min(timeoutMs, 1000),
    requestTimeout: timeoutMs,
    retry: { retries: 0 },
  });
  const admin = kafka.admin({ retry: { retries: 0 } });
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    const cluster = await Promise.race([
      (async () => {
        await admin.connect();
        return admin.describeCluster();
      })(),
      timeout,
    ]);
    if (!cluster.brokers?.length) throw new Error('cluster lists no brokers yet');
    return cluster;
  } finally {
    clearTimeout(timer);
    await admin.disconnect().catch(() => {});
  }
}

// Metadata v4 (no topics) over a raw socket; ok once the response lists at least one broker.
function probeTcp(list, timeoutMs) {
  const attempt = (addr) =>
    new Promise((resolve, reject) => {
      const i = addr.lastIndexOf(':');
      const host = addr.slice(0, i).replace(/^\[|\]$/g, '');
      const port = Number(addr.slice(i + 1));
      const clientId = Buffer.from('kafka-mjs-probe');
      const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length + 4 + 1);
      let o = 0;
      o = body.writeInt16BE(3, o); // api key: Metadata
      o = body.writeInt16BE(4, o); // api version 4 (Kafka 4.x supports >= 4 )
      o = body.writeInt32BE(42, o); // correlation id
      o = body.writeInt16BE(clientId.length, o);
      o += clientId.copy(body, o);
      o = body.writeInt32BE(0, o); // topics: empty array = none
      body.writeInt8(0, o); // allow_auto_topic_creation
      const req = Buffer.concat([Buffer.alloc(4), body]);
      req.writeInt32BE(body.length, 0);

      let buf = Buffer.alloc(0);
      const sock = net.connect({ host, port });
      const done = (err, v) => {
        sock.destroy();
        if (err) reject(err);
        else resolve(v);
      };
      sock.setTimeout(timeoutMs, () => done(new Error(`no answer from ${addr} within ${timeoutMs} ms`)));
      sock.on('error', (err) => done(new Error(`${addr}: ${err.code ?? err.message}`)));
      sock.on('connect', () => sock.write(req));
      sock.on('data', (d) => {
        buf = Buffer.concat([buf, d]);
        if (buf.length < 4 || buf.length < 4 + buf.readInt32BE(0)) return;
        if (buf.readInt32BE(4) !== 42) return done(new Error(`${addr}: bad correlation id`));
        const nBrokers = buf.readInt32BE(12); // after size, correlation id, throttle_time_ms
        if (nBrokers > 0) done(null, { brokers: nBrokers });
        else done(new Error(`${addr}: cluster lists no brokers yet`));
      });
      sock.on('close', () => done(new Error(`${addr}: connection closed`)));
    });
  return Promise.any(list.map(attempt)).catch((e) => {
    throw e.errors?.[0] ?? e;
  });
}

async function checkExternal(brokers, log) {
  const t0 = Date.now();
  let lastErr;
  while (Date.now() - t0 < EXTERNAL_CHECK_MS) {
    try {
      await probe(brokers, Math.max(500, Math.min(3000, EXTERNAL_CHECK_MS - (Date.now() - t0))));
      log(`using KAFKA_BROKERS=${brokers} (not starting a local broker)`);
      return brokers;
    } catch (err) {
      lastErr = err;
    }
    await sleep(500);
  }
  fail(
    `KAFKA_BROKERS=${brokers} does not answer within ${secs(EXTERNAL_CHECK_MS)} (${lastErr?.message}); ` +
      'unset KAFKA_BROKERS to start a local broker',
  );
}

// ---------------------------------------------------------------------------------------------
// Misc

function lastLines(text, n) {
  return text.trimEnd().split('\n').slice(-n).join('\n');
}

// The first ERROR/FATAL log line (or Java exception line), for a one-line headline.
function firstError(file) {
  try {
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    const hit = lines.find((l) => /\] (ERROR|FATAL) /.test(l)) ?? lines.find((l) => /^(Exception|Error)\b|^\S+(Exception|Error)\b/.test(l));
    return hit ? hit.replace(/^\[[^\]]*\] /, '').slice(0, 300) : null;
  } catch {
    return null;
  }
}

function tailOf(file, n = 40) {
  try {
    const text = fs.readFileSync(file, 'utf8');
    if (!text.trim()) return '';
    return `\n--- last lines of ${path.relative(ROOT, file)} ---\n${lastLines(text, n)}`;
  } catch {
    return '';
  }
}

// ---------------------------------------------------------------------------------------------
// CLI

async function main(argv) {
  const cmd = argv[0];
  const quiet = argv.includes('-q') || argv.includes('--quiet');
  const log = quiet ? () => {} : defaultLog;
  const size = brokersFlag(argv);
  if (size !== null) return clusterMain(cmd, size, log, argv);
  switch (cmd) {
    case 'start': {
      const { brokers } = await startKafka({ log });
      process.stdout.write(`KAFKA_BROKERS=${brokers}\n`);
      return 0;
    }
    case 'ensure': {
      const { brokers } = await ensureKafka({ log });
      process.stdout.write(`KAFKA_BROKERS=${brokers}\n`);
      return 0;
    }
    case 'stop': {
      const { stopped } = await stopKafka({ log });
      if (!stopped) log('no broker running');
      return 0;
    }
    case 'status': {
      const s = await kafkaStatus();
      if (!s.running) {
        process.stdout.write('kafka: not running\n');
        return 3;
      }
      const who = s.external ? 'external (KAFKA_BROKERS)' : `pid ${s.pid}, Kafka ${s.version}`;
      process.stdout.write(`kafka: running, ${who}, ${s.answering ? 'answering' : 'NOT answering'}\n`);
      process.stdout.write(`KAFKA_BROKERS=${s.brokers}\n`);
      return s.answering ? 0 : 1;
    }
    case 'private-start':
    case 'private-stop': {
      const name = argv.find((a, i) => i > 0 && !a.startsWith('-'));
      const keepData = argv.includes('--keep-data');
      if (cmd === 'private-stop') {
        await stopPrivateKafka({ name, log, keepData });
        return 0;
      }
      const { brokers } = await startPrivateKafka({ name, log, keepData });
      process.stdout.write(`KAFKA_BROKERS=${brokers}\n`);
      return 0;
    }
    default:
      process.stderr.write(
        'usage: node scripts/kafka.mjs start|ensure|status|stop [-q]\n' +
          '       node scripts/kafka.mjs private-start|private-stop <name> [--keep-data] [-q]\n' +
          '  start   (re)start a fresh local broker; last stdout line: KAFKA_BROKERS=127.0.0.1:<port>\n' +
          '  ensure  reuse the running broker if it answers, else start one\n' +
          '  status  exit 0 if running and answering, 1 if not answering, 3 if not running\n' +
          '  stop    SIGTERM (SIGKILL after 20 s) and remove pid/state files\n' +
          '  private-start <name>  a separate broker in .cache/kafka-<name>/ on free ports (--keep-data: restart it on its data)\n' +
          '  private-stop <name>   stop it (--keep-data: keep its data and ports for a restart; else remove its directory)\n' +
          '       node scripts/kafka.mjs start|ensure --brokers N | status|stop --cluster | node-stop|node-kill|node-start <id> --cluster\n' +
          '  start --brokers 3     a fresh local KRaft cluster of 3 nodes in .cache/kafka-cluster/local/ on free ports;\n' +
          '                        last stdout line: KAFKA_BROKERS=127.0.0.1:<p1>,127.0.0.1:<p2>,127.0.0.1:<p3>\n' +
          '  ensure --brokers 3    reuse that cluster if all its nodes answer, else start it fresh\n' +
          '  status|stop --cluster the cluster (stop: SIGKILL every node, remove its directory)\n' +
          '  node-stop|node-kill|node-start <id> --cluster   SIGTERM / SIGKILL one node (data kept), start it again\n',
      );
      return cmd ? 2 : 0;
  }
}

// `--brokers N` / `--brokers=N` (a local cluster of N nodes); `--cluster` means the local cluster whatever its size.
function brokersFlag(argv) {
  const i = argv.findIndex((a) => a === '--brokers' || a.startsWith('--brokers='));
  if (i < 0) return argv.includes('--cluster') ? 0 : null;
  const raw = argv[i].includes('=') ? argv[i].slice('--brokers='.length) : argv[i + 1];
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_CLUSTER_SIZE)
    fail(`--brokers needs a number of brokers from 1 to ${MAX_CLUSTER_SIZE} (got ${raw ?? 'nothing'})`);
  return n;
}

// The cluster commands. KAFKA_BROKERS is not consulted: --brokers asks for this machine's own cluster.
async function clusterMain(cmd, size, log, argv) {
  const want = size || 3;
  switch (cmd) {
    case 'start':
    case 'ensure': {
      const c = cmd === 'start' ? await startKafkaCluster({ brokers: want, log }) : await ensureKafkaCluster({ brokers: want, log });
      process.stdout.write(`KAFKA_BROKERS=${c.brokers}\n`);
      return 0;
    }
    case 'stop': {
      const { stopped } = await stopKafkaCluster({ log });
      if (!stopped) log('no cluster node running');
      return 0;
    }
    case 'status': {
      const s = await kafkaClusterStatus();
      if (!s.running) {
        process.stdout.write('kafka cluster: not running\n');
        return 3;
      }
      const nodes = s.nodes.map((n) => `node ${n.id} ${n.pid ? `pid ${n.pid}` : 'DOWN'} on ${n.brokers}`).join('; ');
      const allUp = s.nodes.every((n) => n.pid);
      process.stdout.write(`kafka cluster: ${s.answering ? 'answering' : 'NOT answering'}, ${nodes}\n`);
      process.stdout.write(`KAFKA_BROKERS=${s.brokers}\n`);
      return s.answering && allUp ? 0 : 1;
    }
    case 'node-stop':
    case 'node-kill':
    case 'node-start': {
      const nodeId = Number(argv[1]);
      if (!Number.isInteger(nodeId)) fail(`${cmd} needs a node id: node scripts/kafka.mjs ${cmd} <id> --cluster`);
      if (cmd === 'node-start') await startKafkaNode({ nodeId, log });
      else await stopKafkaNode({ nodeId, signal: cmd === 'node-kill' ? 'SIGKILL' : 'SIGTERM', log });
      return 0;
    }
    default:
      process.stderr.write(`kafka: unknown cluster command '${cmd ?? ''}'; see node scripts/kafka.mjs --help\n`);
      return 2;
  }
}

const invokedDirectly = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      if (err instanceof KafkaScriptError) process.stderr.write(`kafka: ${err.message}\n`);
      else process.stderr.write(`kafka: ${err?.stack ?? err}\n`);
      process.exit(1);
    },
  );
}
