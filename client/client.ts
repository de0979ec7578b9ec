import { SandboxWaitError, TwinboxApiError, TwinSetWaitError } from './errors.ts';
import type {
  ApiKeyInfo,
  CreateSandboxRequest,
  CreateTwinSetRequest,
  ErrorBody,
  ListSandboxesQuery,
  LogChunk,
  Me,
  NewApiKey,
  Sandbox,
  SandboxPage,
  SandboxStatus,
  SignedIn,
  ListTwinSetsQuery,
  TwinSet,
  TwinSetPage,
} from './types.ts';

export * from './types.ts';
export { SandboxWaitError, TwinboxApiError, TwinSetWaitError } from './errors.ts';

export interface TwinboxClientOptions {
  /** e.g. `http://127.0.0.1:3000` (a local `npm start`); a trailing slash is fine. */
  baseUrl: string;
  /** An API key (`twinbox_sk_...`) or a session JWT; omitted only for the sign-in calls. */
  apiKey?: string;
  /** Sent as `User-Agent`, so server logs tell the Action, the CLI and scripts apart. */
  userAgent?: string;
}

export interface WaitOptions<T = Sandbox> {
  timeoutMs: number;
  /** Called after every poll with the sandbox (or twin set) as it is now. */
  onProgress?: (current: T, elapsedMs: number) => void;
  /** First delay between polls; it doubles up to `maxDelayMs`. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  signal?: AbortSignal;
}

export interface FollowOptions {
  /** Where to start (an earlier chunk's `next`); by default the whole log that is kept. */
  offset?: number;
  /** Between polls; 1 s by default. */
  intervalMs?: number;
  /** How long Twinbox may be unreachable or answer 5xx before following gives up; 2 min by default. */
  maxOutageMs?: number;
  signal?: AbortSignal;
}

/** A chunk of a followed log, with what happened since the one before. */
export interface FollowedChunk extends LogChunk {
  /**
   * Bytes between the offset asked for and `start`: more than zero when output was dropped before it
   * could be read (the log keeps the last 1 MiB); below zero when the log is shorter than the offset
   * (Twinbox restarted and counts from what its files hold).
   */
  gap: number;
}

const ENDED: ReadonlySet<SandboxStatus> = new Set(['failed', 'expired', 'deleted']);

/** A typed client of Twinbox's public HTTP API (docs/api.md), on the global `fetch`. */
export class TwinboxClient {
  readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  private readonly userAgent: string;

  constructor(options: TwinboxClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.userAgent = options.userAgent ?? 'twinbox-client';
  }

  createSandbox(request: CreateSandboxRequest): Promise<Sandbox> {
    return this.json('POST', '/sandboxes', request);
  }

  getSandbox(id: string): Promise<Sandbox> {
    return this.json('GET', `/sandboxes/${encodeURIComponent(id)}`);
  }

