/**
 * How a sandbox pod that cannot start says why, and how Twinbox words it for the sandbox's `error`: one
 * sentence that names the step and what to do, never the tail of a stack trace. The pod writes one
 * marked line (a step and an errno code, nothing else) to its output before it exits; Twinbox reads the
 * last such line of the pod's output, or, when there is none (Node died loading, a signal), words the exit.
 */

/** The marker of the report line; the rest of the line is a JSON PodStartReport. */
export const START_FAILURE_MARK = 'twinbox-pod-start-failure ';

/** The exit code of a pod that reported its start failure. */
export const START_FAILURE_EXIT = 3;

/**
 * The longest Unix socket path Linux takes (sun_path is 108 bytes with its NUL); longer ones are cut
 * silently by Node, so two sockets of a pod could end up the same file.
 */
export const SOCKET_PATH_MAX = 107;

/** Room kept for the longest socket name in a pod directory (`twin-<name>.sock`). */
export const SOCKET_NAME_ROOM = 32;

/** `socket_path` is found by Twinbox before it starts the pod; the others are reported by the pod. */
export const START_STEPS = [
  'socket_path',
  'control_socket',
  'dns_guard',
  'sandbox_ca',
  'install_proxy_port',
] as const;
export type PodStartStep = (typeof START_STEPS)[number];

export interface PodStartReport {
  step: PodStartStep;
  /** An errno code (EACCES, EROFS, EADDRINUSE...) when the failing call gave one. */
  code?: string;
}

export function startFailureLine(report: PodStartReport): string {
  return `${START_FAILURE_MARK}${JSON.stringify(report)}\n`;
}

const CODE = /^[A-Z][A-Z0-9_]{0,31}$/;

/** The last report line in the pod's output, checked field by field; undefined when there is none. */
export function parseStartFailure(output: string): PodStartReport | undefined {
  const lines = output.split('\n').filter((line) => line.startsWith(START_FAILURE_MARK));
  const last = lines.at(-1);
  if (!last) return undefined;
  try {
    const parsed = JSON.parse(last.slice(START_FAILURE_MARK.length)) as Record<string, unknown>;
    if (!START_STEPS.includes(parsed.step as PodStartStep)) return undefined;
    const code = typeof parsed.code === 'string' && CODE.test(parsed.code) ? parsed.code : undefined;
    return { step: parsed.step as PodStartStep, ...(code && { code }) };
  } catch {
    return undefined;
  }
}

const NOT_WRITABLE = new Set(['EACCES', 'EPERM', 'EROFS']);

/** Why the pod did not start, as the end of the sentence "The sandbox pod could not start: ...". */
export function startFailureReason(
  report: PodStartReport | undefined,
  exit: { code: number | null; signal: NodeJS.Signals | null },
  dir: string,
): string {
  const code = report?.code ? ` (${report.code})` : '';
  switch (report?.step) {
    case 'socket_path':
      return (
        `the path of its directory ${dir} is too long for its Unix sockets (at most ${SOCKET_PATH_MAX} bytes ` +
        `with the socket's name); set TWINBOX_DATA_DIR to a shorter path`
      );
    case 'control_socket':
      return NOT_WRITABLE.has(report.code ?? '')
        ? `it could not listen on its control socket${code}: its directory ${dir} is not writable inside ` +
            `the sandbox; check that TWINBOX_DATA_DIR is on a writable file system owned by Twinbox's user`
        : `it could not listen on its control socket in ${dir}${code}`;
    case 'dns_guard':
      return `it could not start its DNS guard in the sandbox's network namespace${code}; check that \`ip netns\` works on this host`;
    case 'sandbox_ca':
      return `it could not make the sandbox's certificate authority or write its certificate in ${dir}${code}`;
    case 'install_proxy_port':
      return `it could not open the install proxy's port in the sandbox's network namespace${code}`;
    default:
      if (exit.signal === 'SIGKILL')
        return 'its process was killed (SIGKILL) before it was ready, most likely by the memory limit (TWINBOX_APP_MEMORY_MB)';
      if (exit.signal) return `its process ended on ${exit.signal} before it was ready`;
      return `its process exited with code ${exit.code} before it was ready; check that \`npm install\` completed in Twinbox's checkout`;
  }
}

/** A pod that did not start: `message` is the sandbox's one-sentence `error`, `output` its own last lines. */
export class PodStartError extends Error {
  readonly kind = 'pod_start';
  constructor(
    readonly reason: string,
    readonly output: string,
  ) {
    super(`The sandbox pod could not start: ${reason}.`);
    this.name = 'PodStartError';
  }
}
