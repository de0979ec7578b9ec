import { twinDescriptors } from '../../twins/descriptors.ts';

/** Where one twin delivers its events once the app answers (the deploy's `webhooks` step). */
export interface WebhookPlan {
  twin: string;
  /** The app path, from `.github/twinbox.yml` or the twin's default. */
  path: string;
  /** Where the path came from, for the sandbox log. */
  from: 'twinbox.yml' | 'default';
  /** The variable holding the signing secret, e.g. STRIPE_WEBHOOK_SECRET. */
  secretVar: string;
  /** Its value as the app sees it, so the app's own check passes even when the caller's `env` set it. */
  secret: string;
}

/** How a twin's events reach an app (TwinDescriptor.webhook); undefined for a twin that sends none. */
export type WebhookDefaults = (twin: string) => { path: string; secretVar: string } | undefined;

const builtInDefaults: WebhookDefaults = (twin) => twinDescriptors.get(twin)?.webhook;

/**
 * Which of a sandbox's twins deliver where. `configured` is twinbox.yml's `webhooks:` (a path, or null
 * for none); a twin it does not name gets its default path. `notes` says, for the sandbox log, what is
 * left out and why.
 */
export function planWebhooks(
  twins: string[],
  configured: Record<string, string | null>,
  envVars: Record<string, string>,
  defaults: WebhookDefaults = builtInDefaults,
): { plans: WebhookPlan[]; notes: string[] } {
  const plans: WebhookPlan[] = [];
  const notes: string[] = [];
  for (const twin of [...twins].sort()) {
    const own = defaults(twin);
    const chosen = configured[twin];
    if (!own) {
      if (chosen) notes.push(`${twin} sends no events: webhooks.${twin} is ignored`);
      continue;
    }
    if (chosen === null) {
      notes.push(`${twin}: off (webhooks.${twin} is false in twinbox.yml)`);
      continue;
    }
    const secret = envVars[own.secretVar];
    if (!secret) {
      notes.push(`${twin}: not delivered, the app has no ${own.secretVar} to check them with`);
      continue;
    }
    plans.push({
      twin,
      path: chosen ?? own.path,
      from: chosen ? 'twinbox.yml' : 'default',
      secretVar: own.secretVar,
      secret,
    });
  }
  for (const name of Object.keys(configured).sort())
    if (!twins.includes(name)) notes.push(`webhooks.${name} is ignored: this sandbox has no ${name} twin`);
  return { plans, notes };
}
