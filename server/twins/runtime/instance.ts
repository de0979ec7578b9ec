import {
  createServer,
  STATUS_CODES,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { rm } from 'node:fs/promises';
import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_PREFIX, routeAdmin } from './admin.ts';
import {
  changesStateByMethod,
  hostMatches,
  TwinInputError,
  type TwinDriver,
  type TwinFactory,
} from '../contract.ts';
import { FaultInjector } from './faults.ts';
import {
  BodyTooLargeError,
  DEFAULT_BODY_LIMIT_BYTES,
  errorBody,
  headersOf,
  readBody,
  refuseUnread,
  RequestAbortedError,
  answerBytes,
  toFetchRequest,
  writeResponse,
} from './http.ts';
import {
  applyChanges,
  journalPath,
  stateChanges,
  StateJournal,
  writeInstance,
  type PersistedInstance,
} from './persistence.ts';
import { redactBody, redactPath } from './redact.ts';
import { correlationOf, LazyBody, RequestLog } from './request-log.ts';
import { assertSafeFormKey, parseJsonSafe, screenRequest } from './safe-json.ts';
import { randomToken, tokenMatchesHash } from './secrets.ts';
import { OriginRewriter, requestOrigin } from './origin.ts';

export interface TwinEntry {
  base_url: string;
  admin_url: string;
  env_vars: Record<string, string>;
}

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface InstanceOptions {
  factory: TwinFactory;
  sandboxId: string;
  dataDir: string;
  bindHost: string;
  publicHost: string;
  /** Largest request body read (default 1 MiB); larger ones get the vendor's 413 (`config.twinBodyBytes`). */
  bodyLimitBytes?: number;
  /** 0 for any free port; a previous port is tried first on restore. */
  port: number;
  adminTokenHash: string;
  seed: unknown;
  saved?: unknown;
  logger?: Logger;
  /** Also serve on this Unix socket: the router reaches a twin in a sandbox's network namespace this way. */
  socketPath?: string;
  /** Where browsers reach this instance (the router's URL for it); default: its own base URL. */
  publicUrl?: string;
  /**
   * The twin's own URL (what its env vars hand out and its answers are written with) is `publicUrl`, not
   * its loopback address: in a sandbox whose pod answers the public URL inside too (pod front door).
   */
  publicBase?: boolean;
  /**
   * true (the default): a change is in the fsynced journal before its request is answered. false: the
   * state is only snapshotted 20 ms after a change (what twins did before), kept for the benchmark's
   * comparison (bench/twins) and nothing else.
   */
  durableWrites?: boolean;
}

/** Without durable writes: how long after a change the snapshot is written. */
const SAVE_DEBOUNCE_MS = 20;
/** The journal is compacted into a new snapshot once it is larger than the last snapshot, or this. */
const MIN_COMPACT_BYTES = 256 * 1024;

/** One twin instance of one sandbox: its own port, driver, admin API, log, faults and state file. */
export class TwinInstance {
  private driver!: TwinDriver;
  private readonly faults = new FaultInjector();
  private readonly log = new RequestLog();
  private saveTimer: NodeJS.Timeout | undefined;
  private saving: Promise<void> = Promise.resolve();
  /** With durable writes: the journal of changes since the last snapshot. */
  private journal: StateJournal | undefined;
  /** The state as the snapshot plus the journal hold it (plain JSON): the next change is diffed to it. */
  private persisted: unknown;
  /** Bytes of the last snapshot written: the journal is compacted once it outgrows it. */
  private snapshotBytes = 0;
  private compacting: Promise<void> | undefined;
  private closed = false;
  private port = 0;
  /** Where the instance listens: `http://<host>:<port>`. */
  private baseUrl = '';
  /** The twin's own URL, rewritten in each answer to where its request came to (origin.ts). */
  private ownUrl = '';
  private rewriter!: OriginRewriter;
  private names: readonly string[] | undefined;

  /** The Unix-socket twin of `server`, when `socketPath` was given. */
  private socketServer: Server | undefined;
  /** Sockets the driver took over from an upgrade: a server's close() would wait for them forever. */
  private readonly upgraded = new Set<Duplex>();

  private constructor(
    private readonly opts: InstanceOptions,
    private readonly server: Server,
  ) {}

