import {
  bodyField,
  bodyObject,
  successfulMutation,
  type RequestLogEntry,
} from '../../runtime/request-log.ts';

/** What a Twilio REST call changed ("message SM... sent to +1555..."), for the timeline. */
export function describeTwilioChange(entry: RequestLogEntry): string | undefined {
  const mutation = successfulMutation(entry);
  if (!mutation) return undefined;
  const { method, pathname } = mutation;
  const sid = String(bodyObject(entry.response_body)?.sid ?? '');
  const field = (name: string) => bodyField(entry.request_body, name) ?? '?';
  if (method === 'POST' && /\/Messages\.json$/.test(pathname)) return `message ${sid} sent to ${field('To')}`;
  if (method === 'POST' && /\/Calls\.json$/.test(pathname)) return `call ${sid} to ${field('To')} started`;
  if (method === 'POST' && /\/Verifications$/.test(pathname))
    return `verification ${sid} sent to ${field('To')} by ${field('Channel')}`;
  if (method === 'POST' && /\/VerificationCheck$/.test(pathname)) {
    const status = String(bodyObject(entry.response_body)?.status ?? '?');
    return `verification of ${field('To')} checked: ${status}`;
  }
  if (method === 'POST' && /\/IncomingPhoneNumbers\.json$/.test(pathname))
    return `phone number ${field('PhoneNumber')} added`;
  if (method === 'DELETE')
    return `${pathname
      .split('/')
      .pop()
      ?.replace(/\.json$/, '')} deleted`;
  if (method === 'POST' && /\/Services$/.test(pathname)) return `service ${sid} created`;
  return undefined;
}
