import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

/** One message the sink accepted. */
export interface SmtpSinkMessage {
  readonly from: string;
  readonly to: readonly string[];
  /** The whole message (headers and body) as received. */
  readonly raw: string;
  /** The `Message-ID` header, angle brackets included. */
  readonly messageId: string | undefined;
  readonly subject: string | undefined;
}

/** The SMTP stage a scripted reply replaces. `connect` only happens on a new connection (pools reuse them). */
export type SmtpStage = 'connect' | 'mail' | 'rcpt' | 'data';

/**
 * A scripted reply for the next transaction that reaches `stage`: reply `code message`
 * (e.g. 550 "5.1.1 mailbox unavailable"), or hang there without replying (`hang: true`).
 */
export type SmtpScriptedReply =
  | { readonly stage: SmtpStage; readonly code: number; readonly message: string }
  | { readonly stage: Exclude<SmtpStage, 'connect'>; readonly hang: true };

/** A real local SMTP server (smtp-server) that keeps what it accepts and fails on command. */
export interface SmtpSink {
  /** `smtp://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Accepted messages, in order. */
  readonly messages: SmtpSinkMessage[];
  /** Transactions (MAIL FROM commands) seen, accepted or not. */
  readonly transactions: number;
  /** Queues scripted replies; each applies once, to the next transaction reaching its stage. */
  script(...replies: SmtpScriptedReply[]): void;
  /** Stops listening and drops every connection. Idempotent. */
  close(): Promise<void>;
}

function header(raw: string, name: string): string | undefined {
  const head = raw.split(/\r?\n\r?\n/, 1)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const re = new RegExp(`^${name}:[ \\t]*(.*)$`, 'im');
  return re.exec(unfolded)?.[1]?.trim();
}

/** Starts an SMTP sink on 127.0.0.1 and an ephemeral port; no TLS, no auth. */
export async function startSmtpSink(): Promise<SmtpSink> {
  const messages: SmtpSinkMessage[] = [];
  const queue: SmtpScriptedReply[] = [];
  const held: (() => void)[] = [];
  let transactions = 0;
  let closed = false;

  /** Applies the scripted reply for `stage`, if the head of the queue is one. Returns true when handled. */
  function scripted(stage: SmtpStage, callback: (err?: Error | null) => void): boolean {
    const head = queue[0];
    if (!head || head.stage !== stage) return false;
    queue.shift();
    if ('hang' in head) {
      held.push(() => callback(Object.assign(new Error('4.3.2 shutting down'), { responseCode: 421 })));
      return true;
    }
    callback(Object.assign(new Error(head.message), { responseCode: head.code }));
    return true;
  }

  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    closeTimeout: 100,
    onConnect(_session, callback) {
      if (!scripted('connect', callback)) callback();
    },
    onMailFrom(_address, _session, callback) {
      transactions++;
      if (!scripted('mail', callback)) callback();
    },
    onRcptTo(_address, _session, callback) {
      if (!scripted('rcpt', callback)) callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (scripted('data', callback)) return;
        const raw = Buffer.concat(chunks).toString('utf8');
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          messageId: header(raw, 'Message-ID'),
          subject: header(raw, 'Subject'),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    messages,
    get transactions() {
      return transactions;
    },
    script: (...replies) => {
      queue.push(...replies);
    },
    close: async () => {
      if (closed) return;
      closed = true;
      for (const release of held.splice(0)) release();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
