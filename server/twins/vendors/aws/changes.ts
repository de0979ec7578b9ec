import type { RequestLogEntry } from '../../runtime/request-log.ts';

const decode = (s: string) => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

/** S3 writes by method and path (`/bucket` or `/bucket/key`); query-protocol actions by name. */
export function describeAwsChange(entry: RequestLogEntry): string | undefined {
  if (entry.status < 200 || entry.status >= 300) return undefined;
  const [pathname, query = ''] = entry.path.split('?');
  const action = new URLSearchParams(query).get('Action');
  const form = typeof entry.request_body === 'string' ? new URLSearchParams(entry.request_body) : undefined;
  const named = action ?? form?.get('Action');
  if (entry.method === 'POST' && named && /^(Create|Delete|Send|Purge|Assume)/.test(named)) {
    return `${named}${form?.get('QueueName') ? ` ${form.get('QueueName')}` : ''}${form?.get('UserName') ? ` ${form.get('UserName')}` : ''}`;
  }
  const [, bucket, ...rest] = (pathname ?? '').split('/');
  if (!bucket) return undefined;
  const key = decode(rest.join('/'));
  if (entry.method === 'PUT')
    return key ? `object s3://${bucket}/${key} written` : `bucket ${bucket} created`;
  if (entry.method === 'DELETE')
    return key ? `object s3://${bucket}/${key} deleted` : `bucket ${bucket} deleted`;
  if (entry.method === 'POST' && new URLSearchParams(query).has('delete'))
    return `objects deleted from ${bucket}`;
  return undefined;
}
