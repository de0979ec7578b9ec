/**
 * The pieces of the fuzz test (fuzz.test.ts): a seeded PRNG, pools of malformed values, bodies and
 * headers, a raw HTTP client that sends bytes exactly as given, and the violation collector.
 */
import { connect } from 'node:net';
import { Agent, request as httpRequest } from 'node:http';

/** mulberry32: small, fast and good enough to pick inputs; the same seed gives the same run. */
export class Rng {
  private state: number;
  constructor(readonly seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let x = this.state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  /** `count` distinct items (all of them when there are fewer). */
  sample<T>(items: readonly T[], count: number): T[] {
    const pool = [...items];
    const out: T[] = [];
    while (out.length < count && pool.length) out.push(pool.splice(this.int(pool.length), 1)[0]!);
    return out;
  }
  /** Text mixing ASCII, Latin-1, CJK, emoji, control and bidi characters. */
  text(length: number): string {
    const alphabet = [
      'a',
      'Z',
      '0',
      ' ',
      '/',
      '.',
      '%',
      '"',
      "'",
      '<',
      '\\',
      '\u0000',
      '\u0007',
      '\u00e9',
      '\u00ff',
      '\u202e',
      '\u4e2d',
      '\ud83d\udca5',
      '\ufeff',
      '\n',
    ];
    let s = '';
    while (s.length < length) s += this.pick(alphabet);
    return s;
  }
}

/** The seed: FUZZ_SEED when given (to replay a run), else a fixed one so CI runs are the same. */
export function fuzzSeed(): number {
  const given = process.env.FUZZ_SEED;
  if (given && /^\d+$/.test(given)) return Number(given) >>> 0;
  return 0x7b1b0c5;
}

const KiB = 1024;

/** Path segment values, already as they go on the wire (percent-encoded where needed). */
export function badSegments(rng: Rng): string[] {
  return [
    'x'.repeat(10_000),
    encodeURIComponent('ünïcødé-💥-中文'),
    encodeURIComponent(rng.text(40)),
    '..',
    '%2e%2e',
    '..%2f..%2fetc%2fpasswd',
    '%00',
    'a%00b',
    '%ff%fe',
    '%',
    '%zz',
    '%E2%80%AE',
    '%0d%0aSet-Cookie:%20x=1',
    'not-a-uuid',
    '00000000-0000-0000-0000-000000000000',
    '__proto__',
    'constructor',
    'prototype',
    '-1',
    '1e999',
    'NaN',
    '%20',
    encodeURIComponent("' OR 1=1 --"),
    encodeURIComponent('<script>alert(1)</script>'),
    '~',
    'a%2fb',
  ];
}

/** Query strings, raw. */
export function badQueries(rng: Rng): string[] {
  return [
    'limit=-1',
    'limit=0',
    'limit=101',
    'limit=abc',
    'limit=1e3',
    'limit=1.5',
    'limit[]=1',
    'limit[a]=1',
    'cursor=garbage',
    `cursor=${Buffer.from(JSON.stringify({ t: 'x', id: 1 })).toString('base64url')}`,
    'cursor=%00',
    'status=bogus',
    'status[]=ready',
    'repo=..',
    `repo=${'r'.repeat(5000)}`,
    '__proto__[x]=1',
    'constructor[prototype][x]=1',
    '__proto__=1',
    'a=1&a=2&a=3',
    `x=${'y'.repeat(20 * KiB)}`,
    '%zz=1',
    'x=%ff',
    '=',
    '&&&',
    'state=x&code=y',
    'error=access_denied',
    'error[]=x&detail[]=y',
    'per_page=-5&page=abc',
    'per_page=1000000&page=-1',
    `q=${encodeURIComponent(rng.text(30))}`,
    'sort=%00&direction=sideways',
    'since=not-a-date',
    'expand[]=__proto__',
  ];
}

/** Headers servers read on their own: negotiation, conditional requests, ranges, the host, framing. */
export function badHeaders(): Array<Record<string, string>> {
  return [
    { 'accept-encoding': 'gzip;q=abc, *;q=-1, br;q=2' },
    { 'accept-encoding': 'x'.repeat(5000) },
    { accept: 'application/json;q=x, */*;;;' },
    { 'if-none-match': `W/"${'x'.repeat(1000)}` },
    { 'if-modified-since': 'not a date' },
    { range: 'bytes=abc-def, -' },
    { range: 'bytes=0-0,1-1,2-2,3-3' },
    { 'x-forwarded-for': '999.999.999.999, ::::, \u00ff' },
    { host: '..' },
    { host: `x.${'a'.repeat(300)}.localhost:99999` },
    { 'content-length': '-1' },
    { expect: '100-continue' },
    { 'transfer-encoding': 'gzip' },
  ];
}

export interface Body {
  label: string;
  contentType?: string;
  payload: string | Buffer;
  headers?: Record<string, string>;
}

const nested = (depth: number, open: string, close: string, leaf = '1') =>
  open.repeat(depth) + leaf + close.repeat(depth);

/** Bodies that are malformed whatever the route expects. */
export function badBodies(rng: Rng): Body[] {
  const json = 'application/json';
  const b = (
    label: string,
    payload: string | Buffer,
    contentType?: string,
    headers?: Record<string, string>,
  ) => ({
    label,
    payload,
    contentType,
    headers,
  });
  return [
    b('json: "{"', '{', json),
    b('json: text', 'not json', json),
    b('json: {"a":}', '{"a":}', json),
    b('json: NUL', '\u0000', json),
    b('json: BOM', '\ufeff{}', json),
    b('json: single quotes', "{'a':1}", json),
    b('json: trailing comma', '[1,]', json),
    b('json: two documents', '{"a":1}{"b":2}', json),
    b('json: lone surrogate', '{"a":"\\ud800"}', json),
    b('json: []', '[]', json),
    b('json: [1,2,3]', '[1,2,3]', json),
    b('json: 0', '0', json),
    b('json: 1e309', '1e309', json),
    b('json: "str"', '"str"', json),
    b('json: null', 'null', json),
    b('json: true', 'true', json),
    b('json: {}', '{}', json),
    b('json: 1000 nested objects', nested(1000, '{"a":', '}'), json),
    b('json: 1000 nested arrays', nested(1000, '[', ']'), json),
    b('json: 100000 nested arrays', nested(100_000, '[', ']'), json),
    b('json: __proto__', '{"__proto__":{"x":1,"polluted":true}}', json),
    b('json: constructor.prototype', '{"constructor":{"prototype":{"x":1}}}', json),
    b('json: huge string', JSON.stringify({ a: 'x'.repeat(200 * KiB) }), json),
    b('json: random text', JSON.stringify({ a: rng.text(200) }), json),
    b('json: oversize (300 KiB)', JSON.stringify({ a: 'x'.repeat(300 * KiB) }), json),
    b('json: charset=utf-16', '{}', 'application/json; charset=utf-16'),
    b('json: charset=bogus', '{}', 'application/json; charset=bogus'),
    b('json: gzip garbage', 'not gzip at all', json, { 'content-encoding': 'gzip' }),
    b('json: deflate garbage', Buffer.from([1, 2, 3, 4]), json, { 'content-encoding': 'deflate' }),
    b('json: unknown encoding', '{}', json, { 'content-encoding': 'br, x-unknown' }),
    b('form', 'a=1&b=2', 'application/x-www-form-urlencoded'),
    b('form: __proto__', '__proto__[x]=1&constructor[prototype][y]=1', 'application/x-www-form-urlencoded'),
    b('form: bad percent', 'a=%zz&%ff=1', 'application/x-www-form-urlencoded'),
    b('form: oversize', `a=${'x'.repeat(300 * KiB)}`, 'application/x-www-form-urlencoded'),
    b('text', 'hello', 'text/plain'),
    b('text: json', '{"a":1}', 'text/plain'),
    b(
      'multipart: truncated',
      '--XYZ\r\nContent-Disposition: form-data; name="a"\r\n\r\nx\r\n--XY',
      'multipart/form-data; boundary=XYZ',
    ),
    b('multipart: no boundary', 'garbage', 'multipart/form-data'),
    b(
      'multipart: __proto__ field',
      '--XYZ\r\nContent-Disposition: form-data; name="__proto__"\r\n\r\nx\r\n--XYZ--\r\n',
      'multipart/form-data; boundary=XYZ',
    ),
    b(
      'octet-stream',
      Buffer.from(Array.from({ length: 64 }, () => rng.int(256))),
      'application/octet-stream',
    ),
    b('xml', '<a>1</a>', 'application/xml'),
    b('content-type ;;;', '{}', ';;;'),
    b('no content-type', '{"a":1}'),
    b('json: empty', '', json),
    b('empty, no content-type', ''),
  ];
}

/** Values of the wrong type (or shape) for any JSON field. */
export function badValues(rng: Rng): Array<{ label: string; value: unknown }> {
  const deep: Record<string, unknown> = {};
  let at = deep;
  for (let i = 0; i < 1000; i++) at = (at.a = {}) as Record<string, unknown>;
  return [
    { label: 'null', value: null },
    { label: '0', value: 0 },
    { label: '-1', value: -1 },
    { label: '1.5', value: 1.5 },
    { label: '1e308', value: 1e308 },
    { label: 'true', value: true },
    { label: '[]', value: [] },
    { label: '[1]', value: [1] },
    { label: '{}', value: {} },
    { label: '""', value: '' },
    { label: '" "', value: ' ' },
    { label: '"30"', value: '30' },
    { label: '100 KiB string', value: 'x'.repeat(100 * KiB) },
    { label: 'random text', value: rng.text(64) },
    { label: 'NUL string', value: 'a\u0000b' },
    { label: '1000 nested objects', value: deep },
    { label: '[{}, null]', value: [{}, null] },
    { label: '{"__proto__": …}', value: JSON.parse('{"__proto__":{"x":1}}') },
    { label: '"../../etc/passwd"', value: '../../etc/passwd' },
    { label: '"a/b/../../c"', value: 'octocat/shop/../../x' },
    { label: 'pull URL, huge number', value: 'https://github.com/octocat/shop/pull/99999999999999999999999' },
    { label: 'pull URL, other host', value: 'https://evil.example/octocat/shop/pull/1' },
    { label: '"javascript:alert(1)"', value: 'javascript:alert(1)' },
    { label: '"refs/heads/../x"', value: 'refs/heads/../x' },
    { label: '300 hyphens', value: '-'.repeat(300) },
    { label: '"@"', value: '@' },
    { label: '"A@B@example.com"', value: 'A@B@example.com' },
    { label: '{"a": 1e308}', value: { a: 1e308, b: [null], c: 'x' } },
    { label: '["github", "github"]', value: ['github', 'github'] },
    { label: '["nope", "__proto__"]', value: ['nope', '__proto__'] },
    {
      label: '101 entries',
      value: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`K${i}`, 'v'])),
    },
  ];
}

