import type { IncomingHttpHeaders } from 'node:http';

export interface SimRequest {
  method: string;
  /** Path below the base URL's `/v1`, e.g. `/jobs/job_1`. */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body; `undefined` when there was none. */
  body: unknown;
  /** Set when the body was present but not JSON. */
  bodyError?: string;
}

export interface SimResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  /** Close the connection without answering: the job was created, the response is lost. */
  drop?: boolean;
}
