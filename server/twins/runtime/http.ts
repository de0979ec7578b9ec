import type { IncomingMessage, ServerResponse } from 'node:http';

/** Default cap on a twin request body (`bodyLimitBytes`, `TWINBOX_TWIN_BODY_BYTES`). */
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

export class BodyTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`request body is larger than ${limitBytes} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

/** The client went away before its body was read: nothing to answer. */
export class RequestAbortedError extends Error {
  constructor() {
    super('request closed before its body was read');
    this.name = 'RequestAbortedError';
  }
}

/** The declared `content-length`, or undefined when absent or not a plain number (chunked bodies). */
export function declaredLength(req: IncomingMessage): number | undefined {
  const raw = req.headers['content-length'];
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : undefined;
}

/**
 * Reads a body of at most `limitBytes`: a declared length over the cap is refused before anything is
 * read, and a chunked body stops being read at the first chunk past the cap (BodyTooLargeError either way).
 */
export function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > limitBytes) {
    return Promise.reject(new BodyTooLargeError(limitBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    // Stops reading without destroying the request, so the 413 can still be written on its socket.
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        cleanup();
        req.pause();
        reject(new BodyTooLargeError(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const onClose = () => {
      cleanup();
      reject(new RequestAbortedError());
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/**
 * What a twin does with the unread body of a request it refuses (413 over the cap, 401 before reading).
 * The refusal is written at once. Closing the connection while the body still arrives makes the sender's
 * next write fail (EPIPE on the router's Unix socket, a reset over TCP), and a client or proxy that sees
 * that error first loses the answer: the router reported a 502 instead of the twin's 413. So a body whose
 * rest is at most REFUSED_BODY_DRAIN_BYTES (declared so, or chunked) is read to its end and dropped, and
 * the connection stays usable; a chunked one found larger is cut there, long after the answer went out. A
 * body declared larger is not read at all (a flood costs nothing): `Connection: close`, closed once the
 * answer is written, as before. A sender slower than REFUSED_BODY_DRAIN_MS is cut.
 */
export const REFUSED_BODY_DRAIN_BYTES = 4 * 1024 * 1024;
export const REFUSED_BODY_DRAIN_MS = 15_000;

/**
 * Call before a refusal is written for a request whose body may still be on the wire (see above); write
 * the refusal once it resolves, unless the socket is gone by then. A client that asked for
 * `Connection: close` has its body drained before the answer: Node closes such a connection as soon as
 * the answer is written, and closing with the body still arriving resets it (the client's write fails with
 * EPIPE before it reads the answer). A keep-alive client gets the answer at once, with the drain after it.
 */
export function refuseUnread(req: IncomingMessage, res: ServerResponse, headers: Headers): Promise<void> {
  if (req.complete) return Promise.resolve();
  const declared = declaredLength(req);
  if (declared !== undefined && declared > REFUSED_BODY_DRAIN_BYTES) {
    headers.set('connection', 'close');
    res.once('finish', () => req.socket?.destroy());
    return Promise.resolve();
  }
  // A client waiting for 100 Continue (never sent to a refused request) sends no body to drain.
  const waitsForContinue = /100-continue/i.test(String(req.headers.expect ?? ''));
  return new Promise((resolve) => {
    let dropped = 0;
    const cut = () => {
      stop();
      req.socket?.destroy();
    };
    // Unref'd: the drain bounds a connection's life; it is no reason for a process to live on. A body
    // that stops arriving runs this timer its full 15 s (test/router/edges left 40 of them, which kept its
    // process alive 15 s after its last test).
    const timer = setTimeout(cut, REFUSED_BODY_DRAIN_MS).unref();
    const onData = (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > REFUSED_BODY_DRAIN_BYTES) cut();
    };
    const stop = () => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', stop);
      req.off('close', stop);
      resolve();
    };
    req.on('data', onData);
    req.once('end', stop);
    req.once('close', stop);
    req.resume();
    if (res.shouldKeepAlive || waitsForContinue) resolve();
  });
}

export function headersOf(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [key, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    try {
      if (Array.isArray(value)) for (const item of value) headers.append(key, item);
      else headers.set(key, value);
    } catch {
      // A header value fetch's Headers refuses (Node's parser is laxer): the twin never needs it.
    }
  }
  return headers;
}

export function toFetchRequest(method: string, url: URL, headers: Headers, body: Buffer): Request {
  const hasBody = method !== 'GET' && method !== 'HEAD' && body.length > 0;
  return new Request(url, { method, headers, body: hasBody ? body : undefined });
}

export function writeResponse(res: ServerResponse, status: number, headers: Headers, body: Buffer): void {
  // One flat list to writeHead: no per-header setHeader bookkeeping on the response.
  const raw: string[] = [];
  headers.forEach((value, key) => {
    // Bodies are re-sent whole, so length/encoding headers of the original stream do not apply.
    if (key === 'set-cookie' || key === 'content-length' || key === 'transfer-encoding') return;
    raw.push(key, value);
  });
  for (const cookie of headers.getSetCookie()) raw.push('set-cookie', cookie);
  raw.push('content-length', String(body.length));
  res.writeHead(status, raw);
  res.end(body);
}

/** Statuses whose Response may have no body: a byte body with one is refused, as by `new Response`. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/**
 * A Response made from bytes in hand (`bytesAnswer`). undici's Response wraps a byte body in a
 * ReadableStream as it is made, which cost about fifteen times a bodiless Response, and the runtime
 * then read that stream back (a chain of promises): together more than the rest of a twin's answer. This
 * one keeps the bytes, and the runtime writes them as they are (`answerBytes`). Only when something reads
 * the body (a driver reshaping another's answer) is a Response with the same status, headers and bytes
 * made, once, and every read of the body goes to it, so a reader sees what a plain Response would show.
 */
export class BytesResponse extends Response {
  readonly #bytes: Buffer;
  #reader: Response | undefined;

  constructor(bytes: Buffer, init: ResponseInit) {
    super(null, init);
    this.#bytes = bytes;
  }

  /** The bytes it was made with, while nothing has touched its body; undefined after. */
  get untouchedBytes(): Buffer | undefined {
    return this.#reader ? undefined : this.#bytes;
  }

  /** The Response every read of the body goes to, made on the first. */
  static #readerOf(self: BytesResponse): Response {
    self.#reader ??= new Response(self.#bytes, {
      status: self.status,
      statusText: self.statusText,
      headers: self.headers,
    });
    return self.#reader;
  }

  static {
    // Response's type declares its members as properties, which a class body may not override with
    // accessors and methods: they are replaced on the prototype instead.
    const reader = (self: BytesResponse) => BytesResponse.#readerOf(self);
    const reads = ['arrayBuffer', 'blob', 'bytes', 'formData', 'json', 'text'].filter(
      (name) => name in Response.prototype,
    );
    Object.defineProperties(BytesResponse.prototype, {
      body: {
        get(this: BytesResponse) {
          return reader(this).body;
        },
        configurable: true,
      },
      bodyUsed: {
        get(this: BytesResponse) {
          return this.#reader?.bodyUsed ?? false;
        },
        configurable: true,
      },
      clone: {
        value(this: BytesResponse): Response {
          // A clone of a read body is refused as Response's own clone refuses it.
          if (this.#reader) return this.#reader.clone();
          return new BytesResponse(this.#bytes, {
            status: this.status,
            statusText: this.statusText,
            headers: this.headers,
          });
        },
        writable: true,
        configurable: true,
      },
      ...Object.fromEntries(
        reads.map((name) => [
          name,
          {
            value(this: BytesResponse): Promise<unknown> {
              return (reader(this) as unknown as Record<string, () => Promise<unknown>>)[name]!();
            },
            writable: true,
            configurable: true,
          },
        ]),
      ),
    });
  }
}

/** A Response whose body the runtime can take as it was given (see `BytesResponse`, `answerBytes`). */
export function bytesAnswer(body: Buffer, init: ResponseInit): Response {
  // new Response refuses a body with these statuses; so does this, with its own error.
  if (init.status !== undefined && NULL_BODY_STATUSES.has(init.status)) return new Response(body, init);
  return new BytesResponse(body, init);
}

/** The body of a driver's answer, as bytes: those it was made with when `bytesAnswer` made it. */
export async function answerBytes(response: Response): Promise<Buffer> {
  const untouched = response instanceof BytesResponse ? response.untouchedBytes : undefined;
  if (untouched) return untouched;
  return Buffer.from(await response.arrayBuffer());
}

export function json(status: number, body: unknown, extra: Record<string, string> = {}): Response {
  return bytesAnswer(Buffer.from(JSON.stringify(body) ?? ''), {
    status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...extra },
  });
}

/** The error body every Twinbox API uses (see DESIGN.md: always `detail`). */
export function errorBody(status: number, detail: string, code?: string) {
  const error =
    status === 401
      ? 'Unauthorized'
      : status === 404
        ? 'Not Found'
        : status === 409
          ? 'Conflict'
          : status === 413
            ? 'Payload Too Large'
            : 'Bad Request';
  return { statusCode: status, error, message: detail, detail, ...(code ? { code } : {}) };
}
