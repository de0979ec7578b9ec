/**
 * The engine's Backend API answers in the shape Clerk gives them (API version 2026-05-12, the one
 * @clerk/backend 3.x sends), checked against Clerk's own description in test/twins/clerk.test.ts.
 * Where they differ: lists of users and sessions are bare arrays, timestamps are milliseconds, error codes are
 * lower case, and fields the description requires that the engine leaves out are filled with what a new
 * Clerk instance has (no MFA, no lockout, no image).
 */

import { bytesAnswer } from '../../runtime/http.ts';

type Json = Record<string, unknown>;

/**
 * `application/json` exactly: @clerk/backend parses a body only when the content type is exactly that
 * (a `; charset` suffix makes it read the errors as text).
 */
export function clerkJson(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  // As bytes (runtime/http.ts): a Response made from text wraps it in a stream to be read back.
  return bytesAnswer(Buffer.from(JSON.stringify(body) ?? ''), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** Clerk's error body: `{ errors: [{ message, long_message, code, meta }] }` (ClerkErrors). */
export function clerkError(
  status: number,
  code: string,
  message: string,
  longMessage: string,
  meta?: Json,
  headers?: Record<string, string>,
): Response {
  return clerkJson(
    status,
    { errors: [{ message, long_message: longMessage, code, ...(meta ? { meta } : {}) }] },
    headers,
  );
}

/** The engine's error codes (upper case) as Clerk names them. */
const ERROR_CODES: Record<string, string> = {
  RESOURCE_NOT_FOUND: 'resource_not_found',
  INVALID_REQUEST_BODY: 'form_param_missing',
  SESSION_NOT_ACTIVE: 'session_not_active',
  UNAUTHORIZED: 'clerk_key_invalid',
};

/** Timestamps the engine keeps in seconds; Clerk's are milliseconds since the epoch. */
const TIME_FIELDS = [
  'created_at',
  'updated_at',
  'last_sign_in_at',
  'last_active_at',
  'expire_at',
  'abandon_at',
  'expires_at',
];

function millis(item: Json): Json {
  for (const field of TIME_FIELDS) {
    const value = item[field];
    if (typeof value === 'number' && value < 1e12) item[field] = value * 1000;
  }
  return item;
}

const imageOf = (id: unknown) => `https://img.clerk.com/preview?seed=${String(id)}`;

function emailAddress(email: Json): Json {
  const verification = email.verification as { status?: string; strategy?: string } | null | undefined;
  // An address the Backend API marks verified is verified by the admin; an unverified one has no verification yet.
  email.verification =
    verification?.status === 'verified'
      ? verification.strategy === 'admin'
        ? {
            object: 'verification_admin',
            status: 'verified',
            strategy: 'admin',
            attempts: null,
            expire_at: null,
          }
        : {
            object: 'verification_otp',
            status: 'verified',
            strategy: verification.strategy ?? 'email_code',
            attempts: 1,
            expire_at: null,
          }
      : null;
  return millis(email);
}

function user(u: Json): Json {
  u.email_addresses = ((u.email_addresses as Json[] | undefined) ?? []).map(emailAddress);
  u.enterprise_accounts ??= [];
  u.lockout_expires_in_seconds ??= null;
  u.verification_attempts_remaining ??= 100;
  u.delete_self_enabled ??= true;
  u.create_organization_enabled ??= true;
  u.mfa_enabled_at ??= null;
  u.mfa_disabled_at ??= null;
  u.legal_accepted_at ??= null;
  u.locale ??= null;
  u.password_last_updated_at ??= null;
  return millis(u);
}

function organization(o: Json): Json {
  if (o.image_url === null || o.image_url === undefined) o.image_url = imageOf(o.id);
  // Clerk reports "no limit" as 0; the engine as null.
  o.max_allowed_memberships ??= 0;
  return millis(o);
}

const roleName = (role: unknown) => {
  const key = String(role).replace(/^org:/, '');
  return key.charAt(0).toUpperCase() + key.slice(1).replace(/_/g, ' ');
};

function membership(m: Json): Json {
  if (m.organization && typeof m.organization === 'object') organization(m.organization as Json);
  m.role_name ??= roleName(m.role);
  const data = m.public_user_data as Json | null | undefined;
  if (data) {
    if (data.image_url === null || data.image_url === undefined) data.image_url = imageOf(data.user_id);
    data.profile_image_url ??= data.image_url;
  } else delete m.public_user_data;
  return millis(m);
}

function invitation(i: Json): Json {
  i.role_name ??= roleName(i.role);
  i.public_metadata ??= {};
  i.private_metadata ??= {};
  i.url ??= null;
  i.expires_at ??= null;
  i.inviter_id ??= null;
  i.public_inviter_data ??= null;
  return millis(i);
}

function session(s: Json): Json {
  s.actor ??= null;
  s.last_active_organization_id ??= null;
  s.tasks ??= null;
  return millis(s);
}

function deleted(d: Json): Json {
  if (d.slug === null) delete d.slug;
  return d;
}

/** Fixes one object by its `object` field. */
function fix(item: unknown): unknown {
  if (!item || typeof item !== 'object' || Array.isArray(item)) return item;
  const o = item as Json;
  switch (o.object) {
    case 'user':
      return user(o);
    case 'email_address':
      return emailAddress(o);
    case 'organization':
      return organization(o);
    case 'organization_membership':
      return membership(o);
    case 'organization_invitation':
      return invitation(o);
    case 'session':
      return session(o);
    case 'deleted_object':
      return deleted(o);
    default:
      return o;
  }
}

/** The engine's answer to `method pathname`, in Clerk's shape. */
export async function toClerkResponse(
  method: string,
  pathname: string,
  response: Response,
  paginated = false,
): Promise<Response> {
  if (!response.headers.get('content-type')?.includes('json')) {
    return response.status === 404
      ? clerkError(404, 'resource_not_found', 'not found', 'Resource not found')
      : response;
  }
  const body = (await response.json()) as unknown;
  if (!response.ok) {
    const errors = (body as { errors?: Json[] } | undefined)?.errors;
    if (!Array.isArray(errors))
      return response.status === 404
        ? clerkError(404, 'resource_not_found', 'not found', 'Resource not found')
        : clerkError(response.status, 'request_invalid', 'Request invalid', 'Request invalid');
    for (const e of errors)
      if (typeof e.code === 'string') e.code = ERROR_CODES[e.code] ?? e.code.toLowerCase();
    return clerkJson(response.status, { errors });
  }
  // Clerk lists users and sessions as bare arrays (the count is GET /users/count); sessions come as a page
  // with `paginated=true`, which @clerk/backend's getSessionList sends.
  const bare = method === 'GET' && (pathname === '/v1/users' || (pathname === '/v1/sessions' && !paginated));
  if (Array.isArray(body)) return clerkJson(response.status, body.map(fix));
  const b = body as Json;
  if (Array.isArray(b.data)) {
    const data = b.data.map(fix);
    return clerkJson(response.status, bare ? data : { data, total_count: b.total_count });
  }
  return clerkJson(response.status, fix(b));
}
