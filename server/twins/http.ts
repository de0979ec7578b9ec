import type { IncomingMessage, ServerResponse } from 'node:http';

export async function readBody(req: IncomingMessage, limitBytes = 50 * 1024 * 1024): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limitBytes) throw new Error('request body too large');
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

export function toFetchRequest(req: IncomingMessage, body: Buffer, origin: string): Request {
  const headers = new Headers();
  for (const [key, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const item of value) headers.append(key, item);
    else headers.set(key, value);
  }
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD' && body.length > 0;
  return new Request(new URL(req.url ?? '/', origin), { method, headers, body: hasBody ? body : undefined });
}

export function writeResponse(res: ServerResponse, status: number, headers: Headers, body: Buffer): void {
  res.statusCode = status;
  const cookies = headers.getSetCookie();
  headers.forEach((value, key) => {
    // Bodies are re-sent whole, so length/encoding headers of the original stream do not apply.
    if (key === 'set-cookie' || key === 'content-length' || key === 'transfer-encoding') return;
    res.setHeader(key, value);
  });
  if (cookies.length) res.setHeader('set-cookie', cookies);
  res.setHeader('content-length', body.length);
  res.end(body);
}

export function json(status: number, body: unknown, extra: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
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
          : 'Bad Request';
  return { statusCode: status, error, message: detail, detail, ...(code ? { code } : {}) };
}
