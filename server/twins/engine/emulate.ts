/**
 * Adapter over the `emulate` package (vercel-labs/emulate, pinned at 0.12.2).
 *
 * Its public API starts a built-in service behind its own HTTP server and exposes only `reset()` and
 * `close()`: no state snapshot, no persistence and no way to add routes. We need all three, so we load
 * the service's plugin module (the same module instance `emulate` itself loads) and wrap its `register`
 * to capture the Hono app, the store, the webhook dispatcher and the token map of each emulator we create.
 * We then serve `app.fetch` from our own instance server and close the engine's listener.
 * Why this and not a fork: it keeps the engine's routes, seeding and auth exactly as shipped, and the
 * version is pinned, so the one internal we rely on (plugin.register's arguments) cannot drift.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { createEmulator, type SeedConfig } from 'emulate';

export type EngineService =
  | 'github'
  | 'stripe'
  | 'slack'
  | 'resend'
  | 'twilio'
  | 'linear'
  | 'clerk'
  | 'vercel'
  | 'aws'
  | 'google'
  | 'microsoft'
  | 'okta'
  | 'mongoatlas'
  | 'apple';

export interface EngineRecord {
  id: number;
  created_at: string;
  updated_at: string;
  [key: string]: unknown;
}

export interface EngineCollection<T extends EngineRecord = EngineRecord> {
  insert(data: Partial<T> & Record<string, unknown>): T;
  get(id: number): T | undefined;
  findBy(field: string, value: unknown): T[];
  findOneBy(field: string, value: unknown): T | undefined;
  update(id: number, data: Record<string, unknown>): T | undefined;
  delete(id: number): boolean;
  all(): T[];
}

export interface EngineStoreSnapshot {
  collections: Record<string, unknown>;
  data: Record<string, unknown>;
}

export interface EngineStore {
  collection<T extends EngineRecord = EngineRecord>(
    name: string,
    indexFields?: string[],
  ): EngineCollection<T>;
  getData<T>(key: string): T | undefined;
  setData(key: string, value: unknown): void;
  snapshot(): EngineStoreSnapshot;
  restore(snapshot: EngineStoreSnapshot): void;
}

/** The subset of the engine's request context our extension routes use. */
export interface EngineContext {
  req: {
    param(name: string): string;
    query(name: string): string | undefined;
    header(name: string): string | undefined;
    json<T = unknown>(): Promise<T>;
    url: string;
  };
  get(key: string): unknown;
  json(data: unknown, status?: number, headers?: Record<string, string>): Response;
}

export type EngineHandler = (c: EngineContext) => Response | Promise<Response>;

export interface EngineApp {
  fetch(request: Request): Promise<Response>;
  get(path: string, handler: EngineHandler): unknown;
  post(path: string, handler: EngineHandler): unknown;
  delete(path: string, handler: EngineHandler): unknown;
}

/** The engine's app as its own class exposes it (a Hono app), to build the priority app of the same kind. */
interface HonoLike extends EngineApp {
  use(
    path: string,
    handler: (c: HonoContext, next: () => Promise<void>) => Promise<Response | void>,
  ): unknown;
  notFound(handler: () => Response): unknown;
}

interface HonoContext extends EngineContext {
  req: EngineContext['req'] & { raw: Request };
  set(key: string, value: unknown): void;
}

export interface EngineWebhooks {
  dispatch(
    event: string,
    action: string | undefined,
    payload: unknown,
    owner: string,
    repo?: string,
  ): Promise<void>;
}

export interface EngineTokenUser {
  login: string;
  id: number;
  scopes?: string[];
  [key: string]: unknown;
}

export interface Engine {
  app: EngineApp;
  /**
   * Routes that take precedence over the engine's own: a path the engine also matches (its
   * `/repos/:owner/:repo/commits/:ref{.+}` takes `/commits/{ref}/status`) can only be served here. They run
   * after the engine's auth middleware and see its `authUser`; a request none of them matches goes on to
   * the engine's routes.
   */
  priority: EngineApp;
  store: EngineStore;
  webhooks: EngineWebhooks;
  tokenMap: Map<string, EngineTokenUser>;
  /** The plugin module's `seedFromConfig`, to add seed objects to a running engine. */
  seedFromConfig(config: unknown): void;
  /** Engine reset: clears the store and re-applies the engine-level seed. */
  reset(): void;
  /**
   * How many writes the store has taken (inserts, updates, deletes, clears, restores, `setData`, resets),
   * from any caller: the engine's routes, its webhook deliveries, the twin's own code. Equal counts mean
   * an unchanged store, so an answer built from it may be reused (KeptAnswers, engine/kept-answers.ts).
   */
  writes(): number;
}

