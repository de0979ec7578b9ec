/** A bounded in-memory log of the vendor-API requests an instance served (admin API: GET /requests). */
export interface RequestLogEntry {
  id: number;
  at: string;
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  request_body: unknown;
  response_body: unknown;
  /** Set when the response came from fault injection instead of the twin. */
  fault?: string;
}

export class RequestLog {
  private entries: RequestLogEntry[] = [];
  private nextId = 1;

  constructor(private readonly capacity = 500) {}

  add(entry: Omit<RequestLogEntry, 'id'>): void {
    this.entries.push({ id: this.nextId++, ...entry });
    if (this.entries.length > this.capacity) this.entries.splice(0, this.entries.length - this.capacity);
  }

  list(limit = this.capacity): RequestLogEntry[] {
    return this.entries.slice(-limit);
  }

  clear(): void {
    this.entries = [];
  }
}
