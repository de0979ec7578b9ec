/** Where people land after signing in when no page asked for them (`next`). */
export const DEFAULT_LANDING = '/dashboard';

/**
 * Where to go after signing in: a path on this site only (`/dashboard/...`), never another origin
 * (`//evil.example`, `https://...`, `/\evil`), so `next` cannot be used to send someone elsewhere.
 */
export function safeNext(next: unknown, fallback = DEFAULT_LANDING): string {
  if (typeof next !== 'string' || next.length > 2000) return fallback;
  if (!next.startsWith('/') || next.startsWith('//') || next.includes('\\')) return fallback;
  // Control characters (a browser drops tabs and newlines, so `/\t/evil.example` would become `//evil...`).
  if (/[\u0000-\u001f\u007f]/.test(next)) return fallback;
  return next;
}
