import { describe, expect, it } from 'vitest';
import { databaseName, redactUrl, withDatabase } from './database.js';
import { SqlFileMigrationProvider } from './migrate.js';

describe('migrations', () => {
  it('are numbered, in order, and start with 0001_initial', async () => {
    const names = Object.keys(await new SqlFileMigrationProvider().getMigrations());
    expect(names[0]).toBe('0001_initial');
    expect([...names].sort()).toEqual(names);
    expect(new Set(names.map((n) => n.slice(0, 4))).size).toBe(names.length);
  });
  it('URL helpers redact passwords and swap databases', () => {
    expect(redactUrl('postgres://u:secret@h:5432/db')).toBe('postgres://u:***@h:5432/db');
    expect(redactUrl('postgres://u@h:5432/db?password=secret&sslmode=disable')).toBe('postgres://u@h:5432/db?password=***&sslmode=disable');
    expect(redactUrl('postgresql://u@h/db?sslpassword=secret')).not.toContain('secret');
    // Provider URLs (config-check prints them): an SMS gateway's key in the query, not only a password.
    expect(redactUrl('https://u:pw@gw.example/send?api_key=s1&from=Acme&access_token=s2&Signature=s3')).toBe(
      'https://u:***@gw.example/send?api_key=***&from=Acme&access_token=***&Signature=***',
    );
    expect(redactUrl('smtp://mx.example:587/?pool=true&authToken=s4')).toBe('smtp://mx.example:587/?pool=true&authToken=***');
    expect(databaseName('postgres://u@h:5432/notify')).toBe('notify');
    expect(withDatabase('postgres://u@h:5432/notify?sslmode=disable', 'x')).toBe('postgres://u@h:5432/x?sslmode=disable');
  });
});
