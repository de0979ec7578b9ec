import {
  bodyField,
  bodyObject,
  successfulMutation,
  type RequestLogEntry,
} from '../../runtime/request-log.ts';

type Describe = (
  match: string[],
  response: Record<string, unknown>,
  entry: RequestLogEntry,
) => string | undefined;

const str = (value: unknown): string | undefined =>
  typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
const short = (sha: string | undefined) => (sha ? sha.slice(0, 7) : '?');
/** A path segment as it was meant; a malformed escape is shown as it came. */
function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
const quoted = (title: unknown) => (typeof title === 'string' && title ? `: ${title}` : '');

/** An issue or pull request PATCH: closing, reopening, or another edit. */
function edited(kind: string, number: string, repo: string, entry: RequestLogEntry): string {
  const state = bodyField(entry.request_body, 'state');
  const done = state === 'closed' ? 'closed' : state === 'open' ? 'reopened' : 'updated';
  return `${kind} #${number} ${done} in ${repo}`;
}

/**
 * REST routes that change state, as `METHOD pattern` over the path (owner and repository as the first
 * two groups where there are some). The first that matches describes the change.
 */
const ROUTES: Array<[string, RegExp, Describe]> = [
  ['POST', /^\/(?:user|orgs\/[^/]+)\/repos$/, (_m, r) => `repository ${str(r.full_name)} created`],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/forks$/,
    (m, r) => `repository ${str(r.full_name)} forked from ${m[1]}/${m[2]}`,
  ],
  ['PATCH', /^\/repos\/([^/]+)\/([^/]+)$/, (m) => `repository ${m[1]}/${m[2]} updated`],
  ['DELETE', /^\/repos\/([^/]+)\/([^/]+)$/, (m) => `repository ${m[1]}/${m[2]} deleted`],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/issues$/,
    (m, r) => `issue #${str(r.number)} opened in ${m[1]}/${m[2]}${quoted(r.title)}`,
  ],
  [
    'PATCH',
    /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)$/,
    (m, _r, e) => edited('issue', m[3]!, `${m[1]}/${m[2]}`, e),
  ],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/comments$/,
    (m, r) => `comment ${str(r.id)} added to #${m[3]} in ${m[1]}/${m[2]}`,
  ],
  [
    'PATCH',
    /^\/repos\/([^/]+)\/([^/]+)\/(?:issues|pulls)\/comments\/(\d+)$/,
    (m) => `comment ${m[3]} edited in ${m[1]}/${m[2]}`,
  ],
  [
    'DELETE',
    /^\/repos\/([^/]+)\/([^/]+)\/(?:issues|pulls)\/comments\/(\d+)$/,
    (m) => `comment ${m[3]} deleted in ${m[1]}/${m[2]}`,
  ],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/labels$/,
    (m) => `labels set on #${m[3]} in ${m[1]}/${m[2]}`,
  ],
  [
    'PUT',
    /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/labels$/,
    (m) => `labels set on #${m[3]} in ${m[1]}/${m[2]}`,
  ],
  [
    'DELETE',
    /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/labels\/([^/]+)$/,
    (m) => `label ${decoded(m[4]!)} removed from #${m[3]} in ${m[1]}/${m[2]}`,
  ],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/labels$/,
    (m, r) => `label ${str(r.name)} created in ${m[1]}/${m[2]}`,
  ],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/pulls$/,
    (m, r) => {
      const head = str((r.head as { ref?: unknown } | undefined)?.ref);
      const base = str((r.base as { ref?: unknown } | undefined)?.ref);
      const branches = head && base ? ` (${head} → ${base})` : '';
      return `pull request #${str(r.number)} opened in ${m[1]}/${m[2]}${quoted(r.title)}${branches}`;
    },
  ],
  [
    'PATCH',
    /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)$/,
    (m, _r, e) => edited('pull request', m[3]!, `${m[1]}/${m[2]}`, e),
  ],
  [
    'PUT',
    /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)\/merge$/,
    (m, r) => `pull request #${m[3]} merged in ${m[1]}/${m[2]} (${short(str(r.sha))})`,
  ],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)\/reviews$/,
    (m, r) =>
      `review ${str(r.state)?.toLowerCase() ?? 'submitted'} on pull request #${m[3]} in ${m[1]}/${m[2]}`,
  ],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)\/comments$/,
    (m, r) => `review comment ${str(r.id)} added to #${m[3]} in ${m[1]}/${m[2]}`,
  ],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/merges$/,
    (m, _r, e) =>
      `${bodyField(e.request_body, 'head') ?? 'a branch'} merged into ${bodyField(e.request_body, 'base') ?? 'a branch'} in ${m[1]}/${m[2]}`,
  ],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/statuses\/([0-9a-f]+)$/i,
    (m, r) =>
      `commit status ${str(r.state)}${r.context ? ` (${str(r.context)})` : ''} set on ${short(m[3])} in ${m[1]}/${m[2]}`,
  ],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/check-runs$/,
    (m, r) =>
      `check run "${str(r.name)}" created on ${short(str(r.head_sha))} in ${m[1]}/${m[2]}: ${str(r.conclusion) ?? str(r.status)}`,
  ],
  [
    'PATCH',
    /^\/repos\/([^/]+)\/([^/]+)\/check-runs\/(\d+)$/,
    (m, r) => `check run "${str(r.name)}" updated in ${m[1]}/${m[2]}: ${str(r.conclusion) ?? str(r.status)}`,
  ],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/deployments$/,
    (m, r) =>
      `deployment ${str(r.id)} created for ${str(r.ref)} (${str(r.environment) ?? 'production'}) in ${m[1]}/${m[2]}`,
  ],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/deployments\/(\d+)\/statuses$/,
    (m, r) => `deployment ${m[3]} is ${str(r.state)} in ${m[1]}/${m[2]}`,
  ],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/git\/refs$/,
    (m, r) => `ref ${str(r.ref)} created in ${m[1]}/${m[2]}`,
  ],
  [
    'PATCH',
    /^\/repos\/([^/]+)\/([^/]+)\/git\/refs\/(.+)$/,
    (m) => `ref refs/${decoded(m[3]!)} moved in ${m[1]}/${m[2]}`,
  ],
  [
    'DELETE',
    /^\/repos\/([^/]+)\/([^/]+)\/git\/refs\/(.+)$/,
    (m) => `ref refs/${decoded(m[3]!)} deleted in ${m[1]}/${m[2]}`,
  ],
  [
    'PUT',
    /^\/repos\/([^/]+)\/([^/]+)\/contents\/(.+)$/,
    (m, r) => {
      const sha = str((r.commit as { sha?: unknown } | undefined)?.sha);
      return `file ${decoded(m[3]!)} committed to ${m[1]}/${m[2]}${sha ? ` (${short(sha)})` : ''}`;
    },
  ],
  [
    'DELETE',
    /^\/repos\/([^/]+)\/([^/]+)\/contents\/(.+)$/,
    (m) => `file ${decoded(m[3]!)} deleted from ${m[1]}/${m[2]}`,
  ],
  [
    'POST',
    /^\/repos\/([^/]+)\/([^/]+)\/releases$/,
    (m, r) => `release ${str(r.tag_name)} created in ${m[1]}/${m[2]}`,
  ],
  ['POST', /^\/repos\/([^/]+)\/([^/]+)\/hooks$/, (m, r) => `webhook ${str(r.id)} added to ${m[1]}/${m[2]}`],
  ['PUT', /^\/repos\/([^/]+)\/([^/]+)\/collaborators\/([^/]+)$/, (m) => `${m[3]} invited to ${m[1]}/${m[2]}`],
  [
    'DELETE',
    /^\/repos\/([^/]+)\/([^/]+)\/collaborators\/([^/]+)$/,
    (m) => `${m[3]} removed from ${m[1]}/${m[2]}`,
  ],
  ['POST', /^\/login\/oauth\/access_token$/, () => 'OAuth access token issued'],
  [
    'POST',
    /^\/app\/installations\/(\d+)\/access_tokens$/,
    (m) => `installation access token issued for installation ${m[1]}`,
  ],
];

/**
 * What a GitHub REST request changed ("issue #3 opened in octocat/shop: Broken link"), from its route
 * and GitHub's answer. GraphQL mutations and routes not listed here are left to the twin call itself.
 */
export function describeGitHubChange(entry: RequestLogEntry): string | undefined {
  const mutation = successfulMutation(entry);
  if (!mutation) return undefined;
  // GitHub Enterprise clients put the REST API under /api/v3.
  const path = mutation.pathname.replace(/^\/api\/v3(?=\/)/, '').replace(/\/$/, '');
  // OAuth's token endpoint answers 200 with an error body for a bad code.
  const response = bodyObject(entry.response_body) ?? {};
  if (typeof response.error === 'string') return undefined;
  for (const [method, pattern, describe] of ROUTES) {
    if (method !== mutation.method) continue;
    const match = pattern.exec(path);
    if (match) return describe([...match], response, entry);
  }
  return undefined;
}
