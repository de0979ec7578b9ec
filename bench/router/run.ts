/**
 * Router overhead: requests per second through Twinbox's sandbox router (Host routing to the app's Unix
 * socket, header rules, keep-alive pool) against the same app reached directly, in one run.
 *
 * Fair on a 2-core machine where the load generator, the router and the app share the CPU:
 * - one generator (autocannon, in this process) with the same settings for every row: the same
 *   connections, no pipelining, the same duration;
 * - one app process serves both paths (TCP for the direct rows, its Unix socket for the router);
 * - the rows are measured in alternating rounds (direct, router, router, direct, ...), so drift in what
 *   else runs on the machine falls on both; each round's ratio is its router figure over its own direct
 *   figure, and the ratio reported is the median of the rounds' ratios.
 *
 * Three servers behind it: the cheapest possible app (the router's cost laid bare), one spending 1 ms of
 * CPU per request (closer to a real app), and a real Stripe twin on its own socket, as in a sandbox's pod
 * (`customers.retrieve`; its baseline is the twin's own socket, as an app inside the sandbox reaches it). CPU µs per request of each server process (from /proc, Linux) is
 * printed too: unlike req/s it hardly moves when other work shares the machine.
 *
 *   npx tsx bench/router/run.ts [--duration 5] [--rounds 5] [--connections 10]
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '10' },
  },
});
const duration = Number(values.duration);
const rounds = Number(values.rounds);
const connections = Number(values.connections);
const root = new URL('../..', import.meta.url).pathname;
const sandbox = '3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6b';

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

interface Sample {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU µs per request of the router process (NaN: none), of the app, and of the load generator. */
  routerUs: number;
  appUs: number;
  generatorUs: number;
}

async function sample(
  options: autocannon.Options,
  processes: { router?: ChildProcess; app: ChildProcess },
): Promise<Sample> {
  const before = [cpuSeconds(processes.router?.pid), cpuSeconds(processes.app.pid)];
  const generator = process.cpuUsage();
  const result = await autocannon({ ...options, duration, connections, pipelining: 1 });
  const generatorUsed = process.cpuUsage(generator);
  const after = [cpuSeconds(processes.router?.pid), cpuSeconds(processes.app.pid)];
  const perRequest = (i: number) => ((after[i]! - before[i]!) * 1e6) / result.requests.total;
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
    routerUs: processes.router ? perRequest(0) : NaN,
    appUs: perRequest(1),
    generatorUs: (generatorUsed.user + generatorUsed.system) / result.requests.total,
  };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

interface Row {
  name: string;
  samples: Sample[];
  /** Per round, this row's req/s over the direct row's of the same round. */
  ratios: number[];
}

/** What sits behind the router in a pair of rows: the app (or twin) process and how each path reaches it. */
interface Target {
  label: string;
  /** The process serving both paths. */
  child: ChildProcess;
  /** The Unix socket the router forwards to. */
  socket: string;
  /** The baseline: the same server reached without the router. */
  direct: { name: string; options: autocannon.Options };
  /** Path and headers of the request, the same on both paths (Host aside). */
  request: { path: string; headers: Record<string, string> };
  /** The sandbox host: the app's, or a twin's. */
  host: string;
}

async function appTarget(workUs: number): Promise<Target> {
  // A socket file each: a killed backend leaves its file behind.
  const socket = join(dir, `app-${workUs}.sock`);
  const app = await start('bench/router/backend.ts', { BENCH_SOCKET: socket, BENCH_WORK_US: String(workUs) });
  return {
    label: workUs === 0 ? 'cheapest app' : `app spending ${workUs / 1000} ms CPU a request`,
    child: app.child,
    socket,
    direct: { name: 'direct, TCP (baseline)', options: { url: `http://127.0.0.1:${app.port}/` } },
    request: { path: '/', headers: {} },
    host: `${sandbox}.localhost`,
  };
}

