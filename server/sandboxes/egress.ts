import type { SandboxRecord } from '../store/records.ts';
import { hostMatches } from '../twins/contract.ts';
import { twinDescriptors } from '../twins/descriptors.ts';

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

/** The twin that answers for `host` (TwinDescriptor.hosts) when a sandbox has it, if any twin does. */
export function twinForHost(host: string): string | undefined {
  const name = host.toLowerCase();
  for (const twin of twinDescriptors.values())
    if (twin.hosts.some((pattern) => hostMatches(pattern, name))) return twin.name;
  return undefined;
}

/**
 * What a blocked call's log line adds: whose real service it was, and the twin that would answer it. A
 * sandbox's own twins answer their vendors' hosts, so a blocked one is a twin the sandbox lacks.
 */
export function blockedCallHint(host: string): string {
  const twin = twinForHost(host);
  const vendor = vendorOf(host) ?? twin;
  if (!vendor) return '';
  return twin
    ? ` (this code tried to call the real ${vendor}, and this sandbox has no ${twin} twin: add "${twin}" to its twins to answer it)`
    : ` (this code tried to call the real ${vendor})`;
}
