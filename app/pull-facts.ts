/** What a pull request tells the App, in the shape the App's modules use. */
export interface PullFacts {
  /** The BASE repository's id and `owner/name`: the one the App is installed on and acts on. */
  repoId: number;
  repo: string;
  number: number;
  htmlUrl: string;
  installationId: number;
  headSha: string;
  headRef: string;
  baseRef: string;
  /** The head is in another repository (a fork), or its repository is gone. */
  fork: boolean;
  draft: boolean;
  state: 'open' | 'closed';
}

/** The fields of a pull request (webhook payload or `GET /pulls/{n}`) the App reads. */
export interface PullPayload {
  number: number;
  html_url: string;
  state: string;
  draft?: boolean;
  head: { sha: string; ref: string; repo: { full_name: string } | null };
  base: { ref: string; repo: { id: number; full_name: string } };
}

export function pullFacts(pr: PullPayload, installationId: number): PullFacts {
  return {
    repoId: pr.base.repo.id,
    repo: pr.base.repo.full_name,
    number: pr.number,
    htmlUrl: pr.html_url,
    installationId,
    headSha: pr.head.sha,
    headRef: pr.head.ref,
    baseRef: pr.base.ref,
    // A deleted fork has no repo: treat it as a fork, the cautious choice.
    fork: pr.head.repo?.full_name?.toLowerCase() !== pr.base.repo.full_name.toLowerCase(),
    draft: pr.draft === true,
    state: pr.state === 'closed' ? 'closed' : 'open',
  };
}

/** The key of a pull request's record and lock: `<base repo id>-<number>`. */
export function pullKey(repoId: number, number: number): string {
  return `${repoId}-${number}`;
}