export interface Violation {
  where: string;
  input: string;
  status: number;
  body: string;
}

/** Collects the answers that break the rules, so one run shows all of them. */
export class Violations {
  readonly list: Violation[] = [];
  readonly statuses = new Map<number, number>();
  /** Bodyless 400/431 from the HTTP parser (bytes that never became a request). */
  parserAnswers = 0;
  /** Connections closed without an answer (a refused upload still being written, say). */
  closed = 0;
  count(status: number): void {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
  }
  add(v: Violation): void {
    this.list.push({ ...v, body: v.body.length > 300 ? `${v.body.slice(0, 300)}…` : v.body });
  }
  /** One line per violation: where, the input, the answer. */
  summary(): string[] {
    return this.list.map((v) => `${v.where} ← ${v.input} → ${v.status} ${v.body}`);
  }
  histogram(): string {
    return [...this.statuses.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([s, n]) => `${s}:${n}`)
      .join(' ');
  }
}

/** A non-empty `detail` string in a JSON body. */
export function hasDetail(body: string): boolean {
  try {
    const parsed = JSON.parse(body) as { detail?: unknown } | null;
    return typeof parsed?.detail === 'string' && parsed.detail.trim() !== '';
  } catch {
    return false;
  }
}

/** An HTML page that states its problem: the error box with non-empty text. */
export function pageStatesProblem(body: string): boolean {
  return /role="alert"[\s\S]*?<p id="detail">\s*[^<\s][^<]*<\/p>/.test(body);
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends `bytes` as they are on a new connection and reads the answer until the server closes it (send
 * `Connection: close`). Status 0: the connection closed without an answer.
 */
export function rawRequest(port: number, bytes: Buffer | string, timeoutMs = 10_000): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('no answer in time'));
    }, timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {
      // A reset after the answer (the server closing a refused upload) is not an error here.
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseRaw(Buffer.concat(chunks)));
    });
    socket.write(bytes, () => {
      // Half-close so a server waiting for more body sees its end.
    });
  });
}

