/**
 * GitHub's REST API versions (`X-GitHub-Api-Version`). The twin serves one; GitHub answers 400 to a
 * version it does not serve, and names the version that answered in `X-GitHub-Api-Version-Selected`.
 */
import { githubError } from './access.ts';

/**
 * The REST API versions the twin serves, as `X-GitHub-Api-Version` names them; a request without the
 * header gets the first, GitHub's default (https://docs.github.com/rest/about-the-rest-api/api-versions).
 */
export const API_VERSIONS: readonly string[] = ['2022-11-28'];
const VERSIONS_DOCS = 'https://docs.github.com/rest/about-the-rest-api/api-versions';

/** GitHub's 400 for a version it does not serve, or undefined when the request's version is served. */
export function unsupportedApiVersion(request: Request): Response | undefined {
  const asked = request.headers.get('x-github-api-version')?.trim();
  if (asked === undefined || API_VERSIONS.includes(asked)) return undefined;
  return githubError(
    400,
    `Unsupported 'X-GitHub-Api-Version': ${JSON.stringify(asked)}. Supported versions: ${API_VERSIONS.join(', ')}.`,
    VERSIONS_DOCS,
  );
}
