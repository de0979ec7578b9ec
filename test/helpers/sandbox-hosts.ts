import dns from 'node:dns';

/**
 * Sandbox URLs are `http://<id>.localhost:<port>` by default. curl and Chromium resolve `*.localhost` to
 * loopback themselves; Node's resolver does not, so tests (which call those URLs with fetch and the
 * vendors' SDKs) resolve them the way a browser would. Imported once for its effect.
 */
const original = dns.lookup;
type Callback = (error: NodeJS.ErrnoException | null, address: unknown, family?: number) => void;
(dns as { lookup: unknown }).lookup = function lookup(
  hostname: string,
  options: unknown,
  callback?: Callback,
) {
  const cb = (typeof options === 'function' ? options : callback) as Callback;
  const opts = (typeof options === 'object' && options) || {};
  if (/\.localhost\.?$/i.test(hostname)) {
    if ((opts as { all?: boolean }).all)
      return process.nextTick(cb, null, [{ address: '127.0.0.1', family: 4 }]);
    return process.nextTick(cb, null, '127.0.0.1', 4);
  }
  return (original as (...args: unknown[]) => void).call(dns, hostname, options, callback);
};
