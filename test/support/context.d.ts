declare module 'vitest' {
  export interface ProvidedContext {
    /** The server URL tests connect to (its database part is replaced per test file). */
    databaseUrl: string;
    /** A migrated database that each test file copies with CREATE DATABASE … TEMPLATE. */
    databaseTemplate: string;
    /** host:port[,host:port] */
    kafkaBrokers: string;
    /** Unique per `vitest run`: names of databases and topics start with it. */
    runId: string;
  }
}
export {};
