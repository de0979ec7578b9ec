import { request } from 'node:http';

/** An error answer of a pod's control API; `status` < 500 means the input was refused. */
export class PodError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'PodError';
  }
}

/** One JSON call to a pod's control API over its Unix socket. */
export function podCall<T>(
  socketPath: string,
  method: string,
  path: string,
  body?: unknown,
  timeoutMs = 30_000,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = request(
      {
        socketPath,
        method,
        path,
        timeout: timeoutMs,
        headers: payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {},
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : {};
          } catch {
            return reject(new PodError(502, `the sandbox pod answered ${res.statusCode} with no JSON`));
          }
          if ((res.statusCode ?? 500) >= 300)
            return reject(
              new PodError(res.statusCode ?? 500, (parsed as { detail?: string }).detail ?? 'pod error'),
            );
          resolve(parsed as T);
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`the sandbox pod did not answer ${method} ${path}`)));
    req.on('error', reject);
    req.end(payload);
  });
}
