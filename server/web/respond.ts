import Boom from '@hapi/boom';
import type { Request, ResponseToolkit, Server } from '@hapi/hapi';
import { html } from './html.ts';
import { page, type PageOptions } from './layout.ts';
import { PAGE_HEADERS } from './security.ts';

/** A page response with the pages' security headers. */
export function render(h: ResponseToolkit, options: PageOptions, code = 200) {
  const response = h.response(page(options)).type('text/html; charset=utf-8').code(code);
  for (const [name, value] of Object.entries(PAGE_HEADERS)) response.header(name, value);
  return response;
}

/**
 * Errors on page routes (`plugins: { web: true }`) are pages too: the status and its `detail`, so a person
 * sees what went wrong instead of a JSON body. 5xx keep their generic text.
 */
export function renderErrorPages(server: Server): void {
  server.ext('onPreResponse', (request: Request, h: ResponseToolkit) => {
    const response = request.response;
    if (!Boom.isBoom(response) || !(request.route.settings.plugins as { web?: boolean }).web)
      return h.continue;
    const status = response.output.statusCode;
    const detail =
      status >= 500 ? 'Something went wrong on our side. Try again in a moment.' : response.message;
    const title = status === 404 ? 'Not found' : status === 403 ? 'Refused' : `Error ${status}`;
    const body = html`<div class="error" role="alert"><p id="detail">${detail}</p></div>
      <p><a href="/dashboard">Back to your sandboxes</a></p>`;
    const rendered = render(h, { title, body }, status);
    for (const [name, value] of Object.entries(response.output.headers)) {
      if (name.toLowerCase() !== 'content-type') rendered.header(name, String(value));
    }
    return rendered;
  });
}
