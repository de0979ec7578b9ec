/**
 * Every twin in the registry against the bare engine serving the same SDK call, in one run.
 * Baseline: emulate's own service (startBareEngine: its Hono app behind its own listener, no twin layer)
 * for engine-backed twins; for a twin that is ours (stripe) or a call the bare engine cannot serve, a
 * canned node:http server answering the body the twin answered (recorded through a forwarding server
 * first), so the baseline is the HTTP round trip and the SDK's own work only.
 * A second baseline, shown beside the first and never in its place: the twin's own driver behind a bare
 * listener (driverOnly), i.e. the twin without our runtime. Against a canned baseline the ratio counts the
 * twin's whole work (Stripe is all ours); against the driver alone it counts what the runtime adds.
 * Rounds rotate which side goes first, so a slow patch of a loaded machine hits all alike.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { twinFactories } from '../../server/twins/registry.ts';
import { startBareEngine, type EngineService } from '../../server/twins/engine/emulate.ts';
import type { TwinFactory } from '../../server/twins/contract.ts';
import { twinCalls, type Call, type Env } from './calls.ts';

const CALLS = Number(process.env.BENCH_RATIO_CALLS ?? 200);
const ROUNDS = Number(process.env.BENCH_RATIO_ROUNDS ?? 3);
/**
 * Calls each side makes before any is timed. 50 left V8 still optimising the code the sides share (the SDK,
 * undici): whichever side ran later in a round came out faster, so the ratio followed the rounds' order
 * (GitHub: 1.36, 1.12, 1.37 over three rounds; 1.36, 1.35, 1.37 after 600 warm-up calls).
 */
const WARMUP = Number(process.env.BENCH_RATIO_WARMUP ?? 600);
/** BENCH_RATIO_TWINS=github,stripe: only these (default: every twin in the registry). */
const ONLY = process.env.BENCH_RATIO_TWINS?.split(',').filter(Boolean);

/** Twins Twinbox implements itself (not on an emulate engine): their baseline is the canned server. */
const OURS = new Set(['stripe']);

interface Recorded {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

// Framing is the replaying server's own (it sets content-length); the body is kept as sent, encoding too.
const DROP = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive']);

function listen(server: Server): Promise<string> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(`http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`);
    }),
  );
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

function readBody(req: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Forwards to `origin` as it came (Host too: SigV4 signs it) and keeps the last answer per method and path. */
async function recorder(origin: string) {
  const records = new Map<string, Recorded>();
  const target = new URL(origin);
  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    const upstream = await new Promise<IncomingMessage>((resolve, reject) =>
      request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        resolve,
      )
        .on('error', reject)
        .end(body),
    );
    const answer: Recorded = {
      status: upstream.statusCode ?? 502,
      headers: {},
      body: await readBody(upstream),
    };
    for (const [k, v] of Object.entries(upstream.headers))
      if (!DROP.has(k) && v !== undefined) answer.headers[k] = Array.isArray(v) ? v.join(', ') : v;
    answer.headers['content-length'] = String(answer.body.length);
    records.set(`${req.method} ${req.url}`, answer);
    res.writeHead(answer.status, answer.headers).end(answer.body);
  });
  return { url: await listen(server), records, close: () => close(server) };
}

/** Answers each recorded request with its recorded answer; reads the request body as a server must. */
async function canned(records: Map<string, Recorded>) {
  const server = createServer(async (req, res) => {
    await readBody(req);
    const answer = records.get(`${req.method} ${req.url}`);
    if (!answer) res.writeHead(404).end('not recorded');
    else res.writeHead(answer.status, answer.headers).end(answer.body);
  });
  return { url: await listen(server), close: () => close(server) };
}

/**
 * The twin's own driver (its fidelity layers, and its engine where it has one) behind a listener that does
 * only what the bare engine's does (emulate's `serve`: a fetch Request from the Node request, the Response
 * streamed back), plus the driver's credential check, which `handle` relies on. What it leaves out is the
 * twin runtime (server/twins/runtime/instance.ts): input screen, faults, request log, origin rewriting,
 * durable writes. A second driver with its own state and credentials, seeded alike.
 */