function parseRaw(data: Buffer): RawResponse {
  const headEnd = data.indexOf('\r\n\r\n');
  if (headEnd < 0) return { status: 0, headers: {}, body: data.toString('latin1') };
  const [statusLine = '', ...lines] = data.subarray(0, headEnd).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  let body = data.subarray(headEnd + 4);
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) body = dechunk(body);
  else if (headers['content-length']) body = body.subarray(0, Number(headers['content-length']));
  return { status, headers, body: body.toString('utf8') };
}

function dechunk(data: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  while (at < data.length) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) break;
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
    if (!size) break;
    out.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(out);
}

const keepAlive = new Agent({ keepAlive: true, maxSockets: 4 });

/** One HTTP request with the path sent as given (no URL normalisation), on a keep-alive agent. */
export function sendHttp(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  payload?: string | Buffer,
  timeoutMs = 10_000,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers,
        agent: keepAlive,
        timeout: timeoutMs,
        // A twin may echo a 100 KiB `state` into Location (as GitHub echoes it): read it, whatever its size.
        maxHeaderSize: 1024 * 1024,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const out: Record<string, string> = {};
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out[k] = String(v);
          resolve({
            status: res.statusCode ?? 0,
            headers: out,
            body: Buffer.concat(chunks).toString('utf8'),
          });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer in time')));
    req.on('error', (error: NodeJS.ErrnoException) => {
      // The server may answer (413, 401) and close before the whole body is written: read what came.
      if (error.code === 'EPIPE' || error.code === 'ECONNRESET')
        resolve({ status: -1, headers: {}, body: error.code });
      else reject(error);
    });
    // Node frames a DELETE body only when told its length (it chunks POST, PUT and PATCH on its own).
    if (payload !== undefined && method !== 'GET' && method !== 'HEAD') {
      req.setHeader('content-length', Buffer.byteLength(payload));
      req.end(payload);
    } else req.end();
  });
}

export function closeKeepAlive(): void {
  keepAlive.destroy();
}
