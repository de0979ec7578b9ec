/**
 * Imported before the `undici` package (upstream.ts), for the process's built-in `fetch`.
 *
 * Importing the package installs an Agent of its own as the process's global dispatcher when none is set
 * yet, and Node's built-in `fetch` then sends every request through that Agent of another undici version.
 * Node 20's fetch hands it a Content-Length header it refuses ("invalid content-length header"): a POST
 * through the Stripe SDK in the same process failed that way. Touching one of the fetch globals loads
 * Node's own undici first, which sets its own Agent; the package then leaves it in place.
 * test/router/node-fetch-first.test.ts.
 */
void globalThis.Headers;