  listSandboxes(query: ListSandboxesQuery = {}): Promise<SandboxPage> {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query))
      if (value !== undefined) params.set(name, String(value));
    const search = params.size ? `?${params}` : '';
    return this.json('GET', `/sandboxes${search}`);
  }

  /** Every sandbox matching `query`, following `next_cursor` page by page. */
  async *allSandboxes(query: Omit<ListSandboxesQuery, 'cursor'> = {}): AsyncGenerator<Sandbox> {
    let cursor: string | undefined;
    do {
      const page = await this.listSandboxes({ ...query, cursor });
      yield* page.sandboxes;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  deleteSandbox(id: string): Promise<Sandbox> {
    return this.json('DELETE', `/sandboxes/${encodeURIComponent(id)}`);
  }

  /** Starts twins alone, with no repository or app (`POST /twin-sets`). */
  createTwinSet(request: CreateTwinSetRequest): Promise<TwinSet> {
    return this.json('POST', '/twin-sets', request);
  }

  getTwinSet(id: string): Promise<TwinSet> {
    return this.json('GET', `/twin-sets/${encodeURIComponent(id)}`);
  }

  listTwinSets(query: ListTwinSetsQuery = {}): Promise<TwinSetPage> {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query))
      if (value !== undefined) params.set(name, String(value));
    const search = params.size ? `?${params}` : '';
    return this.json('GET', `/twin-sets${search}`);
  }

  deleteTwinSet(id: string): Promise<TwinSet> {
    return this.json('DELETE', `/twin-sets/${encodeURIComponent(id)}`);
  }

  /** What starting the twin set's twins printed, as text. */
  async twinSetLogs(id: string): Promise<string> {
    const response = await this.request('GET', `/twin-sets/${encodeURIComponent(id)}/logs`);
    return response.text();
  }

  /** `waitUntilReady` for a twin set: its twins start in seconds, so polls start at 250 ms. */
  waitUntilTwinSetReady(id: string, options: WaitOptions<TwinSet>): Promise<TwinSet> {
    return this.poll(
      `twin set ${id}`,
      () => this.getTwinSet(id),
      { initialDelayMs: 250, ...options },
      (last, timedOut) => {
        const what = `Twin set ${id}`;
        if (timedOut)
          return new TwinSetWaitError(
            'timeout',
            last,
            `${what} was not ready after ${formatDuration(options.timeoutMs)} (status: ${last.status}).`,
          );
        return new TwinSetWaitError(
          last.status as Exclude<SandboxStatus, 'queued' | 'building' | 'ready'>,
          last,
          last.status === 'failed'
            ? `${what} failed: ${last.error ?? 'no reason given'}`
            : last.status === 'expired'
              ? `${what} expired (its TTL ran out) before it was ready.`
              : `${what} was deleted before it was ready.`,
        );
      },
    );
  }

  /** The sandbox's install, build and app output, as text. */
  async sandboxLogs(id: string): Promise<string> {
    const response = await this.request('GET', `/sandboxes/${encodeURIComponent(id)}/logs`);
    return response.text();
  }

  /** The log from byte `offset` on (everything kept without one), with the offset to ask from next. */
  async sandboxLogsFrom(id: string, offset?: number): Promise<LogChunk> {
    const query = offset === undefined ? '' : `?offset=${offset}`;
    const response = await this.request('GET', `/sandboxes/${encodeURIComponent(id)}/logs${query}`);
    const text = await response.text();
    const header = (name: string) => response.headers.get(name);
    const start = Number(header('x-log-start'));
    const next = Number(header('x-log-offset'));
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(next)) {
      throw new TwinboxApiError(
        0,
        'unsupported',
        `${this.baseUrl} does not support following logs (no X-Log-Offset header): it is an older Twinbox.`,
      );
    }
    return { text, start, next, complete: header('x-log-complete') === 'true' };
  }

  /**
   * The log as it grows, a chunk per poll (empty chunks included, so callers can tell it is alive),
   * until the sandbox has ended and its log is complete. Polling with offsets: each poll sends only
   * what is new. Server errors and network failures are retried, for up to `maxOutageMs` in a row.
   */
  async *followSandboxLogs(id: string, options: FollowOptions = {}): AsyncGenerator<FollowedChunk> {
    const interval = options.intervalMs ?? 1000;
    const maxOutage = options.maxOutageMs ?? 120_000;
    let offset = options.offset;
    let failingSince: number | undefined;
    for (;;) {
      options.signal?.throwIfAborted();
      let chunk: LogChunk;
      try {
        chunk = await this.sandboxLogsFrom(id, offset);
        failingSince = undefined;
      } catch (error) {
        if (!(error instanceof TwinboxApiError) || !(error.status === 0 || error.status >= 500)) throw error;
        if (error.code === 'unsupported') throw error;
        failingSince ??= Date.now();
        if (Date.now() - failingSince > maxOutage) throw error;
        await sleep(interval, options.signal);
        continue;
      }
      yield { ...chunk, gap: offset === undefined ? 0 : chunk.start - offset };
      if (chunk.complete) return;
      offset = chunk.next;
      await sleep(interval, options.signal);
    }
  }

  /** The account the client's token belongs to (`GET /me`). */
  me(): Promise<Me> {
    return this.json('GET', '/me');
  }

  /** Revokes the API key the client uses (`DELETE /api-keys/current`): signing out for good. */
  revokeCurrentApiKey(): Promise<ApiKeyInfo> {
    return this.json('DELETE', '/api-keys/current');
  }

  /** Mails a sign-in code to `email` (the same answer whether or not it has an account). */
  async requestLoginCode(email: string): Promise<void> {
    await this.request('POST', '/auth/email/login', { email });
  }

  verifyLoginCode(email: string, code: string): Promise<SignedIn> {
    return this.json('POST', '/auth/email/login/verify', { email, code });
  }

  /** Needs a session token as the client's key: API keys cannot mint API keys. */
  createApiKey(name?: string): Promise<NewApiKey> {
    return this.json('POST', '/api-keys', name ? { name } : {});
  }

  /**
   * Polls until the sandbox is `ready` and returns it. Polls back off (500 ms doubling to 5 s by
   * default) so a long build costs a few requests a minute. A sandbox that fails, expires or is deleted
   * ends the wait with a SandboxWaitError, and so does the timeout. Server errors (5xx) and network
   * failures are retried until the timeout: a deploy that takes minutes should outlive a proxy blip.
   */
  async waitUntilReady(id: string, options: WaitOptions): Promise<Sandbox> {
    return this.poll(
      `sandbox ${id}`,
      () => this.getSandbox(id),
      options,
      (last, timedOut) =>
        timedOut
          ? new SandboxWaitError(
              'timeout',
              last,
              `Sandbox ${id} was not ready after ${formatDuration(options.timeoutMs)} (status: ${last.status}).`,
            )
          : endedError(last),
    );
  }

  /** The polling both waits share; `failure` words the end that is not `ready` (or the timeout). */
  private async poll<T extends { status: SandboxStatus }>(
    what: string,
    read: () => Promise<T>,
    options: WaitOptions<T>,
    failure: (last: T, timedOut: boolean) => Error,
  ): Promise<T> {
    const started = Date.now();
    let delay = options.initialDelayMs ?? 500;
    const maxDelay = options.maxDelayMs ?? 5000;
    let last: T | undefined;
    for (;;) {
      options.signal?.throwIfAborted();
      try {
        last = await read();
      } catch (error) {
        if (!(error instanceof TwinboxApiError) || !(error.status === 0 || error.status >= 500)) throw error;
      }
      const elapsed = Date.now() - started;
      if (last) {
        options.onProgress?.(last, elapsed);
        if (last.status === 'ready') return last;
        if (ENDED.has(last.status)) throw failure(last, false);
      }
      const remaining = options.timeoutMs - elapsed;
      if (remaining <= 0) {
        if (!last) throw new TwinboxApiError(0, 'timeout', `Could not read ${what} before the timeout.`);
        throw failure(last, true);
      }
      await sleep(Math.min(delay, remaining), options.signal);
      delay = Math.min(delay * 2, maxDelay);
    }
  }

  private async json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.request(method, path, body);
    return (await response.json()) as T;
  }

  private async request(method: string, path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': this.userAgent };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      const reason = (error as { cause?: { code?: string; message?: string } }).cause;
      const why = reason?.code ?? reason?.message ?? (error as Error).message;
      throw new TwinboxApiError(
        0,
        'network_error',
        `Could not reach Twinbox at ${this.baseUrl} (${why}).`,
        undefined,
        {
          cause: error,
        },
      );
    }
    if (!response.ok) throw await apiError(response);
    return response;
  }
}

