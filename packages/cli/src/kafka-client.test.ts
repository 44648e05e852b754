import { createRequire } from 'node:module';
import { logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { CHOSEN_KAFKA_WARNINGS, RETRIED_KAFKA_CONDITIONS, kafkaLogCreator } from './kafka-client.js';

function capture() {
  const lines: { level: string; msg: string | undefined }[] = [];
  const at = (level: string) => (_obj: object, msg?: string) => void lines.push({ level, msg });
  const logger = { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug'), child: () => logger };
  return { logger, lines };
}

describe('kafkaLogCreator', () => {
  it('quiet: every entry at debug, connection errors included', () => {
    const { logger, lines } = capture();
    const log = kafkaLogCreator(logger, { quiet: true })();
    log({
      namespace: 'Connection',
      level: logLevel.ERROR,
      log: { message: 'Connection error: connect ECONNREFUSED 127.0.0.1:1', broker: '127.0.0.1:1' },
    });
    log({
      namespace: 'BrokerPool',
      level: logLevel.ERROR,
      log: { message: 'Failed to connect to seed broker, trying another broker from the list' },
    });
    log({ namespace: 'Admin', level: logLevel.WARN, log: { message: 'anything' } });
    expect(lines.map((l) => l.level)).toEqual(['debug', 'debug', 'debug']);
  });

  it('logs the retried start-up conditions at debug, and real errors as errors', () => {
    const { logger, lines } = capture();
    const log = kafkaLogCreator(logger)();
    const entry = (level: logLevel, message: string, extra: object = {}) =>
      log({ namespace: 'Connection', level, log: { message, ...extra } });
    entry(logLevel.ERROR, 'Response GroupCoordinator(key: 10, version: 2)', { error: 'The group coordinator is not available' });
    entry(logLevel.ERROR, 'Response JoinGroup(key: 11, version: 5)', {
      error: "The coordinator is loading and hence can't process requests for this group",
    });
    entry(logLevel.ERROR, 'The coordinator is not aware of this member, re-joining the group');
    entry(logLevel.ERROR, 'Crash: KafkaJSNumberOfRetriesExceeded: Connection error: connect ECONNREFUSED');
    entry(logLevel.WARN, 'Response Metadata', { error: 'Topic authorization failed' });
    entry(logLevel.WARN, 'Limiting retries for the idempotent producer may invalidate EoS guarantees', {});
    expect(lines.map((l) => l.level)).toEqual(['debug', 'debug', 'debug', 'error', 'warn', 'debug']);
  });

  it('names conditions that exist in the installed kafkajs', () => {
    // A kafkajs upgrade that rewords one of them must fail here, not silently log errors again.
    const require = createRequire(import.meta.url);
    const kafkajsDir = require.resolve('kafkajs').replace(/index\.js$/, '');
    const { errorCodes } = require(`${kafkajsDir}src/protocol/error.js`) as { errorCodes: { message: string }[] };
    const runner = require('node:fs').readFileSync(`${kafkajsDir}src/consumer/runner.js`, 'utf8') as string;
    for (const text of RETRIED_KAFKA_CONDITIONS) {
      expect(errorCodes.some((e) => e.message === text) || runner.includes(text), text).toBe(true);
    }
    const producer = require('node:fs').readFileSync(`${kafkajsDir}src/producer/index.js`, 'utf8') as string;
    for (const text of CHOSEN_KAFKA_WARNINGS) expect(producer.includes(`logger.warn('${text}')`), text).toBe(true);
  });
});
