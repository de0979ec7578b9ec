// The sandbox pod: one process per sandbox, started by Twinbox inside the sandbox's network namespace
// (and bubblewrap). It hosts that sandbox's twins, pipes the router's Unix sockets to the app, and runs the
// outbound-call guard. It holds none of Twinbox's secrets, store or auth: only what its control API hands it.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Server } from 'node:net';
import { TwinAdminClient } from '../twins/kit/admin-client.ts';
import { TwinHost } from '../twins/runtime/host.ts';
import { EgressGuard } from './egress-guard.ts';
import { FrontDoor } from './front-door.ts';
import { GUARDED_PORTS, INSTALL_PROXY_PORT, podLayout, TRUST_PATHS } from './layout.ts';
import { SandboxCa } from './sandbox-ca.ts';
import { accepts, startPipe } from './pipes.ts';
import {
  checkExpectedTwins,
  checkPodRequest,
  POD_EVENTS_PATH,
  podCallOf,
  PodRequestError,
  type PodAnswer,
  type PodCall,
  type PodEvent,
  type PodRequest,
} from './protocol.ts';
import { START_FAILURE_EXIT, startFailureLine, type PodStartStep } from './start-failure.ts';
import type { TwinFactory } from '../twins/contract.ts';
import { loadTwins, twinNames } from '../twins/loaders.ts';
import { giveRsaKeys } from '../twins/runtime/rsa-keys.ts';

const dir = process.env.TWINBOX_POD_DIR;
const stateDir = process.env.TWINBOX_POD_STATE_DIR;
/** `own`: the pod is alone in a namespace and guards it; `host`: no network isolation (development). */
const network = process.env.TWINBOX_POD_NETWORK === 'own' ? 'own' : 'host';
const bodyLimitBytes = Number(process.env.TWINBOX_POD_BODY_BYTES) || undefined;
if (!dir || !stateDir) {
  process.stderr.write('twinbox pod: TWINBOX_POD_DIR and TWINBOX_POD_STATE_DIR are required\n');
  process.exit(2);
}
const layout = podLayout(dir);

const log = {
  info: () => {},
  warn: (obj: object, msg?: string) => process.stderr.write(`${msg ?? ''} ${JSON.stringify(obj)}\n`),
  error: (obj: object, msg?: string) =>
    process.stderr.write(
      `${msg ?? ''} ${JSON.stringify(obj, (_k, v) => (v instanceof Error ? v.message : v))}\n`,
    ),
};
/** The twins this pod has loaded so far (loaders.ts): the host finds a twin here once a call loaded it. */
const twinFactories = new Map<string, TwinFactory>();
const twins = new TwinHost({
  factories: twinFactories,
  dataDir: stateDir,
  publicHost: '127.0.0.1',
  socketDir: dir,
  logger: log,
  bodyLimitBytes,
  // In its own namespace the front door answers the public URLs inside too: they are the twins' URLs.
  publicBase: network === 'own',
  // It serves one sandbox: what its twins make ahead is made once, in the warm-up (warmTwins).
  makeAhead: false,
});
let sandboxId: string | undefined;
let appPort: number | undefined;
/** The pipe's start, shared: a second call arriving while the first starts it must not listen twice. */
let appPipe: Promise<Server> | undefined;

// Egress attempts go to every open /events stream (Twinbox keeps one and records them).
const listeners = new Set<ServerResponse>();
const report = (attempt: PodEvent) => {
  const line = `${JSON.stringify(attempt)}\n`;
  for (const res of listeners) res.write(line);
};
const guard = network === 'own' ? new EgressGuard(report) : undefined;
// The sandbox's CA, made while the pod starts (a spare pod makes it before any deploy needs it).
const ca = guard ? SandboxCa.create(dir.split('/').pop() ?? '') : undefined;
const door = guard && ca ? new FrontDoor(twins, ca, report, (address) => guard.nameOf(address)) : undefined;

/** The CA's certificate, and the system's bundle with it, where Twinbox shows them to the sandbox's commands. */
async function writeTrust(sandboxCa: SandboxCa): Promise<void> {
  const system = await readFile(TRUST_PATHS.system, 'utf8').catch(() => '');
  const separator = system && !system.endsWith('\n') ? '\n' : '';
  // Made anew at every pod start (a new CA each time): nothing to keep across a crash.
  await writeFile(layout.caCertificate, sandboxCa.certificatePem, { mode: 0o644 });
  await writeFile(layout.caBundle, `${system}${separator}${sandboxCa.certificatePem}`, { mode: 0o644 });
}

