import Boom from '@hapi/boom';
import type { Request, ResponseToolkit, Server } from '@hapi/hapi';

/** Whether a request was made by a browser navigating (it asks for HTML), not by an API client. */
function wantsPage(request: Request): boolean {
  const accept = String(request.headers.accept ?? '');
  return /\btext\/html\b/.test(accept);
}

/**
 * A person who opens the API's `/sandboxes` (or one sandbox's URL) in a browser gets the dashboard
 * page instead of a 401 JSON body. Only unauthenticated GETs that ask for HTML and carry no
 * Authorization header are redirected: every API client (which sends a token, or asks for JSON) sees
 * the API exactly as before.
 */
export function redirectBrowsersToDashboard(server: Server): void {
  server.ext('onPreResponse', (request: Request, h: ResponseToolkit) => {
    const response = request.response;
    if (!Boom.isBoom(response) || response.output.statusCode !== 401) return h.continue;
    if (request.method !== 'get' || request.headers.authorization !== undefined || !wantsPage(request)) {
      return h.continue;
    }
    const path = request.route.path;
    if (path === '/sandboxes') {
      return h.redirect(`/dashboard${request.url.search}`).takeover();
    }
    if (path === '/sandboxes/{sandbox_id}') {
      return h
        .redirect(`/dashboard/sandboxes/${encodeURIComponent(String(request.params.sandbox_id))}`)
        .takeover();
    }
    return h.continue;
  });
}
