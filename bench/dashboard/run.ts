/**
 * The dashboard's list page against the API's list, for an account with 1,000 sandboxes: the signed-in
 * GET /dashboard (session cookie, HTML) and GET /sandboxes (API key, JSON), the same page size (20), in
 * the same run against the same Twinbox process. Rounds alternate between the two so a change in the
 * machine's load hits both; the ratio is the median over pairs of adjacent rounds. Goal (issue 12): page
 * < 2x the API.
 *
 *   npx tsx bench/dashboard/run.ts [--duration 4] [--connections 10] [--rounds 5] [--sandboxes 1000]
 */
import autocannon from 'autocannon';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { readOutbox } from '../../server/mail/outbox.ts';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '4' },
    connections: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '5' },
    sandboxes: { type: 'string', default: '1000' },
  },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
const rounds = Number(values.rounds);
const count = Number(values.sandboxes);
const root = new URL('../..', import.meta.url).pathname;
const OWNER = 'owner@twinbox.local';

async function startTwinbox(dataDir: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      TWINBOX_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      TWINBOX_DEPLOY_ENGINE: 'none',
      TWINBOX_SANDBOX_QUOTA_PRO: '100000',
      TWINBOX_AUTH_IP_LIMIT: '1000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match =
        /listening on http:\/\/[^:]+:(\d+)/.exec(out) ?? /127\.0\.0\.1:(\d+)\/dashboard/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`Twinbox exited with ${code}: ${out.slice(-500)}`)));
  });
  return { child, port };
}