/** Certificates for every name `host`'s twins answer for (a `*` pattern names no one host: skipped). */
function issueCertificates(host: TwinHost, sandboxCa: SandboxCa): Promise<unknown> {
  return Promise.all(
    host
      .hostNames()
      .filter((name) => !name.includes('*'))
      .map((name) => sandboxCa.contextFor(name)),
  );
}

/** Once the twins run: the front door takes the web ports, and the public URLs' port too. */
async function openDoor(): Promise<void> {
  if (!guard || !door || !ca) return;
  guard.door = door;
  // Certificates for the names the app will ask for, issued now rather than at its first connection.
  void ca.then((sandboxCa) => issueCertificates(twins, sandboxCa)).catch(() => {});
  for (const url of twins.publicUrls()) {
    const parsed = new URL(url);
    const port = Number(parsed.port) || (parsed.protocol === 'https:' ? 443 : 80);
    if (GUARDED_PORTS.includes(port) || port === INSTALL_PROXY_PORT) continue;
    await guard.openWebPort(port);
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return text ? (JSON.parse(text) as unknown) : {};
  } catch (error) {
    throw new PodRequestError(400, `the body is not JSON: ${(error as Error).message}`);
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

/**
 * A spare pod's warm-up (protocol.ts, warmTwins): the twins start once in a scratch host of their own (own
 * directory, no sockets; nothing of it is kept), are pointed at a webhook target and back, and stop; the
 * modules, compiled code and the certificates for their host names stay for the sandbox that takes the
 * pod. The pointing is what a deploy asks of the twins while its app starts: cold, it cost the pod 15-20 ms
 * of CPU a twin (its admin route, the state journal's diff and fsync), and the app's health probes, which
 * pass through the pod, waited behind it. Durable writes are on for the same reason (the journal's code).
 */
async function warmTwins(names: string[]): Promise<string[]> {
  if (sandboxId) throw new PodRequestError(400, 'the pod already serves a sandbox: warm-up is for spares');
  const scratch = join(dir!, 'warm-up');
  const host = new TwinHost({
    factories: twinFactories,
    dataDir: scratch,
    publicHost: '127.0.0.1',
    logger: log,
    bodyLimitBytes,
    publicBase: network === 'own',
    makeAhead: false,
  });
  const known = names.filter((name) => twinNames.includes(name));
  await loadTwins(known, twinFactories);
  const adminToken = randomBytes(16).toString('hex');
  try {
    const entries = await host.start('warm-up', known, { adminToken });
    if (ca) await issueCertificates(host, await ca);
    for (const entry of Object.values(entries)) {
      const admin = new TwinAdminClient(entry.admin_url, adminToken);
      await admin.setWebhookTarget({ url: 'http://127.0.0.1:9/warm-up', secret: 'warm-up', events: ['*'] });
      await admin.clearWebhookTarget();
    }
  } finally {
    await host.close();
    await rm(scratch, { recursive: true, force: true });
  }
  // What the sandbox's own twins will need (the GitHub twin's app key), made now, before any deploy asks.
  await Promise.all(known.map((name) => twinFactories.get(name)!.prepare?.()));
  return known;
}

/** What the pod does for each call of its protocol, given a body already checked at the door. */
const handlers: {
  [C in PodCall]: (body: PodRequest<C>, gone: AbortSignal) => Promise<PodAnswer<C>>;
} = {
  async ready() {
    return { ok: true, network, sandbox_id: sandboxId, prepared: [...prepared] };
  },
  async startTwins(body) {
    sandboxId = body.sandbox_id;
    await loadTwins(body.names, twinFactories);
    const entries = await twins.start(sandboxId, body.names, {
      adminToken: body.admin_token,
      seeds: body.seeds,
      publicUrls: body.public_urls,
    });
    await openDoor();
    return { twins: entries };
  },
  async warmTwins(body) {
    return { warmed: await warmTwins(body.names) };
  },
  async restoreTwins(body) {
    sandboxId = body.sandbox_id;
    // Which twins the sandbox ran is on disk, read by the restore: a restart's rare path loads them all.
    await loadTwins(twinNames, twinFactories);
    await twins.restore([sandboxId]);
    await openDoor();
    return { twins: twins.get(sandboxId) ?? {} };
  },
  async exposeApp(body) {
    appPort = body.port;
    appPipe ??= startPipe({ path: layout.app }, () =>
      appPort ? { port: appPort, host: '127.0.0.1' } : undefined,
    );
    await appPipe;
    return { port: appPort };
  },
  async appListening(body, gone) {
    if (!appPort) throw new PodRequestError(400, 'the app has no port here yet: exposeApp first');
    // Twinbox gone from the call (the app exited, the deploy ended): the tries end with it.
    return { listening: await accepts({ port: appPort, host: '127.0.0.1' }, body.timeout_ms, gone) };
  },
  async stopTwins(body) {
    if (sandboxId) await twins.stop(sandboxId, { purge: body.purge === true });
    return { stopped: true };
  },
};

async function handle<C extends PodCall>(
  call: C,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<PodAnswer<C>> {
  const body = checkPodRequest(call, req.method === 'GET' ? undefined : await readJson(req));
  const gone = new AbortController();
  // Before the answer is written: the caller left, and no one waits for it.
  res.once('close', () => gone.abort());
  return handlers[call](body, gone.signal);
}

async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === 'GET' && req.url === POD_EVENTS_PATH) {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write('\n');
    listeners.add(res);
    req.on('close', () => listeners.delete(res));
    return;
  }
  send(res, 200, await handle(podCallOf(req.method, req.url), req, res));
}

const control = createServer((req, res) => {
  route(req, res).catch((error: Error & { status?: number }) =>
    send(res, error.status && error.status < 500 ? error.status : 400, { detail: error.message }),
  );
});
/** Runs one start step; its failure is reported as that step (start-failure.ts) and ends the pod. */
async function startStep(step: PodStartStep, run: () => Promise<unknown>): Promise<void> {
  try {
    await run();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    process.stderr.write(startFailureLine({ step, ...(typeof code === 'string' && { code }) }));
    process.exit(START_FAILURE_EXIT);
  }
}

/** The expected twins (prepareExpected) whose code is loaded and whose `prepare` is done. */
const prepared = new Set<string>();

/**
 * The twins Twinbox expects this pod to run (layout.expectedTwins), read as soon as the pod's code is
 * loaded, and the RSA keys it made for them, which the twins take before making any (rsa-keys.ts). A
 * missing or malformed file names none and gives none; only names a twin has count.
 */
function expectedTwins(): string[] {
  try {
    const body = checkExpectedTwins(JSON.parse(readFileSync(layout.expectedTwins, 'utf8')) as unknown);
    giveRsaKeys(body.rsa_keys ?? []);
    return body.names.filter((name) => twinNames.includes(name));
  } catch {
    return [];
  }
}

/**
 * Loads the expected twins before the rest of the start, and prepares them behind it: the GitHub twin's
 * app key, when Twinbox gave none, is an RSA prime search of 100-500 ms on a core of libuv's pool, which
 * then starts ~150 ms before a first deploy's startTwins, where it started with it. Loading them here
 * costs the pod's `ready` what startTwins would have spent on them after it.
 */
async function prepareExpected(): Promise<void> {
  const names = expectedTwins();
  await loadTwins(names, twinFactories).catch(() => {});
  void Promise.all(
    names
      .filter((name) => twinFactories.has(name))
      .map(async (name) => {
        await twinFactories.get(name)!.prepare?.();
        prepared.add(name);
      }),
  ).catch(() => {});
}

await prepareExpected();
await startStep('control_socket', () => rm(layout.control, { force: true }));
if (guard) await startStep('dns_guard', () => guard.start());
if (ca) await startStep('sandbox_ca', async () => writeTrust(await ca));
if (network === 'own')
  await startStep('install_proxy_port', () =>
    startPipe({ port: INSTALL_PROXY_PORT, host: '127.0.0.1' }, () => ({ path: layout.egress })),
  );
await startStep(
  'control_socket',
  () =>
    new Promise<void>((resolve, reject) => {
      control.once('error', reject);
      control.listen(layout.control, () => {
        control.off('error', reject);
        resolve();
      });
    }),
);
process.stdout.write('pod ready\n');

const shutdown = () => {
  guard?.close();
  void twins.close().finally(() => process.exit(0));
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