  static async start(opts: InstanceOptions): Promise<TwinInstance> {
    const server = createServer();
    // Keep-alive sockets would otherwise hold close() open until clients time out.
    server.keepAliveTimeout = 5_000;
    const instance = new TwinInstance(opts, server);
    instance.port = await listen(server, opts.bindHost, opts.port);
    instance.baseUrl = `http://${formatHost(opts.publicHost)}:${instance.port}`;
    instance.ownUrl = opts.publicBase && opts.publicUrl ? opts.publicUrl : instance.baseUrl;
    instance.rewriter = new OriginRewriter(instance.ownUrl, opts.factory.pages);
    try {
      instance.driver = await opts.factory.create({
        baseUrl: instance.ownUrl,
        publicUrl: opts.publicUrl ?? instance.baseUrl,
        seed: opts.seed,
        saved: opts.saved,
      });
    } catch (error) {
      await closeServer(server);
      throw error;
    }
    try {
      // Before any request is served: restored state (snapshot plus journal) becomes the new snapshot.
      if (opts.durableWrites === false) await instance.saveNow();
      else await instance.compact();
    } catch (error) {
      await closeServer(server);
      await instance.driver.close().catch(() => {});
      throw error;
    }
    server.on('request', (req, res) => void instance.onRequest(req, res));
    // `Expect: 100-continue`: Node would answer 100 itself before the credentials are checked; handled
    // here, the client is told to send its body only once they are (see sendContinue).
    server.on('checkContinue', (req, res) => void instance.onRequest(req, res));
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
      instance.onUpgrade(req, socket, head),
    );
    if (opts.socketPath) {
      const socketServer = createServer((req, res) => void instance.onRequest(req, res));
      socketServer.on('checkContinue', (req, res) => void instance.onRequest(req, res));
      socketServer.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
        instance.onUpgrade(req, socket, head),
      );
      socketServer.keepAliveTimeout = 5_000;
      await rm(opts.socketPath, { force: true });
      await new Promise<void>((resolve, reject) => {
        socketServer.once('error', reject);
        socketServer.listen(opts.socketPath, () => resolve());
      });
      instance.socketServer = socketServer;
    }
    return instance;
  }

  get name(): string {
    return this.opts.factory.name;
  }

  /** Where browsers reach this instance (the router's URL for it), when it was given one. */
  get publicUrl(): string | undefined {
    return this.opts.publicUrl;
  }

  /** The vendor's host names (patterns) and the public URL's host name this instance answers for. */
  hostNames(): readonly string[] {
    // Asked on every request the pod's front door routes: made once, not per request.
    this.names ??= [
      ...this.opts.factory.hosts,
      ...(this.opts.publicUrl ? [new URL(this.opts.publicUrl).hostname] : []),
    ];
    return this.names;
  }

  /** Whether a request for `hostname` (lower case, no port) is this twin's. */
  answersFor(hostname: string): boolean {
    return this.hostNames().some((pattern) => hostMatches(pattern, hostname));
  }

  entry(): TwinEntry {
    return {
      base_url: this.baseUrl,
      admin_url: `${this.baseUrl}${ADMIN_PREFIX}`,
      env_vars: this.driver.envVars(),
    };
  }

  /** Stops serving and flushes state to disk; the state file stays unless the host purges it. */
  async stop(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.saveTimer);
    for (const socket of this.upgraded) socket.destroy();
    await Promise.all([closeServer(this.server), this.socketServer && closeServer(this.socketServer)]);
    await this.driver.webhooks.close();
    if (this.journal) {
      // A last snapshot, with what changed outside requests (e.g. webhook delivery results) too.
      await this.compact().catch((error: unknown) => this.saveFailed(error));
      await this.journal.close();
    } else await this.saveNow();
    await this.driver.close();
  }

  /**
   * Makes the changes of a request (or admin call) durable before it is answered: the journal, in its
   * turn, diffs the driver's snapshot against the persisted state and appends the difference, fsynced
   * (shared by the requests waiting for that turn). Nothing changed, nothing written. Without durable
   * writes, schedules a snapshot instead.
   */
  private async commit(): Promise<void> {
    if (!this.journal) {
      this.scheduleSave();
      return;
    }
    try {
      await this.journal.commit();
    } catch (error) {
      // The change is in memory but not on disk: a new snapshot holds it (and starts a sound journal).
      // Once stopping, the stop's own snapshot does.
      if (!this.closed) void this.compact().catch((e: unknown) => this.saveFailed(e));
      throw new StateNotSavedError(error);
    }
    if (this.journal.bytes > Math.max(MIN_COMPACT_BYTES, this.snapshotBytes) && !this.compacting) {
      this.compacting = this.compact()
        .catch((error: unknown) => this.saveFailed(error))
        .finally(() => (this.compacting = undefined));
    }
  }

  /** A new snapshot of the whole state, and an empty journal after it; the first one starts the journal. */
  private async compact(): Promise<void> {
    if (this.journal) return this.journal.rotate();
    const path = journalPath(this.opts.dataDir, this.opts.sandboxId, this.name);
    this.journal = await StateJournal.start(path, {
      // Compared with the live snapshot, not a JSON copy of it: copying cost twice the comparison (every
      // driver's snapshot is plain JSON already; durability.test.ts checks it for each twin).
      changes: () => {
        const patch = stateChanges(this.persisted, this.driver.snapshot());
        if (patch.length) this.persisted = applyChanges(this.persisted, patch);
        return patch;
      },
      snapshot: async (logId) => {
        const state = plainJson(this.driver.snapshot());
        this.persisted = state;
        // Serialised now: later changes advance `persisted` in place, and their records follow this one.
        const text = JSON.stringify(this.record(state, logId));
        this.snapshotBytes = await writeInstance(this.opts.dataDir, this.opts.sandboxId, this.name, text);
      },
    });
  }

  private record(state: unknown, logId?: string): PersistedInstance {
    return {
      format: 1 as const,
      twin: this.name,
      sandbox_id: this.opts.sandboxId,
      port: this.port,
      admin_token_sha256: this.opts.adminTokenHash,
      ...(this.opts.publicUrl ? { public_url: this.opts.publicUrl } : {}),
      seed: this.opts.seed,
      state,
      saved_at: new Date().toISOString(),
      ...(logId ? { log_id: logId } : {}),
    };
  }

  private saveFailed(error: unknown): void {
    this.opts.logger?.error(
      { err: error, twin: this.name, sandbox_id: this.opts.sandboxId },
      'twin state save failed',
    );
  }

  private scheduleSave(): void {
    if (this.closed) return;
    clearTimeout(this.saveTimer);
    this.saveTimer = setTimeout(() => void this.saveNow(), SAVE_DEBOUNCE_MS);
  }

  /** Without durable writes: a snapshot of the state now. */
  private saveNow(): Promise<void> {
    const record = this.record(this.driver.snapshot());
    // Saves are serialised so an older snapshot can never overwrite a newer one.
    this.saving = this.saving
      .catch(() => {})
      .then(() => writeInstance(this.opts.dataDir, this.opts.sandboxId, this.name, JSON.stringify(record)))
      .then(
        () => {},
        (error: unknown) => this.saveFailed(error),
      );
    return this.saving;
  }

  /** Serves a request that reached this twin elsewhere (the pod's front door: the vendor's host, the public URL). */
  serve(req: IncomingMessage, res: ServerResponse): void {
    void this.onRequest(req, res);
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const path = req.url ?? '/';
    const pathname = path.split('?')[0] ?? '/';
    const method = req.method ?? 'GET';
    if (pathname === ADMIN_PREFIX || pathname.startsWith(`${ADMIN_PREFIX}/`)) {
      await this.onAdmin(req, res, pathname.slice(ADMIN_PREFIX.length) || '/', path);
      return;
    }
    let body: Buffer = Buffer.alloc(0);
    let response: Response;
    let faultLabel: string | undefined;
    // Until the body is read, a refusal has the rest of it to drop (refuseUnread).
    let read = false;
    /** Whether the request may change state, so that its change must be on disk before the answer. */
    let changes = false;
    const origin = requestOrigin(req, this.ownUrl);
    try {
      const url = requestUrl(origin, path);
      const headers = headersOf(req);
      const verdict = await this.driver.authorize({ method, url, headers });
      if (verdict instanceof Response) response = verdict;
      else {
        sendContinue(req, res);
        body = await readBody(req, this.bodyLimitBytes);
        read = true;
        changes = this.driver.changesState?.({ method, url, headers }, body) ?? changesStateByMethod(method);
        await screenRequest(url.searchParams, body, headers.get('content-type') ?? '', {
          jsonFormFields: this.driver.jsonFormFields,
        });
        const fault = this.faults.decide(method, pathname);
        if (fault?.latency_ms) await sleep(fault.latency_ms);
        if (fault?.rate_limit) {
          response = this.driver.faultResponse('rate_limit', 429);
          faultLabel = `rate_limit#${fault.id}`;
        } else if (fault?.status) {
          response = this.driver.faultResponse('status', fault.status);
          faultLabel = `status#${fault.id}`;
        } else {
          if (fault) faultLabel = `latency#${fault.id}`;
          response = await this.driver.handle(toFetchRequest(method, url, headers, body), verdict);
        }
      }
    } catch (error) {
      if (error instanceof RequestAbortedError) return;
      response = this.errorResponse(error, pathname);
    }
    let out: Buffer;
    try {
      out = await answerBytes(response);
    } catch (error) {
      response = this.errorResponse(error, pathname);
      out = await answerBytes(response);
    }
    // A write is answered only once its change is on disk (docs/twins.md, "Persistence and restart").
    if (changes) {
      try {
        await this.commit();
      } catch (error) {
        response = this.errorResponse(error, pathname);
        out = await answerBytes(response);
      }
    }
    if (res.headersSent || res.destroyed) return;
    // Copied only to be changed: a Response's own headers may be immutable (one a driver passed on from fetch).
    const outHeaders = origin === this.ownUrl && read ? response.headers : new Headers(response.headers);
    this.rewriter.headers(outHeaders, origin);
    out = this.rewriter.body(out, outHeaders.get('content-type') ?? '', origin);
    if (!read) await refuseUnread(req, res, outHeaders);
    if (res.destroyed) return;
    writeResponse(res, response.status, outHeaders, out);
    const known = this.driver.secrets();
    const requestType = req.headers['content-type'] ?? '';
    const responseType = response.headers.get('content-type') ?? '';
    this.log.add({
      at: new Date().toISOString(),
      method,
      path: redactPath(path, known),
      status: response.status,
      duration_ms: Math.round((performance.now() - started) * 100) / 100,
      // Redacted when first read, with the secrets known now (a token revoked later is still masked).
      request_body: new LazyBody(() => redactBody(body.toString('utf8'), requestType, known)),
      response_body: new LazyBody(() => redactBody(out.toString('utf8'), responseType, known)),
      ...(faultLabel ? { fault: faultLabel } : {}),
      ...correlationOf(req.headers),
    });
  }

  /**
   * An HTTP upgrade (a WebSocket) to this twin, from its port, its Unix socket or the pod's front door:
   * the driver takes the socket, or it is refused with an HTTP answer. Admin routes take no upgrade.
   */
  onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    // A peer that resets the connection before the answer is written must not crash the host.
    socket.on('error', () => socket.destroy());
    const path = req.url ?? '/';
    const pathname = path.split('?')[0] ?? '/';
    let refusal: Response | undefined;
    try {
      const url = requestUrl(requestOrigin(req, this.ownUrl), path);
      const admin = pathname === ADMIN_PREFIX || pathname.startsWith(`${ADMIN_PREFIX}/`);
      if (this.closed || admin || !this.driver.upgrade) {
        refusal = jsonAnswer(404, errorBody(404, `no WebSocket endpoint at ${pathname}`));
      } else {
        this.upgraded.add(socket);
        socket.once('close', () => this.upgraded.delete(socket));
        refusal = this.driver.upgrade(req, socket, head, url);
      }
    } catch (error) {
      refusal =
        error instanceof TwinInputError
          ? jsonAnswer(error.status, errorBody(error.status, error.message))
          : this.errorResponse(error, pathname);
    }
    if (refusal) void writeRefusal(socket, refusal);
  }

  private get bodyLimitBytes(): number {
    return this.opts.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  }

  /** Bad input is the vendor's 4xx; anything else is our bug, logged and answered in the vendor's 500 shape. */
  private errorResponse(error: unknown, pathname: string): Response {
    if (error instanceof BodyTooLargeError) {
      return this.driver.errorResponse(413, error.message, 'too_large');
    }
    if (error instanceof TwinInputError) {
      return this.driver.errorResponse(error.status, error.message, error.code);
    }
    this.opts.logger?.error({ err: error, twin: this.name, path: pathname }, 'twin request failed');
    return this.driver.errorResponse(500, 'internal error');
  }

  private async onAdmin(
    req: IncomingMessage,
    res: ServerResponse,
    subpath: string,
    path: string,
  ): Promise<void> {
    const send = (status: number, body: unknown, unread = false) => {
      const headers = new Headers({ 'content-type': 'application/json; charset=utf-8' });
      const write = () => {
        if (!res.destroyed) writeResponse(res, status, headers, Buffer.from(JSON.stringify(body)));
      };
      if (unread) void refuseUnread(req, res, headers).then(write);
      else write();
    };
    // The token is checked before any of the body is read.
    const presented = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim() ?? '';
    if (!presented || !tokenMatchesHash(presented, this.opts.adminTokenHash)) {
      send(401, errorBody(401, 'A valid admin token for this sandbox is required'), true);
      return;
    }
    let rawBody: Buffer;
    try {
      sendContinue(req, res);
      rawBody = await readBody(req, this.bodyLimitBytes);
    } catch (error) {
      if (error instanceof BodyTooLargeError) send(413, errorBody(413, error.message), true);
      else req.socket?.destroy();
      return;
    }
    try {
      const body = rawBody.length ? parseJsonSafe(rawBody.toString('utf8')) : undefined;
      const query = new URL(path, 'http://x').searchParams;
      for (const key of query.keys()) assertSafeFormKey(key);
      const result = await routeAdmin(
        {
          factory: this.opts.factory,
          driver: () => this.driver,
          faults: this.faults,
          log: this.log,
          info: () => ({ twin: this.name, sandbox_id: this.opts.sandboxId, ...this.entry() }),
          changed: () => this.commit(),
          reset: async () => {
            await this.driver.reset();
            this.log.clear();
            this.faults.clear();
            await this.commit();
          },
          applySeed: async (seed) => {
            await this.driver.applySeed(seed);
            await this.commit();
          },
          defaultWebhookSecret: () => {
            const name = this.opts.factory.webhook?.secretVar;
            return (name && this.driver.envVars()[name]) || randomToken('whsec_');
          },
        },
        req.method ?? 'GET',
        subpath.replace(/\/$/, '') || '/',
        query,
        body,
      );
      send(result.status, result.body);
    } catch (error) {
      if (error instanceof TwinInputError) {
        const message = error.code === 'invalid_json' ? 'request body must be JSON' : error.message;
        send(error.status, errorBody(error.status, message));
      } else {
        this.opts.logger?.error({ err: error, twin: this.name }, 'twin admin request failed');
        send(400, errorBody(400, error instanceof Error ? error.message : 'invalid request'));
      }
    }
  }
}