interface PluginModule {
  plugin: { register: (...args: unknown[]) => void };
  seedFromConfig?: (store: EngineStore, baseUrl: string, config: unknown, webhooks?: unknown) => void;
}

/** What a collection does that changes it; each call counts as a write (countWrites). */
const COLLECTION_WRITES = ['insert', 'update', 'delete', 'clear', 'restore'] as const;
const STORE_WRITES = ['setData', 'reset', 'restore'] as const;

/**
 * Counts the writes of one engine's store, by wrapping its write methods on the store and on each
 * collection it hands out (the engine's routes get theirs through `collection`, as ours do; the
 * store's own reset and restore reach the collections through the same wrapped methods). Done when
 * the store is captured, before the engine registers its routes or seeds, so no collection escapes.
 * Each collection's inserts also take their stamps from one clock per store (stampInOrder).
 */
function countWrites(store: EngineStore): () => number {
  let writes = 0;
  const counted = new WeakSet<object>();
  const wrap = (target: object, names: readonly string[]) => {
    const methods = target as Record<string, unknown>;
    for (const name of names) {
      const original = methods[name];
      if (typeof original !== 'function') continue;
      methods[name] = function (this: unknown, ...args: unknown[]) {
        writes++;
        return (original as (...a: unknown[]) => unknown).apply(this, args);
      };
    }
  };
  const clock = { last: 0 };
  const collection = store.collection.bind(store);
  store.collection = ((name: string, indexFields?: string[]) => {
    const found = collection(name, indexFields);
    if (!counted.has(found)) {
      counted.add(found);
      wrap(found, COLLECTION_WRITES);
      stampInOrder(found, clock);
    }
    return found;
  }) as EngineStore['collection'];
  wrap(store, STORE_WRITES);
  return () => writes;
}

/**
 * The engine stamps an insert's `created_at` with the wall clock in milliseconds, and sorts its lists
 * by that stamp alone, keeping ties in insertion order whatever the direction. Two issues made within
 * one millisecond (a seed applied, a reset replayed) then listed oldest first under GitHub's default
 * `sort=created&direction=desc`. One clock per store makes every insert's stamp later than the one
 * before, so a list by creation time is in creation order, as the vendors' are (their ids grow with time).
 */
function stampInOrder(target: EngineCollection, clock: { last: number }): void {
  const insert = target.insert;
  target.insert = function (this: unknown, data) {
    const item = insert.call(this, data);
    let at = Date.parse(item.created_at);
    if (!Number.isFinite(at)) return item;
    if (at <= clock.last) {
      at = clock.last + 1;
      item.created_at = item.updated_at = new Date(at).toISOString();
    }
    clock.last = at;
    return item;
  };
}

interface Captured {
  writes: () => number;
  app: EngineApp;
  priority: EngineApp;
  store: EngineStore;
  webhooks: EngineWebhooks;
  tokenMap: Map<string, EngineTokenUser>;
}

const modules = new Map<EngineService, Promise<PluginModule>>();
/** Emulators being created, keyed by their base URL (unique: one port per instance). */
const pending = new Map<string, (captured: Captured) => void>();

/**
 * Finds the chunk file of a built-in service in emulate's registry (`<service>: { ... import("./dist-X.js")`)
 * rather than hard-coding the hashed name, so a rebuilt 0.12.x with new hashes still loads.
 */
async function loadPlugin(service: EngineService): Promise<PluginModule> {
  const apiUrl = import.meta.resolve('emulate');
  const source = await readFile(fileURLToPath(apiUrl), 'utf8');
  const match = new RegExp(`\\n  ${service}: \\{[\\s\\S]*?import\\("\\./(dist-[\\w-]+\\.js)"\\)`).exec(
    source,
  );
  if (!match?.[1]) throw new Error(`emulate: cannot locate the ${service} service module`);
  const mod = (await import(new URL(`./${match[1]}`, apiUrl).href)) as Record<string, unknown>;
  const plugin = mod[`${service}Plugin`] as PluginModule['plugin'] | undefined;
  if (!plugin || typeof plugin.register !== 'function')
    throw new Error(`emulate: ${service} plugin not found`);
  const original = plugin.register;
  plugin.register = function (this: unknown, ...args: unknown[]) {
    const [app, store, webhooks, baseUrl, tokenMap] = args as [
      EngineApp,
      EngineStore,
      EngineWebhooks,
      string,
      Map<string, EngineTokenUser>,
    ];
    const capture = pending.get(baseUrl);
    if (capture) {
      // Before priorityRoutes adds its own middleware after it. The bare engine (a benchmark's baseline,
      // startBareEngine) keeps the engine as shipped.
      if (service !== 'github') dropRateLimiter(app as unknown as EngineMiddlewares, service);
      capture({
        app,
        priority: priorityRoutes(app as HonoLike),
        store,
        webhooks,
        tokenMap,
        writes: countWrites(store),
      });
    }
    return original.apply(this, args);
  };
  return { plugin, seedFromConfig: mod.seedFromConfig as PluginModule['seedFromConfig'] };
}