/** The API's error body, or a stand-in with the status text when a proxy answered with something else. */
async function apiError(response: Response): Promise<TwinboxApiError> {
  const text = await response.text();
  let body: Partial<ErrorBody> | undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object') body = parsed as Partial<ErrorBody>;
  } catch {
    // not JSON: fall through to the status line
  }
  const detail =
    body?.detail ??
    body?.message ??
    (text.trim().slice(0, 200) || `${response.status} ${response.statusText}`);
  return new TwinboxApiError(response.status, body?.code, detail, body);
}

function endedError(sandbox: Sandbox): SandboxWaitError {
  const id = sandbox.sandbox_id;
  switch (sandbox.status) {
    case 'failed':
      return new SandboxWaitError(
        'failed',
        sandbox,
        `Sandbox ${id} failed: ${sandbox.error ?? 'no reason given'}`,
      );
    case 'expired':
      return new SandboxWaitError(
        'expired',
        sandbox,
        `Sandbox ${id} expired (its TTL ran out) before it was ready.`,
      );
    default:
      return new SandboxWaitError('deleted', sandbox, `Sandbox ${id} was deleted before it was ready.`);
  }
}

export function formatDuration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  return seconds % 60 ? `${minutes}m ${seconds % 60}s` : `${minutes}m`;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
