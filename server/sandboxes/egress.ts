import type { SandboxRecord } from '../store/records.ts';

/** A refused outbound call of a sandbox's code, summed per host and port (the sandbox's `blocked_egress`). */
export type BlockedEgress = NonNullable<SandboxRecord['blocked_egress']>[number];

/** The vendors' real API hosts, so a blocked call can say "this code tried to call the real Stripe". */
const VENDOR_HOSTS: Array<[RegExp, string]> = [
  [/(^|\.)stripe\.com$/, 'Stripe'],
  [/(^|\.)github\.com$|(^|\.)githubusercontent\.com$/, 'GitHub'],
  [/(^|\.)slack\.com$/, 'Slack'],
];

/** The vendor whose real service `host` is, if it is one Twinbox has a twin of. */
export function vendorOf(host: string): string | undefined {
  return VENDOR_HOSTS.find(([pattern]) => pattern.test(host.toLowerCase()))?.[1];
}
