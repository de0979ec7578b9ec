import { bodyObject, successfulMutation, type RequestLogEntry } from '../../runtime/request-log.ts';

/**
 * What a Linear GraphQL mutation changed ("issueCreate: ENG-3 Fix login"), for the timeline. Linear answers
 * a failed mutation with 200 and `errors` or `success: false`; those changed nothing.
 */
export function describeLinearChange(entry: RequestLogEntry): string | undefined {
  const mutation = successfulMutation(entry);
  if (!mutation || mutation.pathname !== '/graphql') return undefined;
  const query = bodyObject(entry.request_body)?.query;
  if (typeof query !== 'string' || !/^\s*mutation\b/.test(query)) return undefined;
  const response = bodyObject(entry.response_body);
  if (response?.errors) return undefined;
  const data = bodyObject(response?.data);
  if (!data) return undefined;
  const parts: string[] = [];
  for (const [field, value] of Object.entries(data)) {
    const payload = bodyObject(value);
    if (payload?.success === false) continue;
    const subject =
      bodyObject(payload?.issue) ?? bodyObject(payload?.comment) ?? bodyObject(payload?.issueLabel);
    const name = [subject?.identifier, subject?.title ?? subject?.name]
      .filter((v) => typeof v === 'string')
      .join(' ');
    parts.push(name ? `${field}: ${name}` : field);
  }
  return parts.length ? parts.join('; ') : undefined;
}
