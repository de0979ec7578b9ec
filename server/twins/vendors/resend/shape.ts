/**
 * The engine's answers in Resend's shape, checked against Resend's description in test/twins/resend.test.ts:
 * creates are 201, `last_event` is the bare event (`delivered`, not `email.delivered`), lists say whether
 * there is more, and a segment (what Resend now calls an audience) is a segment.
 */
import { bytesAnswer } from '../../runtime/http.ts';

/** The creates Resend answers with 201 (its OpenAPI description): domains, API keys, audiences, contacts. */
const CREATES = /^\/(domains|api-keys|audiences|contacts|audiences\/[^/]+\/contacts)$/;

/** How the engine writes a list (`{ object: 'list', data }`, JSON.stringify'd), up to its first item. */
const LIST_START = Buffer.from('{"object":"list","data":[');
/** What a list without `has_more` gets before its closing brace: the engine's lists never have more. */
const NO_MORE = Buffer.from(',"has_more":false}');

/** What asWritten looks for, as bytes once (a string needle is encoded anew at each search). */
const ESCAPE = Buffer.from('\\u');
const LAST_EVENT = Buffer.from('"last_event"');
const AUDIENCE = Buffer.from('"audience"');
const LIST = Buffer.from('"list"');
const HAS_MORE = Buffer.from('"has_more"');

/** The headers of every reshaped answer, as `json()` (runtime/http.ts) writes them. */
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };

/**
 * The engine's answer to `method pathname` (past the twin's own 404) in Resend's shape; `segments` says the
 * app asked for `/segments`, which the twin sent to the engine's `/audiences`.
 */
export async function toResendResponse(
  method: string,
  pathname: string,
  response: Response,
  segments: boolean,
): Promise<Response> {
  if (method === 'POST' && response.status === 200 && CREATES.test(pathname)) {
    // Resend's description answers a create with 201 Created; the engine says 200.
    return new Response(response.body, { status: 201, headers: response.headers });
  }
  if (method !== 'GET' && !segments) return response;
  if (!response.ok || !response.headers.get('content-type')?.includes('json')) return response;
  const bytes = Buffer.from(await response.arrayBuffer());
  const untouched = asWritten(bytes, segments);
  if (untouched) return bytesAnswer(untouched, { status: response.status, headers: JSON_HEADERS });
  const body = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  const fix = (item: Record<string, unknown>) => {
    if (typeof item.last_event === 'string') item.last_event = item.last_event.replace(/^email\./, '');
    if (segments && item.object === 'audience') item.object = 'segment';
    return item;
  };
  if (body.object === 'list' && Array.isArray(body.data)) {
    body.data = (body.data as Array<Record<string, unknown>>).map(fix);
    body.has_more ??= false;
  } else fix(body);
  return bytesAnswer(Buffer.from(JSON.stringify(body)), { status: response.status, headers: JSON_HEADERS });
}

/**
 * The answer in Resend's shape without parsing it, where its text shows that only `has_more` may be
 * missing (a list read, the common case); undefined when it must be parsed and fixed. Exact for what the
 * engine writes (JSON.stringify: no spaces, no repeated keys, no `\u` escape but for control characters):
 * no `"last_event"` and, for segments, no `"audience"` means there is nothing to rename; a text that is
 * not a list as the engine writes one must not say `"list"` anywhere, or it might be a list after all.
 * Anything else, or a `\u` escape that could spell those words otherwise, goes the parsing way.
 */
function asWritten(bytes: Buffer, segments: boolean): Buffer | undefined {
  if (bytes.includes(ESCAPE) || bytes.includes(LAST_EVENT)) return undefined;
  if (segments && bytes.includes(AUDIENCE)) return undefined;
  if (!bytes.subarray(0, LIST_START.length).equals(LIST_START))
    return bytes.includes(LIST) ? undefined : bytes;
  if (bytes.includes(HAS_MORE)) return undefined;
  if (bytes[bytes.length - 1] !== 0x7d) return undefined;
  return Buffer.concat([bytes.subarray(0, -1), NO_MORE]);
}
