import { join } from 'node:path';
import type { Test } from 'tap';
import { startTestTwinbox, type TestTwinbox } from '../helpers/twinbox.ts';
import { readOutbox } from '../../server/mail/outbox.ts';
import type { Clock } from '../../server/identity/clock.ts';

/** Real time plus an offset the test moves forward. */
export class TestClock implements Clock {
  offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

export interface IdentityTwinbox extends TestTwinbox {
  clock: TestClock;
}

export async function startIdentityTwinbox(
  t: Test,
  env: Record<string, string> = {},
): Promise<IdentityTwinbox> {
  const clock = new TestClock();
  const twinbox = await startTestTwinbox(t, { TWINBOX_AUTH_IP_LIMIT: '1000', ...env }, { clock });
  return Object.assign(twinbox, { clock });
}

export interface Reply {
  status: number;
  headers: Record<string, unknown>;
  body: any;
}

let ipCounter = 0;
/** A fresh client address per call unless one is given, so per-IP limits only bite where a test wants. */
export function freshIp(): string {
  ipCounter += 1;
  return `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
}

export async function send(
  twinbox: TestTwinbox,
  method: string,
  url: string,
  payload?: unknown,
  options: { ip?: string; token?: string; cookie?: string } = {},
): Promise<Reply> {
  const response = await twinbox.server.inject({
    method,
    url,
    payload: payload as object | undefined,
    remoteAddress: options.ip ?? freshIp(),
    headers: {
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...(options.cookie ? { cookie: options.cookie } : {}),
    },
  });
  let body: any = response.payload;
  try {
    body = JSON.parse(response.payload);
  } catch {
    // not JSON
  }
  return { status: response.statusCode, headers: response.headers, body };
}

export const post = (twinbox: TestTwinbox, url: string, payload?: unknown, options = {}) =>
  send(twinbox, 'POST', url, payload, options);

export function outboxDir(twinbox: TestTwinbox): string {
  return join(twinbox.dataDir, 'outbox');
}

/** Every message to `to` so far, oldest first. */
export async function mailTo(twinbox: TestTwinbox, to: string) {
  return (await readOutbox(outboxDir(twinbox))).filter((m) => m.to === to);
}

/** The code in the latest mail to `to`, waiting (up to 20 s, for a loaded machine) for mail sent in the background. */
export async function latestCode(twinbox: TestTwinbox, to: string, previousCount = 0): Promise<string> {
  for (let i = 0; i < 1000; i++) {
    const messages = await mailTo(twinbox, to);
    if (messages.length > previousCount) return /(\d{6})/.exec(messages.at(-1)!.subject)![1]!;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no mail to ${to}`);
}

/** Signs up and verifies `email`; returns the account and its session token. */
export async function signUpVerified(twinbox: TestTwinbox, email: string) {
  const signup = await post(twinbox, '/auth/email/signup', { email });
  if (signup.status !== 201) throw new Error(`signup ${signup.status}: ${JSON.stringify(signup.body)}`);
  const code = await latestCode(twinbox, signup.body.account.email);
  const verified = await post(twinbox, '/auth/email-verification/verify', { email, code });
  if (verified.status !== 200) throw new Error(`verify ${verified.status}: ${JSON.stringify(verified.body)}`);
  return verified.body as { account: { id: string; email: string }; token: string };
}

export const ONE_ACCOUNT =
  'Only one account can use an email address. This email is already linked to another account.';
