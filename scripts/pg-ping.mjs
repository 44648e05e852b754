// Exits 0 when a PostgreSQL server answers at the URL (any database: "does not exist" still
// proves the server is up); otherwise prints one line saying what to do and exits 1.
import pg from 'pg';

const url = process.argv[2] ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/notify';
const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
client.on('error', () => {});
try {
  await client.connect();
  await client.end();
} catch (err) {
  if (err.code !== '3D000') {
    const safe = url.replace(/:\/\/([^:@/]+):[^@/]*@/, '://$1:***@');
    console.error(`PostgreSQL is not reachable at ${safe} (${err.code ?? err.message}): start it or set DATABASE_URL`);
    process.exit(1);
  }
}