/** The URL a twin sees: origin-form targets only, so `//host/...` or `http://host/...` cannot change its host. */
function requestUrl(baseUrl: string, path: string): URL {
  if (path.startsWith('/') && !path.startsWith('//')) {
    try {
      return new URL(`${baseUrl}${path}`);
    } catch {
      // falls through to the refusal
    }
  }
  throw new TwinInputError(400, 'the request target must be a path', 'invalid_target');
}

function formatHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

function listenOnce(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}

/** Listens on the wanted port, or any free port when that one is taken (URLs are then re-issued). */
async function listen(server: Server, host: string, port: number): Promise<number> {
  if (port === 0) return listenOnce(server, host, 0);
  try {
    return await listenOnce(server, host, port);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    return listenOnce(server, host, 0);
  }
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve();
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

function jsonAnswer(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}

/** An upgrade refused: a plain HTTP/1.1 answer on the raw socket, which then closes. */
async function writeRefusal(socket: Duplex, response: Response): Promise<void> {
  const body = Buffer.from(await response.arrayBuffer());
  const lines = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}`];
  for (const [name, value] of response.headers) {
    if (name !== 'content-length' && name !== 'connection') lines.push(`${name}: ${value}`);
  }
  lines.push(`content-length: ${body.length}`, 'connection: close', '', '');
  if (!socket.destroyed) socket.end(Buffer.concat([Buffer.from(lines.join('\r\n')), body]));
}

/** Tells a client waiting on `Expect: 100-continue` to send its body; only after its credentials passed. */
function sendContinue(req: IncomingMessage, res: ServerResponse): void {
  if (/100-continue/i.test(req.headers.expect ?? '')) res.writeContinue();
}

/** The state as JSON keeps it: what is diffed and persisted, detached from the driver's live objects. */
function plainJson(value: unknown): unknown {
  const text = JSON.stringify(value);
  return text === undefined ? null : (JSON.parse(text) as unknown);
}

/** A change was made in memory but its journal record could not be written: the request gets a 500. */
export class StateNotSavedError extends Error {
  constructor(cause: unknown) {
    super('the twin could not write the change to disk', { cause });
    this.name = 'StateNotSavedError';
  }
}
