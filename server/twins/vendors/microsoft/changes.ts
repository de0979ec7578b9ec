import type { RequestLogEntry } from '../../runtime/request-log.ts';
import { describeOAuthChange } from '../../kit/oauth-changes.ts';

/**
 * What a Microsoft identity platform call changed ("app-only access token issued to <client id>"), for
 * the timeline. The v1 token endpoint (`/<tenant>/oauth2/token`), which the engine forwards to the v2.0
 * one, counts too; the twin's Graph routes only read.
 */
export function describeMicrosoftChange(entry: RequestLogEntry): string | undefined {
  return describeOAuthChange(entry, {
    callback: /^\/oauth2\/v2\.0\/authorize\/callback$/,
    token: /^(?:\/oauth2\/v2\.0|\/[^/]+\/oauth2)\/token$/,
    revoke: /^\/oauth2\/v2\.0\/revoke$/,
  });
}
