/**
 * GitHub's 422s say what failed: `errors: [{resource, code, field}]` (`validation-error` in its
 * description; codes `missing`, `missing_field`, `invalid`, `already_exists`, `unprocessable`, `custom`,
 * https://docs.github.com/rest/using-the-rest-api/troubleshooting-the-rest-api#validation-failed). The engine
 * answers a bare message ("Validation failed", "name is required", "Reference already exists"); this reads
 * that message, the request's path and its body into the item GitHub would have sent.
 */
import type { Engine } from '../../engine/emulate.ts';
import { repoNamed, type ValidationItem } from './access.ts';

type Json = Record<string, unknown>;

/** The resource a path's last collection names, as GitHub spells resources in `errors`. */
const RESOURCES: Array<[RegExp, string]> = [
  [/\/pulls\/\d+\/comments$|\/pulls\/comments(\/\d+)?$/, 'PullRequestReviewComment'],
  [/\/pulls\/\d+\/reviews(\/\d+.*)?$/, 'PullRequestReview'],
  [/\/pulls\/\d+\/merge$/, 'PullRequest'],
  [/\/pulls(\/\d+)?$/, 'PullRequest'],
  [/\/issues\/(\d+\/)?comments(\/\d+)?$/, 'IssueComment'],
  [/\/issues\/\d+\/labels(\/.*)?$/, 'Label'],
  [/\/issues(\/\d+)?$/, 'Issue'],
  [/\/labels(\/[^/]+)?$/, 'Label'],
  [/\/milestones(\/\d+)?$/, 'Milestone'],
  [/\/git\/refs(\/.*)?$/, 'Reference'],
  [/\/git\/trees$/, 'Tree'],
  [/\/git\/commits$/, 'Commit'],
  [/\/git\/blobs$/, 'Blob'],
  [/\/git\/tags$/, 'Tag'],
  [/\/releases\/\d+\/assets$|\/releases\/assets\/\d+$/, 'ReleaseAsset'],
  [/\/releases(\/\d+)?$/, 'Release'],
  [/\/contents\/.+$/, 'Content'],
  [/\/hooks(\/\d+)?$/, 'Hook'],
  [/\/deployments\/\d+\/statuses$/, 'DeploymentStatus'],
  [/\/deployments(\/\d+)?$/, 'Deployment'],
  [/\/statuses\/[^/]+$/, 'Status'],
  [/\/check-runs(\/\d+)?$/, 'CheckRun'],
  [/\/check-suites(\/\d+)?$/, 'CheckSuite'],
  [/\/branches\/.+\/protection.*$/, 'BranchProtection'],
  [/\/merges$/, 'Merge'],
  [/^\/markdown(\/raw)?$/, 'Markdown'],
  [/\/forks$/, 'Repository'],
  [/\/transfer$/, 'Repository'],
  [/\/teams(\/[^/]+)?(\/.*)?$/, 'Team'],
  [/^\/(user|orgs\/[^/]+)\/repos$|^\/repos\/[^/]+\/[^/]+$/, 'Repository'],
];

/** Per route, the fields a create needs and the one that must be unique among its siblings. */
interface Rule {
  pattern: RegExp;
  required: string[];
  unique?: { field: string; taken: (engine: Engine, m: RegExpExecArray, value: string) => boolean };
}

const inRepo = (collection: string, field: string) => (engine: Engine, m: RegExpExecArray, value: string) => {
  const repo = repoNamed(engine, m[1]!, m[2]!);
  return (
    !!repo &&
    engine.store
      .collection(collection, ['repo_id'])
      .findBy('repo_id', repo.id)
      .some((r) => r[field] === value)
  );
};

