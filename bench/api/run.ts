/**
 * API throughput and latency: Twinbox's authenticated GET /sandboxes/{id} and POST /sandboxes against
 * a bare hapi route and bare node:http, all measured in the same run on the same machine.
 * Each server runs in its own process; autocannon drives it from this one.
 *
 * The GET is measured in rounds alternating bare hapi and Twinbox (both processes up throughout), so a
 * change of the machine's load touches both sides of a pair; the ratio is the median of the pairs'.
 *
 *   npx tsx bench/api/run.ts [--duration 10] [--connections 10] [--rounds 3]
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
  },
});
const roundCount = Number(values.rounds);
const duration = Number(values.duration);
const connections = Number(values.connections);
const root = new URL('../..', import.meta.url).pathname;

async function start(
  script: string,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: root,
    env: { PATH: process.env.PATH, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening (\d+)/.exec(out) ?? /listening on http:\/\/[^:]+:(\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { child, port };
}

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function measure(name: string, options: autocannon.Options): Promise<Row> {
  await autocannon({ ...options, duration: 2, connections }); // warm-up
  const result = await autocannon({ ...options, duration, connections });
  const errors = result.errors + result.non2xx;
  return { name, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors };
}

// Twinbox first: its GET body is what the baselines answer too, so every row moves the same bytes.
const dataDir = await mkdtemp(join(tmpdir(), 'twinbox-bench-'));
const twinbox = await start('server/main.ts', {
  TWINBOX_DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  TWINBOX_DEPLOY_ENGINE: 'none',
  // The POST row creates thousands of sandboxes; past the plan's quota they would be 403s, not creates.
  TWINBOX_SANDBOX_QUOTA_PRO: '100000',
});
await new Promise((resolve) => setTimeout(resolve, 500));
const key = (await readFile(join(dataDir, 'dev-api-key'), 'utf8')).trim();
const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
const base = `http://127.0.0.1:${twinbox.port}`;
const created = await fetch(`${base}/sandboxes`, {
  method: 'POST',
  headers,
  body: JSON.stringify({ repo: 'bench/app', branch: 'main' }),
});
const { sandbox_id } = (await created.json()) as { sandbox_id: string };
const body = await (await fetch(`${base}/sandboxes/${sandbox_id}`, { headers })).text();

const rows: Row[] = [];
const bare = await start('bench/api/bare-http.ts', { BENCH_BODY: body });
rows.push(await measure('node:http GET (baseline)', { url: `http://127.0.0.1:${bare.port}/sandboxes/x` }));
bare.child.kill();

const hapi = await start('bench/api/bare-hapi.ts', { BENCH_BODY: body });
const pairs: Array<{ hapi: Row; twinbox: Row }> = [];
for (let round = 1; round <= roundCount; round++) {
  // Which side goes first alternates too.
  const first = round % 2 === 1;
  const measureHapi = () =>
    measure(`bare hapi GET (baseline), round ${round}`, { url: `http://127.0.0.1:${hapi.port}/sandboxes/x` });
  const measureTwinbox = () =>
    measure(`Twinbox GET /sandboxes/{id} (API key), round ${round}`, {
      url: `${base}/sandboxes/${sandbox_id}`,
      headers,
    });
  const a = first ? await measureHapi() : await measureTwinbox();
  const b = first ? await measureTwinbox() : await measureHapi();
  pairs.push(first ? { hapi: a, twinbox: b } : { hapi: b, twinbox: a });
}
hapi.child.kill();
for (const pair of pairs) rows.push(pair.hapi, pair.twinbox);

rows.push(
  await measure('Twinbox POST /sandboxes (API key, durable write)', {
    url: `${base}/sandboxes`,
    method: 'POST',
    headers,
    body: JSON.stringify({ repo: 'bench/app', branch: 'main', env: { A: '1' } }),
  }),
);
twinbox.child.kill();
await new Promise((resolve) => twinbox.child.once('exit', resolve));
await rm(dataDir, { recursive: true, force: true });

const hapiRps = pairs.reduce((sum, pair) => sum + pair.hapi.rps, 0) / pairs.length;
const ratios = pairs.map((pair) => pair.twinbox.rps / pair.hapi.rps).sort((x, y) => x - y);
console.log(
  `\nAPI benchmark: ${duration}s per row, ${connections} connections, ${body.length}-byte body in every row, ${new Date().toISOString()}, load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')}\n`,
);
console.log('| server / route | req/s | p50 ms | p99 ms | errors | vs bare hapi (mean of its rounds) |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const row of rows) {
  console.log(
    `| ${row.name} | ${Math.round(row.rps)} | ${row.p50} | ${row.p99} | ${row.errors} | ${(row.rps / hapiRps).toFixed(2)}x |`,
  );
}
console.log(
  `\nTwinbox GET / bare hapi, per round: ${pairs.map((pair) => (pair.twinbox.rps / pair.hapi.rps).toFixed(2)).join(', ')}; median ${ratios[Math.floor(ratios.length / 2)]!.toFixed(2)}x (target >= 0.8x)`,
);
const post = rows.at(-1)!;
console.log(`POST /sandboxes: ${Math.round(post.rps)} req/s (target >= 1,500/s), ${post.errors} errors`);
