import { request } from 'node:http';
import { POD_ROUTES, type PodAnswer, type PodCall, type PodRequest } from '../../pod/protocol.ts';

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

/**
 * How long a control call may go without a byte from the pod. Starting or restoring twins is real work
 * (modules loaded, state read, certificates issued) that a saturated machine stretches: with 100
 * sandboxes deploying at once on 2 cores, `POST /twins` and `PUT /app` ran past 30 s while the pods were
 * still working, and those deploys failed (bench/fleet). The bound ends a pod that hangs; it does not
 * measure one.
 */
const CONTROL_CALL_TIMEOUT_MS = 120_000;

/** One call of the pod's control protocol (server/pod/protocol.ts) over its Unix socket. */
export function podCall<C extends PodCall>(
  socketPath: string,
  call: C,
  body: PodRequest<C>,
  timeoutMs = CONTROL_CALL_TIMEOUT_MS,
  signal?: AbortSignal,
): Promise<PodAnswer<C>> {
  const { method, path } = POD_ROUTES[call];
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error(`${method} ${path}: no longer needed`));
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
          resolve(parsed as PodAnswer<C>);
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`the sandbox pod did not answer ${method} ${path}`)));
    // The caller no longer needs the answer: the pod sees its connection close.
    signal?.addEventListener('abort', () => req.destroy(new Error(`${method} ${path}: no longer needed`)), {
      once: true,
    });
    req.on('error', reject);
    req.end(payload);
  });
}
