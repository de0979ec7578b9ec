import type { Plugin } from '@hapi/hapi';
import { apiError, badRequest } from '../server/errors.ts';

/** What the route hands verified deliveries to (the GitHubApp of index.ts). */
export interface WebhookReceiver {
  /** True when `signature` (X-Hub-Signature-256) is the HMAC of `body` under the webhook secret. */
  verify(body: string, signature: string): Promise<boolean>;
  /**
   * Queues a verified event durably, keyed by its delivery id; resolves once it is committed, with
   * `duplicate` true for a delivery queued before.
   */
  enqueue(event: { id: string; name: string; payload: unknown }): Promise<{ duplicate: boolean }>;
}

/** GitHub sends at most 25 MB per delivery. */
const MAX_DELIVERY_BYTES = 25 * 1024 * 1024;
const DELIVERY_ID = /^[A-Za-z0-9_-]{1,128}$/;
/** GitHub's event names: lowercase words joined by underscores (`pull_request`, `issue_comment`). */
const EVENT_NAME = /^[a-z][a-z_]{0,63}$/;

const header = (value: unknown): string | undefined =>
  typeof value === 'string'
    ? value
    : Array.isArray(value) && typeof value[0] === 'string'
      ? value[0]
      : undefined;

/**
 * `POST /github/webhooks`: verifies X-Hub-Signature-256 over the raw body, queues the event as a durable
 * job keyed by its delivery id, and answers 202 once the job is committed, before it is processed: GitHub
 * gives up on a delivery after 10 s, and a deploy takes longer than that. A repeated delivery id is
 * acknowledged with 200 and does nothing.
 */
export const githubAppRoutes: Plugin<{ app: WebhookReceiver }> = {
  name: 'twinbox-github-app',
  register(server, { app }) {
    server.route({
      method: 'POST',
      path: '/github/webhooks',
      options: {
        auth: false,
        description: 'GitHub App webhooks (signed with the App webhook secret)',
        payload: { parse: false, output: 'data', maxBytes: MAX_DELIVERY_BYTES },
      },
      handler: async (request, h) => {
        const raw = Buffer.isBuffer(request.payload) ? request.payload.toString('utf8') : '';
        const signature = header(request.headers['x-hub-signature-256']);
        if (!signature) {
          throw apiError(
            401,
            'Missing X-Hub-Signature-256: webhooks must be signed with the App webhook secret.',
            'invalid_signature',
          );
        }
        if (!(await app.verify(raw, signature))) {
          throw apiError(
            401,
            'X-Hub-Signature-256 does not match the body: wrong webhook secret, or the body was changed.',
            'invalid_signature',
          );
        }
        const event = header(request.headers['x-github-event']);
        const delivery = header(request.headers['x-github-delivery']);
        if (!event) throw badRequest('Missing X-GitHub-Event.');
        // Names like `constructor` or `__proto__` would reach Probot's handler lookup.
        if (!EVENT_NAME.test(event) || event === 'constructor' || event.includes('__'))
          throw badRequest('Malformed X-GitHub-Event.');
        if (!delivery || !DELIVERY_ID.test(delivery))
          throw badRequest('Missing or malformed X-GitHub-Delivery.');
        let payload: unknown;
        try {
          payload = JSON.parse(raw);
        } catch {
          throw badRequest('The webhook body is not JSON (set the content type to application/json).');
        }
        // Every GitHub event payload is an object; anything else would only reach the handlers to throw.
        if (typeof payload !== 'object' || payload === null || Array.isArray(payload))
          throw badRequest('The webhook body must be a JSON object, as every GitHub event payload is.');
        // Committed before the 202, so an acknowledged delivery survives a crash (docs/jobs.md).
        const { duplicate } = await app.enqueue({ id: delivery, name: event, payload });
        if (duplicate) return h.response({ status: 'duplicate', delivery }).code(200);
        return h.response({ status: 'queued', delivery }).code(202);
      },
    });
  },
};
