export interface PullRequestRef {
  repo: string;
  number: number;
}

const PULL_PATH = /^\/([^/]+)\/([^/]+)\/pull\/([1-9][0-9]{0,9})\/?$/;

/**
 * Reads `https://<github host>/<owner>/<repo>/pull/<number>`; undefined for anything else, including
 * URLs on hosts that are not a GitHub we deploy from.
 */
export function parsePullRequestUrl(text: string, allowedHosts: string[]): PullRequestRef | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (!allowedHosts.includes(url.host.toLowerCase()) || url.search || url.hash) return undefined;
  const match = PULL_PATH.exec(url.pathname);
  if (!match) return undefined;
  return { repo: `${match[1]}/${match[2]}`, number: Number(match[3]) };
}

/** The hosts whose pull-request URLs we deploy from: github.com, and the configured GitHub's web host. */
export function githubWebHosts(githubWebUrl: string): string[] {
  return [...new Set(['github.com', new URL(githubWebUrl).host.toLowerCase()])];
}