/** Signs the local owner in through the pages, as a browser does (the code from the outbox). */
async function signIn(base: string, dataDir: string): Promise<string> {
  const form = (fields: Record<string, string>) => ({
    method: 'POST',
    redirect: 'manual' as const,
    headers: {
      origin: base,
      'sec-fetch-site': 'same-origin',
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams(fields).toString(),
  });
  const asked = await fetch(`${base}/login/email`, form({ email: OWNER }));
  if (asked.status >= 400) throw new Error(`sign-in refused: ${asked.status} ${await asked.text()}`);
  let code: string | undefined;
  for (let i = 0; i < 200 && !code; i++) {
    const mail = (await readOutbox(join(dataDir, 'outbox'))).filter((m) => m.to === OWNER).at(-1);
    code = mail && /(\d{6})/.exec(mail.subject)?.[1];
    if (!code) await new Promise((resolve) => setTimeout(resolve, 25));
  }
  if (!code) throw new Error('no sign-in code in the outbox');
  const verified = await fetch(
    `${base}/login/email/verify`,
    form({ email: OWNER, code, next: '/dashboard' }),
  );
  const cookie = verified.headers
    .getSetCookie()
    .find((c) => c.startsWith('twinbox_session='))
    ?.split(';')[0];
  if (!cookie) throw new Error(`no session cookie (${verified.status}): ${await verified.text()}`);
  return cookie;
}

interface Round {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function measure(options: autocannon.Options, seconds: number): Promise<Round> {
  const result = await autocannon({ ...options, duration: seconds, connections });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const dataDir = await mkdtemp(join(tmpdir(), 'twinbox-bench-dashboard-'));
const twinbox = await startTwinbox(dataDir);
try {
  const base = `http://127.0.0.1:${twinbox.port}`;
  // The local owner's key is written once Twinbox listens (server/bootstrap.ts).
  let key = '';
  for (let i = 0; i < 400 && !key; i++) {
    key = (await readFile(join(dataDir, 'dev-api-key'), 'utf8').catch(() => '')).trim();
    if (!key) await new Promise((resolve) => setTimeout(resolve, 25));
  }
  if (!key) throw new Error('no dev-api-key written');
  const api = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  // 1,000 sandboxes in the owner's account, over 25 repositories (queued: no deploy engine).
  for (let i = 0; i < count; i++) {
    const created = await fetch(`${base}/sandboxes`, {
      method: 'POST',
      headers: api,
      body: JSON.stringify({ repo: `bench/app-${i % 25}`, branch: `feature-${i}` }),
    });
    if (created.status !== 201) throw new Error(`POST /sandboxes: ${created.status} ${await created.text()}`);
  }
  const cookie = await signIn(base, dataDir);
  const page = { url: `${base}/dashboard`, headers: { cookie, accept: 'text/html' } };
  const list = { url: `${base}/sandboxes?limit=20`, headers: { authorization: api.authorization } };
  const pageBody = await (await fetch(page.url, { headers: page.headers })).text();
  const rows = (pageBody.match(/<tr>\s*<td><span class="status/g) ?? []).length;
  const listed = (
    (await (await fetch(list.url, { headers: list.headers })).json()) as { sandboxes: unknown[] }
  ).sandboxes.length;
  if (rows !== 20 || listed !== 20)
    throw new Error(`expected 20 rows on both, got page ${rows}, API ${listed}`);

  // Warm-up of both, then alternating rounds.
  await measure(page, 2);
  await measure(list, 2);
  const pageRounds: Round[] = [];
  const apiRounds: Round[] = [];
  for (let r = 0; r < rounds; r++) {
    pageRounds.push(await measure(page, duration));
    apiRounds.push(await measure(list, duration));
  }
  // One request at a time, timed here: the time to answer one request, without queueing behind others.
  // Blocks of 50 alternate between the two routes; 1,000 of each.
  const sequential = { page: [] as number[], api: [] as number[] };
  const timeOne = async (target: { url: string; headers: Record<string, string> }) => {
    const start = performance.now();
    const response = await fetch(target.url, { headers: target.headers });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`${target.url}: ${response.status}`);
    return performance.now() - start;
  };
  for (let block = 0; block < 20; block++) {
    for (let i = 0; i < 50; i++) sequential.page.push(await timeOne(page));
    for (let i = 0; i < 50; i++) sequential.api.push(await timeOne(list));
  }
  const one = { page: median(sequential.page), api: median(sequential.api) };

  const summary = (name: string, all: Round[]) => ({
    name,
    rps: median(all.map((r) => r.rps)),
    p50: median(all.map((r) => r.p50)),
    p99: median(all.map((r) => r.p99)),
    errors: all.reduce((sum, r) => sum + r.errors, 0),
  });
  const pageRow = summary('GET /dashboard (session cookie, HTML page)', pageRounds);
  const apiRow = summary('GET /sandboxes?limit=20 (API key, JSON)', apiRounds);
  // Time per request at the same concurrency is the inverse of throughput. Each page round is paired
  // with the API round right after it (the same load on the machine), and the median pair is taken.
  const timeRatio = median(pageRounds.map((page, i) => apiRounds[i]!.rps / page.rps));

  console.log(
    `\nDashboard list benchmark: ${count} sandboxes in the account, 20 a page, ${rounds} alternating rounds of ${duration}s, ` +
      `${connections} connections, ${cpus().length} CPUs, load average ${loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}, ${new Date().toISOString()}\n`,
  );
  console.log('| route | req/s (median round) | p50 ms | p99 ms | errors |');
  console.log('|---|---:|---:|---:|---:|');
  for (const row of [pageRow, apiRow]) {
    console.log(`| ${row.name} | ${Math.round(row.rps)} | ${row.p50} | ${row.p99} | ${row.errors} |`);
  }
  console.log(
    `\none request at a time (median of 1,000 each): page ${one.page.toFixed(2)} ms, API ${one.api.toFixed(2)} ms, ` +
      `${(one.page / one.api).toFixed(2)}x`,
  );
  console.log(
    `page time / API time: ${timeRatio.toFixed(2)}x (median of ${rounds} paired rounds, by throughput), ` +
      `${(pageRow.p50 / apiRow.p50).toFixed(2)}x by median p50 ` +
      `(goal < 2x): ${timeRatio < 2 && one.page / one.api < 2 ? 'met' : 'NOT met'}; page ${pageBody.length} bytes`,
  );
  if (pageRow.errors || apiRow.errors) process.exitCode = 1;
} finally {
  twinbox.child.kill();
  await new Promise((resolve) => twinbox.child.once('exit', resolve));
  await rm(dataDir, { recursive: true, force: true });
}