/** emulate's app keeps its middleware in order, each an entry with its handlers. */
interface EngineMiddlewares {
  middleware?: Array<{ handlers: unknown[] }>;
}

/**
 * emulate puts GitHub's rate limit in front of every service's routes: 5,000 calls an hour per token, then
 * GitHub's 403 "API rate limit exceeded", and GitHub's `X-RateLimit-*` headers on every answer. Only
 * GitHub does that; the other vendors limit in their own ways (each twin's `rate_limit` fault answers as
 * its vendor does), so a Twilio or Google twin refused its 5,000th call of an hour where the vendor
 * answers. It is the middleware the engine adds last before the service registers its routes, and is
 * taken out for every service but GitHub; it is recognised by its text, so that an engine version where
 * it is not the last one fails the twin's start instead of losing another middleware.
 */
function dropRateLimiter(app: EngineMiddlewares, service: EngineService): void {
  const list = app.middleware;
  const last = list?.at(-1);
  if (!list || !last?.handlers.some((handler) => String(handler).includes('X-RateLimit-Limit')))
    throw new Error(`emulate: the ${service} engine's rate limiter is not where this Twinbox expects it`);
  list.pop();
}

const UNMATCHED = 'x-twinbox-unmatched';

/**
 * A second app of the engine's own class, consulted by a middleware added before the service's routes
 * (so after the engine's auth): what it serves is answered, anything else falls through to the engine.
 */
function priorityRoutes(app: HonoLike): EngineApp {
  const priority = new (app.constructor as new () => HonoLike)();
  const outer = new WeakMap<Request, HonoContext>();
  // The paths registered, as expressions: most requests match none and skip the second app entirely.
  const paths: RegExp[] = [];
  const recorded = (method: 'get' | 'post' | 'delete') => {
    const register = priority[method].bind(priority);
    return (path: string, handler: EngineHandler) => {
      const source = path
        .split('/')
        .map((part) =>
          part.startsWith(':')
            ? part.endsWith('{.+}')
              ? '.+'
              : '[^/]+'
            : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
        )
        .join('/');
      paths.push(new RegExp(`^${source}$`));
      return register(path, handler);
    };
  };
  priority.notFound(() => new Response(null, { status: 404, headers: { [UNMATCHED]: '1' } }));
  priority.use('*', async (c, next) => {
    const from = outer.get(c.req.raw);
    for (const key of ['authUser', 'authToken', 'authScopes', 'authApp']) {
      const value = from?.get(key);
      if (value !== undefined) c.set(key, value);
    }
    await next();
  });
  app.use('*', async (c, next) => {
    const path = new URL(c.req.url).pathname;
    if (!paths.some((p) => p.test(path))) return next();
    outer.set(c.req.raw, c);
    const response = await priority.fetch(c.req.raw);
    if (response.headers.has(UNMATCHED)) return next();
    return response;
  });
  return {
    fetch: (r) => priority.fetch(r),
    get: recorded('get'),
    post: recorded('post'),
    delete: recorded('delete'),
  };
}

function plugin(service: EngineService): Promise<PluginModule> {
  let loading = modules.get(service);
  if (!loading) {
    loading = loadPlugin(service);
    modules.set(service, loading);
  }
  return loading;
}

/** Starts one engine emulator whose absolute URLs use `baseUrl`; it does not keep a listener of its own. */
export async function startEngine(
  service: EngineService,
  baseUrl: string,
  seed: SeedConfig,
): Promise<Engine> {
  const mod = await plugin(service);
  let captured: Captured | undefined;
  pending.set(baseUrl, (c) => (captured = c));
  let emulator;
  try {
    emulator = await createEmulator({ service, port: 0, hostname: '127.0.0.1', baseUrl, seed });
  } finally {
    pending.delete(baseUrl);
  }
  // Our instance server calls app.fetch directly; the engine's own listener would only hold a port.
  await emulator.close();
  if (!captured) throw new Error(`emulate: ${service} engine was not captured`);
  const { store } = captured;
  return {
    ...captured,
    seedFromConfig: (config) => mod.seedFromConfig?.(store, baseUrl, config, captured!.webhooks),
    reset: () => emulator.reset(),
  };
}

/** Starts the engine bare, with its own listener, exactly as `emulate` users would (bench baseline). */
export async function startBareEngine(service: EngineService, seed?: SeedConfig) {
  return createEmulator({ service, port: 0, hostname: '127.0.0.1', seed });
}