const RULES: Record<string, Rule[]> = {
  POST: [
    { pattern: /^\/repos\/([^/]+)\/([^/]+)\/issues$/, required: ['title'] },
    { pattern: /^\/repos\/([^/]+)\/([^/]+)\/pulls$/, required: ['head', 'base'] },
    {
      pattern: /^\/repos\/([^/]+)\/([^/]+)\/labels$/,
      required: ['name'],
      unique: { field: 'name', taken: inRepo('github.labels', 'name') },
    },
    {
      pattern: /^\/repos\/([^/]+)\/([^/]+)\/milestones$/,
      required: ['title'],
      unique: { field: 'title', taken: inRepo('github.milestones', 'title') },
    },
    {
      pattern: /^\/repos\/([^/]+)\/([^/]+)\/releases$/,
      required: ['tag_name'],
      unique: { field: 'tag_name', taken: inRepo('github.releases', 'tag_name') },
    },
    { pattern: /^\/repos\/([^/]+)\/([^/]+)\/issues\/\d+\/comments$/, required: ['body'] },
    { pattern: /^\/repos\/([^/]+)\/([^/]+)\/git\/refs$/, required: ['ref', 'sha'] },
    { pattern: /^\/repos\/([^/]+)\/([^/]+)\/hooks$/, required: ['config'] },
    { pattern: /^\/(user|orgs\/[^/]+)\/repos$/, required: ['name'] },
  ],
  PATCH: [
    {
      pattern: /^\/repos\/([^/]+)\/([^/]+)\/labels\/[^/]+$/,
      required: [],
      unique: { field: 'new_name', taken: inRepo('github.labels', 'name') },
    },
  ],
};

const isEmpty = (v: unknown) => v === undefined || v === null || (typeof v === 'string' && !v.trim());

/** The `errors` item for an engine's 422 `message` to `method path` with `body` (parsed JSON, if any). */
export function validationItems(
  engine: Engine,
  method: string,
  path: string,
  message: string,
  body: Json | undefined,
): ValidationItem[] {
  const resource = RESOURCES.find(([p]) => p.test(path))?.[1] ?? 'Resource';
  let m: RegExpExecArray | null;
  if ((m = /^"?([\w.]+)"? (?:is required|wasn't supplied|must be a non-empty string)/.exec(message))) {
    return [{ resource, code: 'missing_field', field: m[1]! }];
  }
  // GitHub's own schema failures ("Invalid request.\n\n..."), as the twin words them too.
  if ((m = /^Invalid request\.\s+"([\w.]+)" wasn't supplied/.exec(message))) {
    return [{ resource, code: 'missing_field', field: m[1]! }];
  }
  if ((m = /^Invalid request\.\s+([\w.]+) is not a permitted key/.exec(message))) {
    return [{ resource, code: 'invalid', field: m[1]! }];
  }
  if (/already exists/i.test(message)) {
    const field = resource === 'Reference' ? 'ref' : resource === 'Release' ? 'tag_name' : 'name';
    return [{ resource, code: 'already_exists', field }];
  }
  if ((m = /^Invalid (?:repository )?([\w.]+)(?: parameter)?$/.exec(message))) {
    return [{ resource, code: 'invalid', field: m[1]! }];
  }
  if ((m = /^([\w.]+) must be /.exec(message))) return [{ resource, code: 'invalid', field: m[1]! }];
  if (/^validation failed$/i.test(message)) {
    for (const rule of RULES[method] ?? []) {
      const match = rule.pattern.exec(path);
      if (!match) continue;
      const missing = rule.required.find((f) => isEmpty(body?.[f]));
      if (missing) return [{ resource, code: 'missing_field', field: missing }];
      const value = rule.unique && body?.[rule.unique.field];
      if (rule.unique && typeof value === 'string' && rule.unique.taken(engine, match, value.trim())) {
        return [
          {
            resource,
            code: 'already_exists',
            field: rule.unique.field === 'new_name' ? 'name' : rule.unique.field,
          },
        ];
      }
    }
    return [{ resource, code: 'invalid' }];
  }
  return [{ resource, code: 'custom', message }];
}
