import { readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { ROOT } from './process.js';

const TICKS_PER_SECOND = 100; // Linux USER_HZ

/**
 * utime + stime in milliseconds from a `stat` file (`/proc/<pid>/stat`, or a thread's
 * `/proc/<pid>/task/<tid>/stat`), or undefined when it cannot be read (gone, or on another host).
 */
export function statCpuMs(file: string): number | undefined {
  try {
    const fields = readFileSync(file, 'utf8')
      .replace(/^.*\) /, '')
      .split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND) * 1000;
  } catch {
    return undefined;
  }
}

/** utime + stime of a process in milliseconds, or undefined when it cannot be read. */
const processCpuMs = (pid: number): number | undefined => statCpuMs(`/proc/${pid}/stat`);

/** The pid of the broker scripts/kafka.mjs started, if it runs here. */
function kafkaBrokerPid(): number | undefined {
  try {
    const pid = Number(JSON.parse(readFileSync(path.join(ROOT, '.cache', 'kafka', 'broker.json'), 'utf8')).pid);
    return processCpuMs(pid) === undefined ? undefined : pid;
  } catch {
    return undefined;
  }
}

/** The processes whose CPU a scenario accounts for. */
export interface CpuParts {
  /** The service child (notify start, or the pg-boss worker). */
  readonly service: number;
  /** The database whose backends count as "PostgreSQL" (every connection to it, any application). */
  readonly database: string;
  /** A pool on any database of the server, to list backends. */
  readonly admin: pg.Pool;
  /** Count the broker too (it is shared with other users of the machine: an upper bound). */
  readonly kafka?: boolean;
}

/** CPU milliseconds consumed so far by each part. */
export interface CpuSnapshot {
  readonly service: number;
  /** Per PostgreSQL backend pid. */
  readonly backends: ReadonlyMap<number, number>;
  readonly kafka: number | undefined;
  /** This process (the load generator and the receiver). */
  readonly bench: number;
  /**
   * pg_stat_database counters of the database, and the server's WAL bytes (pg_stat_wal: every
   * database; the bench runs alone). Flushed by PostgreSQL about once a second: approximate over
   * short windows.
   */
  readonly db: { readonly commits: number; readonly rowsWritten: number; readonly rowsRead: number; readonly walBytes: number };
}

/** Reads every part's CPU time now. */
export async function cpuSnapshot(parts: CpuParts): Promise<CpuSnapshot> {
  const { rows } = await parts.admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [parts.database]);
  const backends = new Map<number, number>();
  for (const { pid } of rows) {
    const ms = processCpuMs(pid);
    if (ms !== undefined) backends.set(pid, ms);
  }
  const stats = await parts.admin.query<{ commits: string; written: string; read: string; wal: string }>(
    `SELECT xact_commit AS commits, tup_inserted + tup_updated + tup_deleted AS written, tup_returned + tup_fetched AS read,
            (SELECT wal_bytes FROM pg_stat_wal) AS wal
       FROM pg_stat_database WHERE datname = $1`,
    [parts.database],
  );
  const st = stats.rows[0];
  const brokerPid = parts.kafka ? kafkaBrokerPid() : undefined;
  const self = process.cpuUsage();
  return {
    service: processCpuMs(parts.service) ?? Number.NaN,
    backends,
    kafka: brokerPid === undefined ? undefined : processCpuMs(brokerPid),
    bench: (self.user + self.system) / 1000,
    db: {
      commits: Number(st?.commits ?? 0),
      rowsWritten: Number(st?.written ?? 0),
      rowsRead: Number(st?.read ?? 0),
      walBytes: Number(st?.wal ?? 0),
    },
  };
}

/** CPU milliseconds per unit of work between two snapshots, per part. */
export interface CpuPerUnit {
  readonly serviceMs: number;
  readonly postgresMs: number;
  /** Undefined when not measured. Shared broker: includes whatever else it served meanwhile. */
  readonly kafkaMs: number | undefined;
  readonly benchMs: number;
  readonly totalMs: number;
  /** The throughput ceiling this CPU budget implies on `cores` cores, if nothing else ran. */
  readonly ceilingPerSec: number;
  /** Committed transactions in the database per unit (approximate: see CpuSnapshot.db). */
  readonly commits: number;
  /** Rows inserted + updated + deleted per unit (a row's size and its index entries not counted: see walBytes). */
  readonly rowsWritten: number;
  /** WAL bytes the server wrote per unit (approximate: see CpuSnapshot.db). */
  readonly walBytes: number;
}

/** Divides the CPU spent between `a` and `b` by `units`. Backends that started after `a` count whole. */
export function cpuPerUnit(a: CpuSnapshot, b: CpuSnapshot, units: number, cores: number): CpuPerUnit {
  let pgMs = 0;
  for (const [pid, ms] of b.backends) pgMs += ms - (a.backends.get(pid) ?? 0);
  const n = Math.max(1, units);
  const serviceMs = (b.service - a.service) / n;
  const postgresMs = pgMs / n;
  const kafkaMs = a.kafka !== undefined && b.kafka !== undefined ? (b.kafka - a.kafka) / n : undefined;
  const benchMs = (b.bench - a.bench) / n;
  const totalMs = serviceMs + postgresMs + (kafkaMs ?? 0) + benchMs;
  return {
    serviceMs,
    postgresMs,
    kafkaMs,
    benchMs,
    totalMs,
    ceilingPerSec: (cores * 1000) / totalMs,
    commits: (b.db.commits - a.db.commits) / n,
    rowsWritten: (b.db.rowsWritten - a.db.rowsWritten) / n,
    walBytes: (b.db.walBytes - a.db.walBytes) / n,
  };
}
