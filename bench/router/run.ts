/**
 * Router overhead: requests per second through Twinbox's sandbox router (Host routing to the app's Unix
 * socket, header rules, keep-alive pool) against the same app hit directly on TCP. One backend process
 * serves both paths; the router runs in its own process; autocannon drives them from this one.
 *
 * Rows run twice: against the cheapest possible app (the router's cost laid bare) and against an app
 * that spends 1 ms of CPU per request (closer to a real one). CPU µs per request of each server process
 * (from /proc, Linux) is printed too: unlike req/s it hardly moves when other work shares the machine.
 *
 *   npx tsx bench/router/run.ts [--duration 10] [--connections 10]
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { duration: { type: 'string', default: '10' }, connections: { type: 'string', default: '10' } },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
const root = new URL('../..', import.meta.url).pathname;
const host = '3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6b.localhost';

async function start(
  script: string,
  env: Record<string, string>,
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: root,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { child, port };
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill();
  await exited;
}

/** CPU seconds (user + system) a process has used, or NaN where /proc is missing. */
function cpuSeconds(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

interface Row {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU µs per request of the router process (NaN: none) and of the app. */
  routerUs: number;
  appUs: number;
  baseline: number;
}

async function measure(
  name: string,
  options: autocannon.Options,
  processes: { router?: ChildProcess; app: ChildProcess },
  baseline?: number,
): Promise<Row> {
  await autocannon({ ...options, duration: 2, connections }); // warm-up
  const before = [cpuSeconds(processes.router?.pid), cpuSeconds(processes.app.pid)];
  const result = await autocannon({ ...options, duration, connections });
  const after = [cpuSeconds(processes.router?.pid), cpuSeconds(processes.app.pid)];
  const perRequest = (i: number) => ((after[i]! - before[i]!) * 1e6) / result.requests.total;
  return {
    name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
    routerUs: processes.router ? perRequest(0) : NaN,
    appUs: perRequest(1),
    baseline: baseline ?? result.requests.average,
  };
}

const dir = await mkdtemp(join(tmpdir(), 'twinbox-bench-router-'));
const rows: Row[] = [];
try {
  for (const workUs of [0, 1000]) {
    // A socket file each: a killed backend leaves its file behind.
    const socket = join(dir, `app-${workUs}.sock`);
    const app = await start('bench/router/backend.ts', {
      BENCH_SOCKET: socket,
      BENCH_WORK_US: String(workUs),
    });
    const label = workUs === 0 ? 'cheapest app' : `app spending ${workUs / 1000} ms CPU`;
    try {
      const direct = await measure(
        `${label}: direct, TCP (baseline)`,
        { url: `http://127.0.0.1:${app.port}/` },
        { app: app.child },
      );
      rows.push(direct);
      const fronts =
        workUs === 0
          ? ([
              ['through the router (Twinbox: dispatch before hapi)', 'listener'],
              ['through a hapi onRequest extension (alternative)', 'hapi-ext'],
            ] as const)
          : ([['through the router', 'listener']] as const);
      if (workUs === 0) {
        rows.push(
          await measure(
            `${label}: direct, Unix socket`,
            { url: 'http://localhost/', socketPath: socket },
            { app: app.child },
            direct.rps,
          ),
        );
      }
      for (const [name, mode] of fronts) {
        const front = await start('bench/router/front.ts', { BENCH_SOCKET: socket, BENCH_MODE: mode });
        try {
          rows.push(
            await measure(
              `${label}: ${name}`,
              { url: `http://127.0.0.1:${front.port}/`, headers: { host } },
              { router: front.child, app: app.child },
              direct.rps,
            ),
          );
        } finally {
          await stop(front.child);
        }
      }
    } finally {
      await stop(app.child);
    }
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}

const us = (value: number) => (Number.isNaN(value) ? '' : Math.round(value).toString());
console.log(
  `\nRouter benchmark: ${duration}s per row, ${connections} connections, ${new Date().toISOString()}\n`,
);
console.log(
  '| path | req/s | p50 ms | p99 ms | errors | router CPU µs/req | app CPU µs/req | vs direct TCP |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const row of rows) {
  console.log(
    `| ${row.name} | ${Math.round(row.rps)} | ${row.p50} | ${row.p99} | ${row.errors} | ${us(row.routerUs)} | ${us(row.appUs)} | ${(row.rps / row.baseline).toFixed(2)}x |`,
  );
}
const ratio = (row: Row | undefined) => (row ? (row.rps / row.baseline).toFixed(2) : '?');
console.log(
  `\nrouter / direct: ${ratio(rows[2])}x with the cheapest app, ${ratio(rows[5])}x with an app spending 1 ms CPU per request (goal: at least 0.70x)`,
);
