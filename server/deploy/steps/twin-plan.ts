import type { TwinEntry } from '../../store/records.ts';

/** Dependencies whose presence says which twin an app talks to (package name or scope prefix). */
const TWIN_OF_DEPENDENCY: ReadonlyArray<[match: (name: string) => boolean, twin: string]> = [
  [(name) => name === 'stripe', 'stripe'],
  [(name) => name === '@slack/web-api' || name === '@slack/bolt', 'slack'],
  [(name) => name.startsWith('@octokit/') || name === 'octokit' || name === 'probot', 'github'],
];

/** The twins a dependency list implies, in catalog order and without duplicates. */
export function twinsImpliedByDependencies(dependencies: Iterable<string>): string[] {
  const found = new Set<string>();
  for (const name of dependencies) {
    for (const [match, twin] of TWIN_OF_DEPENDENCY) if (match(name)) found.add(twin);
  }
  return [...found];
}

/**
 * Which twins a sandbox gets: the ones asked for (or the scenario's) win outright; otherwise the runtime
 * profile's, and then those the app's dependencies imply. Names not in the catalog are dropped, since a
 * profile is the repository's text, not a validated request.
 */
export function chooseTwinNames(
  requested: string[],
  profileTwins: string[],
  dependencyTwins: string[],
  supported: (name: string) => boolean,
): string[] {
  if (requested.length > 0) return [...new Set(requested)];
  return [...new Set([...profileTwins, ...dependencyTwins])].filter(supported);
}

/**
 * The app's variables: the profile's defaults, then every twin's variables, then the caller's `env`, each
 * later source overriding an earlier one on a key conflict (the spec: caller `env` beats twin variables).
 */
export function mergeEnv(
  profileEnv: Record<string, string>,
  twins: Record<string, TwinEntry>,
  callerEnv: Record<string, string>,
): Record<string, string> {
  const merged: Record<string, string> = { ...profileEnv };
  for (const name of Object.keys(twins).sort()) Object.assign(merged, twins[name]!.env_vars);
  return Object.assign(merged, callerEnv);
}
