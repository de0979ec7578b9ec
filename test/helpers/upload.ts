import { request, type IncomingHttpHeaders, type RequestOptions } from 'node:http';
import type { LookupFunction } from 'node:net';

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * POSTs `size` bytes (one reused 64 KiB chunk), chunked or with a Content-Length, to a URL or to the
 * request options given (a Unix socket, say), on a connection of its own (`Connection: close`), and keeps
 * writing until the body is sent, as a plain client does even when the answer comes first.
 */
export function postBody(
  target: string | RequestOptions,
  size: number,
  headers: Record<string, string>,
  chunked: boolean,
  opts: { lookup?: LookupFunction; timeoutMs?: number } = {},
): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const options: RequestOptions = {
      method: 'POST',
      agent: false,
      ...(opts.lookup ? { lookup: opts.lookup } : {}),
      headers: { ...headers, ...(chunked ? {} : { 'content-length': String(size) }) },
    };
    const req = typeof target === 'string' ? request(target, options) : request({ ...target, ...options });
    const timeoutMs = opts.timeoutMs ?? 60_000;
    const timer = setTimeout(() => req.destroy(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts).toString() });
        req.destroy();
      });
      res.on('error', reject);
    });
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    const chunk = Buffer.alloc(64 * 1024, 'a');
    let written = 0;
    const pump = () => {
      while (written < size) {
        written += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}
