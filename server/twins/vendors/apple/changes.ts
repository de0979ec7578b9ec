import type { RequestLogEntry } from '../../runtime/request-log.ts';
import { describeOAuthChange } from '../../kit/oauth-changes.ts';

/**
 * What a Sign in with Apple call changed ("authorization code issued to dev.twinbox… for tim@…", "refresh
 * token revoked for …"), for the timeline. Sign in with Apple has no other state-changing endpoint.
 */
export function describeAppleChange(entry: RequestLogEntry): string | undefined {
  return describeOAuthChange(entry, {
    callback: /^\/auth\/authorize\/callback$/,
    token: /^\/auth\/token$/,
    revoke: /^\/auth\/revoke$/,
  });
}