/** A real Stripe twin on its own socket, as in a sandbox's pod; the call: retrieve a customer. */
async function twinTarget(): Promise<Target> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/router/twin.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH, BENCH_SOCKET_DIR: dir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const twin = await new Promise<{ socket: string; key: string; customer: string }>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('listening')) resolve(JSON.parse(out.split('\n')[0]!));
    });
    child.on('exit', (code) => reject(new Error(`bench/router/twin.ts exited with ${code}`)));
  });
  const request = {
    path: `/v1/customers/${twin.customer}`,
    headers: { authorization: `Bearer ${twin.key}` },
  };
  return {
    label: 'Stripe twin, customers.retrieve',
    child,
    socket: twin.socket,
    direct: {
      name: "direct, the twin's own socket (baseline)",
      options: {
        url: `http://localhost${request.path}`,
        socketPath: twin.socket,
        headers: request.headers,
      },
    },
    request,
    host: `${sandbox}--stripe.localhost`,
  };
}

const dir = await mkdtemp(join(tmpdir(), 'twinbox-bench-router-'));
const startedAt = new Date();
const loadAtStart = loadavg();
const rows: Row[] = [];
try {
  for (const make of [() => appTarget(0), () => appTarget(1000), twinTarget]) {
    const target = await make();
    const front = await start('bench/router/front.ts', { BENCH_SOCKET: target.socket }).catch(
      async (error: unknown) => {
        await stop(target.child);
        throw error;
      },
    );
    try {
      const paths = [
        {
          row: { name: `${target.label}: ${target.direct.name}`, samples: [], ratios: [] } as Row,
          options: target.direct.options,
          processes: { app: target.child },
        },
        {
          row: { name: `${target.label}: through the router`, samples: [], ratios: [] } as Row,
          options: {
            url: `http://127.0.0.1:${front.port}${target.request.path}`,
            headers: { ...target.request.headers, host: target.host },
          },
          processes: { router: front.child, app: target.child },
        },
      ];
      // Warm-up of both paths (JIT, pooled connections), not counted.
      for (const path of paths) await autocannon({ ...path.options, duration: 2, connections });
      for (let round = 0; round < rounds; round++) {
        const order = round % 2 === 0 ? paths : [...paths].reverse();
        const got = new Map<Row, Sample>();
        for (const path of order) got.set(path.row, await sample(path.options, path.processes));
        const direct = got.get(paths[0]!.row)!;
        for (const [row, result] of got) {
          row.samples.push(result);
          row.ratios.push(result.rps / direct.rps);
        }
      }
      rows.push(...paths.map((path) => path.row));
    } finally {
      await stop(front.child);
      await stop(target.child);
    }
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}

const us = (value: number) => (Number.isNaN(value) ? '' : Math.round(value).toString());
const load = (values: number[]) => values.map((value) => value.toFixed(2)).join(', ');
console.log(
  `\nRouter benchmark: ${rounds} alternating rounds of ${duration}s per row, ${connections} connections, ` +
    `started ${startedAt.toISOString()}, load average ${load(loadAtStart)} at the start, ${load(loadavg())} at the end\n`,
);
console.log(
  '| path | req/s (median) | p50 ms | p99 ms | errors | router CPU µs/req | app CPU µs/req | generator CPU µs/req | vs direct (median of rounds) | per round |',
);
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---|');
for (const row of rows) {
  const of = (pick: (s: Sample) => number) => median(row.samples.map(pick));
  console.log(
    `| ${row.name} | ${Math.round(of((s) => s.rps))} | ${of((s) => s.p50)} | ${of((s) => s.p99)} | ${row.samples.reduce((n, s) => n + s.errors, 0)} | ${us(of((s) => s.routerUs))} | ${us(of((s) => s.appUs))} | ${us(of((s) => s.generatorUs))} | ${median(row.ratios).toFixed(2)}x | ${row.ratios.map((r) => r.toFixed(2)).join(', ')} |`,
  );
}
console.log(
  `\nrouter / direct: ${median(rows[1]!.ratios).toFixed(2)}x with the cheapest app (goal: at least 0.50x), ` +
    `${median(rows[3]!.ratios).toFixed(2)}x with an app spending 1 ms CPU a request, ` +
    `${median(rows[5]!.ratios).toFixed(2)}x for a Stripe twin call against the twin's own socket`,
);
