// A webhook receiver for trying the service by hand: prints one line per delivery (id, attempt,
// status it answered) and answers 503 to the first N deliveries of each notification, so a retry
// shows up. Usage: node scripts/demo-receiver.mjs [--port 8080] [--fail-first 2]
import http from 'node:http';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const port = arg('--port', 8080);
const failFirst = arg('--fail-first', 0);
const seen = new Map();

http
  .createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = req.headers['webhook-id'] ?? '(no webhook-id)';
      const n = (seen.get(id) ?? 0) + 1;
      seen.set(id, n);
      const status = n <= failFirst ? 503 : 200;
      console.log(`${new Date().toISOString()} ${req.method} ${req.url} webhook-id=${id} delivery #${n} -> ${status}`);
      res.writeHead(status, status === 503 ? { 'retry-after': '1' } : {}).end();
    });
  })
  .listen(port, '127.0.0.1', () =>
    console.log(`demo receiver on http://127.0.0.1:${port}/ (503 to the first ${failFirst} deliveries of each notification)`),
  );
