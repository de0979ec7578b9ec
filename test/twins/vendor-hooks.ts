/**
 * Ways to route an official SDK's calls through `vendorFetch` when the SDK takes no `fetch` of its own.
 *
 * resend-node calls the global `fetch` and has no option for another one, so its tests swap the global for
 * the length of the test file.
 */
import { vendorFetch } from './vendor-schema.ts';

type Fetch = typeof globalThis.fetch;

/**
 * Checks every global `fetch` that `isSdkCall` picks (resend-node: its `User-Agent`) against `twin`'s
 * description until the test ends. Calls a test makes by hand to probe the twin (an unknown route, a
 * request without a key) go through unchecked, as do webhook receivers and the admin API.
 */
export function checkGlobalFetch(
  t: { teardown(fn: () => void): void },
  twin: string,
  isSdkCall: (request: Request) => boolean,
): void {
  const original = globalThis.fetch;
  const checked = vendorFetch(twin, original);
  // Only the head is looked at: a Request input is not copied, so its body stays unread for the call.
  globalThis.fetch = (input, init) =>
    isSdkCall(input instanceof Request && !init ? input : new Request(input, { ...init, body: null }))
      ? checked(input, init)
      : original(input, init);
  t.teardown(() => {
    globalThis.fetch = original;
  });
}