async function driverOnly(factory: TwinFactory, seed: unknown) {
  let driver: Awaited<ReturnType<TwinFactory['create']>> | undefined;
  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`);
      const headers = new Headers();
      for (const [key, value] of Object.entries(req.headers)) {
        if (value === undefined) continue;
        if (Array.isArray(value)) for (const item of value) headers.append(key, item);
        else headers.set(key, value);
      }
      const method = req.method ?? 'GET';
      const verdict = await driver!.authorize({ method, url, headers });
      const response =
        verdict instanceof Response
          ? verdict
          : await driver!.handle(
              new Request(url, {
                method,
                headers,
                ...(method === 'GET' || method === 'HEAD' ? {} : { body: await readBody(req) }),
              }),
              verdict,
            );
      res.statusCode = response.status;
      const cookies = response.headers.getSetCookie();
      response.headers.forEach((value, key) => {
        if (key !== 'set-cookie') res.setHeader(key, value);
      });
      if (cookies.length) res.setHeader('set-cookie', cookies);
      res.end(Buffer.from(await response.arrayBuffer()));
    } catch (error) {
      res.statusCode = 500;
      res.end(String(error));
    }
  });
  const url = await listen(server);
  driver = await factory.create({ baseUrl: url, seed: factory.validateSeed(seed) });
  return {
    env: driver.envVars(),
    close: async () => {
      await close(server);
      await driver!.close();
    },
  };
}

/** The twin's variables with its origin swapped for `to`. */
function swap(env: Env, from: string, to: string): Env {
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v.split(from).join(to)]));
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** CPU time of the whole process (client, server, GC alike) per side, summed over its timed calls. */
const cpuSpent = new Map<Call, { us: number; calls: number }>();

async function timed(call: Call, n: number): Promise<number[]> {
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call();
    times.push(performance.now() - t0);
  }
  const cpu = process.cpuUsage(cpu0);
  const spent = cpuSpent.get(call) ?? { us: 0, calls: 0 };
  spent.us += cpu.user + cpu.system;
  spent.calls += n;
  cpuSpent.set(call, spent);
  return times;
}

/** CPU µs a call of this side cost, over its timed rounds (warm-up left out). */
function cpuPerCall(call: Call): number {
  const spent = cpuSpent.get(call);
  return spent && spent.calls ? spent.us / spent.calls : NaN;
}

interface Row {
  twin: string;
  call: string;
  baseline: string;
  twinP50: number;
  twinP99: number;
  bareP50: number;
  bareP99: number;
  rounds: number[];
  /** The twin's driver alone behind a bare listener (driverOnly): our runtime's share, not the twin's. */
  driverP50: number;
  driverP99: number;
  driverRounds: number[];
  /**
   * CPU µs per call, client and server together (one process): on a machine shared with other loads the
   * wall-clock p50 stretches with every scheduler wait, which longer calls meet more often; CPU time does not.
   */
  twinCpu: number;
  bareCpu: number;
  driverCpu: number;
}

async function measure(twin: string, host: TwinHost): Promise<Row> {
  const spec = twinCalls[twin];
  if (!spec) throw new Error(`bench/twins/calls.ts has no call for the ${twin} twin`);
  const entry = (
    await host.start(`ratio-${twin}`, [twin], {
      adminToken: 'bench',
      ...(spec.seed ? { seeds: { [twin]: spec.seed } } : {}),
    })
  )[twin]!;
  const origin = new URL(entry.base_url).origin;
  const env = entry.env_vars;
  const ours = await spec.prepare(env);
  await ours();

  const closers: Array<() => Promise<unknown>> = [];
  let bare: Call | undefined;
  let baseline = 'emulate engine';
  try {
    if (!OURS.has(twin)) {
      try {
        const seed = typeof spec.bareSeed === 'function' ? spec.bareSeed(env) : spec.bareSeed;
        const engine = await startBareEngine(twin as EngineService, seed as never);
        closers.push(() => engine.close());
        const call = await spec.prepare(swap(env, origin, engine.url.replace('localhost', '127.0.0.1')));
        await call();
        bare = call;
      } catch (error) {
        const e = error as { message?: string; statusCode?: number; status?: number };
        const why = `${e.statusCode ?? e.status ?? ''} ${e.message ?? ''}`
          .trim()
          .split('\n')[0]!
          .slice(0, 80);
        baseline = `canned (bare engine: ${why || String(error)})`;
      }
    } else baseline = 'canned (twin is ours)';
    if (!bare) {
      const rec = await recorder(origin);
      closers.push(rec.close);
      await (
        await spec.prepare(swap(env, origin, rec.url))
      )();
      const replay = await canned(rec.records);
      closers.push(replay.close);
      bare = await spec.prepare(swap(env, origin, replay.url));
      await bare();
    }

    const alone = await driverOnly(twinFactories.get(twin)!, spec.seed);
    closers.push(alone.close);
    const driver = await spec.prepare(alone.env);
    await driver();

    const sides = { ours, bare, driver };
    for (const call of Object.values(sides)) await timed(call, WARMUP);
    cpuSpent.clear();
    const all = { ours: [] as number[], bare: [] as number[], driver: [] as number[] };
    const rounds: number[] = [];
    const driverRounds: number[] = [];
    // Each side goes first, second and last in turn, so a slow patch of the machine hits all alike.
    const orders = [
      ['ours', 'bare', 'driver'],
      ['bare', 'driver', 'ours'],
      ['driver', 'ours', 'bare'],
    ] as const;
    for (let round = 0; round < ROUNDS; round++) {
      const got: Record<string, number[]> = {};
      for (const side of orders[round % orders.length]!) got[side] = await timed(sides[side], CALLS);
      const p50 = (xs: number[]) =>
        pct(
          xs.toSorted((a, b) => a - b),
          50,
        );
      rounds.push(p50(got.ours!) / p50(got.bare!));
      driverRounds.push(p50(got.ours!) / p50(got.driver!));
      all.ours.push(...got.ours!);
      all.bare.push(...got.bare!);
      all.driver.push(...got.driver!);
    }
    all.ours.sort((a, b) => a - b);
    all.bare.sort((a, b) => a - b);
    all.driver.sort((a, b) => a - b);
    return {
      twin,
      call: spec.call,
      baseline,
      twinP50: pct(all.ours, 50),
      twinP99: pct(all.ours, 99),
      bareP50: pct(all.bare, 50),
      bareP99: pct(all.bare, 99),
      rounds,
      driverP50: pct(all.driver, 50),
      driverP99: pct(all.driver, 99),
      driverRounds,
      twinCpu: cpuPerCall(ours),
      bareCpu: cpuPerCall(bare),
      driverCpu: cpuPerCall(driver),
    };
  } finally {
    for (const closeIt of closers.reverse()) await closeIt();
    await host.stop(`ratio-${twin}`, { purge: true });
  }
}

/** Prints the table: every twin's call through Twinbox's twin layer vs the bare engine, same process. */
export async function ratioTable(): Promise<Row[]> {
  const dataDir = await mkdtemp(join(tmpdir(), 'twinbox-bench-ratio-'));
  const host = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  const rows: Row[] = [];
  try {
    for (const twin of twinFactories.keys()) {
      if (ONLY && !ONLY.includes(twin)) continue;
      rows.push(await measure(twin, host));
      process.stderr.write(`ratio: ${twin} done\n`);
    }
  } finally {
    await host.close();
    await rm(dataDir, { recursive: true, force: true });
  }
  const f = (n: number) => n.toFixed(2);
  console.log(
    `\n## Twin SDK calls, every twin vs the bare engine (${ROUNDS} alternating rounds of ${CALLS} sequential calls after ${WARMUP} warm-up each; p50/p99 over all rounds)\n`,
  );
  console.log(
    '| twin | call | twin p50 / p99 ms | bare p50 / p99 ms | ratio p50 | ratio per round | +ms p50 | baseline | driver-only p50 / p99 ms | twin / driver-only p50 | per round |',
  );
  console.log('|---|---|---|---|---:|---|---:|---|---|---:|---|');
  for (const r of rows)
    console.log(
      `| ${r.twin} | ${r.call} | ${f(r.twinP50)} / ${f(r.twinP99)} | ${f(r.bareP50)} / ${f(r.bareP99)} | ${f(r.twinP50 / r.bareP50)}x${r.twinP50 / r.bareP50 > 1.2 ? ' **>1.2**' : ''} | ${r.rounds.map(f).join(', ')} | ${f(r.twinP50 - r.bareP50)} | ${r.baseline} | ${f(r.driverP50)} / ${f(r.driverP99)} | ${f(r.twinP50 / r.driverP50)}x | ${r.driverRounds.map(f).join(', ')} |`,
    );
  console.log('\nCPU per call (µs, client and server in one process, timed rounds only):\n');
  console.log('| twin | twin | bare | driver-only | twin / bare | twin / driver-only |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const r of rows)
    console.log(
      `| ${r.twin} | ${r.twinCpu.toFixed(0)} | ${r.bareCpu.toFixed(0)} | ${r.driverCpu.toFixed(0)} | ${f(r.twinCpu / r.bareCpu)}x${r.twinCpu / r.bareCpu > 1.2 ? ' **>1.2**' : ''} | ${f(r.twinCpu / r.driverCpu)}x |`,
    );
  return rows;
}
